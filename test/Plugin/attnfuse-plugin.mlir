// Upstream mlir-opt loads the attn dialect and passes from the plugin. Pass
// plugins register after the command line is parsed, so their passes are
// named through --pass-pipeline. An ASan-instrumented plugin cannot load into
// the uninstrumented upstream mlir-opt.
// UNSUPPORTED: sanitizers
// RUN: %mlir_opt %s --load-dialect-plugin=%attnfuse_plugin --load-pass-plugin=%attnfuse_plugin --pass-pipeline="builtin.module(attn-decompose)" | FileCheck %s
// RUN: %mlir_opt %s --load-dialect-plugin=%attnfuse_plugin --load-pass-plugin=%attnfuse_plugin --pass-pipeline="builtin.module(attn-cost-report)" -o /dev/null | FileCheck %s --check-prefix=COST

// CHECK-LABEL: func.func @mqa
// CHECK: attn.project
// CHECK: attn.sdpa
// CHECK-NOT: attn.qkv_attention
// COST: 1 attention layer, 32768 tokens per sequence
// COST: qkv_attention <kv>
func.func @mqa(%x: tensor<?x?x64xf32>, %wq: tensor<64x64xf32>,
               %wk: tensor<16x64xf32>, %wo: tensor<64x64xf32>)
    -> tensor<?x?x64xf32> {
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64,
       causal}
      : (tensor<?x?x64xf32>, tensor<64x64xf32>, tensor<16x64xf32>,
         tensor<64x64xf32>) -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}
