// RUN: attnfuse-opt %s | attnfuse-opt | FileCheck %s
// RUN: attnfuse-opt %s --mlir-print-op-generic | attnfuse-opt | FileCheck %s

// Round trip of every attn op and attribute, in the custom and the generic
// form. Shapes: E = 16, num_heads = 4, num_kv_heads = 2, head_dim = 4 unless
// a case says otherwise.

//===----------------------------------------------------------------------===//
// attn.qkv_attention
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @qkv_none_gqa
// CHECK: %[[Y:.*]] = attn.qkv_attention <none> %arg0 wq(%arg1) wk(%arg2) wv(%arg3) wo(%arg4)
// CHECK-SAME: {head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64}
// CHECK-SAME: : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
// CHECK: return %[[Y]]
func.func @qkv_none_gqa(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
                        %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
                        %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  %y = attn.qkv_attention <none> %x wq(%wq) wk(%wk) wv(%wv) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// All four biases, dynamic batch and sequence.
// CHECK-LABEL: func.func @qkv_none_biases_dynamic
// CHECK: attn.qkv_attention <none> %arg0 wq(%arg1) wk(%arg2) wv(%arg3) wo(%arg4) bq(%arg5) bk(%arg6) bv(%arg7) bo(%arg8)
// CHECK-SAME: {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64}
// CHECK-SAME: : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
func.func @qkv_none_biases_dynamic(
    %x: tensor<?x?x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>,
    %wv: tensor<8x16xf32>, %wo: tensor<16x16xf32>, %bq: tensor<16xf32>,
    %bk: tensor<8xf32>, %bv: tensor<8xf32>, %bo: tensor<16xf32>)
    -> tensor<?x?x16xf32> {
  %y = attn.qkv_attention <none> %x wq(%wq) wk(%wk) wv(%wv) wo(%wo)
      bq(%bq) bk(%bk) bv(%bv) bo(%bo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, causal}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<8xf32>,
         tensor<8xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// Only some biases: the optional groups are independent.
// CHECK-LABEL: func.func @qkv_none_some_biases
// CHECK: attn.qkv_attention <none> %arg0 wq(%arg1) wk(%arg2) wv(%arg3) wo(%arg4) bk(%arg5) bo(%arg6) {
func.func @qkv_none_some_biases(
    %x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>,
    %wv: tensor<8x16xf32>, %wo: tensor<16x16xf32>, %bk: tensor<8xf32>,
    %bo: tensor<16xf32>) -> tensor<2x8x16xf32> {
  %y = attn.qkv_attention <none> %x wq(%wq) wk(%wk) wv(%wv) wo(%wo)
      bk(%bk) bo(%bo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<16x16xf32>, tensor<8xf32>, tensor<16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// K=V with GQA and full RoPE (the default fraction is not printed).
// CHECK-LABEL: func.func @qkv_kv_gqa_rope
// CHECK: attn.qkv_attention <kv> %arg0 wq(%arg1) wk(%arg2) wo(%arg3)
// CHECK-SAME: {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, rope = #attn.rope<theta = 10000.0>}
// CHECK-SAME: : (tensor<2x8x16xbf16>, tensor<16x16xbf16>, tensor<8x16xbf16>, tensor<16x16xbf16>) -> tensor<2x8x16xbf16>
func.func @qkv_kv_gqa_rope(%x: tensor<2x8x16xbf16>, %wq: tensor<16x16xbf16>,
                           %wk: tensor<8x16xbf16>, %wo: tensor<16x16xbf16>)
    -> tensor<2x8x16xbf16> {
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       causal, rope = #attn.rope<theta = 10000.0>}
      : (tensor<2x8x16xbf16>, tensor<16x16xbf16>, tensor<8x16xbf16>,
         tensor<16x16xbf16>) -> tensor<2x8x16xbf16>
  return %y : tensor<2x8x16xbf16>
}

// An explicit fraction of 1.0 prints as the default.
// CHECK-LABEL: func.func @qkv_kv_rope_fraction_one
// CHECK: rope = #attn.rope<theta = 500000.0>
// CHECK-NOT: fraction
// CHECK: return
func.func @qkv_kv_rope_fraction_one(%x: tensor<2x8x16xf32>,
                                    %wq: tensor<16x16xf32>,
                                    %wk: tensor<8x16xf32>,
                                    %wo: tensor<16x16xf32>)
    -> tensor<2x8x16xf32> {
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       rope = #attn.rope<theta = 500000.0, fraction = 1.0>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// K=V with MQA, biases on the shared projection and the output, a window
// and dynamic batch and sequence.
// CHECK-LABEL: func.func @qkv_kv_mqa_window_dynamic
// CHECK: attn.qkv_attention <kv> %arg0 wq(%arg1) wk(%arg2) wo(%arg3) bq(%arg4) bk(%arg5) bo(%arg6)
// CHECK-SAME: {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 1 : i64, window = 3 : i64}
// CHECK-SAME: : (tensor<?x?x16xf16>, tensor<16x16xf16>, tensor<4x16xf16>, tensor<16x16xf16>, tensor<16xf16>, tensor<4xf16>, tensor<16xf16>) -> tensor<?x?x16xf16>
func.func @qkv_kv_mqa_window_dynamic(
    %x: tensor<?x?x16xf16>, %wq: tensor<16x16xf16>, %wk: tensor<4x16xf16>,
    %wo: tensor<16x16xf16>, %bq: tensor<16xf16>, %bk: tensor<4xf16>,
    %bo: tensor<16xf16>) -> tensor<?x?x16xf16> {
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo) bq(%bq) bk(%bk)
      bo(%bo)
      {num_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64,
       causal, window = 3 : i64}
      : (tensor<?x?x16xf16>, tensor<16x16xf16>, tensor<4x16xf16>,
         tensor<16x16xf16>, tensor<16xf16>, tensor<4xf16>, tensor<16xf16>)
      -> tensor<?x?x16xf16>
  return %y : tensor<?x?x16xf16>
}

// Q=K-V with an [S, T] logit bias and an explicit scale.
// CHECK-LABEL: func.func @qkv_qk_logit_bias_2d
// CHECK: attn.qkv_attention <qk> %arg0 wk(%arg1) wv(%arg2) wo(%arg3) logit_bias(%arg4)
// CHECK-SAME: {head_dim = 4 : i64, num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 2.500000e-01 : f64}
// CHECK-SAME: : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<8x8xf32>) -> tensor<2x8x16xf32>
func.func @qkv_qk_logit_bias_2d(%x: tensor<2x8x16xf32>, %wk: tensor<8x16xf32>,
                                %wv: tensor<8x16xf32>, %wo: tensor<16x8xf32>,
                                %p: tensor<8x8xf32>) -> tensor<2x8x16xf32> {
  %y = attn.qkv_attention <qk> %x wk(%wk) wv(%wv) wo(%wo) logit_bias(%p)
      {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       scale = 0.25 : f64}
      : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>,
         tensor<16x8xf32>, tensor<8x8xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// Q=K-V with value and key biases.
// CHECK-LABEL: func.func @qkv_qk_biases
// CHECK: attn.qkv_attention <qk> %arg0 wk(%arg1) wv(%arg2) wo(%arg3) bk(%arg4) bv(%arg5) bo(%arg6) {
func.func @qkv_qk_biases(%x: tensor<2x8x16xf32>, %wk: tensor<8x16xf32>,
                         %wv: tensor<8x16xf32>, %wo: tensor<16x8xf32>,
                         %bk: tensor<8xf32>, %bv: tensor<8xf32>,
                         %bo: tensor<16xf32>) -> tensor<2x8x16xf32> {
  %y = attn.qkv_attention <qk> %x wk(%wk) wv(%wv) wo(%wo) bk(%bk) bv(%bv)
      bo(%bo)
      {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>,
         tensor<16x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<16xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// Q=K=V with a [num_heads, S, T] logit bias, partial RoPE, causal, window
// and scale.
// CHECK-LABEL: func.func @qkv_qkv_logit_bias_3d_rope_fraction
// CHECK: attn.qkv_attention <qkv> %arg0 wk(%arg1) wo(%arg2) bk(%arg3) logit_bias(%arg4)
// CHECK-SAME: {causal, head_dim = 4 : i64, num_heads = 2 : i64, num_kv_heads = 2 : i64, rope = #attn.rope<theta = 10000.0, fraction = 0.5>, scale = 1.250000e-01 : f64, window = 4 : i64}
// CHECK-SAME: : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x16xf32>
func.func @qkv_qkv_logit_bias_3d_rope_fraction(
    %x: tensor<2x8x16xf32>, %wk: tensor<8x16xf32>, %wo: tensor<16x8xf32>,
    %bk: tensor<8xf32>, %p: tensor<2x8x8xf32>) -> tensor<2x8x16xf32> {
  %y = attn.qkv_attention <qkv> %x wk(%wk) wo(%wo) bk(%bk) logit_bias(%p)
      {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       causal, window = 4 : i64, scale = 0.125 : f64,
       rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
      : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>,
         tensor<8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// Q=K=V with a dynamic sequence and a dynamic [S, T] logit bias.
// CHECK-LABEL: func.func @qkv_qkv_dynamic_logit_bias
// CHECK: attn.qkv_attention <qkv> %arg0 wk(%arg1) wo(%arg2) logit_bias(%arg3)
// CHECK-SAME: : (tensor<1x?x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<?x?xf32>) -> tensor<1x?x16xf32>
func.func @qkv_qkv_dynamic_logit_bias(%x: tensor<1x?x16xf32>,
                                      %wk: tensor<8x16xf32>,
                                      %wo: tensor<16x8xf32>,
                                      %p: tensor<?x?xf32>)
    -> tensor<1x?x16xf32> {
  %y = attn.qkv_attention <qkv> %x wk(%wk) wo(%wo) logit_bias(%p)
      {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<1x?x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>,
         tensor<?x?xf32>) -> tensor<1x?x16xf32>
  return %y : tensor<1x?x16xf32>
}

//===----------------------------------------------------------------------===//
// attn.cca
//===----------------------------------------------------------------------===//

// Plain CCGQA: no qk_mean, no value shift, no rope, raw temperature (the
// default, not printed), default eps (not printed).
// CHECK-LABEL: func.func @cca_plain
// CHECK: attn.cca %arg0 wq(%arg1) wk(%arg2) wv(%arg3) conv_dw(%arg4, %arg5) conv_g(%arg6, %arg7) temp(%arg8) wo(%arg9)
// CHECK-SAME: {conv_kernel_sizes = array<i64: 2, 2>, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64}
// CHECK-SAME: : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
func.func @cca_plain(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
                     %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
                     %dw: tensor<24x1x2xf32>, %dwb: tensor<24xf32>,
                     %gw: tensor<24x4x2xf32>, %gwb: tensor<24xf32>,
                     %temp: tensor<2xf32>, %wo: tensor<16x16xf32>)
    -> tensor<2x8x16xf32> {
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv) conv_dw(%dw, %dwb)
      conv_g(%gw, %gwb) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>,
         tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// The full ZAYA1-style layer: qk_mean, value shift, clamped temperature,
// partial RoPE, causal, dynamic batch and sequence.
// CHECK-LABEL: func.func @cca_full_dynamic
// CHECK: attn.cca %arg0 wq(%arg1) wk(%arg2) wv(%arg3) wv_prev(%arg4) conv_dw(%arg5, %arg6) conv_g(%arg7, %arg8) temp(%arg9) wo(%arg10)
// CHECK-SAME: {causal, conv_kernel_sizes = array<i64: 2, 2>, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, qk_mean, rope = #attn.rope<theta = 10000.0, fraction = 0.5>, temperature = #attn.temperature<clamped>, value_shift}
// CHECK-SAME: : (tensor<?x?x16xbf16>, tensor<16x16xbf16>, tensor<8x16xbf16>, tensor<4x16xbf16>, tensor<4x16xbf16>, tensor<24x1x2xbf16>, tensor<24xbf16>, tensor<24x4x2xbf16>, tensor<24xbf16>, tensor<2xbf16>, tensor<16x16xbf16>) -> tensor<?x?x16xbf16>
func.func @cca_full_dynamic(%x: tensor<?x?x16xbf16>, %wq: tensor<16x16xbf16>,
                            %wk: tensor<8x16xbf16>, %wvc: tensor<4x16xbf16>,
                            %wvp: tensor<4x16xbf16>,
                            %dw: tensor<24x1x2xbf16>, %dwb: tensor<24xbf16>,
                            %gw: tensor<24x4x2xbf16>, %gwb: tensor<24xbf16>,
                            %temp: tensor<2xbf16>, %wo: tensor<16x16xbf16>)
    -> tensor<?x?x16xbf16> {
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wvc) wv_prev(%wvp) conv_dw(%dw, %dwb)
      conv_g(%gw, %gwb) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift,
       temperature = #attn.temperature<clamped>, causal,
       rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
      : (tensor<?x?x16xbf16>, tensor<16x16xbf16>, tensor<8x16xbf16>,
         tensor<4x16xbf16>, tensor<4x16xbf16>, tensor<24x1x2xbf16>,
         tensor<24xbf16>, tensor<24x4x2xbf16>, tensor<24xbf16>,
         tensor<2xbf16>, tensor<16x16xbf16>) -> tensor<?x?x16xbf16>
  return %y : tensor<?x?x16xbf16>
}

// A layer with transformers' ZAYA numerics: raw temperature (elided),
// heads divided by max(|x|, eps) with the bf16 epsilon, a sliding window.
// CHECK-LABEL: func.func @cca_hf_norm
// CHECK: attn.cca
// CHECK-SAME: {causal, conv_kernel_sizes = array<i64: 2, 2>, eps = 7.812500e-03 : f64, head_dim = 4 : i64, norm = #attn.norm<clamp_eps>, num_heads = 4 : i64, num_kv_heads = 2 : i64, qk_mean, rope = #attn.rope<theta = 5000000.0, fraction = 0.5>, value_shift, window = 8 : i64}
func.func @cca_hf_norm(%x: tensor<?x?x16xbf16>, %wq: tensor<16x16xbf16>,
                       %wk: tensor<8x16xbf16>, %wvc: tensor<4x16xbf16>,
                       %wvp: tensor<4x16xbf16>,
                       %dw: tensor<24x1x2xbf16>, %dwb: tensor<24xbf16>,
                       %gw: tensor<24x4x2xbf16>, %gwb: tensor<24xbf16>,
                       %temp: tensor<2xbf16>, %wo: tensor<16x16xbf16>)
    -> tensor<?x?x16xbf16> {
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wvc) wv_prev(%wvp) conv_dw(%dw, %dwb)
      conv_g(%gw, %gwb) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift,
       temperature = #attn.temperature<raw>, norm = #attn.norm<clamp_eps>,
       eps = 0.0078125 : f64, causal, window = 8 : i64,
       rope = #attn.rope<theta = 5000000.0, fraction = 0.5>}
      : (tensor<?x?x16xbf16>, tensor<16x16xbf16>, tensor<8x16xbf16>,
         tensor<4x16xbf16>, tensor<4x16xbf16>, tensor<24x1x2xbf16>,
         tensor<24xbf16>, tensor<24x4x2xbf16>, tensor<24xbf16>,
         tensor<2xbf16>, tensor<16x16xbf16>) -> tensor<?x?x16xbf16>
  return %y : tensor<?x?x16xbf16>
}

// CCA (num_heads == num_kv_heads) with qk_mean only, an explicit raw
// temperature (the default is elided), a custom eps, a window, unequal
// kernel sizes.
// CHECK-LABEL: func.func @cca_qk_mean_window_eps
// CHECK: attn.cca %arg0 wq(%arg1) wk(%arg2) wv(%arg3) conv_dw(%arg4, %arg5) conv_g(%arg6, %arg7) temp(%arg8) wo(%arg9)
// CHECK-SAME: {causal, conv_kernel_sizes = array<i64: 3, 2>, eps = 9.9999999999999995E-7 : f64, head_dim = 4 : i64, num_heads = 2 : i64, num_kv_heads = 2 : i64, qk_mean, window = 4 : i64}
// CHECK-SAME: : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x1x3xf32>, tensor<16xf32>, tensor<16x4x2xf32>, tensor<16xf32>, tensor<2xf32>, tensor<16x8xf32>) -> tensor<2x8x16xf32>
func.func @cca_qk_mean_window_eps(%x: tensor<2x8x16xf32>, %wq: tensor<8x16xf32>,
                                  %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
                                  %dw: tensor<16x1x3xf32>, %dwb: tensor<16xf32>,
                                  %gw: tensor<16x4x2xf32>, %gwb: tensor<16xf32>,
                                  %temp: tensor<2xf32>, %wo: tensor<16x8xf32>)
    -> tensor<2x8x16xf32> {
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv) conv_dw(%dw, %dwb)
      conv_g(%gw, %gwb) temp(%temp) wo(%wo)
      {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 3, 2>, qk_mean, causal, window = 4 : i64,
       temperature = #attn.temperature<raw>, eps = 1.0e-6 : f64}
      : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<16x1x3xf32>, tensor<16xf32>,
         tensor<16x4x2xf32>, tensor<16xf32>, tensor<2xf32>,
         tensor<16x8xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// Value shift without qk_mean, full RoPE, static shapes.
// CHECK-LABEL: func.func @cca_value_shift_rope
// CHECK: attn.cca %arg0 wq(%arg1) wk(%arg2) wv(%arg3) wv_prev(%arg4) conv_dw(%arg5, %arg6) conv_g(%arg7, %arg8) temp(%arg9) wo(%arg10)
// CHECK-SAME: {conv_kernel_sizes = array<i64: 2, 2>, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, rope = #attn.rope<theta = 10000.0>, value_shift}
func.func @cca_value_shift_rope(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
                                %wk: tensor<8x16xf32>, %wvc: tensor<4x16xf32>,
                                %wvp: tensor<4x16xf32>,
                                %dw: tensor<24x1x2xf32>, %dwb: tensor<24xf32>,
                                %gw: tensor<24x4x2xf32>, %gwb: tensor<24xf32>,
                                %temp: tensor<2xf32>, %wo: tensor<16x16xf32>)
    -> tensor<2x8x16xf32> {
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wvc) wv_prev(%wvp) conv_dw(%dw, %dwb)
      conv_g(%gw, %gwb) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, value_shift,
       rope = #attn.rope<theta = 10000.0>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<4x16xf32>, tensor<4x16xf32>, tensor<24x1x2xf32>,
         tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>,
         tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

//===----------------------------------------------------------------------===//
// attn.project
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @project(
// CHECK: attn.project %arg0, %arg1 : (tensor<2x8x16xf32>, tensor<8x16xf32>) -> tensor<2x8x8xf32>
func.func @project(%x: tensor<2x8x16xf32>, %w: tensor<8x16xf32>)
    -> tensor<2x8x8xf32> {
  %y = attn.project %x, %w
      : (tensor<2x8x16xf32>, tensor<8x16xf32>) -> tensor<2x8x8xf32>
  return %y : tensor<2x8x8xf32>
}

// CHECK-LABEL: func.func @project_bias_dynamic
// CHECK: attn.project %arg0, %arg1, %arg2 : (tensor<?x?x16xf16>, tensor<8x16xf16>, tensor<8xf16>) -> tensor<?x?x8xf16>
func.func @project_bias_dynamic(%x: tensor<?x?x16xf16>, %w: tensor<8x16xf16>,
                                %b: tensor<8xf16>) -> tensor<?x?x8xf16> {
  %y = attn.project %x, %w, %b
      : (tensor<?x?x16xf16>, tensor<8x16xf16>, tensor<8xf16>)
      -> tensor<?x?x8xf16>
  return %y : tensor<?x?x8xf16>
}

//===----------------------------------------------------------------------===//
// attn.causal_conv1d
//===----------------------------------------------------------------------===//

// Depthwise, padded for a following k = 2 convolution: S + 1 outputs.
// CHECK-LABEL: func.func @causal_conv1d_depthwise
// CHECK: attn.causal_conv1d %arg0, %arg1, %arg2 {groups = 24 : i64, padding = 2 : i64} : (tensor<2x8x24xf32>, tensor<24x1x2xf32>, tensor<24xf32>) -> tensor<2x9x24xf32>
func.func @causal_conv1d_depthwise(%u: tensor<2x8x24xf32>,
                                   %w: tensor<24x1x2xf32>,
                                   %b: tensor<24xf32>) -> tensor<2x9x24xf32> {
  %m = attn.causal_conv1d %u, %w, %b {groups = 24 : i64, padding = 2 : i64}
      : (tensor<2x8x24xf32>, tensor<24x1x2xf32>, tensor<24xf32>)
      -> tensor<2x9x24xf32>
  return %m : tensor<2x9x24xf32>
}

// Grouped, unpadded, without bias, dynamic batch and sequence.
// CHECK-LABEL: func.func @causal_conv1d_grouped_dynamic
// CHECK: attn.causal_conv1d %arg0, %arg1 {groups = 6 : i64, padding = 0 : i64} : (tensor<?x?x24xf32>, tensor<24x4x2xf32>) -> tensor<?x?x24xf32>
func.func @causal_conv1d_grouped_dynamic(%u: tensor<?x?x24xf32>,
                                         %w: tensor<24x4x2xf32>)
    -> tensor<?x?x24xf32> {
  %c = attn.causal_conv1d %u, %w {groups = 6 : i64, padding = 0 : i64}
      : (tensor<?x?x24xf32>, tensor<24x4x2xf32>) -> tensor<?x?x24xf32>
  return %c : tensor<?x?x24xf32>
}

// A dense (groups = 1) causal convolution that keeps the length.
// CHECK-LABEL: func.func @causal_conv1d_dense
// CHECK: attn.causal_conv1d %arg0, %arg1 {groups = 1 : i64, padding = 3 : i64} : (tensor<1x5x2xf32>, tensor<2x2x4xf32>) -> tensor<1x5x2xf32>
func.func @causal_conv1d_dense(%u: tensor<1x5x2xf32>, %w: tensor<2x2x4xf32>)
    -> tensor<1x5x2xf32> {
  %c = attn.causal_conv1d %u, %w {groups = 1 : i64, padding = 3 : i64}
      : (tensor<1x5x2xf32>, tensor<2x2x4xf32>) -> tensor<1x5x2xf32>
  return %c : tensor<1x5x2xf32>
}

//===----------------------------------------------------------------------===//
// attn.qk_mean, attn.qk_norm, attn.value_shift, attn.rope
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @qk_mean(
// CHECK: %[[Q:.*]], %[[K:.*]] = attn.qk_mean %arg0, %arg1, %arg2, %arg3 : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>
// CHECK: return %[[Q]], %[[K]]
func.func @qk_mean(%qc: tensor<2x8x4x4xf32>, %kc: tensor<2x8x2x4xf32>,
                   %qr: tensor<2x8x4x4xf32>, %kr: tensor<2x8x2x4xf32>)
    -> (tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>) {
  %q, %k = attn.qk_mean %qc, %kc, %qr, %kr
      : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>
  return %q, %k : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>
}

// CHECK-LABEL: func.func @qk_mean_dynamic
// CHECK: attn.qk_mean %arg0, %arg1, %arg2, %arg3 : tensor<?x?x4x4xbf16>, tensor<?x?x1x4xbf16>
func.func @qk_mean_dynamic(%qc: tensor<?x?x4x4xbf16>, %kc: tensor<?x?x1x4xbf16>,
                           %qr: tensor<?x?x4x4xbf16>, %kr: tensor<?x?x1x4xbf16>)
    -> (tensor<?x?x4x4xbf16>, tensor<?x?x1x4xbf16>) {
  %q, %k = attn.qk_mean %qc, %kc, %qr, %kr
      : tensor<?x?x4x4xbf16>, tensor<?x?x1x4xbf16>
  return %q, %k : tensor<?x?x4x4xbf16>, tensor<?x?x1x4xbf16>
}

// Default temperature and eps are elided.
// CHECK-LABEL: func.func @qk_norm_raw
// CHECK: %[[Q:.*]], %[[K:.*]] = attn.qk_norm %arg0, %arg1, %arg2 : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2xf32>
// CHECK: return %[[Q]], %[[K]]
func.func @qk_norm_raw(%q: tensor<2x8x4x4xf32>, %k: tensor<2x8x2x4xf32>,
                       %temp: tensor<2xf32>)
    -> (tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>) {
  %qn, %kn = attn.qk_norm %q, %k, %temp
      : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2xf32>
  return %qn, %kn : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>
}

// CHECK-LABEL: func.func @qk_norm_clamped_dynamic
// CHECK: attn.qk_norm %arg0, %arg1, %arg2 {eps = 9.9999999999999995E-7 : f64, temperature = #attn.temperature<clamped>} : tensor<?x?x4x4xf32>, tensor<?x?x2x4xf32>, tensor<2xf32>
func.func @qk_norm_clamped_dynamic(%q: tensor<?x?x4x4xf32>,
                                   %k: tensor<?x?x2x4xf32>,
                                   %temp: tensor<2xf32>)
    -> (tensor<?x?x4x4xf32>, tensor<?x?x2x4xf32>) {
  %qn, %kn = attn.qk_norm %q, %k, %temp
      {temperature = #attn.temperature<clamped>, eps = 1.0e-6 : f64}
      : tensor<?x?x4x4xf32>, tensor<?x?x2x4xf32>, tensor<2xf32>
  return %qn, %kn : tensor<?x?x4x4xf32>, tensor<?x?x2x4xf32>
}

// Hugging Face's norm: max(|x|, eps), eps the f32 machine epsilon; the
// default norm (sqrt_eps) is elided.
// CHECK-LABEL: func.func @qk_norm_clamp_eps
// CHECK: attn.qk_norm %arg0, %arg1, %arg2 {eps = 1.1920928955078125E-7 : f64, norm = #attn.norm<clamp_eps>} : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2xf32>
// CHECK: attn.qk_norm %arg0, %arg1, %arg2 : tensor<2x8x4x4xf32>
func.func @qk_norm_clamp_eps(%q: tensor<2x8x4x4xf32>, %k: tensor<2x8x2x4xf32>,
                             %temp: tensor<2xf32>)
    -> (tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x4x4xf32>) {
  %qn, %kn = attn.qk_norm %q, %k, %temp
      {norm = #attn.norm<clamp_eps>, eps = 1.1920928955078125e-07 : f64}
      : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2xf32>
  %qd, %kd = attn.qk_norm %q, %k, %temp {norm = #attn.norm<sqrt_eps>}
      : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2xf32>
  return %qn, %kn, %qd : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>,
      tensor<2x8x4x4xf32>
}

// CHECK-LABEL: func.func @value_shift(
// CHECK: attn.value_shift %arg0, %arg1 : (tensor<2x8x4xf32>, tensor<2x8x4xf32>) -> tensor<2x8x8xf32>
func.func @value_shift(%cur: tensor<2x8x4xf32>, %prev: tensor<2x8x4xf32>)
    -> tensor<2x8x8xf32> {
  %v = attn.value_shift %cur, %prev
      : (tensor<2x8x4xf32>, tensor<2x8x4xf32>) -> tensor<2x8x8xf32>
  return %v : tensor<2x8x8xf32>
}

// CHECK-LABEL: func.func @value_shift_dynamic
// CHECK: attn.value_shift %arg0, %arg1 : (tensor<?x?x4xf16>, tensor<?x?x4xf16>) -> tensor<?x?x8xf16>
func.func @value_shift_dynamic(%cur: tensor<?x?x4xf16>, %prev: tensor<?x?x4xf16>)
    -> tensor<?x?x8xf16> {
  %v = attn.value_shift %cur, %prev
      : (tensor<?x?x4xf16>, tensor<?x?x4xf16>) -> tensor<?x?x8xf16>
  return %v : tensor<?x?x8xf16>
}

// CHECK-LABEL: func.func @rope_full
// CHECK: attn.rope %arg0 {rope = #attn.rope<theta = 10000.0>} : tensor<2x8x4x4xf32>
func.func @rope_full(%q: tensor<2x8x4x4xf32>) -> tensor<2x8x4x4xf32> {
  %r = attn.rope %q {rope = #attn.rope<theta = 10000.0>} : tensor<2x8x4x4xf32>
  return %r : tensor<2x8x4x4xf32>
}

// CHECK-LABEL: func.func @rope_fraction_dynamic
// CHECK: attn.rope %arg0 {rope = #attn.rope<theta = 1000000.0, fraction = 0.25>} : tensor<?x?x2x8xbf16>
func.func @rope_fraction_dynamic(%q: tensor<?x?x2x8xbf16>)
    -> tensor<?x?x2x8xbf16> {
  %r = attn.rope %q {rope = #attn.rope<theta = 1.0e6, fraction = 0.25>}
      : tensor<?x?x2x8xbf16>
  return %r : tensor<?x?x2x8xbf16>
}

//===----------------------------------------------------------------------===//
// attn.sdpa
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @sdpa_plain
// CHECK: attn.sdpa %arg0, %arg1, %arg2 : (tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>) -> tensor<2x8x4x4xf32>
func.func @sdpa_plain(%q: tensor<2x8x4x4xf32>, %k: tensor<2x8x2x4xf32>,
                      %v: tensor<2x8x2x4xf32>) -> tensor<2x8x4x4xf32> {
  %o = attn.sdpa %q, %k, %v
      : (tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>)
      -> tensor<2x8x4x4xf32>
  return %o : tensor<2x8x4x4xf32>
}

// With the log-sum-exp of the rows ([B, S, Hq] f32 for bf16 operands).
// CHECK-LABEL: func.func @sdpa_lse
// CHECK: %{{.*}}, %{{.*}} = attn.sdpa %arg0, %arg1, %arg2 {causal} : (tensor<2x8x4x4xbf16>, tensor<2x8x2x4xbf16>, tensor<2x8x2x4xbf16>) -> (tensor<2x8x4x4xbf16>, tensor<2x8x4xf32>)
func.func @sdpa_lse(%q: tensor<2x8x4x4xbf16>, %k: tensor<2x8x2x4xbf16>,
                    %v: tensor<2x8x2x4xbf16>)
    -> (tensor<2x8x4x4xbf16>, tensor<2x8x4xf32>) {
  %o, %lse = attn.sdpa %q, %k, %v {causal}
      : (tensor<2x8x4x4xbf16>, tensor<2x8x2x4xbf16>, tensor<2x8x2x4xbf16>)
      -> (tensor<2x8x4x4xbf16>, tensor<2x8x4xf32>)
  return %o, %lse : tensor<2x8x4x4xbf16>, tensor<2x8x4xf32>
}

// CHECK-LABEL: func.func @flash_attention_lse
// CHECK: attn.flash_attention %arg0, %arg1 outs(%arg2, %arg3) {block_kv = 64 : i64, block_q = 64 : i64, causal} : (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x4x8xf32>, tensor<?x?x4xf32>) -> (tensor<?x?x4x8xf32>, tensor<?x?x4xf32>)
func.func @flash_attention_lse(%q: tensor<?x?x4x8xf32>,
                               %k: tensor<?x?x2x8xf32>,
                               %init: tensor<?x?x4x8xf32>,
                               %lse_init: tensor<?x?x4xf32>)
    -> (tensor<?x?x4x8xf32>, tensor<?x?x4xf32>) {
  %o, %lse = attn.flash_attention %q, %k outs(%init, %lse_init)
      {causal, block_q = 64 : i64, block_kv = 64 : i64}
      : (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x4x8xf32>,
         tensor<?x?x4xf32>) -> (tensor<?x?x4x8xf32>, tensor<?x?x4xf32>)
  return %o, %lse : tensor<?x?x4x8xf32>, tensor<?x?x4xf32>
}

// Decode-like: S = 1 query over T = 8 keys, value dim != head dim, causal,
// window, scale, [num_heads, S, T] bias.
// CHECK-LABEL: func.func @sdpa_bias_3d_causal_window_scale
// CHECK: attn.sdpa %arg0, %arg1, %arg2 bias(%arg3) {causal, scale = 5.000000e-01 : f64, window = 4 : i64} : (tensor<2x1x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x6xf32>, tensor<4x1x8xf32>) -> tensor<2x1x4x6xf32>
func.func @sdpa_bias_3d_causal_window_scale(%q: tensor<2x1x4x4xf32>,
                                            %k: tensor<2x8x2x4xf32>,
                                            %v: tensor<2x8x2x6xf32>,
                                            %b: tensor<4x1x8xf32>)
    -> tensor<2x1x4x6xf32> {
  %o = attn.sdpa %q, %k, %v bias(%b)
      {causal, window = 4 : i64, scale = 0.5 : f64}
      : (tensor<2x1x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x6xf32>,
         tensor<4x1x8xf32>) -> tensor<2x1x4x6xf32>
  return %o : tensor<2x1x4x6xf32>
}

// Dynamic batch, S and T, with an [S, T] bias.
// CHECK-LABEL: func.func @sdpa_bias_2d_dynamic
// CHECK: attn.sdpa %arg0, %arg1, %arg2 bias(%arg3) {causal} : (tensor<?x?x4x4xf16>, tensor<?x?x1x4xf16>, tensor<?x?x1x4xf16>, tensor<?x?xf16>) -> tensor<?x?x4x4xf16>
func.func @sdpa_bias_2d_dynamic(%q: tensor<?x?x4x4xf16>,
                                %k: tensor<?x?x1x4xf16>,
                                %v: tensor<?x?x1x4xf16>,
                                %b: tensor<?x?xf16>) -> tensor<?x?x4x4xf16> {
  %o = attn.sdpa %q, %k, %v bias(%b) {causal}
      : (tensor<?x?x4x4xf16>, tensor<?x?x1x4xf16>, tensor<?x?x1x4xf16>,
         tensor<?x?xf16>) -> tensor<?x?x4x4xf16>
  return %o : tensor<?x?x4x4xf16>
}

// A padded batch: keys whose key_mask is 0 are masked (any integer type).
// CHECK-LABEL: func.func @sdpa_key_mask
// CHECK: attn.sdpa %arg0, %arg1, %arg2 key_mask(%arg3) {causal} : (tensor<?x?x4x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?xi64>) -> tensor<?x?x4x4xf32>
// CHECK: attn.sdpa %arg0, %arg1, %arg2 positions(%arg5) key_mask(%arg4) : (tensor<?x?x4x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?xi32>, tensor<?x?xi1>) -> tensor<?x?x4x4xf32>
func.func @sdpa_key_mask(%q: tensor<?x?x4x4xf32>, %k: tensor<?x?x2x4xf32>,
                         %v: tensor<?x?x2x4xf32>, %m: tensor<?x?xi64>,
                         %b: tensor<?x?xi1>, %pos: tensor<?xi32>)
    -> (tensor<?x?x4x4xf32>, tensor<?x?x4x4xf32>) {
  %o = attn.sdpa %q, %k, %v key_mask(%m) {causal}
      : (tensor<?x?x4x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>,
         tensor<?x?xi64>) -> tensor<?x?x4x4xf32>
  %p = attn.sdpa %q, %k, %v positions(%pos) key_mask(%b)
      : (tensor<?x?x4x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>,
         tensor<?xi32>, tensor<?x?xi1>) -> tensor<?x?x4x4xf32>
  return %o, %p : tensor<?x?x4x4xf32>, tensor<?x?x4x4xf32>
}

//===----------------------------------------------------------------------===//
// Padding masks: attn.mask_tokens, attn.cca, the fused kernel ops
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @mask_tokens
// CHECK: attn.mask_tokens %arg0, %arg1 : tensor<?x?x16xbf16>, tensor<?x?xi32>
func.func @mask_tokens(%x: tensor<?x?x16xbf16>, %m: tensor<?x?xi32>)
    -> tensor<?x?x16xbf16> {
  %y = attn.mask_tokens %x, %m : tensor<?x?x16xbf16>, tensor<?x?xi32>
  return %y : tensor<?x?x16xbf16>
}

// CHECK-LABEL: func.func @cca_padding_mask
// CHECK: attn.cca %arg0 wq(%arg1) wk(%arg2) wv(%arg3) wv_prev(%arg4) conv_dw(%arg5, %arg6) conv_g(%arg7, %arg8) temp(%arg9) wo(%arg10) padding_mask(%arg11)
// CHECK-SAME: : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<16x16xf32>, tensor<?x?xi64>) -> tensor<?x?x16xf32>
func.func @cca_padding_mask(%x: tensor<?x?x16xf32>, %wq: tensor<16x16xf32>,
                            %wk: tensor<8x16xf32>, %wvc: tensor<4x16xf32>,
                            %wvp: tensor<4x16xf32>,
                            %dw: tensor<24x1x2xf32>, %dwb: tensor<24xf32>,
                            %gw: tensor<24x4x2xf32>, %gwb: tensor<24xf32>,
                            %temp: tensor<2xf32>, %wo: tensor<16x16xf32>,
                            %m: tensor<?x?xi64>) -> tensor<?x?x16xf32> {
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wvc) wv_prev(%wvp) conv_dw(%dw, %dwb)
      conv_g(%gw, %gwb) temp(%temp) wo(%wo) padding_mask(%m)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift, causal}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<4x16xf32>, tensor<4x16xf32>, tensor<24x1x2xf32>,
         tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>,
         tensor<2xf32>, tensor<16x16xf32>, tensor<?x?xi64>)
      -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// CHECK-LABEL: func.func @kernels_padding_mask
// CHECK: attn.cca_prologue %arg0 wq(%arg1) wk(%arg2) wv(%arg3) wv_prev(%arg4) conv_dw(%arg5, %arg6) conv_g(%arg7, %arg8) temp(%arg9) padding_mask(%arg10)
// CHECK: attn.flash_attention %{{.*}}, %{{.*}}, %{{.*}} key_mask(%arg10) outs(%{{.*}}) {block_kv = 64 : i64, block_q = 64 : i64, causal}
func.func @kernels_padding_mask(%x: tensor<?x?x16xf32>, %wq: tensor<16x16xf32>,
                                %wk: tensor<8x16xf32>, %wvc: tensor<4x16xf32>,
                                %wvp: tensor<4x16xf32>,
                                %dw: tensor<24x1x2xf32>, %dwb: tensor<24xf32>,
                                %gw: tensor<24x4x2xf32>, %gwb: tensor<24xf32>,
                                %temp: tensor<2xf32>, %m: tensor<?x?xi32>)
    -> tensor<?x?x4x4xf32> {
  %cp_c0 = arith.constant 0 : index
  %cp_c1 = arith.constant 1 : index
  %cp_batch = tensor.dim %x, %cp_c0 : tensor<?x?x16xf32>
  %cp_seq = tensor.dim %x, %cp_c1 : tensor<?x?x16xf32>
  %cp_init0 = tensor.empty(%cp_batch, %cp_seq) : tensor<?x?x4x4xf32>
  %cp_init1 = tensor.empty(%cp_batch, %cp_seq) : tensor<?x?x2x4xf32>
  %cp_init2 = tensor.empty(%cp_batch, %cp_seq) : tensor<?x?x2x4xf32>
  %q, %k, %v = attn.cca_prologue %x wq(%wq) wk(%wk) wv(%wvc) wv_prev(%wvp)
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) padding_mask(%m)
      outs(%cp_init0, %cp_init1, %cp_init2) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift,
       block_s = 64 : i64}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<4x16xf32>, tensor<4x16xf32>, tensor<24x1x2xf32>,
         tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>,
         tensor<2xf32>, tensor<?x?xi32>, tensor<?x?x4x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>)
      -> (tensor<?x?x4x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>)
  %o_c0 = arith.constant 0 : index
  %o_d0 = tensor.dim %q, %o_c0 : tensor<?x?x4x4xf32>
  %o_c1 = arith.constant 1 : index
  %o_d1 = tensor.dim %q, %o_c1 : tensor<?x?x4x4xf32>
  %o_init = tensor.empty(%o_d0, %o_d1) : tensor<?x?x4x4xf32>
  %o = attn.flash_attention %q, %k, %v key_mask(%m)
      outs(%o_init) {block_q = 64 : i64, block_kv = 64 : i64, causal}
      : (tensor<?x?x4x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>,
         tensor<?x?xi32>, tensor<?x?x4x4xf32>) -> tensor<?x?x4x4xf32>
  return %o : tensor<?x?x4x4xf32>
}

// One tile of tokens of a projection, as tiling produces it.
// CHECK-LABEL: func.func @fused_projection_token_offset
// CHECK: attn.fused_projection %arg0, %arg1, %arg2 token_offset(%arg4) outs(%arg3) {block_k = 64 : i64, block_n = 64 : i64, block_s = 64 : i64, head_dim = 4 : i64, rope = #attn.rope<theta = 10000.0>} : (tensor<1x?x16xf32>, tensor<8x16xf32>, tensor<8xf32>, index, tensor<1x?x2x4xf32>) -> tensor<1x?x2x4xf32>
func.func @fused_projection_token_offset(%x: tensor<1x?x16xf32>, %w: tensor<8x16xf32>,
                                         %b: tensor<8xf32>, %init: tensor<1x?x2x4xf32>,
                                         %offset: index) -> tensor<1x?x2x4xf32> {
  %y = attn.fused_projection %x, %w, %b token_offset(%offset) outs(%init)
      {head_dim = 4 : i64, rope = #attn.rope<theta = 10000.0>,
       block_s = 64 : i64, block_n = 64 : i64, block_k = 64 : i64}
      : (tensor<1x?x16xf32>, tensor<8x16xf32>, tensor<8xf32>, index, tensor<1x?x2x4xf32>)
      -> tensor<1x?x2x4xf32>
  return %y : tensor<1x?x2x4xf32>
}

// The input gradient of a projection: W^T given as W, [E, heads * head_dim].
// CHECK-LABEL: func.func @fused_projection_transposed_weight
// CHECK: attn.fused_projection %arg0, %arg1 outs(%arg2) {block_k = 64 : i64, block_n = 64 : i64, block_s = 64 : i64, head_dim = 16 : i64, transposed_weight} : (tensor<2x?x8xf32>, tensor<8x16xf32>, tensor<2x?x1x16xf32>) -> tensor<2x?x1x16xf32>
func.func @fused_projection_transposed_weight(%dy: tensor<2x?x8xf32>, %w: tensor<8x16xf32>,
                                              %init: tensor<2x?x1x16xf32>) -> tensor<2x?x1x16xf32> {
  %dx = attn.fused_projection %dy, %w outs(%init)
      {head_dim = 16 : i64, block_s = 64 : i64, block_n = 64 : i64, block_k = 64 : i64,
       transposed_weight}
      : (tensor<2x?x8xf32>, tensor<8x16xf32>, tensor<2x?x1x16xf32>) -> tensor<2x?x1x16xf32>
  return %dx : tensor<2x?x1x16xf32>
}

// One tile of tokens of a CCA prologue: 2 history rows before its 16 tokens.
// CHECK-LABEL: func.func @cca_prologue_token_offset
// CHECK: attn.cca_prologue %arg0 wq(%arg1) wk(%arg2) wv(%arg3) conv_dw(%arg4, %arg5) conv_g(%arg6, %arg7) temp(%arg8) token_offset(%arg9) outs(%arg10, %arg11, %arg11) {block_s = 64 : i64, conv_kernel_sizes = array<i64: 2, 2>, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64}
func.func @cca_prologue_token_offset(%x: tensor<1x18x16xf32>, %wq: tensor<16x16xf32>,
                                     %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
                                     %dw: tensor<24x1x2xf32>, %dwb: tensor<24xf32>,
                                     %gw: tensor<24x4x2xf32>, %gwb: tensor<24xf32>,
                                     %temp: tensor<2xf32>, %t: index,
                                     %qi: tensor<1x16x4x4xf32>, %ki: tensor<1x16x2x4xf32>)
    -> tensor<1x16x4x4xf32> {
  %q, %k, %v = attn.cca_prologue %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) token_offset(%t)
      outs(%qi, %ki, %ki)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, block_s = 64 : i64}
      : (tensor<1x18x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, index,
         tensor<1x16x4x4xf32>, tensor<1x16x2x4xf32>, tensor<1x16x2x4xf32>)
      -> (tensor<1x16x4x4xf32>, tensor<1x16x2x4xf32>, tensor<1x16x2x4xf32>)
  return %q : tensor<1x16x4x4xf32>
}

// One tile of query rows of a bigger attention, as tiling produces it.
// CHECK-LABEL: func.func @flash_attention_query_rows
// CHECK: attn.flash_attention %arg0, %arg1 query_rows(%arg3, %arg4) outs(%arg2) {block_kv = 64 : i64, block_q = 64 : i64, causal} : (tensor<1x?x2x4xf32>, tensor<1x?x1x4xf32>, index, index, tensor<1x?x2x4xf32>) -> tensor<1x?x2x4xf32>
func.func @flash_attention_query_rows(%q: tensor<1x?x2x4xf32>, %k: tensor<1x?x1x4xf32>,
                                      %init: tensor<1x?x2x4xf32>, %offset: index,
                                      %count: index) -> tensor<1x?x2x4xf32> {
  %o = attn.flash_attention %q, %k query_rows(%offset, %count) outs(%init)
      {block_q = 64 : i64, block_kv = 64 : i64, causal}
      : (tensor<1x?x2x4xf32>, tensor<1x?x1x4xf32>, index, index, tensor<1x?x2x4xf32>)
      -> tensor<1x?x2x4xf32>
  return %o : tensor<1x?x2x4xf32>
}

//===----------------------------------------------------------------------===//
// Attributes on their own
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func private @attributes
// CHECK-SAME: clamped = #attn.temperature<clamped>
// CHECK-SAME: kv = #attn.sharing<kv>
// CHECK-SAME: none = #attn.sharing<none>
// CHECK-SAME: qk = #attn.sharing<qk>
// CHECK-SAME: qkv = #attn.sharing<qkv>
// CHECK-SAME: raw = #attn.temperature<raw>
// CHECK-SAME: rope_full = #attn.rope<theta = 10000.0>
// CHECK-SAME: rope_half = #attn.rope<theta = 10000.0, fraction = 0.5>
// CHECK-SAME: rope_zero = #attn.rope<theta = 2.5, fraction = 0.0>
func.func private @attributes() attributes {
  none = #attn.sharing<none>, kv = #attn.sharing<kv>,
  qk = #attn.sharing<qk>, qkv = #attn.sharing<qkv>,
  raw = #attn.temperature<raw>, clamped = #attn.temperature<clamped>,
  rope_full = #attn.rope<theta = 10000.0>,
  rope_half = #attn.rope<theta = 10000.0, fraction = 0.5>,
  rope_zero = #attn.rope<theta = 2.5, fraction = 0.0>
}

// RoPE parameters print in the shortest form that reads back exactly.
// CHECK-LABEL: func.func @rope_float_printing
// CHECK: #attn.rope<theta = 0.1, fraction = 0.25>
// CHECK: #attn.rope<theta = 1.0e+20>
// CHECK: #attn.rope<theta = 500000.0>
func.func @rope_float_printing(%q: tensor<1x2x2x8xf32>) -> tensor<1x2x2x8xf32> {
  %r = attn.rope %q {rope = #attn.rope<theta = 0.1, fraction = 0.25>} : tensor<1x2x2x8xf32>
  %s = attn.rope %r {rope = #attn.rope<theta = 1.0e20>} : tensor<1x2x2x8xf32>
  %t = attn.rope %s {rope = #attn.rope<theta = 500000.0>} : tensor<1x2x2x8xf32>
  return %t : tensor<1x2x2x8xf32>
}

//===----------------------------------------------------------------------===//
// KV cache and decode ops
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @qkv_decode_none_contiguous
// CHECK: attn.qkv_decode <none> %{{.*}} wq(%{{.*}}) wk(%{{.*}}) wv(%{{.*}}) wo(%{{.*}}) cache(%{{.*}}, %{{.*}}) positions(%{{.*}}) {head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, window = 8 : i64}
func.func @qkv_decode_none_contiguous(%x: tensor<2x1x16xf32>,
    %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
    %wo: tensor<16x16xf32>, %kc: tensor<2x32x2x4xf32>,
    %vc: tensor<2x32x2x4xf32>, %pos: tensor<2xi32>)
    -> (tensor<2x1x16xf32>, tensor<2x32x2x4xf32>, tensor<2x32x2x4xf32>) {
  %y, %k2, %v2 = attn.qkv_decode <none> %x wq(%wq) wk(%wk) wv(%wv) wo(%wo)
      cache(%kc, %vc) positions(%pos)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       window = 8 : i64}
      : (tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<16x16xf32>, tensor<2x32x2x4xf32>,
         tensor<2x32x2x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x16xf32>, tensor<2x32x2x4xf32>, tensor<2x32x2x4xf32>)
  return %y, %k2, %v2
      : tensor<2x1x16xf32>, tensor<2x32x2x4xf32>, tensor<2x32x2x4xf32>
}

// CHECK-LABEL: func.func @qkv_decode_kv_paged
// CHECK: attn.qkv_decode <kv> %{{.*}} wq(%{{.*}}) wk(%{{.*}}) wo(%{{.*}}) bk(%{{.*}}) cache(%{{.*}}) positions(%{{.*}}) lengths(%{{.*}}) block_table(%{{.*}}) {{.*}}rope = #attn.rope<theta = 10000.0>
func.func @qkv_decode_kv_paged(%x: tensor<?x?x16xbf16>,
    %wq: tensor<16x16xbf16>, %wk: tensor<8x16xbf16>, %bk: tensor<8xbf16>,
    %wo: tensor<16x16xbf16>, %kv: tensor<?x16x2x4xbf16>, %pos: tensor<?xi64>,
    %len: tensor<?xi64>, %bt: tensor<?x?xi32>)
    -> (tensor<?x?x16xbf16>, tensor<?x16x2x4xbf16>) {
  %y, %kv2 = attn.qkv_decode <kv> %x wq(%wq) wk(%wk) wo(%wo) bk(%bk)
      cache(%kv) positions(%pos) lengths(%len) block_table(%bt)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       rope = #attn.rope<theta = 10000.0>}
      : (tensor<?x?x16xbf16>, tensor<16x16xbf16>, tensor<8x16xbf16>,
         tensor<16x16xbf16>, tensor<8xbf16>, tensor<?x16x2x4xbf16>,
         tensor<?xi64>, tensor<?xi64>, tensor<?x?xi32>)
      -> (tensor<?x?x16xbf16>, tensor<?x16x2x4xbf16>)
  return %y, %kv2 : tensor<?x?x16xbf16>, tensor<?x16x2x4xbf16>
}

// CCGQA: Hq 2, Hk 1, d 4 -> Lq 8, Lk 4, C 12, P 2.
// CHECK-LABEL: func.func @cca_decode
// CHECK: attn.cca_decode %{{.*}} wq(%{{.*}}) wk(%{{.*}}) wv(%{{.*}}) wv_prev(%{{.*}}) conv_dw(%{{.*}}, %{{.*}}) conv_g(%{{.*}}, %{{.*}}) temp(%{{.*}}) wo(%{{.*}}) cache(%{{.*}}, %{{.*}}) conv_state(%{{.*}}) shift_state(%{{.*}}) positions(%{{.*}}) {conv_kernel_sizes = array<i64: 2, 2>, {{.*}}qk_mean, {{.*}}temperature = #attn.temperature<clamped>, value_shift}
func.func @cca_decode(%x: tensor<2x1x16xf32>, %wq: tensor<8x16xf32>,
    %wk: tensor<4x16xf32>, %wv: tensor<2x16xf32>, %wvp: tensor<2x16xf32>,
    %dw: tensor<12x1x2xf32>, %dwb: tensor<12xf32>, %gw: tensor<12x4x2xf32>,
    %gwb: tensor<12xf32>, %temp: tensor<1xf32>, %wo: tensor<16x8xf32>,
    %kc: tensor<2x64x1x4xf32>, %vc: tensor<2x64x1x4xf32>,
    %cs: tensor<2x2x12xf32>, %ss: tensor<2x1x2xf32>, %pos: tensor<2xi32>)
    -> (tensor<2x1x16xf32>, tensor<2x64x1x4xf32>, tensor<2x64x1x4xf32>,
        tensor<2x2x12xf32>, tensor<2x1x2xf32>) {
  %y, %k2, %v2, %c2, %s2 = attn.cca_decode %x wq(%wq) wk(%wk) wv(%wv)
      wv_prev(%wvp) conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) wo(%wo)
      cache(%kc, %vc) conv_state(%cs) shift_state(%ss) positions(%pos)
      {num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift,
       temperature = #attn.temperature<clamped>}
      : (tensor<2x1x16xf32>, tensor<8x16xf32>, tensor<4x16xf32>,
         tensor<2x16xf32>, tensor<2x16xf32>, tensor<12x1x2xf32>,
         tensor<12xf32>, tensor<12x4x2xf32>, tensor<12xf32>, tensor<1xf32>,
         tensor<16x8xf32>, tensor<2x64x1x4xf32>, tensor<2x64x1x4xf32>,
         tensor<2x2x12xf32>, tensor<2x1x2xf32>, tensor<2xi32>)
      -> (tensor<2x1x16xf32>, tensor<2x64x1x4xf32>, tensor<2x64x1x4xf32>,
          tensor<2x2x12xf32>, tensor<2x1x2xf32>)
  return %y, %k2, %v2, %c2, %s2
      : tensor<2x1x16xf32>, tensor<2x64x1x4xf32>, tensor<2x64x1x4xf32>,
        tensor<2x2x12xf32>, tensor<2x1x2xf32>
}

// CHECK-LABEL: func.func @cache_primitives
// CHECK: attn.cache_update %{{.*}}, %{{.*}} positions(%{{.*}}) lengths(%{{.*}}) block_table(%{{.*}}) : (tensor<9x4x2x4xf32>, tensor<2x?x2x4xf32>, tensor<2xi32>, tensor<2xi32>, tensor<2x4xi32>) -> tensor<9x4x2x4xf32>
// CHECK: attn.cache_gather %{{.*}} block_table(%{{.*}}) : (tensor<9x4x2x4xf32>, tensor<2x4xi32>) -> tensor<2x16x2x4xf32>
// CHECK: attn.state_update %{{.*}}, %{{.*}} lengths(%{{.*}}) : (tensor<2x2x12xf32>, tensor<2x?x12xf32>, tensor<2xi32>) -> tensor<2x2x12xf32>
// CHECK: attn.rope %{{.*}} positions(%{{.*}} : tensor<2xi32>) {rope = #attn.rope<theta = 10000.0>} : tensor<2x?x4x4xf32>
// CHECK: attn.sdpa %{{.*}}, %{{.*}}, %{{.*}} positions(%{{.*}}) {causal} : (tensor<2x?x4x4xf32>, tensor<2x16x2x4xf32>, tensor<2x16x2x4xf32>, tensor<2xi32>) -> tensor<2x?x4x4xf32>
// CHECK: attn.value_shift %{{.*}}, %{{.*}} state(%{{.*}}) : (tensor<2x?x2xf32>, tensor<2x?x2xf32>, tensor<2x1x2xf32>) -> tensor<2x?x4xf32>
func.func @cache_primitives(%cache: tensor<9x4x2x4xf32>,
    %k: tensor<2x?x2x4xf32>, %pos: tensor<2xi32>, %len: tensor<2xi32>,
    %bt: tensor<2x4xi32>, %s: tensor<2x2x12xf32>, %u: tensor<2x?x12xf32>,
    %q: tensor<2x?x4x4xf32>, %cur: tensor<2x?x2xf32>,
    %prev: tensor<2x?x2xf32>, %vs: tensor<2x1x2xf32>)
    -> (tensor<2x?x4x4xf32>, tensor<2x2x12xf32>, tensor<2x?x4xf32>) {
  %c2 = attn.cache_update %cache, %k positions(%pos) lengths(%len)
      block_table(%bt)
      : (tensor<9x4x2x4xf32>, tensor<2x?x2x4xf32>, tensor<2xi32>,
         tensor<2xi32>, tensor<2x4xi32>) -> tensor<9x4x2x4xf32>
  %view = attn.cache_gather %c2 block_table(%bt)
      : (tensor<9x4x2x4xf32>, tensor<2x4xi32>) -> tensor<2x16x2x4xf32>
  %s2 = attn.state_update %s, %u lengths(%len)
      : (tensor<2x2x12xf32>, tensor<2x?x12xf32>, tensor<2xi32>)
      -> tensor<2x2x12xf32>
  %qr = attn.rope %q positions(%pos : tensor<2xi32>)
      {rope = #attn.rope<theta = 10000.0>} : tensor<2x?x4x4xf32>
  %o = attn.sdpa %qr, %view, %view positions(%pos) {causal}
      : (tensor<2x?x4x4xf32>, tensor<2x16x2x4xf32>, tensor<2x16x2x4xf32>,
         tensor<2xi32>) -> tensor<2x?x4x4xf32>
  %v = attn.value_shift %cur, %prev state(%vs)
      : (tensor<2x?x2xf32>, tensor<2x?x2xf32>, tensor<2x1x2xf32>)
      -> tensor<2x?x4xf32>
  return %o, %s2, %v : tensor<2x?x4x4xf32>, tensor<2x2x12xf32>, tensor<2x?x4xf32>
}
