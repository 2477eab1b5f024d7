// RUN: attnfuse-opt %s --convert-attn-kernels-to-nvvm -split-input-file -verify-diagnostics | FileCheck %s

// The cache write of a paged decoder's prefill: one CTA per (new token,
// sequence) copies the token's row with 16-byte vectors; the launch returns
// the cache, updated in place (the result aliases the cache operand).
// CHECK-LABEL: func.func @update_paged
// CHECK: %[[R:.*]] = call @attn_cache_update_bf16_paged_h4_d64_launch(%arg0, %arg1, %arg2, %arg3, %arg4) : (tensor<64x16x4x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<64x16x4x64xbf16>
// CHECK: return %[[R]]
// CHECK: gpu.func @attn_cache_update_bf16_paged_h4_d64(%{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: i32, %{{.*}}: i32) kernel attributes {{{.*}}nvvm.maxntid = array<i32: 32, 1, 1>
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// CHECK: func.func private @attn_cache_update_bf16_paged_h4_d64_launch
// CHECK-SAME: kind = "cache_update"
// CHECK-SAME: symbols = "B = batch, S = new tokens per sequence, T = pages per sequence (block_table width)"
// CHECK-SAME: grid = [{expr = "S"}, {expr = "B"}]
// CHECK-SAME: #attn.kernel_param<name = "max_pages", kind = "scalar", detail = "i32", value = "T">, #attn.kernel_param<name = "num_pages", kind = "scalar", detail = "i32", value = "64">
// CHECK-SAME: #attn.kernel_tensor<name = "cache", role = "paged cache, updated in place", operand = 0, dtype = "bf16", shape = [64, 16, 4, 64], layout = "row-major, contiguous">
// CHECK-SAME: #attn.kernel_tensor<name = "block_table", role = "{{[^"]*}}", operand = 4, dtype = "i32"
// CHECK-SAME: aliases = [{result = "cache_out", tensor = "cache"}]
func.func @update_paged(%c: tensor<64x16x4x64xbf16>, %k: tensor<?x?x4x64xbf16>, %pos: tensor<?xi32>, %len: tensor<?xi32>, %bt: tensor<?x?xi32>) -> tensor<64x16x4x64xbf16> {
  %r = attn.cache_update %c, %k positions(%pos) lengths(%len) block_table(%bt)
      : (tensor<64x16x4x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<64x16x4x64xbf16>
  return %r : tensor<64x16x4x64xbf16>
}

// -----

// A contiguous cache with i64 positions: the capacity is a launch symbol.
// CHECK-LABEL: func.func @update_contiguous_i64
// CHECK: call @attn_cache_update_bf16_h2_d64_launch(%arg0, %arg1, %arg2)
// CHECK: func.func private @attn_cache_update_bf16_h2_d64_launch
// CHECK-SAME: symbols = "B = batch, S = new tokens per sequence, T = cache capacity in tokens"
// CHECK-SAME: #attn.kernel_param<name = "capacity", kind = "scalar", detail = "i32", value = "T">
// CHECK-SAME: #attn.kernel_tensor<name = "positions", role = "{{[^"]*}}", operand = 2, dtype = "i64"
// CHECK-SAME: aliases = [{result = "cache_out", tensor = "cache"}]
func.func @update_contiguous_i64(%c: tensor<?x?x2x64xbf16>, %k: tensor<?x?x2x64xbf16>, %pos: tensor<?xi64>) -> tensor<?x?x2x64xbf16> {
  %r = attn.cache_update %c, %k positions(%pos)
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?xi64>) -> tensor<?x?x2x64xbf16>
  return %r : tensor<?x?x2x64xbf16>
}

// -----

// The per-sequence view: one CTA per (block-table entry, sequence) copies a
// page; the view has page_size rows per entry.
// CHECK-LABEL: func.func @gather
// CHECK: call @attn_cache_gather_bf16_p16_h4_d64_launch(%arg0, %arg1) : (tensor<64x16x4x64xbf16>, tensor<?x?xi32>) -> tensor<?x?x4x64xbf16>
// CHECK: gpu.func @attn_cache_gather_bf16_p16_h4_d64(%{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: i32) kernel attributes {{{.*}}nvvm.maxntid = array<i32: 128, 1, 1>
// CHECK: func.func private @attn_cache_gather_bf16_p16_h4_d64_launch
// CHECK-SAME: kind = "cache_gather"
// CHECK-SAME: grid = [{expr = "S"}, {expr = "B"}]
// CHECK-SAME: #attn.kernel_tensor<name = "output", role = "{{[^"]*}}", operand = -1, dtype = "bf16", shape = ["B", "16*S", 4, 64]
func.func @gather(%c: tensor<64x16x4x64xbf16>, %bt: tensor<?x?xi32>) -> tensor<?x?x4x64xbf16> {
  %v = attn.cache_gather %c block_table(%bt) : (tensor<64x16x4x64xbf16>, tensor<?x?xi32>) -> tensor<?x?x4x64xbf16>
  return %v : tensor<?x?x4x64xbf16>
}

// -----

// RoPE at positions[b] + t: the cos/sin tables have T rows.
// CHECK-LABEL: func.func @rope_positions
// CHECK: call @attn_rope_bf16_h16_d64_r64_pos_launch(%arg0, %arg1) : (tensor<?x?x16x64xbf16>, tensor<?xi32>) -> tensor<?x?x16x64xbf16>
// CHECK: gpu.func @attn_rope_bf16_h16_d64_r64_pos(
// CHECK: arith.mulf %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK: func.func private @attn_rope_bf16_h16_d64_r64_pos_launch
// CHECK-SAME: kind = "rope"
// CHECK-SAME: symbols = "B = batch, S = tokens per sequence, T = rows of the cos/sin tables (every positions[b] + t must be below it)"
// CHECK-SAME: #attn.kernel_param<name = "table_rows", kind = "scalar", detail = "i32", value = "T">
// CHECK-SAME: rope_tables = [{dtype = "f32", {{.*}}param = "rope_cos", rotated_dims = 64 : i64, shape = ["T", 32]
func.func @rope_positions(%q: tensor<?x?x16x64xbf16>, %pos: tensor<?xi32>) -> tensor<?x?x16x64xbf16> {
  %r = attn.rope %q positions(%pos : tensor<?xi32>) {rope = #attn.rope<theta = 10000.0>} : tensor<?x?x16x64xbf16>
  return %r : tensor<?x?x16x64xbf16>
}

// -----

// Partial rotation without positions: token t at position t, tables of S rows.
// CHECK-LABEL: func.func @rope_partial
// CHECK: call @attn_rope_bf16_h2_d128_r64_launch(%arg0)
// CHECK: func.func private @attn_rope_bf16_h2_d128_r64_launch
// CHECK-SAME: rope_tables = [{dtype = "f32", {{.*}}shape = ["S", 32]
func.func @rope_partial(%x: tensor<?x?x2x128xbf16>) -> tensor<?x?x2x128xbf16> {
  %r = attn.rope %x {rope = #attn.rope<theta = 10000.0, fraction = 0.5>} : tensor<?x?x2x128xbf16>
  return %r : tensor<?x?x2x128xbf16>
}

// -----

// The prefill attention over the gathered cache: queries at positions[b] + i,
// causal, GQA-4. One CTA per (16 query rows, head, sequence); K and V tiles
// staged in shared memory, the online softmax's max and sum through warp
// shuffles.
// CHECK-LABEL: func.func @sdpa_positions
// CHECK: call @attn_sdpa_bf16_h16_4_d64_64_causal_pos_launch(%arg0, %arg1, %arg2, %arg3) : (tensor<?x?x16x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?xi32>) -> tensor<?x?x16x64xbf16>
// CHECK: gpu.func @attn_sdpa_bf16_h16_4_d64_64_causal_pos(
// CHECK: nvvm.barrier
// CHECK: nvvm.shfl.sync bfly
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: func.func private @attn_sdpa_bf16_h16_4_d64_64_causal_pos_launch
// CHECK-SAME: kind = "sdpa"
// CHECK-SAME: symbols = "B = batch, S = query tokens per sequence, T = key tokens per sequence"
// CHECK-SAME: grid = [{expr = "ceil_div(S, 16)"}, {value = 16 : i64}, {expr = "B"}]
// CHECK-SAME: #attn.kernel_param<name = "queries", kind = "scalar", detail = "i32", value = "S">, #attn.kernel_param<name = "keys", kind = "scalar", detail = "i32", value = "T">
// CHECK-SAME: #attn.kernel_tensor<name = "positions", role = "{{[^"]*}}", operand = 3, dtype = "i32"
// CHECK-SAME: #attn.kernel_tensor<name = "output", role = "{{[^"]*}}", operand = -1, dtype = "bf16"
func.func @sdpa_positions(%q: tensor<?x?x16x64xbf16>, %k: tensor<?x?x4x64xbf16>, %v: tensor<?x?x4x64xbf16>, %pos: tensor<?xi32>) -> tensor<?x?x16x64xbf16> {
  %o = attn.sdpa %q, %k, %v positions(%pos) {causal}
      : (tensor<?x?x16x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?xi32>) -> tensor<?x?x16x64xbf16>
  return %o : tensor<?x?x16x64xbf16>
}

// -----

// Without positions (query i at i + T - S), with a bias, a key mask, a window
// and a scale: operands keep their op operand numbers.
// CHECK-LABEL: func.func @sdpa_masks
// CHECK: call @attn_sdpa_bf16_h4_1_d32_40_causal_win8_kmask_bias_launch(%arg0, %arg1, %arg2, %arg3, %arg4)
// CHECK: func.func private @attn_sdpa_bf16_h4_1_d32_40_causal_win8_kmask_bias_launch
// CHECK-SAME: #attn.kernel_tensor<name = "bias", role = "additive bias per head", operand = 3, dtype = "bf16", shape = [4, "S", "T"], layout = "row-major, contiguous">
// CHECK-SAME: #attn.kernel_tensor<name = "key_mask", role = "{{[^"]*}}", operand = 4, dtype = "i64"
// CHECK-SAME: query_position = "i + (T - S)"
// CHECK-SAME: scale = 2.000000e-01
// CHECK-SAME: window = 8 : i64
func.func @sdpa_masks(%q: tensor<?x?x4x32xbf16>, %k: tensor<?x?x1x32xbf16>, %v: tensor<?x?x1x40xbf16>, %b: tensor<4x?x?xbf16>, %m: tensor<?x?xi64>) -> tensor<?x?x4x40xbf16> {
  %o = attn.sdpa %q, %k, %v bias(%b) key_mask(%m) {causal, window = 8 : i64, scale = 0.2 : f64}
      : (tensor<?x?x4x32xbf16>, tensor<?x?x1x32xbf16>, tensor<?x?x1x40xbf16>, tensor<4x?x?xbf16>, tensor<?x?xi64>) -> tensor<?x?x4x40xbf16>
  return %o : tensor<?x?x4x40xbf16>
}

// -----

// Head dims that are not multiples of 8 stay on the host, with a warning.
// CHECK-LABEL: func.func @sdpa_odd_head_dim
// CHECK: attn.sdpa
// CHECK-NOT: gpu.module
func.func @sdpa_odd_head_dim(%q: tensor<?x?x4x12xbf16>, %k: tensor<?x?x4x12xbf16>, %pos: tensor<?xi32>) -> tensor<?x?x4x12xbf16> {
  // expected-warning @+1 {{the sm_90a sdpa kernel needs head dims that are multiples of 8, got 12 and 12; attn.sdpa stays on the host}}
  %o = attn.sdpa %q, %k, %k positions(%pos) {causal}
      : (tensor<?x?x4x12xbf16>, tensor<?x?x4x12xbf16>, tensor<?x?x4x12xbf16>, tensor<?xi32>) -> tensor<?x?x4x12xbf16>
  return %o : tensor<?x?x4x12xbf16>
}

// -----

// CCA's depthwise convolution, padded for a following k = 2 convolution:
// S + 1 output steps, one CTA per (output step, sequence), threads over the
// channels; the input steps are a scalar parameter.
// CHECK-LABEL: func.func @conv_depthwise
// CHECK: call @attn_conv_bf16_c384_g1_k2_p2_bias_launch(%arg0, %arg1, %arg2) : (tensor<?x?x384xbf16>, tensor<384x1x2xbf16>, tensor<384xbf16>) -> tensor<?x?x384xbf16>
// CHECK: gpu.func @attn_conv_bf16_c384_g1_k2_p2_bias(%{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: i32) kernel attributes {{{.*}}nvvm.maxntid = array<i32: 256, 1, 1>
// CHECK: llvm.intr.fma
// CHECK: func.func private @attn_conv_bf16_c384_g1_k2_p2_bias_launch
// CHECK-SAME: kind = "causal_conv1d"
// CHECK-SAME: symbols = "B = batch, S = input time steps"
// CHECK-SAME: grid = [{expr = "S+1"}, {expr = "B"}]
// CHECK-SAME: #attn.kernel_param<name = "steps", kind = "scalar", detail = "i32", value = "S">
// CHECK-SAME: #attn.kernel_tensor<name = "output", role = "result", operand = -1, dtype = "bf16", shape = ["B", "S+1", 384]
func.func @conv_depthwise(%x: tensor<?x?x384xbf16>, %w: tensor<384x1x2xbf16>, %b: tensor<384xbf16>) -> tensor<?x?x384xbf16> {
  %y = attn.causal_conv1d %x, %w, %b {groups = 384 : i64, padding = 2 : i64}
      : (tensor<?x?x384xbf16>, tensor<384x1x2xbf16>, tensor<384xbf16>) -> tensor<?x?x384xbf16>
  return %y : tensor<?x?x384xbf16>
}

// -----

// A grouped convolution without bias and padding: S - 1 output steps; static
// lengths stay numbers.
// CHECK-LABEL: func.func @conv_grouped_static
// CHECK: call @attn_conv_bf16_c64_g8_k2_p0_launch(%arg0, %arg1) : (tensor<2x9x64xbf16>, tensor<64x8x2xbf16>) -> tensor<2x8x64xbf16>
// CHECK: func.func private @attn_conv_bf16_c64_g8_k2_p0_launch
// CHECK-SAME: grid = [{value = 8 : i64}, {value = 2 : i64}]
// CHECK-SAME: #attn.kernel_tensor<name = "output", role = "result", operand = -1, dtype = "bf16", shape = [2, 8, 64]
func.func @conv_grouped_static(%x: tensor<2x9x64xbf16>, %w: tensor<64x8x2xbf16>) -> tensor<2x8x64xbf16> {
  %y = attn.causal_conv1d %x, %w {groups = 8 : i64, padding = 0 : i64}
      : (tensor<2x9x64xbf16>, tensor<64x8x2xbf16>) -> tensor<2x8x64xbf16>
  return %y : tensor<2x8x64xbf16>
}

// -----

// The convolution's gradient: the input gradient from (weight, dy), whose
// launch names dy's steps S (the input has S - 1), then the weight and bias
// gradients from (input, dy): f32 partial sums over 32 chunks of each
// sequence's steps (384 x 3 items fill 5 CTAs), then their sum.
// CHECK-LABEL: func.func @conv_grad_depthwise
// CHECK: %[[DX:.*]] = call @attn_conv_grad_bf16_c384_g1_k2_p2_dx_launch(%arg1, %arg2) : (tensor<384x1x2xbf16>, tensor<?x?x384xbf16>) -> tensor<?x?x384xbf16>
// CHECK: %[[P:.*]] = call @attn_conv_grad_bf16_c384_g1_k2_p2_dw_launch(%arg0, %arg2) : (tensor<?x?x384xbf16>, tensor<?x?x384xbf16>) -> tensor<?x32x1152xf32>
// CHECK: %[[DW:.*]]:2 = call @attn_conv_grad_bf16_c384_g1_k2_p2_dw_sum_launch(%[[P]]) : (tensor<?x32x1152xf32>) -> (tensor<384x1x2xbf16>, tensor<384xbf16>)
// CHECK: return %[[DX]], %[[DW]]#0, %[[DW]]#1
// CHECK: func.func private @attn_conv_grad_bf16_c384_g1_k2_p2_dx_launch
// CHECK-SAME: kind = "causal_conv1d_input_grad"
// CHECK-SAME: grid = [{expr = "S-1"}, {expr = "B"}]
// CHECK-SAME: #attn.kernel_tensor<name = "weight", role = "{{[^"]*}}", operand = 0,
// CHECK-SAME: #attn.kernel_tensor<name = "result_grad", role = "cotangent of the convolution", operand = 1,
// CHECK-SAME: #attn.kernel_tensor<name = "input_grad", role = "result", operand = -1, dtype = "bf16", shape = ["B", "S-1", 384]
// CHECK: func.func private @attn_conv_grad_bf16_c384_g1_k2_p2_dw_launch
// CHECK-SAME: kind = "causal_conv1d_weight_grad"
// CHECK-SAME: block = [256, 1, 1], grid = [{expr = "5", value = 5 : i64}, {expr = "32", value = 32 : i64}, {expr = "B"}]
// CHECK-SAME: #attn.kernel_param<name = "steps", kind = "scalar", detail = "i32", value = "S">
// CHECK-SAME: #attn.kernel_tensor<name = "result_grad", role = "cotangent of the convolution", operand = 1, dtype = "bf16", shape = ["B", "S+1", 384]
// CHECK-SAME: #attn.kernel_tensor<name = "partials", role = "result", operand = -1, dtype = "f32", shape = ["B", 32, 1152]
// CHECK: func.func private @attn_conv_grad_bf16_c384_g1_k2_p2_dw_sum_launch
// CHECK-SAME: kind = "causal_conv1d_weight_sum"
// CHECK-SAME: grid = [{expr = "5", value = 5 : i64}]
// CHECK-SAME: #attn.kernel_param<name = "batch", kind = "scalar", detail = "i32", value = "B">
// CHECK-SAME: #attn.kernel_tensor<name = "partials", role = "input", operand = 0, dtype = "f32", shape = ["B", 32, 1152]
func.func @conv_grad_depthwise(%x: tensor<?x?x384xbf16>, %w: tensor<384x1x2xbf16>, %dy: tensor<?x?x384xbf16>) -> (tensor<?x?x384xbf16>, tensor<384x1x2xbf16>, tensor<384xbf16>) {
  %dx, %dw, %db = attn.causal_conv1d_grad %x, %w, %dy {groups = 384 : i64, padding = 2 : i64}
      : (tensor<?x?x384xbf16>, tensor<384x1x2xbf16>, tensor<?x?x384xbf16>) -> (tensor<?x?x384xbf16>, tensor<384x1x2xbf16>, tensor<384xbf16>)
  return %dx, %dw, %db : tensor<?x?x384xbf16>, tensor<384x1x2xbf16>, tensor<384xbf16>
}

// -----

// QK-mean and its gradient: one kernel each, one CTA per (token, sequence).
// CHECK-LABEL: func.func @qk_mean_and_grad
// CHECK: %[[M:.*]]:2 = call @attn_qk_mean_bf16_h4_g2_d64_launch(%arg0, %arg1, %arg2, %arg3)
// CHECK: %[[G:.*]]:2 = call @attn_qk_mean_grad_bf16_h4_g2_d64_launch(%[[M]]#0, %[[M]]#1)
// CHECK: return %[[G]]#0, %[[G]]#1
// CHECK: func.func private @attn_qk_mean_bf16_h4_g2_d64_launch
// CHECK-SAME: kind = "qk_mean"
// CHECK-SAME: grid = [{ceil_div = 1 : i64, expr = "S", symbol = "S"}, {ceil_div = 1 : i64, expr = "B", symbol = "B"}]
// CHECK-SAME: #attn.kernel_tensor<name = "k_raw", role = "input", operand = 3, dtype = "bf16", shape = ["B", "S", 2, 64]
// CHECK: func.func private @attn_qk_mean_grad_bf16_h4_g2_d64_launch
// CHECK-SAME: kind = "qk_mean_grad"
// CHECK-SAME: #attn.kernel_tensor<name = "q_raw_grad", role = "result", operand = -1, dtype = "bf16", shape = ["B", "S", 4, 64]
func.func @qk_mean_and_grad(%qc: tensor<?x?x4x64xbf16>, %kc: tensor<?x?x2x64xbf16>, %qr: tensor<?x?x4x64xbf16>, %kr: tensor<?x?x2x64xbf16>) -> (tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>) {
  %q, %k = attn.qk_mean %qc, %kc, %qr, %kr : tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>
  %dqr, %dkr = attn.qk_mean_grad %q, %k : tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>
  return %dqr, %dkr : tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>
}

// -----

// The value shift and its gradient: copies, one CTA per (token, sequence).
// CHECK-LABEL: func.func @value_shift_and_grad
// CHECK: %[[V:.*]] = call @attn_value_shift_bf16_c64_state_launch(%arg0, %arg1, %arg2)
// CHECK: %[[G:.*]]:2 = call @attn_value_shift_grad_bf16_c64_launch(%[[V]])
// CHECK: func.func private @attn_value_shift_bf16_c64_state_launch
// CHECK-SAME: kind = "value_shift"
// CHECK-SAME: #attn.kernel_tensor<name = "state", role = "{{[^"]*}}", operand = 2, dtype = "bf16", shape = ["B", 1, 64]
// CHECK-SAME: #attn.kernel_tensor<name = "result", role = "result", operand = -1, dtype = "bf16", shape = ["B", "S", 128]
// CHECK: func.func private @attn_value_shift_grad_bf16_c64_launch
// CHECK-SAME: kind = "value_shift_grad"
func.func @value_shift_and_grad(%c: tensor<?x?x64xbf16>, %p: tensor<?x?x64xbf16>, %s: tensor<?x1x64xbf16>) -> (tensor<?x?x64xbf16>, tensor<?x?x64xbf16>) {
  %v = attn.value_shift %c, %p state(%s) : (tensor<?x?x64xbf16>, tensor<?x?x64xbf16>, tensor<?x1x64xbf16>) -> tensor<?x?x128xbf16>
  %dc, %dp = attn.value_shift_grad %v : (tensor<?x?x128xbf16>) -> (tensor<?x?x64xbf16>, tensor<?x?x64xbf16>)
  return %dc, %dp : tensor<?x?x64xbf16>, tensor<?x?x64xbf16>
}

// -----

// Column copies of a device program (a function with kernels): a concat on
// the last dimension and slices of a column range, 16-byte chunks copied as
// integers; a slice of rows is no column range and stays on the host.
// CHECK-LABEL: func.func @columns
// CHECK: %[[C:.*]] = call @attn_concat_bf16_256_128_launch(%arg0, %arg1) : (tensor<?x?x256xbf16>, tensor<?x?x128xbf16>) -> tensor<?x?x384xbf16>
// CHECK: %[[V:[0-9]+]]:2 = call @attn_value_shift_grad_bf16_c192_launch(%[[C]])
// CHECK: call @attn_slice_bf16_c192_o64_w128_launch(%[[V]]#0) : (tensor<?x?x192xbf16>) -> tensor<?x?x128xbf16>
// CHECK: call @attn_slice_f32_c6_o2_w3_launch(%arg2) : (tensor<?x6xf32>) -> tensor<?x3xf32>
// CHECK: tensor.extract_slice %arg2[1, 0]
// CHECK: gpu.func @attn_concat_bf16_256_128(%{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: i32)
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xi16>
// CHECK: func.func private @attn_concat_bf16_256_128_launch
// CHECK-SAME: kind = "concat"
// CHECK-SAME: grid = [{expr = "ceil_div(48*B*S, 256)"}]
// CHECK-SAME: #attn.kernel_param<name = "chunks", kind = "scalar", detail = "i32", value = "48*B*S">
// CHECK-SAME: #attn.kernel_tensor<name = "input1", role = "input", operand = 1, dtype = "bf16", shape = ["B", "S", 128]
// CHECK-SAME: #attn.kernel_tensor<name = "output", role = "result", operand = -1, dtype = "bf16", shape = ["B", "S", 384]
// CHECK: func.func private @attn_slice_bf16_c192_o64_w128_launch
// CHECK-SAME: kind = "slice"
// CHECK-SAME: pieces = {{\[}}[192, 64, 128]]
// CHECK: gpu.func @attn_slice_f32_c6_o2_w3(
// CHECK: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<1> -> i32
func.func @columns(%q: tensor<?x?x256xbf16>, %k: tensor<?x?x128xbf16>, %r: tensor<?x6xf32>) -> (tensor<?x?x128xbf16>, tensor<?x3xf32>, tensor<?x6xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %qk = tensor.concat dim(2) %q, %k : (tensor<?x?x256xbf16>, tensor<?x?x128xbf16>) -> tensor<?x?x384xbf16>
  %dc, %dp = attn.value_shift_grad %qk : (tensor<?x?x384xbf16>) -> (tensor<?x?x192xbf16>, tensor<?x?x192xbf16>)
  %b = tensor.dim %dc, %c0 : tensor<?x?x192xbf16>
  %s = tensor.dim %dc, %c1 : tensor<?x?x192xbf16>
  %part = tensor.extract_slice %dc[0, 0, 64] [%b, %s, 128] [1, 1, 1] : tensor<?x?x192xbf16> to tensor<?x?x128xbf16>
  %n = tensor.dim %r, %c0 : tensor<?x6xf32>
  %mid = tensor.extract_slice %r[0, 2] [%n, 3] [1, 1] : tensor<?x6xf32> to tensor<?x3xf32>
  // expected-warning @below {{the sm_90a column-copy kernel takes a static range of the last dimension with every other dimension whole; tensor.extract_slice stays on the host}}
  %rows = tensor.extract_slice %r[1, 0] [1, 6] [1, 1] : tensor<?x6xf32> to tensor<1x6xf32>
  %rows_any = tensor.cast %rows : tensor<1x6xf32> to tensor<?x6xf32>
  return %part, %mid, %rows_any : tensor<?x?x128xbf16>, tensor<?x3xf32>, tensor<?x6xf32>
}

// -----

// The QK-norm: one kernel, a warp per head row (query heads, then key heads).
// CHECK-LABEL: func.func @qk_norm
// CHECK: %[[N:.*]]:2 = call @attn_qk_norm_bf16_h4_hk2_d64_launch(%arg0, %arg1, %arg2) : (tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>, tensor<2xbf16>) -> (tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>)
// CHECK: return %[[N]]#0, %[[N]]#1
// CHECK: gpu.func @attn_qk_norm_bf16_h4_hk2_d64({{.*}}) kernel attributes {{{.*}}nvvm.maxntid = array<i32: 192, 1, 1>
// CHECK: nvvm.shfl.sync bfly
// CHECK: func.func private @attn_qk_norm_bf16_h4_hk2_d64_launch
// CHECK-SAME: kind = "qk_norm"
// CHECK-SAME: grid = [{ceil_div = 1 : i64, expr = "S", symbol = "S"}, {ceil_div = 1 : i64, expr = "B", symbol = "B"}]
// CHECK-SAME: #attn.kernel_tensor<name = "k_out", role = "result", operand = -1, dtype = "bf16", shape = ["B", "S", 2, 64]
func.func @qk_norm(%q: tensor<?x?x4x64xbf16>, %k: tensor<?x?x2x64xbf16>, %t: tensor<2xbf16>) -> (tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>) {
  %qn, %kn = attn.qk_norm %q, %k, %t : tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>, tensor<2xbf16>
  return %qn, %kn : tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>
}

// -----

// The QK-norm gradient: the row kernel (a warp per head row) returns the
// query and key gradients and each key row's temperature share; the
// temperature kernel sums the shares per key head.
// CHECK-LABEL: func.func @qk_norm_grad
// CHECK: %[[ROWS:.*]]:3 = call @attn_qk_norm_grad_bf16_h4_hk2_d64_tclamp_nclamp_launch(%arg0, %arg1, %arg2, %arg3, %arg4) : (tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>, tensor<2xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>) -> (tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>)
// CHECK: %[[TEMP:.*]] = call @attn_qk_norm_grad_bf16_h4_hk2_d64_tclamp_nclamp_temp_launch(%[[ROWS]]#2, %arg2) : (tensor<?x?x2xf32>, tensor<2xbf16>) -> tensor<2xbf16>
// CHECK: return %[[ROWS]]#0, %[[ROWS]]#1, %[[TEMP]]
// CHECK: gpu.func @attn_qk_norm_grad_bf16_h4_hk2_d64_tclamp_nclamp({{.*}}) kernel attributes {{{.*}}nvvm.maxntid = array<i32: 192, 1, 1>
// CHECK: nvvm.shfl.sync bfly
// CHECK: gpu.func @attn_qk_norm_grad_bf16_h4_hk2_d64_tclamp_nclamp_temp(
// CHECK: nvvm.barrier0
// CHECK: func.func private @attn_qk_norm_grad_bf16_h4_hk2_d64_tclamp_nclamp_launch
// CHECK-SAME: kind = "qk_norm_grad"
// CHECK-SAME: grid = [{ceil_div = 1 : i64, expr = "S", symbol = "S"}, {ceil_div = 1 : i64, expr = "B", symbol = "B"}]
// CHECK-SAME: #attn.kernel_tensor<name = "temp_shares", role = "result", operand = -1, dtype = "f32", shape = ["B", "S", 2]
// CHECK: func.func private @attn_qk_norm_grad_bf16_h4_hk2_d64_tclamp_nclamp_temp_launch
// CHECK-SAME: kind = "qk_norm_grad_temp"
// CHECK-SAME: grid = [{expr = "2", value = 2 : i64}], dynamic_smem_bytes = 32
// CHECK-SAME: #attn.kernel_param<name = "rows", kind = "scalar", detail = "i32", value = "B*S">
func.func @qk_norm_grad(%q: tensor<?x?x4x64xbf16>, %k: tensor<?x?x2x64xbf16>, %t: tensor<2xbf16>, %dq: tensor<?x?x4x64xbf16>, %dk: tensor<?x?x2x64xbf16>) -> (tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>, tensor<2xbf16>) {
  %gq, %gk, %gt = attn.qk_norm_grad %q, %k, %t, %dq, %dk
      {temperature = #attn.temperature<clamped>, norm = #attn.norm<clamp_eps>, eps = 1.1920929e-07 : f64}
      : tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>, tensor<2xbf16>
  return %gq, %gk, %gt : tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>, tensor<2xbf16>
}

// -----

// The token mask of a padded batch: one CTA per (token, sequence) reads the
// token's i64 mask entry and copies or zeroes its row in 16-byte chunks.
// CHECK-LABEL: func.func @mask_tokens
// CHECK: call @attn_mask_tokens_bf16_w384_mask64_launch(%arg0, %arg1) : (tensor<?x?x384xbf16>, tensor<?x?xi64>) -> tensor<?x?x384xbf16>
// CHECK: gpu.func @attn_mask_tokens_bf16_w384_mask64(
// CHECK: llvm.load %{{.*}} {alignment = 8 : i64} : !llvm.ptr<1> -> i64
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// CHECK: func.func private @attn_mask_tokens_bf16_w384_mask64_launch
// CHECK-SAME: kind = "mask_tokens"
// CHECK-SAME: #attn.kernel_tensor<name = "mask", role = "{{[^"]*}}", operand = 1, dtype = "i64", shape = ["B", "S"]
func.func @mask_tokens(%x: tensor<?x?x384xbf16>, %m: tensor<?x?xi64>) -> tensor<?x?x384xbf16> {
  %y = attn.mask_tokens %x, %m : tensor<?x?x384xbf16>, tensor<?x?xi64>
  return %y : tensor<?x?x384xbf16>
}
