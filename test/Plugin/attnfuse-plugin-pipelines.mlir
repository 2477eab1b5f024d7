// Every AttnFuse conversion and both pipelines run inside upstream mlir-opt
// from the plugin. An ASan-instrumented plugin cannot load into the
// uninstrumented upstream mlir-opt.
// UNSUPPORTED: sanitizers
// RUN: %mlir_opt %s --load-dialect-plugin=%attnfuse_plugin --load-pass-plugin=%attnfuse_plugin --pass-pipeline="builtin.module(attn-decompose,convert-attn-to-linalg)" | FileCheck %s --check-prefix=LINALG
// RUN: %mlir_opt %s --load-dialect-plugin=%attnfuse_plugin --load-pass-plugin=%attnfuse_plugin --pass-pipeline="builtin.module(attn-decompose,attn-fuse,convert-attn-kernels-to-scf)" | FileCheck %s --check-prefix=SCF
// RUN: %mlir_opt %s --load-dialect-plugin=%attnfuse_plugin --load-pass-plugin=%attnfuse_plugin --pass-pipeline="builtin.module(attn-decompose,attn-fuse,convert-attn-kernels-to-nvvm)" | FileCheck %s --check-prefix=NVVM
// RUN: %mlir_opt %s --load-dialect-plugin=%attnfuse_plugin --load-pass-plugin=%attnfuse_plugin --pass-pipeline="builtin.module(attn-to-cpu)" | FileCheck %s --check-prefix=CPU
// RUN: %mlir_opt %s --load-dialect-plugin=%attnfuse_plugin --load-pass-plugin=%attnfuse_plugin --pass-pipeline="builtin.module(attn-decompose,attn-fuse,attn-to-ptx)" | FileCheck %s --check-prefix=PTX

// LINALG-LABEL: func.func @layer
// LINALG: linalg.
// LINALG-NOT: attn.

// SCF-LABEL: func.func @layer
// SCF: scf.for
// SCF-NOT: attn.

// NVVM-LABEL: func.func @layer
// NVVM: call @attn_fa_bf16_d64_h16_g4_q128_kv128_s2_causal_keqv_krope64_launch
// NVVM: gpu.module @attn_fa_bf16_d64_h16_g4_q128_kv128_s2_causal_keqv_krope64
// NVVM: nvvm.wgmma.mma_async

// CPU-LABEL: llvm.func @layer
// CPU-NOT: attn.

// PTX-LABEL: func.func @layer
// PTX: call @attn_fa_bf16_d64_h16_g4_q128_kv128_s2_causal_keqv_krope64_launch
// PTX: gpu.binary @attn_fa_bf16_d64_h16_g4_q128_kv128_s2_causal_keqv_krope64
// PTX-SAME: .target sm_90a
// PTX-SAME: wgmma.mma_async.sync.aligned
func.func @layer(%x: tensor<?x?x1024xbf16>, %wq: tensor<1024x1024xbf16>,
                 %wk: tensor<256x1024xbf16>, %wo: tensor<1024x1024xbf16>)
    -> tensor<?x?x1024xbf16> {
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 16 : i64, num_kv_heads = 4 : i64, head_dim = 64 : i64,
       causal, rope = #attn.rope<theta = 10000.0>}
      : (tensor<?x?x1024xbf16>, tensor<1024x1024xbf16>, tensor<256x1024xbf16>,
         tensor<1024x1024xbf16>) -> tensor<?x?x1024xbf16>
  return %y : tensor<?x?x1024xbf16>
}
