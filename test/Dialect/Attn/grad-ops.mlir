// RUN: attnfuse-opt %s | attnfuse-opt | FileCheck %s
// RUN: attnfuse-opt %s --mlir-print-op-generic | attnfuse-opt | FileCheck %s

// Round trip of every gradient op, in the custom and the generic form.

// CHECK-LABEL: func.func @project_grad
// CHECK: %{{.*}}, %{{.*}}, %{{.*}} = attn.project_grad %arg0, %arg1, %arg2 : (tensor<?x?x16xf32>, tensor<8x16xf32>, tensor<?x?x8xf32>) -> (tensor<?x?x16xf32>, tensor<8x16xf32>, tensor<8xf32>)
func.func @project_grad(%x: tensor<?x?x16xf32>, %w: tensor<8x16xf32>,
                        %dy: tensor<?x?x8xf32>) {
  %dx, %dw, %db = attn.project_grad %x, %w, %dy
      : (tensor<?x?x16xf32>, tensor<8x16xf32>, tensor<?x?x8xf32>)
      -> (tensor<?x?x16xf32>, tensor<8x16xf32>, tensor<8xf32>)
  return
}

// CHECK-LABEL: func.func @causal_conv1d_grad
// CHECK: attn.causal_conv1d_grad %arg0, %arg1, %arg2 {groups = 3 : i64, padding = 2 : i64} : (tensor<2x7x12xbf16>, tensor<12x4x2xbf16>, tensor<2x8x12xbf16>) -> (tensor<2x7x12xbf16>, tensor<12x4x2xbf16>, tensor<12xbf16>)
func.func @causal_conv1d_grad(%u: tensor<2x7x12xbf16>, %w: tensor<12x4x2xbf16>,
                              %dm: tensor<2x8x12xbf16>) {
  %dx, %dw, %db = attn.causal_conv1d_grad %u, %w, %dm
      {groups = 3 : i64, padding = 2 : i64}
      : (tensor<2x7x12xbf16>, tensor<12x4x2xbf16>, tensor<2x8x12xbf16>)
      -> (tensor<2x7x12xbf16>, tensor<12x4x2xbf16>, tensor<12xbf16>)
  return
}

// CHECK-LABEL: func.func @qk_mean_grad
// CHECK: attn.qk_mean_grad %arg0, %arg1 : tensor<1x5x4x8xf32>, tensor<1x5x2x8xf32>
func.func @qk_mean_grad(%dq: tensor<1x5x4x8xf32>, %dk: tensor<1x5x2x8xf32>) {
  %dqr, %dkr = attn.qk_mean_grad %dq, %dk
      : tensor<1x5x4x8xf32>, tensor<1x5x2x8xf32>
  return
}

// CHECK-LABEL: func.func @qk_norm_grad
// CHECK: attn.qk_norm_grad %arg0, %arg1, %arg2, %arg3, %arg4 {eps = 1.1920928955078125E-7 : f64, norm = #attn.norm<clamp_eps>, temperature = #attn.temperature<clamped>} : tensor<1x5x4x8xf32>, tensor<1x5x2x8xf32>, tensor<2xf32>
func.func @qk_norm_grad(%q: tensor<1x5x4x8xf32>, %k: tensor<1x5x2x8xf32>,
                        %temp: tensor<2xf32>, %dq: tensor<1x5x4x8xf32>,
                        %dk: tensor<1x5x2x8xf32>) {
  %gq, %gk, %gt = attn.qk_norm_grad %q, %k, %temp, %dq, %dk
      {temperature = #attn.temperature<clamped>,
       norm = #attn.norm<clamp_eps>, eps = 1.1920928955078125e-07 : f64}
      : tensor<1x5x4x8xf32>, tensor<1x5x2x8xf32>, tensor<2xf32>
  return
}

// CHECK-LABEL: func.func @value_shift_grad
// CHECK: attn.value_shift_grad %arg0 : (tensor<?x?x16xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>)
func.func @value_shift_grad(%dv: tensor<?x?x16xf32>) {
  %dc, %dp = attn.value_shift_grad %dv
      : (tensor<?x?x16xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>)
  return
}

// CHECK-LABEL: func.func @rope_grad
// CHECK: attn.rope_grad %arg0 {rope = #attn.rope<theta = 10000.0, fraction = 0.5>} : tensor<?x?x4x8xf32>
// CHECK: attn.rope_grad %arg0 positions(%arg1 : tensor<2xi32>) {rope = #attn.rope<theta = 10000.0>} : tensor<?x?x4x8xf32>
func.func @rope_grad(%g: tensor<?x?x4x8xf32>, %pos: tensor<2xi32>) {
  %0 = attn.rope_grad %g {rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
      : tensor<?x?x4x8xf32>
  %1 = attn.rope_grad %g positions(%pos : tensor<2xi32>)
      {rope = #attn.rope<theta = 10000.0>} : tensor<?x?x4x8xf32>
  return
}

// CHECK-LABEL: func.func @sdpa_grad
// CHECK: attn.sdpa_grad %arg0, %arg1, %arg2, %arg3, %arg4 {causal, window = 3 : i64} : (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x4x8xf32>, tensor<?x?x4x8xf32>) -> (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>)
// CHECK: attn.sdpa_grad %arg0, %arg1, %arg1, %arg3, %arg4 bias(%arg5) key_mask(%arg6) {scale = 2.500000e-01 : f64} : (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x4x8xf32>, tensor<?x?x4x8xf32>, tensor<4x?x?xf32>, tensor<?x?xi64>) -> (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<4x?x?xf32>)
func.func @sdpa_grad(%q: tensor<?x?x4x8xf32>, %k: tensor<?x?x2x8xf32>,
                     %v: tensor<?x?x2x8xf32>, %o: tensor<?x?x4x8xf32>,
                     %do: tensor<?x?x4x8xf32>, %bias: tensor<4x?x?xf32>,
                     %mask: tensor<?x?xi64>) {
  %dq, %dk, %dv = attn.sdpa_grad %q, %k, %v, %o, %do {causal, window = 3 : i64}
      : (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>,
         tensor<?x?x4x8xf32>, tensor<?x?x4x8xf32>)
      -> (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>)
  // K=V: one tensor in both roles, a bias and a key mask.
  %gq, %gk, %gv, %gb = attn.sdpa_grad %q, %k, %k, %o, %do bias(%bias)
      key_mask(%mask) {scale = 0.25 : f64}
      : (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>,
         tensor<?x?x4x8xf32>, tensor<?x?x4x8xf32>, tensor<4x?x?xf32>,
         tensor<?x?xi64>)
      -> (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>,
          tensor<4x?x?xf32>)
  return
}

// CHECK-LABEL: func.func @flash_attention_grad
// CHECK: attn.flash_attention_grad %arg0, %arg1, %arg2, %arg3, %arg4 outs(%arg5, %arg6, %arg7) {block_kv = 32 : i64, block_q = 16 : i64, causal, window = 3 : i64} : (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x6xf32>, tensor<?x?x4x6xf32>, tensor<?x?x4x6xf32>, tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x6xf32>) -> (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x6xf32>)
// CHECK: attn.flash_attention_grad %arg0, %arg1, %arg2, %arg3, %arg4 key_mask(%arg8) outs(%arg5, %arg6, %arg7) {block_kv = 8 : i64, block_q = 8 : i64, scale = 2.500000e-01 : f64} : (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x6xf32>, tensor<?x?x4x6xf32>, tensor<?x?x4x6xf32>, tensor<?x?xi32>, tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x6xf32>) -> (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x6xf32>)
func.func @flash_attention_grad(%q: tensor<?x?x4x8xf32>, %k: tensor<?x?x2x8xf32>,
                                %v: tensor<?x?x2x6xf32>, %o: tensor<?x?x4x6xf32>,
                                %do: tensor<?x?x4x6xf32>,
                                %dq0: tensor<?x?x4x8xf32>,
                                %dk0: tensor<?x?x2x8xf32>,
                                %dv0: tensor<?x?x2x6xf32>,
                                %mask: tensor<?x?xi32>) {
  %dq, %dk, %dv = attn.flash_attention_grad %q, %k, %v, %o, %do
      outs(%dq0, %dk0, %dv0)
      {causal, window = 3 : i64, block_q = 16 : i64, block_kv = 32 : i64}
      : (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x6xf32>,
         tensor<?x?x4x6xf32>, tensor<?x?x4x6xf32>, tensor<?x?x4x8xf32>,
         tensor<?x?x2x8xf32>, tensor<?x?x2x6xf32>)
      -> (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x6xf32>)
  %gq, %gk, %gv = attn.flash_attention_grad %q, %k, %v, %o, %do
      key_mask(%mask) outs(%dq0, %dk0, %dv0)
      {scale = 0.25 : f64, block_q = 8 : i64, block_kv = 8 : i64}
      : (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x6xf32>,
         tensor<?x?x4x6xf32>, tensor<?x?x4x6xf32>, tensor<?x?xi32>,
         tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x6xf32>)
      -> (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x6xf32>)
  return
}

// CHECK-LABEL: func.func @fused_weight_grad
// CHECK: attn.fused_weight_grad %arg0, %arg1 outs(%arg2) {block_k = 16 : i64, block_m = 8 : i64, block_n = 32 : i64} : (tensor<?x64xf32>, tensor<?x32xf32>, tensor<32x64xf32>) -> tensor<32x64xf32>
func.func @fused_weight_grad(%x: tensor<?x64xf32>, %dy: tensor<?x32xf32>,
                             %init: tensor<32x64xf32>) -> tensor<32x64xf32> {
  %dw = attn.fused_weight_grad %x, %dy outs(%init)
      {block_m = 8 : i64, block_n = 32 : i64, block_k = 16 : i64}
      : (tensor<?x64xf32>, tensor<?x32xf32>, tensor<32x64xf32>)
      -> tensor<32x64xf32>
  return %dw : tensor<32x64xf32>
}

// A logit bias, per head and shared, with its gradient accumulated in f32
// (a fourth init and result; the third for K=V).
// CHECK-LABEL: func.func @flash_attention_grad_bias
// CHECK: %query_grad, %key_grad, %value_grad, %bias_grad = attn.flash_attention_grad %arg0, %arg1, %arg1, %arg2, %arg2 bias(%arg3) outs(%arg0, %arg1, %arg1) accumulate(%arg5) {block_kv = 8 : i64, block_q = 8 : i64, causal} : (tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x4x8xbf16>, tensor<?x?x4x8xbf16>, tensor<4x?x?xbf16>, tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>, tensor<4x?x?xf32>) -> (tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>, tensor<4x?x?xf32>)
// CHECK: %query_grad_0, %key_grad_1, %bias_grad_2 = attn.flash_attention_grad %arg0, %arg1, %arg2, %arg2 bias(%arg4) outs(%arg0, %arg1) accumulate(%arg5) {block_kv = 8 : i64, block_q = 8 : i64}
// CHECK: %query_grad_3, %key_grad_4 = attn.flash_attention_grad %arg0, %arg1, %arg2, %arg2 bias(%arg4) outs(%arg0, %arg1) {block_kv = 8 : i64, block_q = 8 : i64}
func.func @flash_attention_grad_bias(%q: tensor<?x?x4x8xbf16>,
                                     %k: tensor<?x?x2x8xbf16>,
                                     %o: tensor<?x?x4x8xbf16>,
                                     %bias: tensor<4x?x?xbf16>,
                                     %shared: tensor<?x?xbf16>,
                                     %db0: tensor<4x?x?xf32>) {
  %dq, %dk, %dv, %db = attn.flash_attention_grad %q, %k, %k, %o, %o
      bias(%bias) outs(%q, %k, %k) accumulate(%db0)
      {causal, block_q = 8 : i64, block_kv = 8 : i64}
      : (tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>,
         tensor<?x?x4x8xbf16>, tensor<?x?x4x8xbf16>, tensor<4x?x?xbf16>,
         tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>,
         tensor<4x?x?xf32>)
      -> (tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>,
          tensor<4x?x?xf32>)
  %sq, %skv, %sb = attn.flash_attention_grad %q, %k, %o, %o bias(%shared)
      outs(%q, %k) accumulate(%db0) {block_q = 8 : i64, block_kv = 8 : i64}
      : (tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x4x8xbf16>,
         tensor<?x?x4x8xbf16>, tensor<?x?xbf16>, tensor<?x?x4x8xbf16>,
         tensor<?x?x2x8xbf16>, tensor<4x?x?xf32>)
      -> (tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>, tensor<4x?x?xf32>)
  %rq, %rkv = attn.flash_attention_grad %q, %k, %o, %o bias(%shared)
      outs(%q, %k) {block_q = 8 : i64, block_kv = 8 : i64}
      : (tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x4x8xbf16>,
         tensor<?x?x4x8xbf16>, tensor<?x?xbf16>, tensor<?x?x4x8xbf16>,
         tensor<?x?x2x8xbf16>)
      -> (tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>)
  return
}

// K=V: four leading operands, two inits and two results; key_rope rotates
// the key role.
// CHECK-LABEL: func.func @flash_attention_grad_shared
// CHECK: %{{.*}}, %{{.*}} = attn.flash_attention_grad %arg0, %arg1, %arg2, %arg2 lse(%arg3) outs(%arg0, %arg1) {block_kv = 8 : i64, block_q = 8 : i64, causal, key_rope = #attn.rope<theta = 10000.0, fraction = 0.5>} : (tensor<?x?x4x8xf32>, tensor<?x?x1x8xf32>, tensor<?x?x4x8xf32>, tensor<?x?x4x8xf32>, tensor<?x?x4xf32>, tensor<?x?x4x8xf32>, tensor<?x?x1x8xf32>) -> (tensor<?x?x4x8xf32>, tensor<?x?x1x8xf32>)
func.func @flash_attention_grad_shared(%q: tensor<?x?x4x8xf32>,
                                       %kv: tensor<?x?x1x8xf32>,
                                       %o: tensor<?x?x4x8xf32>,
                                       %lse: tensor<?x?x4xf32>) {
  %dq, %dkv = attn.flash_attention_grad %q, %kv, %o, %o lse(%lse)
      outs(%q, %kv)
      {causal, block_q = 8 : i64, block_kv = 8 : i64,
       key_rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
      : (tensor<?x?x4x8xf32>, tensor<?x?x1x8xf32>, tensor<?x?x4x8xf32>,
         tensor<?x?x4x8xf32>, tensor<?x?x4xf32>, tensor<?x?x4x8xf32>,
         tensor<?x?x1x8xf32>)
      -> (tensor<?x?x4x8xf32>, tensor<?x?x1x8xf32>)
  return
}

// CHECK-LABEL: func.func @grads_with_lse
// CHECK: attn.sdpa_grad %arg0, %arg1, %arg1, %arg0, %arg0 lse(%arg2) {causal} : (tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x4x8xbf16>, tensor<?x?x4x8xbf16>, tensor<?x?x4xf32>)
// CHECK: attn.flash_attention_grad %arg0, %arg1, %arg1, %arg0, %arg0 lse(%arg2) outs(%arg0, %arg1, %arg1) {block_kv = 8 : i64, block_q = 8 : i64, causal}
func.func @grads_with_lse(%q: tensor<?x?x4x8xbf16>, %k: tensor<?x?x2x8xbf16>,
                          %lse: tensor<?x?x4xf32>) {
  %dq, %dk, %dv = attn.sdpa_grad %q, %k, %k, %q, %q lse(%lse) {causal}
      : (tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>,
         tensor<?x?x4x8xbf16>, tensor<?x?x4x8xbf16>, tensor<?x?x4xf32>)
      -> (tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>)
  %fq, %fk, %fv = attn.flash_attention_grad %q, %k, %k, %q, %q lse(%lse)
      outs(%q, %k, %k) {causal, block_q = 8 : i64, block_kv = 8 : i64}
      : (tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>,
         tensor<?x?x4x8xbf16>, tensor<?x?x4x8xbf16>, tensor<?x?x4xf32>,
         tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>)
      -> (tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>)
  return
}
