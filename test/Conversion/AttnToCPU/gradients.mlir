// Gradient functions compile and run on the CPU through both lowerings (the
// fused backward and the reference one). Numerics: integration_test/training/.

// RUN: rm -rf %t && mkdir -p %t
// RUN: attnfuse-opt %s --attn-differentiate -o %t/grad.mlir
// RUN: attnfuse-run %t/grad.mlir --entry=kv_rope_vjp --random-seed=3 --batch=2 --seq=11 --output-dir=%t/fused
// RUN: attnfuse-run %t/grad.mlir --entry=kv_rope_vjp --random-seed=3 --batch=2 --seq=11 --output-dir=%t/reference --reference
// RUN: ls %t/fused | FileCheck %s --check-prefix=FILES
// FILES: out0.npy
// FILES-NEXT: out1.npy
// FILES-NEXT: out2.npy
// FILES-NEXT: out3.npy
// RUN: attnfuse-run %t/grad.mlir --entry=cca_vjp --random-seed=5 --batch=2 --seq=9 --output-dir=%t/cca
// RUN: ls %t/cca | FileCheck %s --check-prefix=CCA
// CCA: out9.npy

func.func @kv_rope(%x: tensor<?x?x16xf32>, %wq: tensor<16x16xf32>,
                   %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>)
    -> tensor<?x?x16xf32> {
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       causal, window = 5 : i64, rope = #attn.rope<theta = 10000.0>}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

func.func @cca(%x: tensor<?x?x16xf32>, %wq: tensor<8x16xf32>,
               %wk: tensor<4x16xf32>, %wv: tensor<2x16xf32>,
               %wvp: tensor<2x16xf32>, %dw: tensor<12x1x2xf32>,
               %dwb: tensor<12xf32>, %gw: tensor<12x4x2xf32>,
               %gwb: tensor<12xf32>, %temp: tensor<1xf32>,
               %wo: tensor<16x8xf32>) -> tensor<?x?x16xf32> {
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv) wv_prev(%wvp) conv_dw(%dw, %dwb)
      conv_g(%gw, %gwb) temp(%temp) wo(%wo)
      {num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift, causal,
       temperature = #attn.temperature<clamped>,
       rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
      : (tensor<?x?x16xf32>, tensor<8x16xf32>, tensor<4x16xf32>,
         tensor<2x16xf32>, tensor<2x16xf32>, tensor<12x1x2xf32>,
         tensor<12xf32>, tensor<12x4x2xf32>, tensor<12xf32>, tensor<1xf32>,
         tensor<16x8xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}
