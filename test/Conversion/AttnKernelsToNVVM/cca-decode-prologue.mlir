// RUN: attnfuse-opt %s --convert-attn-kernels-to-nvvm -split-input-file -verify-diagnostics | FileCheck %s

// The ZAYA1 decode step (Hq 8, Hk 2, d 128, conv 2/2, every toggle): one CTA
// of 256 threads per (head, sequence), grid (8 + 2) x B. No TMA: every
// operand is a global pointer (the RoPE tables and their row count T
// included). The grouped conv reads each 512-byte weight row as 32 lanes x
// 16 bytes, 8 rows per batch of loads (2 batches for 16 rows per warp), and
// sums each row with a butterfly.
// CHECK-LABEL: func.func @zaya1
// CHECK: call @[[K:attn_cca_decode_prologue_bf16_h8_g4_d128_k2x2_qkmean_vshift_tclamp_rope64]]_launch(
// CHECK: gpu.module @[[K]]
// CHECK: gpu.func @[[K]](%{{.*}}: !llvm.ptr<1>, {{.*}}, %{{.*}}: i32, {{.*}}) kernel attributes {attnfuse.tma_params = array<i32>, nvvm.maxntid = array<i32: 256, 1, 1>, nvvm.minctasm = 2 : i32}
// The depthwise conv and the rolled state, then the GEMV.
// CHECK: nvvm.barrier0
// CHECK: scf.for %{{.*}} = %{{.*}} to %c2_i32{{.*}} step
// CHECK-COUNT-8: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// CHECK: arith.extf %{{.*}} : vector<8xbf16> to vector<8xf32>
// CHECK-COUNT-5: nvvm.shfl.sync  bfly
// Norm, clamped temperature, RoPE.
// CHECK: llvm.inline_asm asm_dialect = att "sqrt.rn.f32 $0, $1;", "=f,f"
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: nvvm.barrier0
// The launch description.
// CHECK: func.func private @[[K]]_launch
// CHECK-SAME: kind = "cca_decode_prologue"
// CHECK-SAME: expr = "10", value = 10
// CHECK-SAME: dynamic_smem_bytes = 3104
// CHECK-SAME: name = "conv_state_out", role = "state_result", {{.*}}, updates = "conv_state"
// CHECK-SAME: name = "shift_state_out", role = "state_result", {{.*}}, updates = "shift_state"
// CHECK-SAME: attnfuse.op = "attn.cca_decode_prologue"
func.func @zaya1(%qr: tensor<?x1x1024xbf16>, %kr: tensor<?x1x256xbf16>, %vc: tensor<?x1x128xbf16>, %vp: tensor<?x1x128xbf16>, %dw: tensor<1280x1x2xbf16>, %dwb: tensor<1280xbf16>, %gw: tensor<1280x128x2xbf16>, %gwb: tensor<1280xbf16>, %temp: tensor<2xbf16>, %cs: tensor<?x2x1280xbf16>, %ss: tensor<?x1x128xbf16>, %pos: tensor<?xi32>) -> (tensor<?x1x8x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x2x1280xbf16>, tensor<?x1x128xbf16>) {
  %di43_c0 = arith.constant 0 : index
  %di43_b = tensor.dim %qr, %di43_c0 : tensor<?x1x1024xbf16>
  %di43_init0 = tensor.empty(%di43_b) : tensor<?x1x8x128xbf16>
  %di43_init1 = tensor.empty(%di43_b) : tensor<?x1x2x128xbf16>
  %di43_init2 = tensor.empty(%di43_b) : tensor<?x1x2x128xbf16>
  %r0, %r1, %r2, %r3, %r4 = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di43_init0, %di43_init1, %di43_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 8 : i64, num_kv_heads = 2 : i64, head_dim = 128 : i64, conv_kernel_sizes = array<i64: 2, 2>, temperature = #attn.temperature<clamped>, qk_mean, value_shift, rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
      : (tensor<?x1x1024xbf16>, tensor<?x1x256xbf16>, tensor<?x1x128xbf16>, tensor<?x1x128xbf16>, tensor<1280x1x2xbf16>, tensor<1280xbf16>, tensor<1280x128x2xbf16>, tensor<1280xbf16>, tensor<2xbf16>, tensor<?x1x8x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x2x1280xbf16>, tensor<?x1x128xbf16>, tensor<?xi32>) -> (tensor<?x1x8x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x2x1280xbf16>, tensor<?x1x128xbf16>)
  return %r0, %r1, %r2, %r3, %r4 : tensor<?x1x8x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x2x1280xbf16>, tensor<?x1x128xbf16>
}

// -----

// The decode step with transformers' numerics: raw temperature, |x|^2
// clamped at eps^2 before the square root; kernel name _nclamp.
// CHECK-LABEL: func.func @zaya1_hf_norm
// CHECK: call @[[K:attn_cca_decode_prologue_bf16_h8_g4_d128_k2x2_qkmean_vshift_nclamp_rope64]]_launch(
// CHECK: gpu.func @[[K]]
// CHECK: %[[EPS2:.+]] = arith.constant 6.10351563E-5 : f32
// CHECK: %[[FLOOR:.+]] = llvm.intr.maxnum(%{{.*}}, %[[EPS2]])
// CHECK: sqrt.rn.f32 $0, $1;", "=f,f" %[[FLOOR]]
// CHECK-NOT: ex2.approx
// CHECK: func.func private @[[K]]_launch
func.func @zaya1_hf_norm(%qr: tensor<?x1x1024xbf16>, %kr: tensor<?x1x256xbf16>, %vc: tensor<?x1x128xbf16>, %vp: tensor<?x1x128xbf16>, %dw: tensor<1280x1x2xbf16>, %dwb: tensor<1280xbf16>, %gw: tensor<1280x128x2xbf16>, %gwb: tensor<1280xbf16>, %temp: tensor<2xbf16>, %cs: tensor<?x2x1280xbf16>, %ss: tensor<?x1x128xbf16>, %pos: tensor<?xi32>) -> (tensor<?x1x8x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x2x1280xbf16>, tensor<?x1x128xbf16>) {
  %di44_c0 = arith.constant 0 : index
  %di44_b = tensor.dim %qr, %di44_c0 : tensor<?x1x1024xbf16>
  %di44_init0 = tensor.empty(%di44_b) : tensor<?x1x8x128xbf16>
  %di44_init1 = tensor.empty(%di44_b) : tensor<?x1x2x128xbf16>
  %di44_init2 = tensor.empty(%di44_b) : tensor<?x1x2x128xbf16>
  %r0, %r1, %r2, %r3, %r4 = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di44_init0, %di44_init1, %di44_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 8 : i64, num_kv_heads = 2 : i64, head_dim = 128 : i64, conv_kernel_sizes = array<i64: 2, 2>, norm = #attn.norm<clamp_eps>, eps = 0.0078125 : f64, qk_mean, value_shift, rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
      : (tensor<?x1x1024xbf16>, tensor<?x1x256xbf16>, tensor<?x1x128xbf16>, tensor<?x1x128xbf16>, tensor<1280x1x2xbf16>, tensor<1280xbf16>, tensor<1280x128x2xbf16>, tensor<1280xbf16>, tensor<2xbf16>, tensor<?x1x8x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x2x1280xbf16>, tensor<?x1x128xbf16>, tensor<?xi32>) -> (tensor<?x1x8x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x2x1280xbf16>, tensor<?x1x128xbf16>)
  return %r0, %r1, %r2, %r3, %r4 : tensor<?x1x8x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x2x1280xbf16>, tensor<?x1x128xbf16>
}

// -----

// CCA (Hq = Hk = 4), head_dim 64, conv 3/2 (P = 3), no toggles: one batch of
// 8 rows per warp, no RoPE tables, no shift state, raw temperature.
// CHECK-LABEL: func.func @cca_d64_plain
// CHECK: call @[[K:attn_cca_decode_prologue_bf16_h4_g1_d64_k3x2]]_launch(
// CHECK: gpu.func @[[K]]
// CHECK: scf.for %{{.*}} = %{{.*}} to %c1_i32{{.*}} step
// CHECK-COUNT-8: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// CHECK-NOT: ex2.approx
// CHECK: func.func private @[[K]]_launch
// CHECK-SAME: expr = "8", value = 8
// CHECK-NOT: rope_cos
// CHECK-NOT: shift_state
// CHECK-SAME: attnfuse.op = "attn.cca_decode_prologue"
func.func @cca_d64_plain(%qr: tensor<?x1x256xbf16>, %kr: tensor<?x1x256xbf16>, %vc: tensor<?x1x256xbf16>, %dw: tensor<512x1x3xbf16>, %dwb: tensor<512xbf16>, %gw: tensor<512x64x2xbf16>, %gwb: tensor<512xbf16>, %temp: tensor<4xbf16>, %cs: tensor<?x3x512xbf16>, %pos: tensor<?xi32>) -> (tensor<?x1x4x64xbf16>, tensor<?x1x4x64xbf16>, tensor<?x1x4x64xbf16>, tensor<?x3x512xbf16>) {
  %di45_c0 = arith.constant 0 : index
  %di45_b = tensor.dim %qr, %di45_c0 : tensor<?x1x256xbf16>
  %di45_init0 = tensor.empty(%di45_b) : tensor<?x1x4x64xbf16>
  %di45_init1 = tensor.empty(%di45_b) : tensor<?x1x4x64xbf16>
  %di45_init2 = tensor.empty(%di45_b) : tensor<?x1x4x64xbf16>
  %r0, %r1, %r2, %r3 = attn.cca_decode_prologue %qr, %kr, %vc
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di45_init0, %di45_init1, %di45_init2) conv_state(%cs)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 64 : i64, conv_kernel_sizes = array<i64: 3, 2>, temperature = #attn.temperature<raw>}
      : (tensor<?x1x256xbf16>, tensor<?x1x256xbf16>, tensor<?x1x256xbf16>, tensor<512x1x3xbf16>, tensor<512xbf16>, tensor<512x64x2xbf16>, tensor<512xbf16>, tensor<4xbf16>, tensor<?x1x4x64xbf16>, tensor<?x1x4x64xbf16>, tensor<?x1x4x64xbf16>, tensor<?x3x512xbf16>, tensor<?xi32>) -> (tensor<?x1x4x64xbf16>, tensor<?x1x4x64xbf16>, tensor<?x1x4x64xbf16>, tensor<?x3x512xbf16>)
  return %r0, %r1, %r2, %r3 : tensor<?x1x4x64xbf16>, tensor<?x1x4x64xbf16>, tensor<?x1x4x64xbf16>, tensor<?x3x512xbf16>
}

// -----

// Shapes without a kernel stay on the host, with a warning.
// CHECK-LABEL: func.func @tiny
// CHECK: attn.cca_decode_prologue
// CHECK-NOT: gpu.module
func.func @tiny(%qr: tensor<?x1x32xbf16>, %kr: tensor<?x1x16xbf16>, %vc: tensor<?x1x8xbf16>, %vp: tensor<?x1x8xbf16>, %dw: tensor<48x1x2xbf16>, %dwb: tensor<48xbf16>, %gw: tensor<48x8x2xbf16>, %gwb: tensor<48xbf16>, %temp: tensor<2xbf16>, %cs: tensor<?x2x48xbf16>, %ss: tensor<?x1x8xbf16>, %pos: tensor<?xi32>) -> (tensor<?x1x4x8xbf16>, tensor<?x1x2x8xbf16>, tensor<?x1x2x8xbf16>, tensor<?x2x48xbf16>, tensor<?x1x8xbf16>) {
  %di46_c0 = arith.constant 0 : index
  %di46_b = tensor.dim %qr, %di46_c0 : tensor<?x1x32xbf16>
  %di46_init0 = tensor.empty(%di46_b) : tensor<?x1x4x8xbf16>
  %di46_init1 = tensor.empty(%di46_b) : tensor<?x1x2x8xbf16>
  %di46_init2 = tensor.empty(%di46_b) : tensor<?x1x2x8xbf16>
  // expected-warning @+1 {{the sm_90a decode prologue needs a head_dim that is a multiple of 32 and at most 256; attn.cca_decode_prologue stays on the host}}
  %r0, %r1, %r2, %r3, %r4 = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di46_init0, %di46_init1, %di46_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 8 : i64, conv_kernel_sizes = array<i64: 2, 2>, temperature = #attn.temperature<clamped>, qk_mean, value_shift, rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
      : (tensor<?x1x32xbf16>, tensor<?x1x16xbf16>, tensor<?x1x8xbf16>, tensor<?x1x8xbf16>, tensor<48x1x2xbf16>, tensor<48xbf16>, tensor<48x8x2xbf16>, tensor<48xbf16>, tensor<2xbf16>, tensor<?x1x4x8xbf16>, tensor<?x1x2x8xbf16>, tensor<?x1x2x8xbf16>, tensor<?x2x48xbf16>, tensor<?x1x8xbf16>, tensor<?xi32>) -> (tensor<?x1x4x8xbf16>, tensor<?x1x2x8xbf16>, tensor<?x1x2x8xbf16>, tensor<?x2x48xbf16>, tensor<?x1x8xbf16>)
  return %r0, %r1, %r2, %r3, %r4 : tensor<?x1x4x8xbf16>, tensor<?x1x2x8xbf16>, tensor<?x1x2x8xbf16>, tensor<?x2x48xbf16>, tensor<?x1x8xbf16>
}

// -----

// CHECK-LABEL: func.func @i64_positions
// CHECK: attn.cca_decode_prologue
// CHECK-NOT: gpu.module
func.func @i64_positions(%qr: tensor<?x1x1024xbf16>, %kr: tensor<?x1x256xbf16>, %vc: tensor<?x1x128xbf16>, %vp: tensor<?x1x128xbf16>, %dw: tensor<1280x1x2xbf16>, %dwb: tensor<1280xbf16>, %gw: tensor<1280x128x2xbf16>, %gwb: tensor<1280xbf16>, %temp: tensor<2xbf16>, %cs: tensor<?x2x1280xbf16>, %ss: tensor<?x1x128xbf16>, %pos: tensor<?xi64>) -> (tensor<?x1x8x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x2x1280xbf16>, tensor<?x1x128xbf16>) {
  %di47_c0 = arith.constant 0 : index
  %di47_b = tensor.dim %qr, %di47_c0 : tensor<?x1x1024xbf16>
  %di47_init0 = tensor.empty(%di47_b) : tensor<?x1x8x128xbf16>
  %di47_init1 = tensor.empty(%di47_b) : tensor<?x1x2x128xbf16>
  %di47_init2 = tensor.empty(%di47_b) : tensor<?x1x2x128xbf16>
  // expected-warning @+1 {{the sm_90a decode prologue reads i32 positions; attn.cca_decode_prologue stays on the host}}
  %r0, %r1, %r2, %r3, %r4 = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di47_init0, %di47_init1, %di47_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 8 : i64, num_kv_heads = 2 : i64, head_dim = 128 : i64, conv_kernel_sizes = array<i64: 2, 2>, temperature = #attn.temperature<clamped>, qk_mean, value_shift, rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
      : (tensor<?x1x1024xbf16>, tensor<?x1x256xbf16>, tensor<?x1x128xbf16>, tensor<?x1x128xbf16>, tensor<1280x1x2xbf16>, tensor<1280xbf16>, tensor<1280x128x2xbf16>, tensor<1280xbf16>, tensor<2xbf16>, tensor<?x1x8x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x2x1280xbf16>, tensor<?x1x128xbf16>, tensor<?xi64>) -> (tensor<?x1x8x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x2x1280xbf16>, tensor<?x1x128xbf16>)
  return %r0, %r1, %r2, %r3, %r4 : tensor<?x1x8x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x2x1280xbf16>, tensor<?x1x128xbf16>
}

// -----

// One tensor.empty serves two inits (as CSE leaves it): the launch reads the
// same operands as with distinct inits, and the init's shape computation
// leaves the host program once.
// CHECK-LABEL: func.func @shared_init
// CHECK-NOT: tensor.empty
// CHECK-NOT: tensor.dim
// CHECK: call @attn_cca_decode_prologue_{{.*}}_launch(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7, %arg8, %arg9, %arg10, %arg11)
// CHECK-NOT: tensor.empty
// CHECK: return
func.func @shared_init(%qr: tensor<?x1x256xbf16>, %kr: tensor<?x1x128xbf16>, %vc: tensor<?x1x64xbf16>, %vp: tensor<?x1x64xbf16>, %dw: tensor<384x1x2xbf16>, %dwb: tensor<384xbf16>, %gw: tensor<384x64x2xbf16>, %gwb: tensor<384xbf16>, %temp: tensor<2xbf16>, %cs: tensor<?x2x384xbf16>, %ss: tensor<?x1x64xbf16>, %pos: tensor<?xi32>)
    -> (tensor<?x1x4x64xbf16>, tensor<?x1x2x64xbf16>, tensor<?x1x2x64xbf16>, tensor<?x2x384xbf16>, tensor<?x1x64xbf16>) {
  %c0 = arith.constant 0 : index
  %batch = tensor.dim %qr, %c0 : tensor<?x1x256xbf16>
  %qi = tensor.empty(%batch) : tensor<?x1x4x64xbf16>
  %kvi = tensor.empty(%batch) : tensor<?x1x2x64xbf16>
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%qi, %kvi, %kvi)
      conv_state(%cs) shift_state(%ss) positions(%pos)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 64 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift}
      : (tensor<?x1x256xbf16>, tensor<?x1x128xbf16>, tensor<?x1x64xbf16>, tensor<?x1x64xbf16>, tensor<384x1x2xbf16>, tensor<384xbf16>, tensor<384x64x2xbf16>, tensor<384xbf16>, tensor<2xbf16>, tensor<?x1x4x64xbf16>, tensor<?x1x2x64xbf16>, tensor<?x1x2x64xbf16>, tensor<?x2x384xbf16>, tensor<?x1x64xbf16>, tensor<?xi32>)
      -> (tensor<?x1x4x64xbf16>, tensor<?x1x2x64xbf16>, tensor<?x1x2x64xbf16>, tensor<?x2x384xbf16>, tensor<?x1x64xbf16>)
  return %q, %k, %v, %cso, %sso : tensor<?x1x4x64xbf16>, tensor<?x1x2x64xbf16>, tensor<?x1x2x64xbf16>, tensor<?x2x384xbf16>, tensor<?x1x64xbf16>
}
