// RUN: attnfuse-opt %s -canonicalize -split-input-file | FileCheck %s

// A window of at least the static sequence length masks nothing.
// CHECK-LABEL: func.func @qkv_window_equal_seq_dropped
// CHECK: attn.qkv_attention <kv>
// CHECK-SAME: {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64}
// CHECK-NOT: window
func.func @qkv_window_equal_seq_dropped(%x: tensor<2x8x16xf32>,
                                        %wq: tensor<16x16xf32>,
                                        %wk: tensor<8x16xf32>,
                                        %wo: tensor<16x16xf32>)
    -> tensor<2x8x16xf32> {
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       causal, window = 8 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// Also without a causal mask, and with a window far past the sequence.
// CHECK-LABEL: func.func @qkv_window_larger_than_seq_dropped
// CHECK: attn.qkv_attention <none>
// CHECK-SAME: {head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64}
// CHECK-NOT: window
func.func @qkv_window_larger_than_seq_dropped(%x: tensor<?x8x16xf32>,
                                              %wq: tensor<16x16xf32>,
                                              %wk: tensor<8x16xf32>,
                                              %wv: tensor<8x16xf32>,
                                              %wo: tensor<16x16xf32>)
    -> tensor<?x8x16xf32> {
  %y = attn.qkv_attention <none> %x wq(%wq) wk(%wk) wv(%wv) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       window = 1000 : i64}
      : (tensor<?x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<?x8x16xf32>
  return %y : tensor<?x8x16xf32>
}

// -----

// A window shorter than the sequence masks keys: kept.
// CHECK-LABEL: func.func @qkv_window_smaller_kept
// CHECK: attn.qkv_attention <qkv>
// CHECK-SAME: window = 7 : i64
func.func @qkv_window_smaller_kept(%x: tensor<2x8x16xf32>,
                                   %wk: tensor<8x16xf32>,
                                   %wo: tensor<16x8xf32>)
    -> tensor<2x8x16xf32> {
  %y = attn.qkv_attention <qkv> %x wk(%wk) wo(%wo)
      {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       causal, window = 7 : i64}
      : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// With a dynamic sequence the window may mask keys: kept.
// CHECK-LABEL: func.func @qkv_window_dynamic_seq_kept
// CHECK: attn.qkv_attention <qk>
// CHECK-SAME: window = 1000 : i64
func.func @qkv_window_dynamic_seq_kept(%x: tensor<2x?x16xf32>,
                                       %wk: tensor<8x16xf32>,
                                       %wv: tensor<8x16xf32>,
                                       %wo: tensor<16x8xf32>)
    -> tensor<2x?x16xf32> {
  %y = attn.qkv_attention <qk> %x wk(%wk) wv(%wv) wo(%wo)
      {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       causal, window = 1000 : i64}
      : (tensor<2x?x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>,
         tensor<16x8xf32>) -> tensor<2x?x16xf32>
  return %y : tensor<2x?x16xf32>
}

// -----

// CHECK-LABEL: func.func @cca_window_equal_seq_dropped
// CHECK: attn.cca
// CHECK-SAME: {causal, conv_kernel_sizes = array<i64: 2, 2>, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64}
// CHECK-NOT: window
func.func @cca_window_equal_seq_dropped(%x: tensor<2x8x16xf32>,
                                        %wq: tensor<16x16xf32>,
                                        %wk: tensor<8x16xf32>,
                                        %wv: tensor<8x16xf32>,
                                        %dw: tensor<24x1x2xf32>,
                                        %dwb: tensor<24xf32>,
                                        %gw: tensor<24x4x2xf32>,
                                        %gwb: tensor<24xf32>,
                                        %temp: tensor<2xf32>,
                                        %wo: tensor<16x16xf32>)
    -> tensor<2x8x16xf32> {
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv) conv_dw(%dw, %dwb)
      conv_g(%gw, %gwb) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, causal, window = 8 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>,
         tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// CHECK-LABEL: func.func @cca_window_smaller_kept
// CHECK: attn.cca
// CHECK-SAME: window = 3 : i64
func.func @cca_window_smaller_kept(%x: tensor<2x8x16xf32>,
                                   %wq: tensor<16x16xf32>,
                                   %wk: tensor<8x16xf32>,
                                   %wv: tensor<8x16xf32>,
                                   %dw: tensor<24x1x2xf32>,
                                   %dwb: tensor<24xf32>,
                                   %gw: tensor<24x4x2xf32>,
                                   %gwb: tensor<24xf32>,
                                   %temp: tensor<2xf32>,
                                   %wo: tensor<16x16xf32>)
    -> tensor<2x8x16xf32> {
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv) conv_dw(%dw, %dwb)
      conv_g(%gw, %gwb) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, causal, window = 3 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>,
         tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// CHECK-LABEL: func.func @cca_window_dynamic_seq_kept
// CHECK: attn.cca
// CHECK-SAME: window = 64 : i64
func.func @cca_window_dynamic_seq_kept(%x: tensor<?x?x16xf32>,
                                       %wq: tensor<16x16xf32>,
                                       %wk: tensor<8x16xf32>,
                                       %wv: tensor<8x16xf32>,
                                       %dw: tensor<24x1x2xf32>,
                                       %dwb: tensor<24xf32>,
                                       %gw: tensor<24x4x2xf32>,
                                       %gwb: tensor<24xf32>,
                                       %temp: tensor<2xf32>,
                                       %wo: tensor<16x16xf32>)
    -> tensor<?x?x16xf32> {
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv) conv_dw(%dw, %dwb)
      conv_g(%gw, %gwb) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, causal, window = 64 : i64}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>,
         tensor<16x16xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

// RoPE that rotates no dimension is dropped from the layer.
// CHECK-LABEL: func.func @qkv_rope_fraction_zero_dropped
// CHECK: attn.qkv_attention <kv>
// CHECK-SAME: {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64}
// CHECK-NOT: rope
func.func @qkv_rope_fraction_zero_dropped(%x: tensor<?x?x16xf32>,
                                          %wq: tensor<16x16xf32>,
                                          %wk: tensor<8x16xf32>,
                                          %wo: tensor<16x16xf32>)
    -> tensor<?x?x16xf32> {
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       causal, rope = #attn.rope<theta = 10000.0, fraction = 0.0>}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

// CHECK-LABEL: func.func @qkv_rope_fraction_nonzero_kept
// CHECK: attn.qkv_attention <kv>
// CHECK-SAME: rope = #attn.rope<theta = 10000.0, fraction = 0.5>
func.func @qkv_rope_fraction_nonzero_kept(%x: tensor<?x?x16xf32>,
                                          %wq: tensor<16x16xf32>,
                                          %wk: tensor<8x16xf32>,
                                          %wo: tensor<16x16xf32>)
    -> tensor<?x?x16xf32> {
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       causal, rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

// Both a no-op window and a no-op RoPE go; the rest stays.
// CHECK-LABEL: func.func @qkv_window_and_rope_dropped
// CHECK: attn.qkv_attention <qkv>
// CHECK-SAME: {head_dim = 4 : i64, num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 5.000000e-01 : f64}
func.func @qkv_window_and_rope_dropped(%x: tensor<2x8x16xf32>,
                                       %wk: tensor<8x16xf32>,
                                       %wo: tensor<16x8xf32>)
    -> tensor<2x8x16xf32> {
  %y = attn.qkv_attention <qkv> %x wk(%wk) wo(%wo)
      {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       window = 9 : i64, scale = 0.5 : f64,
       rope = #attn.rope<theta = 10000.0, fraction = 0.0>}
      : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// CHECK-LABEL: func.func @cca_rope_fraction_zero_dropped
// CHECK: attn.cca
// CHECK-SAME: {causal, conv_kernel_sizes = array<i64: 2, 2>, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, qk_mean, value_shift}
// CHECK-NOT: rope
func.func @cca_rope_fraction_zero_dropped(%x: tensor<?x?x16xf32>,
                                          %wq: tensor<16x16xf32>,
                                          %wk: tensor<8x16xf32>,
                                          %wvc: tensor<4x16xf32>,
                                          %wvp: tensor<4x16xf32>,
                                          %dw: tensor<24x1x2xf32>,
                                          %dwb: tensor<24xf32>,
                                          %gw: tensor<24x4x2xf32>,
                                          %gwb: tensor<24xf32>,
                                          %temp: tensor<2xf32>,
                                          %wo: tensor<16x16xf32>)
    -> tensor<?x?x16xf32> {
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wvc) wv_prev(%wvp) conv_dw(%dw, %dwb)
      conv_g(%gw, %gwb) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift, causal,
       rope = #attn.rope<theta = 10000.0, fraction = 0.0>}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<4x16xf32>, tensor<4x16xf32>, tensor<24x1x2xf32>,
         tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>,
         tensor<16x16xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

// CHECK-LABEL: func.func @cca_rope_fraction_nonzero_kept
// CHECK: attn.cca
// CHECK-SAME: rope = #attn.rope<theta = 10000.0, fraction = 0.5>
func.func @cca_rope_fraction_nonzero_kept(%x: tensor<?x?x16xf32>,
                                          %wq: tensor<16x16xf32>,
                                          %wk: tensor<8x16xf32>,
                                          %wv: tensor<8x16xf32>,
                                          %dw: tensor<24x1x2xf32>,
                                          %dwb: tensor<24xf32>,
                                          %gw: tensor<24x4x2xf32>,
                                          %gwb: tensor<24xf32>,
                                          %temp: tensor<2xf32>,
                                          %wo: tensor<16x16xf32>)
    -> tensor<?x?x16xf32> {
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv) conv_dw(%dw, %dwb)
      conv_g(%gw, %gwb) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, causal,
       rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>,
         tensor<16x16xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

// attn.rope rotating no dimension folds to its input.
// CHECK-LABEL: func.func @rope_fraction_zero_folded
// CHECK-SAME: (%[[Q:.+]]: tensor<?x?x2x4xf32>)
// CHECK-NOT: attn.rope
// CHECK: return %[[Q]]
func.func @rope_fraction_zero_folded(%q: tensor<?x?x2x4xf32>)
    -> tensor<?x?x2x4xf32> {
  %r = attn.rope %q {rope = #attn.rope<theta = 10000.0, fraction = 0.0>}
      : tensor<?x?x2x4xf32>
  return %r : tensor<?x?x2x4xf32>
}

// -----

// CHECK-LABEL: func.func @rope_fraction_nonzero_kept
// CHECK: %[[R:.+]] = attn.rope %arg0 {rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
// CHECK: return %[[R]]
func.func @rope_fraction_nonzero_kept(%q: tensor<2x8x2x4xf32>)
    -> tensor<2x8x2x4xf32> {
  %r = attn.rope %q {rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
      : tensor<2x8x2x4xf32>
  return %r : tensor<2x8x2x4xf32>
}

// -----

// A chain of no-op rotations folds away entirely.
// CHECK-LABEL: func.func @rope_chain_folded
// CHECK-SAME: (%[[Q:.+]]: tensor<2x8x2x4xf32>)
// CHECK-NOT: attn.rope
// CHECK: return %[[Q]]
func.func @rope_chain_folded(%q: tensor<2x8x2x4xf32>) -> tensor<2x8x2x4xf32> {
  %r0 = attn.rope %q {rope = #attn.rope<theta = 10000.0, fraction = 0.0>}
      : tensor<2x8x2x4xf32>
  %r1 = attn.rope %r0 {rope = #attn.rope<theta = 500.0, fraction = 0.0>}
      : tensor<2x8x2x4xf32>
  return %r1 : tensor<2x8x2x4xf32>
}

// -----

// sdpa: a window of at least T keys masks nothing, whatever S.
// CHECK-LABEL: func.func @sdpa_window_equal_keys_dropped
// CHECK: attn.sdpa %arg0, %arg1, %arg2 {causal} :
func.func @sdpa_window_equal_keys_dropped(%q: tensor<2x?x4x4xf32>,
                                          %k: tensor<2x8x2x4xf32>,
                                          %v: tensor<2x8x2x4xf32>)
    -> tensor<2x?x4x4xf32> {
  %o = attn.sdpa %q, %k, %v {causal, window = 8 : i64}
      : (tensor<2x?x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>)
      -> tensor<2x?x4x4xf32>
  return %o : tensor<2x?x4x4xf32>
}

// -----

// Decode: one query over T = 8 keys, window past T, with bias and scale.
// CHECK-LABEL: func.func @sdpa_window_larger_than_keys_dropped
// CHECK: attn.sdpa %arg0, %arg1, %arg2 bias(%arg3) {scale = 2.500000e-01 : f64} :
func.func @sdpa_window_larger_than_keys_dropped(%q: tensor<2x1x4x4xf32>,
                                                %k: tensor<2x8x2x4xf32>,
                                                %v: tensor<2x8x2x4xf32>,
                                                %b: tensor<1x8xf32>)
    -> tensor<2x1x4x4xf32> {
  %o = attn.sdpa %q, %k, %v bias(%b) {window = 20 : i64, scale = 0.25 : f64}
      : (tensor<2x1x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>,
         tensor<1x8xf32>) -> tensor<2x1x4x4xf32>
  return %o : tensor<2x1x4x4xf32>
}

// -----

// A window one shorter than T masks the oldest key of the last query: kept.
// CHECK-LABEL: func.func @sdpa_window_smaller_kept
// CHECK: attn.sdpa %arg0, %arg1, %arg2 {causal, window = 7 : i64} :
func.func @sdpa_window_smaller_kept(%q: tensor<2x1x4x4xf32>,
                                    %k: tensor<2x8x2x4xf32>,
                                    %v: tensor<2x8x2x4xf32>)
    -> tensor<2x1x4x4xf32> {
  %o = attn.sdpa %q, %k, %v {causal, window = 7 : i64}
      : (tensor<2x1x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>)
      -> tensor<2x1x4x4xf32>
  return %o : tensor<2x1x4x4xf32>
}

// -----

// With a dynamic T the window may mask keys: kept, even when S is static.
// CHECK-LABEL: func.func @sdpa_window_dynamic_keys_kept
// CHECK: attn.sdpa %arg0, %arg1, %arg2 {causal, window = 100 : i64} :
func.func @sdpa_window_dynamic_keys_kept(%q: tensor<2x8x4x4xf32>,
                                         %k: tensor<2x?x2x4xf32>,
                                         %v: tensor<2x?x2x4xf32>)
    -> tensor<2x8x4x4xf32> {
  %o = attn.sdpa %q, %k, %v {causal, window = 100 : i64}
      : (tensor<2x8x4x4xf32>, tensor<2x?x2x4xf32>, tensor<2x?x2x4xf32>)
      -> tensor<2x8x4x4xf32>
  return %o : tensor<2x8x4x4xf32>
}
