// RUN: attnfuse-opt %s -split-input-file -verify-diagnostics

// The verifiers of the gradient ops.

func.func @project_grad_input_rank(%x: tensor<8x16xf32>, %w: tensor<8x16xf32>, %dy: tensor<2x5x8xf32>) {
  // expected-error @+1 {{'input' must be a rank-3 tensor [batch, seq, in], got rank 2}}
  %0:3 = attn.project_grad %x, %w, %dy : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<2x5x8xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8xf32>)
  return
}

// -----

func.func @project_grad_dynamic_in(%x: tensor<2x5x?xf32>, %w: tensor<8x?xf32>, %dy: tensor<2x5x8xf32>) {
  // expected-error @+1 {{'weight' must have a static in_features (dimension 1)}}
  %0:3 = attn.project_grad %x, %w, %dy : (tensor<2x5x?xf32>, tensor<8x?xf32>, tensor<2x5x8xf32>) -> (tensor<2x5x?xf32>, tensor<8x?xf32>, tensor<8xf32>)
  return
}

// -----

func.func @project_grad_cotangent_shape(%x: tensor<2x5x16xf32>, %w: tensor<8x16xf32>, %dy: tensor<2x5x4xf32>) {
  // expected-error @+1 {{'result_grad' must have shape [batch, seq, out_features] = [2, 5, 8], got [2, 5, 4]}}
  %0:3 = attn.project_grad %x, %w, %dy : (tensor<2x5x16xf32>, tensor<8x16xf32>, tensor<2x5x4xf32>) -> (tensor<2x5x16xf32>, tensor<8x16xf32>, tensor<8xf32>)
  return
}

// -----

func.func @project_grad_input_grad_type(%x: tensor<2x5x16xf32>, %w: tensor<8x16xf32>, %dy: tensor<2x5x8xf32>) {
  // expected-error @+1 {{result 'input_grad' must have the type of 'input', 'tensor<2x5x16xf32>', got 'tensor<?x5x16xf32>'}}
  %0:3 = attn.project_grad %x, %w, %dy : (tensor<2x5x16xf32>, tensor<8x16xf32>, tensor<2x5x8xf32>) -> (tensor<?x5x16xf32>, tensor<8x16xf32>, tensor<8xf32>)
  return
}

// -----

func.func @project_grad_weight_grad_type(%x: tensor<2x5x16xf32>, %w: tensor<8x16xf32>, %dy: tensor<2x5x8xf32>) {
  // expected-error @+1 {{result 'weight_grad' must have the type of 'weight'}}
  %0:3 = attn.project_grad %x, %w, %dy : (tensor<2x5x16xf32>, tensor<8x16xf32>, tensor<2x5x8xf32>) -> (tensor<2x5x16xf32>, tensor<16x8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @project_grad_bias_grad_shape(%x: tensor<2x5x16xf32>, %w: tensor<8x16xf32>, %dy: tensor<2x5x8xf32>) {
  // expected-error @+1 {{'bias_grad' must have shape [out_features] = [8], got [16]}}
  %0:3 = attn.project_grad %x, %w, %dy : (tensor<2x5x16xf32>, tensor<8x16xf32>, tensor<2x5x8xf32>) -> (tensor<2x5x16xf32>, tensor<8x16xf32>, tensor<16xf32>)
  return
}

// -----

func.func @project_grad_element_type(%x: tensor<2x5x16xf32>, %w: tensor<8x16xf32>, %dy: tensor<2x5x8xbf16>) {
  // expected-error @+1 {{'result_grad' has element type 'bf16', expected 'f32' (the element type of 'input')}}
  %0:3 = attn.project_grad %x, %w, %dy : (tensor<2x5x16xf32>, tensor<8x16xf32>, tensor<2x5x8xbf16>) -> (tensor<2x5x16xf32>, tensor<8x16xf32>, tensor<8xf32>)
  return
}

// -----

func.func @conv_grad_groups(%u: tensor<2x7x12xf32>, %w: tensor<12x4x2xf32>, %dy: tensor<2x8x12xf32>) {
  // expected-error @+1 {{groups (5) must divide the channel count (12)}}
  %0:3 = attn.causal_conv1d_grad %u, %w, %dy {groups = 5 : i64, padding = 2 : i64} : (tensor<2x7x12xf32>, tensor<12x4x2xf32>, tensor<2x8x12xf32>) -> (tensor<2x7x12xf32>, tensor<12x4x2xf32>, tensor<12xf32>)
  return
}

// -----

func.func @conv_grad_no_taps(%u: tensor<2x7x12xf32>, %w: tensor<12x4x0xf32>, %dy: tensor<2x10x12xf32>) {
  // expected-error @+1 {{'weight' must have at least one tap, got 0}}
  %0:3 = attn.causal_conv1d_grad %u, %w, %dy {groups = 3 : i64, padding = 2 : i64} : (tensor<2x7x12xf32>, tensor<12x4x0xf32>, tensor<2x10x12xf32>) -> (tensor<2x7x12xf32>, tensor<12x4x0xf32>, tensor<12xf32>)
  return
}

// -----

func.func @conv_grad_weight_shape(%u: tensor<2x7x12xf32>, %w: tensor<12x3x2xf32>, %dy: tensor<2x8x12xf32>) {
  // expected-error @+1 {{'weight' must have shape [channels, channels / groups, kernel] = [12, 4, 2], got [12, 3, 2]}}
  %0:3 = attn.causal_conv1d_grad %u, %w, %dy {groups = 3 : i64, padding = 2 : i64} : (tensor<2x7x12xf32>, tensor<12x3x2xf32>, tensor<2x8x12xf32>) -> (tensor<2x7x12xf32>, tensor<12x3x2xf32>, tensor<12xf32>)
  return
}

// -----

func.func @conv_grad_negative_length(%u: tensor<2x1x12xf32>, %w: tensor<12x4x4xf32>, %dy: tensor<2x0x12xf32>) {
  // expected-error @+1 {{a kernel of 4 taps over 1 time steps padded by 1 yields a negative length -1}}
  %0:3 = attn.causal_conv1d_grad %u, %w, %dy {groups = 3 : i64, padding = 1 : i64} : (tensor<2x1x12xf32>, tensor<12x4x4xf32>, tensor<2x0x12xf32>) -> (tensor<2x1x12xf32>, tensor<12x4x4xf32>, tensor<12xf32>)
  return
}

// -----

func.func @conv_grad_cotangent_length(%u: tensor<2x7x12xf32>, %w: tensor<12x4x2xf32>, %dy: tensor<2x7x12xf32>) {
  // expected-error @+1 {{'result_grad' must have shape [batch, seq + padding - (kernel - 1), channels] = [2, 8, 12], got [2, 7, 12]}}
  %0:3 = attn.causal_conv1d_grad %u, %w, %dy {groups = 3 : i64, padding = 2 : i64} : (tensor<2x7x12xf32>, tensor<12x4x2xf32>, tensor<2x7x12xf32>) -> (tensor<2x7x12xf32>, tensor<12x4x2xf32>, tensor<12xf32>)
  return
}

// -----

func.func @conv_grad_bias_grad(%u: tensor<2x7x12xf32>, %w: tensor<12x4x2xf32>, %dy: tensor<2x8x12xf32>) {
  // expected-error @+1 {{'bias_grad' must have shape [channels] = [12], got [4]}}
  %0:3 = attn.causal_conv1d_grad %u, %w, %dy {groups = 3 : i64, padding = 2 : i64} : (tensor<2x7x12xf32>, tensor<12x4x2xf32>, tensor<2x8x12xf32>) -> (tensor<2x7x12xf32>, tensor<12x4x2xf32>, tensor<4xf32>)
  return
}

// -----

func.func @conv_grad_input_grad_type(%u: tensor<2x7x12xf32>, %w: tensor<12x4x2xf32>, %dy: tensor<2x8x12xf32>) {
  // expected-error @+1 {{result 'input_grad' must have the type of 'input'}}
  %0:3 = attn.causal_conv1d_grad %u, %w, %dy {groups = 3 : i64, padding = 2 : i64} : (tensor<2x7x12xf32>, tensor<12x4x2xf32>, tensor<2x8x12xf32>) -> (tensor<2x8x12xf32>, tensor<12x4x2xf32>, tensor<12xf32>)
  return
}

// -----

func.func @qk_mean_grad_heads(%dq: tensor<1x5x3x8xf32>, %dk: tensor<1x5x2x8xf32>) {
  // expected-error @+1 {{the 3 heads of 'q_grad' must be a multiple of the 2 heads of 'k_grad'}}
  %0:2 = attn.qk_mean_grad %dq, %dk : tensor<1x5x3x8xf32>, tensor<1x5x2x8xf32>
  return
}

// -----

func.func @qk_mean_grad_seq(%dq: tensor<1x5x4x8xf32>, %dk: tensor<1x6x2x8xf32>) {
  // expected-error @+1 {{'k_grad' must have shape [batch, seq, kv_heads, head_dim] = [1, 5, 2, 8], got [1, 6, 2, 8]}}
  %0:2 = attn.qk_mean_grad %dq, %dk : tensor<1x5x4x8xf32>, tensor<1x6x2x8xf32>
  return
}

// -----

func.func @qk_mean_grad_element_type(%dq: tensor<1x5x4x8xf32>, %dk: tensor<1x5x2x8xf16>) {
  // expected-error @+1 {{'k_grad' has element type 'f16', expected 'f32' (the element type of 'q_grad')}}
  %0:2 = attn.qk_mean_grad %dq, %dk : tensor<1x5x4x8xf32>, tensor<1x5x2x8xf16>
  return
}

// -----

func.func @qk_norm_grad_temp(%q: tensor<1x5x4x8xf32>, %k: tensor<1x5x2x8xf32>, %t: tensor<3xf32>) {
  // expected-error @+1 {{'temp' must have shape [kv_heads] = [2], got [3]}}
  %0:3 = attn.qk_norm_grad %q, %k, %t, %q, %k : tensor<1x5x4x8xf32>, tensor<1x5x2x8xf32>, tensor<3xf32>
  return
}

// -----

func.func @qk_norm_grad_eps(%q: tensor<1x5x4x8xf32>, %k: tensor<1x5x2x8xf32>, %t: tensor<2xf32>) {
  // expected-error @+1 {{eps}}
  %0:3 = attn.qk_norm_grad %q, %k, %t, %q, %k {norm = #attn.norm<clamp_eps>, eps = 0.0 : f64} : tensor<1x5x4x8xf32>, tensor<1x5x2x8xf32>, tensor<2xf32>
  return
}

// -----

func.func @qk_norm_grad_heads(%q: tensor<1x5x4x8xf32>, %k: tensor<1x5x3x8xf32>, %t: tensor<3xf32>) {
  // expected-error @+1 {{the 4 heads of 'q' must be a multiple of the 3 heads of 'k'}}
  %0:3 = attn.qk_norm_grad %q, %k, %t, %q, %k : tensor<1x5x4x8xf32>, tensor<1x5x3x8xf32>, tensor<3xf32>
  return
}

// -----

func.func @qk_norm_grad_element_type(%q: tensor<1x5x4x8xf32>, %k: tensor<1x5x2x8xf32>, %t: tensor<2xbf16>) {
  // expected-error @+1 {{'temp' has element type 'bf16', expected 'f32' (the element type of 'q')}}
  %0:3 = attn.qk_norm_grad %q, %k, %t, %q, %k : tensor<1x5x4x8xf32>, tensor<1x5x2x8xf32>, tensor<2xbf16>
  return
}

// -----

func.func @value_shift_grad_rank(%dv: tensor<5x16xf32>) {
  // expected-error @+1 {{'result_grad' must be a rank-3 tensor [batch, seq, 2 * channels], got rank 2}}
  %0:2 = attn.value_shift_grad %dv : (tensor<5x16xf32>) -> (tensor<5x8xf32>, tensor<5x8xf32>)
  return
}

// -----

func.func @value_shift_grad_odd(%dv: tensor<2x5x15xf32>) {
  // expected-error @+1 {{'result_grad' must have an even channel count (current and previous halves), got 15}}
  %0:2 = attn.value_shift_grad %dv : (tensor<2x5x15xf32>) -> (tensor<2x5x7xf32>, tensor<2x5x7xf32>)
  return
}

// -----

func.func @value_shift_grad_halves(%dv: tensor<2x5x16xf32>) {
  // expected-error @+1 {{'current_grad' must have shape [batch, seq, channels / 2] = [2, 5, 8], got [2, 5, 16]}}
  %0:2 = attn.value_shift_grad %dv : (tensor<2x5x16xf32>) -> (tensor<2x5x16xf32>, tensor<2x5x16xf32>)
  return
}

// -----

func.func @value_shift_grad_element_type(%dv: tensor<2x5x16xf32>) {
  // expected-error @+1 {{result has element type 'bf16', expected 'f32'}}
  %0:2 = attn.value_shift_grad %dv : (tensor<2x5x16xf32>) -> (tensor<2x5x8xbf16>, tensor<2x5x8xbf16>)
  return
}

// -----

func.func @rope_grad_rank(%g: tensor<2x5x8xf32>) {
  // expected-error @+1 {{'result_grad' must be a rank-4 tensor [batch, seq, heads, head_dim], got rank 3}}
  %0 = attn.rope_grad %g {rope = #attn.rope<theta = 10000.0>} : tensor<2x5x8xf32>
  return
}

// -----

func.func @rope_grad_positions(%g: tensor<2x5x4x8xf32>, %p: tensor<3xi32>) {
  // expected-error @+1 {{'positions' must have shape [batch] = [2], got [3]}}
  %0 = attn.rope_grad %g positions(%p : tensor<3xi32>) {rope = #attn.rope<theta = 10000.0>} : tensor<2x5x4x8xf32>
  return
}

// -----

func.func @rope_grad_odd_width(%g: tensor<2x5x4x6xf32>) {
  // expected-error @+1 {{rotated}}
  %0 = attn.rope_grad %g {rope = #attn.rope<theta = 10000.0, fraction = 0.5>} : tensor<2x5x4x6xf32>
  return
}

// -----

func.func @sdpa_grad_value_shape(%q: tensor<2x5x4x8xf32>, %k: tensor<2x6x2x8xf32>, %v: tensor<2x5x2x8xf32>, %o: tensor<2x5x4x8xf32>) {
  // expected-error @+1 {{'value' must have shape [batch, T, kv_heads, value_dim] = [2, 6, 2, 8], got [2, 5, 2, 8]}}
  %0:3 = attn.sdpa_grad %q, %k, %v, %o, %o : (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x5x2x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>) -> (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x5x2x8xf32>)
  return
}

// -----

func.func @sdpa_grad_output_shape(%q: tensor<2x5x4x8xf32>, %k: tensor<2x6x2x8xf32>, %o: tensor<2x5x4x4xf32>) {
  // expected-error @+1 {{'output' must have shape [batch, S, num_heads, value_dim] = [2, 5, 4, 8], got [2, 5, 4, 4]}}
  %0:3 = attn.sdpa_grad %q, %k, %k, %o, %o : (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>, tensor<2x5x4x4xf32>, tensor<2x5x4x4xf32>) -> (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>)
  return
}

// -----

func.func @sdpa_grad_cotangent_shape(%q: tensor<2x5x4x8xf32>, %k: tensor<2x6x2x8xf32>, %o: tensor<2x5x4x8xf32>, %do: tensor<2x6x4x8xf32>) {
  // expected-error @+1 {{'output_grad' must have shape [batch, S, num_heads, value_dim] = [2, 5, 4, 8], got [2, 6, 4, 8]}}
  %0:3 = attn.sdpa_grad %q, %k, %k, %o, %do : (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>, tensor<2x5x4x8xf32>, tensor<2x6x4x8xf32>) -> (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>)
  return
}

// -----

func.func @sdpa_grad_key_grad_type(%q: tensor<2x5x4x8xf32>, %k: tensor<2x6x2x8xf32>, %o: tensor<2x5x4x8xf32>) {
  // expected-error @+1 {{result 'key_grad' must have the type of 'key', 'tensor<2x6x2x8xf32>', got 'tensor<2x5x2x8xf32>'}}
  %0:3 = attn.sdpa_grad %q, %k, %k, %o, %o : (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>) -> (tensor<2x5x4x8xf32>, tensor<2x5x2x8xf32>, tensor<2x6x2x8xf32>)
  return
}

// -----

func.func @sdpa_grad_missing_bias_grad(%q: tensor<2x5x4x8xf32>, %k: tensor<2x5x2x8xf32>, %o: tensor<2x5x4x8xf32>, %b: tensor<5x5xf32>) {
  // expected-error @+1 {{has a 'bias_grad' result exactly when it has a 'bias' operand}}
  %0:3 = attn.sdpa_grad %q, %k, %k, %o, %o bias(%b) : (tensor<2x5x4x8xf32>, tensor<2x5x2x8xf32>, tensor<2x5x2x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>, tensor<5x5xf32>) -> (tensor<2x5x4x8xf32>, tensor<2x5x2x8xf32>, tensor<2x5x2x8xf32>)
  return
}

// -----

func.func @sdpa_grad_bias_grad_type(%q: tensor<2x5x4x8xf32>, %k: tensor<2x5x2x8xf32>, %o: tensor<2x5x4x8xf32>, %b: tensor<5x5xf32>) {
  // expected-error @+1 {{result 'bias_grad' must have the type of 'bias'}}
  %0:4 = attn.sdpa_grad %q, %k, %k, %o, %o bias(%b) : (tensor<2x5x4x8xf32>, tensor<2x5x2x8xf32>, tensor<2x5x2x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>, tensor<5x5xf32>) -> (tensor<2x5x4x8xf32>, tensor<2x5x2x8xf32>, tensor<2x5x2x8xf32>, tensor<4x5x5xf32>)
  return
}

// -----

func.func @sdpa_grad_window(%q: tensor<2x5x4x8xf32>, %k: tensor<2x5x2x8xf32>, %o: tensor<2x5x4x8xf32>) {
  // expected-error @+1 {{window must be a positive number of keys, got 0}}
  %0:3 = attn.sdpa_grad %q, %k, %k, %o, %o {window = 0 : i64} : (tensor<2x5x4x8xf32>, tensor<2x5x2x8xf32>, tensor<2x5x2x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>) -> (tensor<2x5x4x8xf32>, tensor<2x5x2x8xf32>, tensor<2x5x2x8xf32>)
  return
}

// -----

func.func @sdpa_grad_element_type(%q: tensor<2x5x4x8xf32>, %k: tensor<2x5x2x8xf32>, %o: tensor<2x5x4x8xf32>, %do: tensor<2x5x4x8xbf16>) {
  // expected-error @+1 {{'output_grad' has element type 'bf16', expected 'f32' (the element type of 'query')}}
  %0:3 = attn.sdpa_grad %q, %k, %k, %o, %do : (tensor<2x5x4x8xf32>, tensor<2x5x2x8xf32>, tensor<2x5x2x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x8xbf16>) -> (tensor<2x5x4x8xf32>, tensor<2x5x2x8xf32>, tensor<2x5x2x8xf32>)
  return
}

// -----

func.func @flash_attention_grad_init_type(%q: tensor<2x5x4x8xf32>, %k: tensor<2x6x2x8xf32>, %o: tensor<2x5x4x8xf32>, %dq0: tensor<2x5x4x8xf32>, %dk0: tensor<2x6x2x8xf32>, %bad: tensor<2x5x2x8xf32>) {
  // expected-error @+1 {{'outs' #2 must have the type 'tensor<2x6x2x8xf32>' of result #2, got 'tensor<2x5x2x8xf32>'}}
  %0:3 = attn.flash_attention_grad %q, %k, %k, %o, %o outs(%dq0, %dk0, %bad) {block_q = 8 : i64, block_kv = 8 : i64} : (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x5x2x8xf32>) -> (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>)
  return
}

// -----

func.func @flash_attention_grad_element_type(%q: tensor<2x5x4x8xf32>, %k: tensor<2x6x2x8xf32>, %o: tensor<2x5x4x8xf32>, %do: tensor<2x5x4x8xbf16>, %dq0: tensor<2x5x4x8xf32>, %dk0: tensor<2x6x2x8xf32>) {
  // expected-error @+1 {{'output_grad' has element type 'bf16', expected 'f32' (the element type of 'query')}}
  %0:3 = attn.flash_attention_grad %q, %k, %k, %o, %do outs(%dq0, %dk0, %dk0) {block_q = 8 : i64, block_kv = 8 : i64} : (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x8xbf16>, tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>) -> (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>)
  return
}

// -----

func.func @flash_attention_grad_heads(%q: tensor<2x5x3x8xf32>, %k: tensor<2x6x2x8xf32>, %o: tensor<2x5x3x8xf32>, %dk0: tensor<2x6x2x8xf32>) {
  // expected-error @+1 {{the 3 heads of 'query' must be a multiple of the 2 heads of 'key'}}
  %0:3 = attn.flash_attention_grad %q, %k, %k, %o, %o outs(%o, %dk0, %dk0) {block_q = 8 : i64, block_kv = 8 : i64} : (tensor<2x5x3x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>, tensor<2x5x3x8xf32>, tensor<2x5x3x8xf32>, tensor<2x5x3x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>) -> (tensor<2x5x3x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>)
  return
}

// -----

func.func @flash_attention_grad_value_shape(%q: tensor<2x5x4x8xf32>, %k: tensor<2x6x2x8xf32>, %v: tensor<2x5x2x8xf32>, %o: tensor<2x5x4x8xf32>, %dk0: tensor<2x6x2x8xf32>) {
  // expected-error @+1 {{'value' must have shape [batch, T, kv_heads, value_dim] = [2, 6, 2, 8], got [2, 5, 2, 8]}}
  %0:3 = attn.flash_attention_grad %q, %k, %v, %o, %o outs(%q, %dk0, %v) {block_q = 8 : i64, block_kv = 8 : i64} : (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x5x2x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x5x2x8xf32>) -> (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x5x2x8xf32>)
  return
}

// -----

func.func @flash_attention_grad_output_shape(%q: tensor<2x5x4x8xf32>, %k: tensor<2x6x2x8xf32>, %o: tensor<2x5x4x4xf32>, %dk0: tensor<2x6x2x8xf32>) {
  // expected-error @+1 {{'output' must have shape [batch, S, num_heads, value_dim] = [2, 5, 4, 8], got [2, 5, 4, 4]}}
  %0:3 = attn.flash_attention_grad %q, %k, %k, %o, %o outs(%q, %dk0, %dk0) {block_q = 8 : i64, block_kv = 8 : i64} : (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>, tensor<2x5x4x4xf32>, tensor<2x5x4x4xf32>, tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>) -> (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>)
  return
}

// -----

func.func @flash_attention_grad_cotangent_shape(%q: tensor<2x5x4x8xf32>, %k: tensor<2x6x2x8xf32>, %o: tensor<2x5x4x8xf32>, %do: tensor<2x6x4x8xf32>, %dk0: tensor<2x6x2x8xf32>) {
  // expected-error @+1 {{'output_grad' must have shape [batch, S, num_heads, value_dim] = [2, 5, 4, 8], got [2, 6, 4, 8]}}
  %0:3 = attn.flash_attention_grad %q, %k, %k, %o, %do outs(%q, %dk0, %dk0) {block_q = 8 : i64, block_kv = 8 : i64} : (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>, tensor<2x5x4x8xf32>, tensor<2x6x4x8xf32>, tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>) -> (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>)
  return
}

// -----

func.func @flash_attention_grad_key_mask(%q: tensor<2x5x4x8xf32>, %k: tensor<2x6x2x8xf32>, %m: tensor<2x5xi32>, %dk0: tensor<2x6x2x8xf32>) {
  // expected-error @+1 {{'key_mask' must have shape [batch, T] = [2, 6], got [2, 5]}}
  %0:3 = attn.flash_attention_grad %q, %k, %k, %q, %q key_mask(%m) outs(%q, %dk0, %dk0) {block_q = 8 : i64, block_kv = 8 : i64} : (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5xi32>, tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>) -> (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>)
  return
}

// -----

func.func @flash_attention_grad_window(%q: tensor<2x5x4x8xf32>, %k: tensor<2x6x2x8xf32>, %dk0: tensor<2x6x2x8xf32>) {
  // expected-error @+1 {{window must be a positive number of keys, got 0}}
  %0:3 = attn.flash_attention_grad %q, %k, %k, %q, %q outs(%q, %dk0, %dk0) {window = 0 : i64, block_q = 8 : i64, block_kv = 8 : i64} : (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>) -> (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>)
  return
}

// -----

func.func @flash_attention_grad_scale(%q: tensor<2x5x4x8xf32>, %k: tensor<2x6x2x8xf32>, %dk0: tensor<2x6x2x8xf32>) {
  // expected-error @+1 {{scale must be a positive finite number, got -1}}
  %0:3 = attn.flash_attention_grad %q, %k, %k, %q, %q outs(%q, %dk0, %dk0) {scale = -1.0 : f64, block_q = 8 : i64, block_kv = 8 : i64} : (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>) -> (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>)
  return
}

// -----

func.func @flash_attention_grad_result_type(%q: tensor<2x?x4x8xf32>, %k: tensor<2x6x2x8xf32>, %dq0: tensor<2x5x4x8xf32>, %dk0: tensor<2x6x2x8xf32>) {
  // expected-error @+1 {{result 'query_grad' must have the type of 'query', 'tensor<2x?x4x8xf32>', got 'tensor<2x5x4x8xf32>'}}
  %0:3 = attn.flash_attention_grad %q, %k, %k, %q, %q outs(%dq0, %dk0, %dk0) {block_q = 8 : i64, block_kv = 8 : i64} : (tensor<2x?x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>, tensor<2x?x4x8xf32>, tensor<2x?x4x8xf32>, tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>) -> (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>)
  return
}

// -----

func.func @flash_attention_grad_block(%q: tensor<2x5x4x8xf32>, %k: tensor<2x6x2x8xf32>, %dk0: tensor<2x6x2x8xf32>) {
  // expected-error @+1 {{attribute 'block_q' failed to satisfy constraint}}
  %0:3 = attn.flash_attention_grad %q, %k, %k, %q, %q outs(%q, %dk0, %dk0) {block_q = 0 : i64, block_kv = 8 : i64} : (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>) -> (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>)
  return
}

// -----

func.func @flash_attention_grad_operand_count(%q: tensor<2x5x4x8xf32>, %k: tensor<2x6x2x8xf32>) {
  // expected-error @+1 {{expected the query, key, value, output and output gradient (or, for K=V, the query, the shared key, the output and the output gradient), got 3 operands}}
  %0:2 = attn.flash_attention_grad %q, %k, %q outs(%q, %k) {block_q = 8 : i64, block_kv = 8 : i64} : (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>) -> (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>)
  return
}

// -----

func.func @flash_attention_grad_missing_value_init(%q: tensor<2x5x4x8xf32>, %k: tensor<2x6x2x8xf32>) {
  // expected-error @+1 {{has a value but no value gradient init: 'outs' takes three inits (dq, dk, dv)}}
  %0:2 = attn.flash_attention_grad %q, %k, %k, %q, %q outs(%q, %k) {block_q = 8 : i64, block_kv = 8 : i64} : (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>) -> (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>)
  return
}

// -----

func.func @flash_attention_grad_shared_value_init(%q: tensor<2x5x4x8xf32>, %k: tensor<2x6x2x8xf32>) {
  // expected-error @+1 {{is K=V (no value) but has a value gradient init: 'outs' takes two inits (dq, dkv)}}
  %0:3 = attn.flash_attention_grad %q, %k, %q, %q outs(%q, %k, %k) {block_q = 8 : i64, block_kv = 8 : i64} : (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>) -> (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>)
  return
}

// -----

func.func @flash_attention_grad_shared_results(%q: tensor<2x5x4x8xf32>, %k: tensor<2x6x2x8xf32>) {
  // expected-error @+1 {{has 3 results, but its inits give 2}}
  %0:3 = attn.flash_attention_grad %q, %k, %q, %q outs(%q, %k) {block_q = 8 : i64, block_kv = 8 : i64} : (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>) -> (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>)
  return
}

// -----

func.func @flash_attention_grad_key_rope(%q: tensor<2x5x4x6xf32>, %k: tensor<2x6x2x6xf32>) {
  // expected-error @+1 {{key_rope rotates 3 dimensions of each head; the rotated width must be even}}
  %0:2 = attn.flash_attention_grad %q, %k, %q, %q outs(%q, %k) {block_q = 8 : i64, block_kv = 8 : i64, key_rope = #attn.rope<theta = 10000.0, fraction = 0.5>} : (tensor<2x5x4x6xf32>, tensor<2x6x2x6xf32>, tensor<2x5x4x6xf32>, tensor<2x5x4x6xf32>, tensor<2x5x4x6xf32>, tensor<2x6x2x6xf32>) -> (tensor<2x5x4x6xf32>, tensor<2x6x2x6xf32>)
  return
}

// -----

func.func @flash_attention_grad_shared_value_dim(%q: tensor<2x5x4x8xf32>, %k: tensor<2x6x2x8xf32>, %o: tensor<2x5x4x4xf32>) {
  // expected-error @+1 {{'output' must have shape [batch, S, num_heads, value_dim] = [2, 5, 4, 8], got [2, 5, 4, 4]}}
  %0:2 = attn.flash_attention_grad %q, %k, %o, %o outs(%q, %k) {block_q = 8 : i64, block_kv = 8 : i64} : (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x5x4x4xf32>, tensor<2x5x4x4xf32>, tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>) -> (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>)
  return
}

// -----

func.func @fused_weight_grad_init_type(%x: tensor<?x64xf32>, %dy: tensor<?x32xf32>, %init: tensor<32x64xf32>) {
  // expected-error @+1 {{'init' must have the result type 'tensor<64x32xf32>', got 'tensor<32x64xf32>'}}
  %0 = attn.fused_weight_grad %x, %dy outs(%init) {block_m = 8 : i64, block_n = 8 : i64, block_k = 8 : i64} : (tensor<?x64xf32>, tensor<?x32xf32>, tensor<32x64xf32>) -> tensor<64x32xf32>
  return
}

// -----

func.func @fused_weight_grad_input_rank(%x: tensor<2x?x64xf32>, %dy: tensor<?x32xf32>, %init: tensor<32x64xf32>) {
  // expected-error @+1 {{'input' must be a rank-2 tensor [tokens, in], got rank 3}}
  %0 = attn.fused_weight_grad %x, %dy outs(%init) {block_m = 8 : i64, block_n = 8 : i64, block_k = 8 : i64} : (tensor<2x?x64xf32>, tensor<?x32xf32>, tensor<32x64xf32>) -> tensor<32x64xf32>
  return
}

// -----

func.func @fused_weight_grad_dynamic_in(%x: tensor<?x?xf32>, %dy: tensor<?x32xf32>, %init: tensor<32x64xf32>) {
  // expected-error @+1 {{'input' must have a static in_features (dimension 1), got [?, ?]}}
  %0 = attn.fused_weight_grad %x, %dy outs(%init) {block_m = 8 : i64, block_n = 8 : i64, block_k = 8 : i64} : (tensor<?x?xf32>, tensor<?x32xf32>, tensor<32x64xf32>) -> tensor<32x64xf32>
  return
}

// -----

func.func @fused_weight_grad_grad_rank(%x: tensor<?x64xf32>, %dy: tensor<32xf32>, %init: tensor<32x64xf32>) {
  // expected-error @+1 {{'result_grad' must be a rank-2 tensor [tokens, out], got rank 1}}
  %0 = attn.fused_weight_grad %x, %dy outs(%init) {block_m = 8 : i64, block_n = 8 : i64, block_k = 8 : i64} : (tensor<?x64xf32>, tensor<32xf32>, tensor<32x64xf32>) -> tensor<32x64xf32>
  return
}

// -----

func.func @fused_weight_grad_dynamic_out(%x: tensor<?x64xf32>, %dy: tensor<?x?xf32>, %init: tensor<32x64xf32>) {
  // expected-error @+1 {{'result_grad' must have a static out_features (dimension 1), got [?, ?]}}
  %0 = attn.fused_weight_grad %x, %dy outs(%init) {block_m = 8 : i64, block_n = 8 : i64, block_k = 8 : i64} : (tensor<?x64xf32>, tensor<?x?xf32>, tensor<32x64xf32>) -> tensor<32x64xf32>
  return
}

// -----

func.func @fused_weight_grad_tokens(%x: tensor<5x64xf32>, %dy: tensor<6x32xf32>, %init: tensor<32x64xf32>) {
  // expected-error @+1 {{'result_grad' must have shape [tokens, out] = [5, 32], got [6, 32]}}
  %0 = attn.fused_weight_grad %x, %dy outs(%init) {block_m = 8 : i64, block_n = 8 : i64, block_k = 8 : i64} : (tensor<5x64xf32>, tensor<6x32xf32>, tensor<32x64xf32>) -> tensor<32x64xf32>
  return
}

// -----

func.func @fused_weight_grad_result_shape(%x: tensor<?x64xf32>, %dy: tensor<?x32xf32>, %init: tensor<32x48xf32>) {
  // expected-error @+1 {{'result' must have shape [out, in] = [32, 64], got [32, 48]}}
  %0 = attn.fused_weight_grad %x, %dy outs(%init) {block_m = 8 : i64, block_n = 8 : i64, block_k = 8 : i64} : (tensor<?x64xf32>, tensor<?x32xf32>, tensor<32x48xf32>) -> tensor<32x48xf32>
  return
}

// -----

func.func @fused_weight_grad_element_type(%x: tensor<?x64xf32>, %dy: tensor<?x32xbf16>, %init: tensor<32x64xf32>) {
  // expected-error @+1 {{'result_grad' has element type 'bf16', expected 'f32' (the element type of 'input')}}
  %0 = attn.fused_weight_grad %x, %dy outs(%init) {block_m = 8 : i64, block_n = 8 : i64, block_k = 8 : i64} : (tensor<?x64xf32>, tensor<?x32xbf16>, tensor<32x64xf32>) -> tensor<32x64xf32>
  return
}

// -----

func.func @fused_weight_grad_block(%x: tensor<?x64xf32>, %dy: tensor<?x32xf32>, %init: tensor<32x64xf32>) {
  // expected-error @+1 {{attribute 'block_k' failed to satisfy constraint}}
  %0 = attn.fused_weight_grad %x, %dy outs(%init) {block_m = 8 : i64, block_n = 8 : i64, block_k = 0 : i64} : (tensor<?x64xf32>, tensor<?x32xf32>, tensor<32x64xf32>) -> tensor<32x64xf32>
  return
}

// -----

func.func @sdpa_grad_lse_shape(%q: tensor<2x5x4x8xf32>, %k: tensor<2x6x2x8xf32>, %lse: tensor<2x5x2xf32>) {
  // expected-error @+1 {{'lse' must have shape [batch, S, num_heads] = [2, 5, 4], got [2, 5, 2]}}
  %0:3 = attn.sdpa_grad %q, %k, %k, %q, %q lse(%lse) : (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x2xf32>) -> (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>)
  return
}

// -----

func.func @sdpa_grad_lse_rank(%q: tensor<2x5x4x8xf32>, %k: tensor<2x6x2x8xf32>, %lse: tensor<2x5x4x1xf32>) {
  // expected-error @+1 {{'lse' must be a rank-3 tensor [batch, S, num_heads], got rank 4}}
  %0:3 = attn.sdpa_grad %q, %k, %k, %q, %q lse(%lse) : (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x1xf32>) -> (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>)
  return
}

// -----

func.func @sdpa_grad_lse_element_type(%q: tensor<2x5x4x8xbf16>, %k: tensor<2x6x2x8xbf16>, %lse: tensor<2x5x4xbf16>) {
  // expected-error @+1 {{operand #5 must be ranked tensor of 32-bit float values}}
  %0:3 = attn.sdpa_grad %q, %k, %k, %q, %q lse(%lse) : (tensor<2x5x4x8xbf16>, tensor<2x6x2x8xbf16>, tensor<2x6x2x8xbf16>, tensor<2x5x4x8xbf16>, tensor<2x5x4x8xbf16>, tensor<2x5x4xbf16>) -> (tensor<2x5x4x8xbf16>, tensor<2x6x2x8xbf16>, tensor<2x6x2x8xbf16>)
  return
}

// -----

func.func @flash_attention_grad_lse_shape(%q: tensor<2x5x4x8xf32>, %k: tensor<2x6x2x8xf32>, %lse: tensor<2x6x4xf32>) {
  // expected-error @+1 {{'lse' must have shape [batch, S, num_heads] = [2, 5, 4], got [2, 6, 4]}}
  %0:3 = attn.flash_attention_grad %q, %k, %k, %q, %q lse(%lse) outs(%q, %k, %k) {block_q = 8 : i64, block_kv = 8 : i64} : (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>, tensor<2x6x4xf32>, tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>) -> (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>)
  return
}

// -----

func.func @flash_attention_grad_accumulate_without_bias(%q: tensor<2x5x4x8xf32>, %k: tensor<2x6x2x8xf32>, %db0: tensor<4x5x6xf32>) {
  // expected-error @+1 {{has an 'accumulate' init for the bias gradient but no bias}}
  %0:4 = attn.flash_attention_grad %q, %k, %k, %q, %q outs(%q, %k, %k) accumulate(%db0) {block_q = 8 : i64, block_kv = 8 : i64} : (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>, tensor<4x5x6xf32>) -> (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>, tensor<4x5x6xf32>)
  return
}

// -----

func.func @flash_attention_grad_bias_result_count(%q: tensor<2x5x4x8xf32>, %k: tensor<2x6x2x8xf32>, %b: tensor<5x6xf32>, %db0: tensor<4x5x6xf32>) {
  // expected-error @+1 {{has 3 results, but its inits give 4}}
  %0:3 = attn.flash_attention_grad %q, %k, %k, %q, %q bias(%b) outs(%q, %k, %k) accumulate(%db0) {block_q = 8 : i64, block_kv = 8 : i64} : (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>, tensor<5x6xf32>, tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>, tensor<4x5x6xf32>) -> (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>)
  return
}

// -----

func.func @flash_attention_grad_bias_shape(%q: tensor<2x5x4x8xf32>, %k: tensor<2x6x2x8xf32>, %b: tensor<5x5xf32>) {
  // expected-error @+1 {{'bias' must have shape [S, T] = [5, 6], got [5, 5]}}
  %0:3 = attn.flash_attention_grad %q, %k, %k, %q, %q bias(%b) outs(%q, %k, %k) {block_q = 8 : i64, block_kv = 8 : i64} : (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>, tensor<5x5xf32>, tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>) -> (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>)
  return
}

// -----

func.func @flash_attention_grad_bias_element_type(%q: tensor<2x5x4x8xf32>, %k: tensor<2x6x2x8xf32>, %b: tensor<5x6xbf16>) {
  // expected-error @+1 {{'bias' has element type 'bf16', expected 'f32' (the element type of 'query')}}
  %0:3 = attn.flash_attention_grad %q, %k, %k, %q, %q bias(%b) outs(%q, %k, %k) {block_q = 8 : i64, block_kv = 8 : i64} : (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>, tensor<5x6xbf16>, tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>) -> (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>)
  return
}

// -----

func.func @flash_attention_grad_accumulate_rank(%q: tensor<2x5x4x8xf32>, %k: tensor<2x6x2x8xf32>, %b: tensor<5x6xf32>, %db0: tensor<5x6xf32>) {
  // expected-error @+1 {{'accumulate' must be a rank-3 tensor [num_heads, S, T], got rank 2}}
  %0:4 = attn.flash_attention_grad %q, %k, %k, %q, %q bias(%b) outs(%q, %k, %k) accumulate(%db0) {block_q = 8 : i64, block_kv = 8 : i64} : (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>, tensor<5x6xf32>, tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>, tensor<5x6xf32>) -> (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>, tensor<5x6xf32>)
  return
}

// -----

func.func @flash_attention_grad_accumulate_shape(%q: tensor<2x5x4x8xf32>, %k: tensor<2x6x2x8xf32>, %b: tensor<5x6xf32>, %db0: tensor<2x5x6xf32>) {
  // expected-error @+1 {{'accumulate' must have shape [num_heads, S, T] = [4, 5, 6], got [2, 5, 6]}}
  %0:4 = attn.flash_attention_grad %q, %k, %k, %q, %q bias(%b) outs(%q, %k, %k) accumulate(%db0) {block_q = 8 : i64, block_kv = 8 : i64} : (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>, tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>, tensor<5x6xf32>, tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>, tensor<2x5x6xf32>) -> (tensor<2x5x4x8xf32>, tensor<2x6x2x8xf32>, tensor<2x6x2x8xf32>, tensor<2x5x6xf32>)
  return
}

// -----

func.func @flash_attention_grad_accumulate_element_type(%q: tensor<2x5x4x8xf64>, %k: tensor<2x6x2x8xf64>, %b: tensor<5x6xf64>, %db0: tensor<4x5x6xf32>) {
  // expected-error @+1 {{'accumulate' must have element type 'f64' (the arithmetic type for 'f64' operands), got 'f32'}}
  %0:4 = attn.flash_attention_grad %q, %k, %k, %q, %q bias(%b) outs(%q, %k, %k) accumulate(%db0) {block_q = 8 : i64, block_kv = 8 : i64} : (tensor<2x5x4x8xf64>, tensor<2x6x2x8xf64>, tensor<2x6x2x8xf64>, tensor<2x5x4x8xf64>, tensor<2x5x4x8xf64>, tensor<5x6xf64>, tensor<2x5x4x8xf64>, tensor<2x6x2x8xf64>, tensor<2x6x2x8xf64>, tensor<4x5x6xf32>) -> (tensor<2x5x4x8xf64>, tensor<2x6x2x8xf64>, tensor<2x6x2x8xf64>, tensor<4x5x6xf32>)
  return
}
