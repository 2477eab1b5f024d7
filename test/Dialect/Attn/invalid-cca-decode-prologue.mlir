// RUN: attnfuse-opt %s -split-input-file -verify-diagnostics

// Every diagnostic of the attn.cca_decode_prologue verifier, one case per
// split. Base shapes: Hq 4, Hk 2, d 4, conv 2/2 (P = 2, C = 24), batch 2,
// value shift (v_cur, v_prev and the shift state 4 wide).

// -----

// num_heads must be a multiple of num_kv_heads.
func.func @heads(%qr: tensor<2x1x16xf32>,
    %kr: tensor<2x1x8xf32>,
    %vc: tensor<2x1x4xf32>,
    %vp: tensor<2x1x4xf32>,
    %dw: tensor<24x1x2xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x2x24xf32>,
    %ss: tensor<2x1x4xf32>,
    %pos: tensor<2xi32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>) {
  %di3_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di3_init1 = tensor.empty() : tensor<2x1x2x4xf32>
  %di3_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{num_heads (4) must be a multiple of num_kv_heads (3)}}
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di3_init0, %di3_init1, %di3_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 3 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x1x16xf32>, tensor<2x1x8xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>)
  return %q, %k, %v, %cso, %sso : tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>
}

// -----

// Two positive kernel sizes.
func.func @kernel_sizes(%qr: tensor<2x1x16xf32>,
    %kr: tensor<2x1x8xf32>,
    %vc: tensor<2x1x4xf32>,
    %vp: tensor<2x1x4xf32>,
    %dw: tensor<24x1x2xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x2x24xf32>,
    %ss: tensor<2x1x4xf32>,
    %pos: tensor<2xi32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>) {
  %di4_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di4_init1 = tensor.empty() : tensor<2x1x2x4xf32>
  %di4_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{conv_kernel_sizes must hold two positive kernel sizes [k0, k1], got [2, 0]}}
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di4_init0, %di4_init1, %di4_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 0>, value_shift}
      : (tensor<2x1x16xf32>, tensor<2x1x8xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>)
  return %q, %k, %v, %cso, %sso : tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>
}

// -----

// The value shift halves num_kv_heads * head_dim, which must be even.
func.func @odd_value_latent(%qr: tensor<2x1x16xf32>,
    %kr: tensor<2x1x8xf32>,
    %vc: tensor<2x1x4xf32>,
    %vp: tensor<2x1x4xf32>,
    %dw: tensor<24x1x2xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x2x24xf32>,
    %ss: tensor<2x1x4xf32>,
    %pos: tensor<2xi32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>) {
  %di5_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di5_init1 = tensor.empty() : tensor<2x1x2x4xf32>
  %di5_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{value_shift splits the num_kv_heads * head_dim = 3 value channels in two halves; it must be even}}
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di5_init0, %di5_init1, %di5_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 3 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x1x16xf32>, tensor<2x1x8xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>)
  return %q, %k, %v, %cso, %sso : tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>
}

// -----

// value_shift reads v_prev.
func.func @missing_v_prev(%qr: tensor<2x1x16xf32>,
    %kr: tensor<2x1x8xf32>,
    %vc: tensor<2x1x4xf32>,
    %dw: tensor<24x1x2xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x2x24xf32>,
    %ss: tensor<2x1x4xf32>,
    %pos: tensor<2xi32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>) {
  %di6_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di6_init1 = tensor.empty() : tensor<2x1x2x4xf32>
  %di6_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{value_shift needs 'v_prev'}}
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di6_init0, %di6_init1, %di6_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x1x16xf32>, tensor<2x1x8xf32>, tensor<2x1x4xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>)
  return %q, %k, %v, %cso, %sso : tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>
}

// -----

// v_prev without value_shift.
func.func @stray_v_prev(%qr: tensor<2x1x16xf32>,
    %kr: tensor<2x1x8xf32>,
    %vc: tensor<2x1x8xf32>,
    %vp: tensor<2x1x4xf32>,
    %dw: tensor<24x1x2xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x2x24xf32>,
    %pos: tensor<2xi32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>) {
  %di7_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di7_init1 = tensor.empty() : tensor<2x1x2x4xf32>
  %di7_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{'v_prev' is given but value_shift is not set}}
  %q, %k, %v, %cso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di7_init0, %di7_init1, %di7_init2) conv_state(%cs)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>}
      : (tensor<2x1x16xf32>, tensor<2x1x8xf32>, tensor<2x1x8xf32>, tensor<2x1x4xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>)
  return %q, %k, %v, %cso : tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>
}

// -----

// value_shift reads the shift state.
func.func @missing_shift_state(%qr: tensor<2x1x16xf32>,
    %kr: tensor<2x1x8xf32>,
    %vc: tensor<2x1x4xf32>,
    %vp: tensor<2x1x4xf32>,
    %dw: tensor<24x1x2xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x2x24xf32>,
    %pos: tensor<2xi32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>) {
  %di8_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di8_init1 = tensor.empty() : tensor<2x1x2x4xf32>
  %di8_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{value_shift needs 'shift_state'}}
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di8_init0, %di8_init1, %di8_init2) conv_state(%cs)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x1x16xf32>, tensor<2x1x8xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>)
  return %q, %k, %v, %cso, %sso : tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>
}

// -----

// A shift state without value_shift.
func.func @stray_shift_state(%qr: tensor<2x1x16xf32>,
    %kr: tensor<2x1x8xf32>,
    %vc: tensor<2x1x8xf32>,
    %dw: tensor<24x1x2xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x2x24xf32>,
    %ss: tensor<2x1x4xf32>,
    %pos: tensor<2xi32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>) {
  %di9_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di9_init1 = tensor.empty() : tensor<2x1x2x4xf32>
  %di9_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{'shift_state' is given but value_shift is not set}}
  %q, %k, %v, %cso = attn.cca_decode_prologue %qr, %kr, %vc
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di9_init0, %di9_init1, %di9_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>}
      : (tensor<2x1x16xf32>, tensor<2x1x8xf32>, tensor<2x1x8xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>)
  return %q, %k, %v, %cso : tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>
}

// -----

// value_shift returns the updated shift state.
func.func @missing_shift_state_out(%qr: tensor<2x1x16xf32>,
    %kr: tensor<2x1x8xf32>,
    %vc: tensor<2x1x4xf32>,
    %vp: tensor<2x1x4xf32>,
    %dw: tensor<24x1x2xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x2x24xf32>,
    %ss: tensor<2x1x4xf32>,
    %pos: tensor<2xi32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>) {
  %di10_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di10_init1 = tensor.empty() : tensor<2x1x2x4xf32>
  %di10_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{value_shift needs 'shift_state_out'}}
  %q, %k, %v, %cso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di10_init0, %di10_init1, %di10_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x1x16xf32>, tensor<2x1x8xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>)
  return %q, %k, %v, %cso : tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>
}

// -----

// An updated shift state without value_shift.
func.func @stray_shift_state_out(%qr: tensor<2x1x16xf32>,
    %kr: tensor<2x1x8xf32>,
    %vc: tensor<2x1x8xf32>,
    %dw: tensor<24x1x2xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x2x24xf32>,
    %pos: tensor<2xi32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>) {
  %di11_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di11_init1 = tensor.empty() : tensor<2x1x2x4xf32>
  %di11_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{'shift_state_out' is given but value_shift is not set}}
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di11_init0, %di11_init1, %di11_init2) conv_state(%cs)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>}
      : (tensor<2x1x16xf32>, tensor<2x1x8xf32>, tensor<2x1x8xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>)
  return %q, %k, %v, %cso, %sso : tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>
}

// -----

// qr is [batch, 1, Lq].
func.func @qr_rank(%qr: tensor<2x16xf32>,
    %kr: tensor<2x1x8xf32>,
    %vc: tensor<2x1x4xf32>,
    %vp: tensor<2x1x4xf32>,
    %dw: tensor<24x1x2xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x2x24xf32>,
    %ss: tensor<2x1x4xf32>,
    %pos: tensor<2xi32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>) {
  %di12_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di12_init1 = tensor.empty() : tensor<2x1x2x4xf32>
  %di12_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{'qr' must be a rank-3 tensor [batch, 1, num_heads * head_dim], got rank 2}}
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di12_init0, %di12_init1, %di12_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x16xf32>, tensor<2x1x8xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>)
  return %q, %k, %v, %cso, %sso : tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>
}

// -----

// One token per sequence.
func.func @qr_seq(%qr: tensor<2x3x16xf32>,
    %kr: tensor<2x1x8xf32>,
    %vc: tensor<2x1x4xf32>,
    %vp: tensor<2x1x4xf32>,
    %dw: tensor<24x1x2xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x2x24xf32>,
    %ss: tensor<2x1x4xf32>,
    %pos: tensor<2xi32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>) {
  %di13_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di13_init1 = tensor.empty() : tensor<2x1x2x4xf32>
  %di13_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{'qr' must have shape [batch, 1, num_heads * head_dim] = [2, 1, 16], got [2, 3, 16]}}
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di13_init0, %di13_init1, %di13_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x3x16xf32>, tensor<2x1x8xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>)
  return %q, %k, %v, %cso, %sso : tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>
}

// -----

// kr holds the key heads.
func.func @kr_width(%qr: tensor<2x1x16xf32>,
    %kr: tensor<2x1x4xf32>,
    %vc: tensor<2x1x4xf32>,
    %vp: tensor<2x1x4xf32>,
    %dw: tensor<24x1x2xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x2x24xf32>,
    %ss: tensor<2x1x4xf32>,
    %pos: tensor<2xi32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>) {
  %di14_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di14_init1 = tensor.empty() : tensor<2x1x2x4xf32>
  %di14_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{'kr' must have shape [batch, 1, num_kv_heads * head_dim] = [2, 1, 8], got [2, 1, 4]}}
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di14_init0, %di14_init1, %di14_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x1x16xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>)
  return %q, %k, %v, %cso, %sso : tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>
}

// -----

// Every per-sequence operand has qr's batch.
func.func @kr_batch(%qr: tensor<2x1x16xf32>,
    %kr: tensor<3x1x8xf32>,
    %vc: tensor<2x1x4xf32>,
    %vp: tensor<2x1x4xf32>,
    %dw: tensor<24x1x2xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x2x24xf32>,
    %ss: tensor<2x1x4xf32>,
    %pos: tensor<2xi32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>) {
  %di15_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di15_init1 = tensor.empty() : tensor<2x1x2x4xf32>
  %di15_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{'kr' must have shape [batch, 1, num_kv_heads * head_dim] = [2, 1, 8], got [3, 1, 8]}}
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di15_init0, %di15_init1, %di15_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x1x16xf32>, tensor<3x1x8xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>)
  return %q, %k, %v, %cso, %sso : tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>
}

// -----

// With the value shift v_cur is half of the value heads.
func.func @v_cur_shifted(%qr: tensor<2x1x16xf32>,
    %kr: tensor<2x1x8xf32>,
    %vc: tensor<2x1x8xf32>,
    %vp: tensor<2x1x4xf32>,
    %dw: tensor<24x1x2xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x2x24xf32>,
    %ss: tensor<2x1x4xf32>,
    %pos: tensor<2xi32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>) {
  %di16_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di16_init1 = tensor.empty() : tensor<2x1x2x4xf32>
  %di16_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{'v_cur' must have shape [batch, 1, num_kv_heads * head_dim / 2] = [2, 1, 4], got [2, 1, 8]}}
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di16_init0, %di16_init1, %di16_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x1x16xf32>, tensor<2x1x8xf32>, tensor<2x1x8xf32>, tensor<2x1x4xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>)
  return %q, %k, %v, %cso, %sso : tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>
}

// -----

// Without it, all of them.
func.func @v_cur_plain(%qr: tensor<2x1x16xf32>,
    %kr: tensor<2x1x8xf32>,
    %vc: tensor<2x1x4xf32>,
    %dw: tensor<24x1x2xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x2x24xf32>,
    %pos: tensor<2xi32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>) {
  %di17_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di17_init1 = tensor.empty() : tensor<2x1x2x4xf32>
  %di17_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{'v_cur' must have shape [batch, 1, num_kv_heads * head_dim] = [2, 1, 8], got [2, 1, 4]}}
  %q, %k, %v, %cso = attn.cca_decode_prologue %qr, %kr, %vc
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di17_init0, %di17_init1, %di17_init2) conv_state(%cs)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>}
      : (tensor<2x1x16xf32>, tensor<2x1x8xf32>, tensor<2x1x4xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>)
  return %q, %k, %v, %cso : tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>
}

// -----

// v_prev is the other half.
func.func @v_prev_width(%qr: tensor<2x1x16xf32>,
    %kr: tensor<2x1x8xf32>,
    %vc: tensor<2x1x4xf32>,
    %vp: tensor<2x1x8xf32>,
    %dw: tensor<24x1x2xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x2x24xf32>,
    %ss: tensor<2x1x4xf32>,
    %pos: tensor<2xi32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>) {
  %di18_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di18_init1 = tensor.empty() : tensor<2x1x2x4xf32>
  %di18_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{'v_prev' must have shape [batch, 1, num_kv_heads * head_dim / 2] = [2, 1, 4], got [2, 1, 8]}}
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di18_init0, %di18_init1, %di18_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x1x16xf32>, tensor<2x1x8xf32>, tensor<2x1x4xf32>, tensor<2x1x8xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>)
  return %q, %k, %v, %cso, %sso : tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>
}

// -----

// Depthwise weight [C, 1, k0].
func.func @dw_shape(%qr: tensor<2x1x16xf32>,
    %kr: tensor<2x1x8xf32>,
    %vc: tensor<2x1x4xf32>,
    %vp: tensor<2x1x4xf32>,
    %dw: tensor<24x1x3xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x2x24xf32>,
    %ss: tensor<2x1x4xf32>,
    %pos: tensor<2xi32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>) {
  %di19_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di19_init1 = tensor.empty() : tensor<2x1x2x4xf32>
  %di19_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{'conv_dw_weight' must have shape [(num_heads + num_kv_heads) * head_dim, 1, k0] = [24, 1, 2], got [24, 1, 3]}}
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di19_init0, %di19_init1, %di19_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x1x16xf32>, tensor<2x1x8xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<24x1x3xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>)
  return %q, %k, %v, %cso, %sso : tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>
}

// -----

// Parameters are static.
func.func @dw_dynamic(%qr: tensor<2x1x16xf32>,
    %kr: tensor<2x1x8xf32>,
    %vc: tensor<2x1x4xf32>,
    %vp: tensor<2x1x4xf32>,
    %dw: tensor<?x1x2xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x2x24xf32>,
    %ss: tensor<2x1x4xf32>,
    %pos: tensor<2xi32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>) {
  %di20_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di20_init1 = tensor.empty() : tensor<2x1x2x4xf32>
  %di20_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{'conv_dw_weight' must have shape [(num_heads + num_kv_heads) * head_dim, 1, k0] = [24, 1, 2], got [?, 1, 2]}}
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di20_init0, %di20_init1, %di20_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x1x16xf32>, tensor<2x1x8xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<?x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>)
  return %q, %k, %v, %cso, %sso : tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>
}

// -----

// Depthwise bias [C].
func.func @dwb_shape(%qr: tensor<2x1x16xf32>,
    %kr: tensor<2x1x8xf32>,
    %vc: tensor<2x1x4xf32>,
    %vp: tensor<2x1x4xf32>,
    %dw: tensor<24x1x2xf32>,
    %dwb: tensor<16xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x2x24xf32>,
    %ss: tensor<2x1x4xf32>,
    %pos: tensor<2xi32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>) {
  %di21_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di21_init1 = tensor.empty() : tensor<2x1x2x4xf32>
  %di21_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{'conv_dw_bias' must have shape [(num_heads + num_kv_heads) * head_dim] = [24], got [16]}}
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di21_init0, %di21_init1, %di21_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x1x16xf32>, tensor<2x1x8xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<24x1x2xf32>, tensor<16xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>)
  return %q, %k, %v, %cso, %sso : tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>
}

// -----

// Grouped weight [C, head_dim, k1].
func.func @gw_shape(%qr: tensor<2x1x16xf32>,
    %kr: tensor<2x1x8xf32>,
    %vc: tensor<2x1x4xf32>,
    %vp: tensor<2x1x4xf32>,
    %dw: tensor<24x1x2xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x24x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x2x24xf32>,
    %ss: tensor<2x1x4xf32>,
    %pos: tensor<2xi32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>) {
  %di22_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di22_init1 = tensor.empty() : tensor<2x1x2x4xf32>
  %di22_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{'conv_g_weight' must have shape [(num_heads + num_kv_heads) * head_dim, head_dim, k1] = [24, 4, 2], got [24, 24, 2]}}
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di22_init0, %di22_init1, %di22_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x1x16xf32>, tensor<2x1x8xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x24x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>)
  return %q, %k, %v, %cso, %sso : tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>
}

// -----

// Grouped bias [C].
func.func @gwb_shape(%qr: tensor<2x1x16xf32>,
    %kr: tensor<2x1x8xf32>,
    %vc: tensor<2x1x4xf32>,
    %vp: tensor<2x1x4xf32>,
    %dw: tensor<24x1x2xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<8xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x2x24xf32>,
    %ss: tensor<2x1x4xf32>,
    %pos: tensor<2xi32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>) {
  %di23_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di23_init1 = tensor.empty() : tensor<2x1x2x4xf32>
  %di23_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{'conv_g_bias' must have shape [(num_heads + num_kv_heads) * head_dim] = [24], got [8]}}
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di23_init0, %di23_init1, %di23_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x1x16xf32>, tensor<2x1x8xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<8xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>)
  return %q, %k, %v, %cso, %sso : tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>
}

// -----

// One temperature per KV head.
func.func @temp_shape(%qr: tensor<2x1x16xf32>,
    %kr: tensor<2x1x8xf32>,
    %vc: tensor<2x1x4xf32>,
    %vp: tensor<2x1x4xf32>,
    %dw: tensor<24x1x2xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<4xf32>,
    %cs: tensor<2x2x24xf32>,
    %ss: tensor<2x1x4xf32>,
    %pos: tensor<2xi32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>) {
  %di24_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di24_init1 = tensor.empty() : tensor<2x1x2x4xf32>
  %di24_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{'temp' must have shape [num_kv_heads] = [2], got [4]}}
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di24_init0, %di24_init1, %di24_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x1x16xf32>, tensor<2x1x8xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<4xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>)
  return %q, %k, %v, %cso, %sso : tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>
}

// -----

// The conv state holds P = (k0 - 1) + (k1 - 1) rows.
func.func @conv_state_rows(%qr: tensor<2x1x16xf32>,
    %kr: tensor<2x1x8xf32>,
    %vc: tensor<2x1x4xf32>,
    %vp: tensor<2x1x4xf32>,
    %dw: tensor<24x1x2xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x3x24xf32>,
    %ss: tensor<2x1x4xf32>,
    %pos: tensor<2xi32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>) {
  %di25_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di25_init1 = tensor.empty() : tensor<2x1x2x4xf32>
  %di25_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{'conv_state' must have shape [batch, (k0 - 1) + (k1 - 1), (num_heads + num_kv_heads) * head_dim] = [2, 2, 24], got [2, 3, 24]}}
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di25_init0, %di25_init1, %di25_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x1x16xf32>, tensor<2x1x8xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x3x24xf32>, tensor<2x1x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>)
  return %q, %k, %v, %cso, %sso : tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>
}

// -----

// ... of C channels, time-major.
func.func @conv_state_channels(%qr: tensor<2x1x16xf32>,
    %kr: tensor<2x1x8xf32>,
    %vc: tensor<2x1x4xf32>,
    %vp: tensor<2x1x4xf32>,
    %dw: tensor<24x1x2xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x24x2xf32>,
    %ss: tensor<2x1x4xf32>,
    %pos: tensor<2xi32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>) {
  %di26_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di26_init1 = tensor.empty() : tensor<2x1x2x4xf32>
  %di26_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{'conv_state' must have shape [batch, (k0 - 1) + (k1 - 1), (num_heads + num_kv_heads) * head_dim] = [2, 2, 24], got [2, 24, 2]}}
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di26_init0, %di26_init1, %di26_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x1x16xf32>, tensor<2x1x8xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x24x2xf32>, tensor<2x1x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>)
  return %q, %k, %v, %cso, %sso : tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>
}

// -----

// The shift state is the previous token's v_prev.
func.func @shift_state_shape(%qr: tensor<2x1x16xf32>,
    %kr: tensor<2x1x8xf32>,
    %vc: tensor<2x1x4xf32>,
    %vp: tensor<2x1x4xf32>,
    %dw: tensor<24x1x2xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x2x24xf32>,
    %ss: tensor<2x1x8xf32>,
    %pos: tensor<2xi32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>) {
  %di27_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di27_init1 = tensor.empty() : tensor<2x1x2x4xf32>
  %di27_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{'shift_state' must have shape [batch, 1, num_kv_heads * head_dim / 2] = [2, 1, 4], got [2, 1, 8]}}
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di27_init0, %di27_init1, %di27_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x1x16xf32>, tensor<2x1x8xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x8xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>)
  return %q, %k, %v, %cso, %sso : tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>
}

// -----

// One position per sequence.
func.func @positions_shape(%qr: tensor<2x1x16xf32>,
    %kr: tensor<2x1x8xf32>,
    %vc: tensor<2x1x4xf32>,
    %vp: tensor<2x1x4xf32>,
    %dw: tensor<24x1x2xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x2x24xf32>,
    %ss: tensor<2x1x4xf32>,
    %pos: tensor<2x1xi32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>) {
  %di28_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di28_init1 = tensor.empty() : tensor<2x1x2x4xf32>
  %di28_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{'positions' must have shape [batch] = [2], got [2, 1]}}
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di28_init0, %di28_init1, %di28_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x1x16xf32>, tensor<2x1x8xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>, tensor<2x1xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>)
  return %q, %k, %v, %cso, %sso : tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>
}

// -----

// query [batch, 1, num_heads, head_dim].
func.func @query_shape(%qr: tensor<2x1x16xf32>,
    %kr: tensor<2x1x8xf32>,
    %vc: tensor<2x1x4xf32>,
    %vp: tensor<2x1x4xf32>,
    %dw: tensor<24x1x2xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x2x24xf32>,
    %ss: tensor<2x1x4xf32>,
    %pos: tensor<2xi32>)
    -> (tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>) {
  %di29_init0 = tensor.empty() : tensor<2x1x2x4xf32>
  %di29_init1 = tensor.empty() : tensor<2x1x2x4xf32>
  %di29_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{'query' must have shape [batch, 1, num_heads, head_dim] = [2, 1, 4, 4], got [2, 1, 2, 4]}}
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di29_init0, %di29_init1, %di29_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x1x16xf32>, tensor<2x1x8xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>)
  return %q, %k, %v, %cso, %sso : tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>
}

// -----

// key [batch, 1, num_kv_heads, head_dim].
func.func @key_shape(%qr: tensor<2x1x16xf32>,
    %kr: tensor<2x1x8xf32>,
    %vc: tensor<2x1x4xf32>,
    %vp: tensor<2x1x4xf32>,
    %dw: tensor<24x1x2xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x2x24xf32>,
    %ss: tensor<2x1x4xf32>,
    %pos: tensor<2xi32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>) {
  %di30_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di30_init1 = tensor.empty() : tensor<2x1x4x4xf32>
  %di30_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{'key' must have shape [batch, 1, num_kv_heads, head_dim] = [2, 1, 2, 4], got [2, 1, 4, 4]}}
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di30_init0, %di30_init1, %di30_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x1x16xf32>, tensor<2x1x8xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>)
  return %q, %k, %v, %cso, %sso : tensor<2x1x4x4xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>
}

// -----

// value [batch, 1, num_kv_heads, head_dim].
func.func @value_shape(%qr: tensor<2x1x16xf32>,
    %kr: tensor<2x1x8xf32>,
    %vc: tensor<2x1x4xf32>,
    %vp: tensor<2x1x4xf32>,
    %dw: tensor<24x1x2xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x2x24xf32>,
    %ss: tensor<2x1x4xf32>,
    %pos: tensor<2xi32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x8xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>) {
  %di31_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di31_init1 = tensor.empty() : tensor<2x1x2x4xf32>
  %di31_init2 = tensor.empty() : tensor<2x1x2x8xf32>
  // expected-error @+1 {{'value' must have shape [batch, 1, num_kv_heads, head_dim] = [2, 1, 2, 4], got [2, 1, 2, 8]}}
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di31_init0, %di31_init1, %di31_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x1x16xf32>, tensor<2x1x8xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x8xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x8xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>)
  return %q, %k, %v, %cso, %sso : tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x8xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>
}

// -----

// The updated conv state has the state's shape.
func.func @conv_state_out_shape(%qr: tensor<2x1x16xf32>,
    %kr: tensor<2x1x8xf32>,
    %vc: tensor<2x1x4xf32>,
    %vp: tensor<2x1x4xf32>,
    %dw: tensor<24x1x2xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x2x24xf32>,
    %ss: tensor<2x1x4xf32>,
    %pos: tensor<2xi32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x24xf32>, tensor<2x1x4xf32>) {
  %di32_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di32_init1 = tensor.empty() : tensor<2x1x2x4xf32>
  %di32_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{'conv_state_out' must have shape [batch, (k0 - 1) + (k1 - 1), (num_heads + num_kv_heads) * head_dim] = [2, 2, 24], got [2, 1, 24]}}
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di32_init0, %di32_init1, %di32_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x1x16xf32>, tensor<2x1x8xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x24xf32>, tensor<2x1x4xf32>)
  return %q, %k, %v, %cso, %sso : tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x24xf32>, tensor<2x1x4xf32>
}

// -----

// The updated shift state has the state's shape.
func.func @shift_state_out_shape(%qr: tensor<2x1x16xf32>,
    %kr: tensor<2x1x8xf32>,
    %vc: tensor<2x1x4xf32>,
    %vp: tensor<2x1x4xf32>,
    %dw: tensor<24x1x2xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x2x24xf32>,
    %ss: tensor<2x1x4xf32>,
    %pos: tensor<2xi32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x2xf32>) {
  %di33_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di33_init1 = tensor.empty() : tensor<2x1x2x4xf32>
  %di33_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{'shift_state_out' must have shape [batch, 1, num_kv_heads * head_dim / 2] = [2, 1, 4], got [2, 1, 2]}}
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di33_init0, %di33_init1, %di33_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x1x16xf32>, tensor<2x1x8xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x2xf32>)
  return %q, %k, %v, %cso, %sso : tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x2xf32>
}

// -----

// eps > 0.
func.func @eps(%qr: tensor<2x1x16xf32>,
    %kr: tensor<2x1x8xf32>,
    %vc: tensor<2x1x4xf32>,
    %vp: tensor<2x1x4xf32>,
    %dw: tensor<24x1x2xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x2x24xf32>,
    %ss: tensor<2x1x4xf32>,
    %pos: tensor<2xi32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>) {
  %di34_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di34_init1 = tensor.empty() : tensor<2x1x2x4xf32>
  %di34_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{eps must be positive, got 0}}
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di34_init0, %di34_init1, %di34_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift, eps = 0.0}
      : (tensor<2x1x16xf32>, tensor<2x1x8xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>)
  return %q, %k, %v, %cso, %sso : tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>
}

// -----

// norm = clamp_eps: eps^2 stays a normal f32.
func.func @eps_clamp_underflows(%qr: tensor<2x1x16xf32>,
    %kr: tensor<2x1x8xf32>,
    %vc: tensor<2x1x4xf32>,
    %vp: tensor<2x1x4xf32>,
    %dw: tensor<24x1x2xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x2x24xf32>,
    %ss: tensor<2x1x4xf32>,
    %pos: tensor<2xi32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>) {
  %di35_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di35_init1 = tensor.empty() : tensor<2x1x2x4xf32>
  %di35_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{norm = clamp_eps needs eps >= 1.1e-19}}
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di35_init0, %di35_init1, %di35_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift, norm = #attn.norm<clamp_eps>, eps = 1.0e-30}
      : (tensor<2x1x16xf32>, tensor<2x1x8xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>)
  return %q, %k, %v, %cso, %sso : tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>
}

// -----

// RoPE must rotate a whole number of dims.
func.func @rope_fraction(%qr: tensor<2x1x16xf32>,
    %kr: tensor<2x1x8xf32>,
    %vc: tensor<2x1x4xf32>,
    %vp: tensor<2x1x4xf32>,
    %dw: tensor<24x1x2xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x2x24xf32>,
    %ss: tensor<2x1x4xf32>,
    %pos: tensor<2xi32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>) {
  %di36_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di36_init1 = tensor.empty() : tensor<2x1x2x4xf32>
  %di36_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{rope fraction 3.000000e-01 of head_dim 4 is not a whole number of dimensions}}
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di36_init0, %di36_init1, %di36_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift, rope = #attn.rope<theta = 10000.0, fraction = 0.3>}
      : (tensor<2x1x16xf32>, tensor<2x1x8xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>)
  return %q, %k, %v, %cso, %sso : tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>
}

// -----

// ... and an even number.
func.func @rope_odd(%qr: tensor<2x1x16xf32>,
    %kr: tensor<2x1x8xf32>,
    %vc: tensor<2x1x4xf32>,
    %vp: tensor<2x1x4xf32>,
    %dw: tensor<24x1x2xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x2x24xf32>,
    %ss: tensor<2x1x4xf32>,
    %pos: tensor<2xi32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>) {
  %di37_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di37_init1 = tensor.empty() : tensor<2x1x2x4xf32>
  %di37_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{rope rotates 1 dimensions of each head; the rotated width must be even}}
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di37_init0, %di37_init1, %di37_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift, rope = #attn.rope<theta = 10000.0, fraction = 0.25>}
      : (tensor<2x1x16xf32>, tensor<2x1x8xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>)
  return %q, %k, %v, %cso, %sso : tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>
}

// -----

// One element type for every float operand and result.
func.func @element_type(%qr: tensor<2x1x16xf32>,
    %kr: tensor<2x1x8xf32>,
    %vc: tensor<2x1x4xf32>,
    %vp: tensor<2x1x4xf32>,
    %dw: tensor<24x1x2xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x2x24xbf16>,
    %ss: tensor<2x1x4xf32>,
    %pos: tensor<2xi32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>) {
  %di38_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di38_init1 = tensor.empty() : tensor<2x1x2x4xf32>
  %di38_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{'conv_state' has element type 'bf16', expected 'f32' (the element type of 'qr')}}
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di38_init0, %di38_init1, %di38_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x1x16xf32>, tensor<2x1x8xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xbf16>, tensor<2x1x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>)
  return %q, %k, %v, %cso, %sso : tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>
}

// -----

// ... results included.
func.func @result_element_type(%qr: tensor<2x1x16xf32>,
    %kr: tensor<2x1x8xf32>,
    %vc: tensor<2x1x4xf32>,
    %vp: tensor<2x1x4xf32>,
    %dw: tensor<24x1x2xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x2x24xf32>,
    %ss: tensor<2x1x4xf32>,
    %pos: tensor<2xi32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf16>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>) {
  %di39_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di39_init1 = tensor.empty() : tensor<2x1x2x4xf16>
  %di39_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{'key' has element type 'f16', expected 'f32' (the element type of 'qr')}}
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di39_init0, %di39_init1, %di39_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x1x16xf32>, tensor<2x1x8xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf16>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf16>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>)
  return %q, %k, %v, %cso, %sso : tensor<2x1x4x4xf32>, tensor<2x1x2x4xf16>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>
}

// -----

// Positions are integers (ODS constraint).
func.func @positions_float(%qr: tensor<2x1x16xf32>,
    %kr: tensor<2x1x8xf32>,
    %vc: tensor<2x1x4xf32>,
    %vp: tensor<2x1x4xf32>,
    %dw: tensor<24x1x2xf32>,
    %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>,
    %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>,
    %cs: tensor<2x2x24xf32>,
    %ss: tensor<2x1x4xf32>,
    %pos: tensor<2xf32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>) {
  %di40_init0 = tensor.empty() : tensor<2x1x4x4xf32>
  %di40_init1 = tensor.empty() : tensor<2x1x2x4xf32>
  %di40_init2 = tensor.empty() : tensor<2x1x2x4xf32>
  // expected-error @+1 {{operand #14 must be ranked tensor of signless integer values, but got 'tensor<2xf32>'}}
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di40_init0, %di40_init1, %di40_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x1x16xf32>, tensor<2x1x8xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>, tensor<2xf32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>)
  return %q, %k, %v, %cso, %sso : tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>
}

// -----

// Each output's init has the output's type.
func.func @query_init_type(%qr: tensor<2x1x16xf32>, %kr: tensor<2x1x8xf32>, %vc: tensor<2x1x4xf32>, %vp: tensor<2x1x4xf32>, %dw: tensor<24x1x2xf32>, %dwb: tensor<24xf32>, %gw: tensor<24x4x2xf32>, %gwb: tensor<24xf32>, %temp: tensor<2xf32>, %cs: tensor<2x2x24xf32>, %ss: tensor<2x1x4xf32>, %pos: tensor<2xi32>, %qi: tensor<?x1x4x4xf32>, %kvi: tensor<2x1x2x4xf32>) {
  // expected-error @+1 {{'query_init' must have the type 'tensor<2x1x4x4xf32>' of its result, got 'tensor<?x1x4x4xf32>'}}
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%qi, %kvi, %kvi) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x1x16xf32>, tensor<2x1x8xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<?x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>)
  return
}

// -----

// The state is updated in place: the updated state has the state's type.
func.func @conv_state_type(%qr: tensor<2x1x16xf32>, %kr: tensor<2x1x8xf32>, %vc: tensor<2x1x4xf32>, %vp: tensor<2x1x4xf32>, %dw: tensor<24x1x2xf32>, %dwb: tensor<24xf32>, %gw: tensor<24x4x2xf32>, %gwb: tensor<24xf32>, %temp: tensor<2xf32>, %cs: tensor<?x2x24xf32>, %ss: tensor<2x1x4xf32>, %pos: tensor<2xi32>, %qi: tensor<2x1x4x4xf32>, %kvi: tensor<2x1x2x4xf32>) {
  // expected-error @+1 {{'conv_state' must have the type 'tensor<2x2x24xf32>' of its result, got 'tensor<?x2x24xf32>'}}
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%qi, %kvi, %kvi) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<2x1x16xf32>, tensor<2x1x8xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<24x1x2xf32>, tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>, tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<?x2x24xf32>, tensor<2x1x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x4x4xf32>, tensor<2x1x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2x2x24xf32>, tensor<2x1x4xf32>)
  return
}
