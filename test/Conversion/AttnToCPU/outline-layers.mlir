// RUN: attnfuse-opt %s --attn-to-cpu | FileCheck %s
// RUN: attnfuse-opt %s --attn-to-cpu=outline-layers=false | FileCheck %s --check-prefix=INLINE
// The outlined and the inline lowering compute the same bits.
// RUN: rm -rf %t && mkdir -p %t
// RUN: attnfuse-run %s --entry=stack --random-seed=3 --batch=2 --seq=9 --output-dir=%t/outlined
// RUN: attnfuse-run %s --entry=stack --random-seed=3 --batch=2 --seq=9 --pipeline-options=outline-layers=false --output-dir=%t/inline
// RUN: cmp %t/outlined/out0.npy %t/inline/out0.npy

// Three identical CCA layers are lowered once, as a function the stack calls
// three times.
// CHECK-LABEL: llvm.func @stack(
// CHECK-COUNT-3: llvm.call @cca_layer_0(
// CHECK-NOT:     llvm.call @cca_layer_0(
// CHECK:         llvm.return
// CHECK-LABEL: llvm.func @cca_layer_0(
// CHECK-NOT:   llvm.func @cca_layer_

// INLINE-LABEL: llvm.func @stack(
// INLINE-NOT:   llvm.call @cca_layer
// INLINE-NOT:   llvm.func @cca_layer
func.func @stack(%x: tensor<?x?x32xf32>,
    %wq: tensor<32x32xf32>, %wk: tensor<16x32xf32>, %wv: tensor<8x32xf32>,
    %wvp: tensor<8x32xf32>, %dw: tensor<48x1x2xf32>, %dwb: tensor<48xf32>,
    %gw: tensor<48x8x2xf32>, %gwb: tensor<48xf32>, %temp: tensor<2xf32>,
    %wo: tensor<32x32xf32>) -> tensor<?x?x32xf32> {
  %y0 = attn.cca %x wq(%wq) wk(%wk) wv(%wv) wv_prev(%wvp) conv_dw(%dw, %dwb)
      conv_g(%gw, %gwb) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 8 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift, causal,
       rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
      : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<16x32xf32>,
         tensor<8x32xf32>, tensor<8x32xf32>, tensor<48x1x2xf32>,
         tensor<48xf32>, tensor<48x8x2xf32>, tensor<48xf32>, tensor<2xf32>,
         tensor<32x32xf32>) -> tensor<?x?x32xf32>
  %y1 = attn.cca %y0 wq(%wq) wk(%wk) wv(%wv) wv_prev(%wvp) conv_dw(%dw, %dwb)
      conv_g(%gw, %gwb) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 8 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift, causal,
       rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
      : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<16x32xf32>,
         tensor<8x32xf32>, tensor<8x32xf32>, tensor<48x1x2xf32>,
         tensor<48xf32>, tensor<48x8x2xf32>, tensor<48xf32>, tensor<2xf32>,
         tensor<32x32xf32>) -> tensor<?x?x32xf32>
  %y2 = attn.cca %y1 wq(%wq) wk(%wk) wv(%wv) wv_prev(%wvp) conv_dw(%dw, %dwb)
      conv_g(%gw, %gwb) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 8 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift, causal,
       rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
      : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<16x32xf32>,
         tensor<8x32xf32>, tensor<8x32xf32>, tensor<48x1x2xf32>,
         tensor<48xf32>, tensor<48x8x2xf32>, tensor<48xf32>, tensor<2xf32>,
         tensor<32x32xf32>) -> tensor<?x?x32xf32>
  return %y2 : tensor<?x?x32xf32>
}
