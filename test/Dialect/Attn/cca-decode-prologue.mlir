// RUN: attnfuse-opt %s | attnfuse-opt | FileCheck %s
// RUN: attnfuse-opt %s --mlir-print-op-generic | attnfuse-opt | FileCheck %s

// The ZAYA1 decode step: every toggle, dynamic batch, the value shift's
// operand and state present.
// CHECK-LABEL: func.func @zaya1_step
// CHECK: %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = attn.cca_decode_prologue %arg0, %arg1, %arg2, %arg3 conv_dw(%arg4, %arg5) conv_g(%arg6, %arg7) temp(%arg8) outs(%{{.*}}, %{{.*}}, %{{.*}}) conv_state(%arg9) shift_state(%arg10) positions(%arg11)
// CHECK-SAME: conv_kernel_sizes = array<i64: 2, 2>
// CHECK-SAME: head_dim = 128 : i64
// CHECK-SAME: num_heads = 8 : i64, num_kv_heads = 2 : i64
// CHECK-SAME: qk_mean
// CHECK-SAME: rope = #attn.rope<theta = 10000.0, fraction = 0.5>
// CHECK-SAME: temperature = #attn.temperature<clamped>
// CHECK-SAME: value_shift
// CHECK-SAME: -> (tensor<?x1x8x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x2x1280xbf16>, tensor<?x1x128xbf16>)
func.func @zaya1_step(%qr: tensor<?x1x1024xbf16>, %kr: tensor<?x1x256xbf16>,
                      %vc: tensor<?x1x128xbf16>, %vp: tensor<?x1x128xbf16>,
                      %dw: tensor<1280x1x2xbf16>, %dwb: tensor<1280xbf16>,
                      %gw: tensor<1280x128x2xbf16>, %gwb: tensor<1280xbf16>,
                      %temp: tensor<2xbf16>, %cs: tensor<?x2x1280xbf16>,
                      %ss: tensor<?x1x128xbf16>, %pos: tensor<?xi32>)
    -> (tensor<?x1x8x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x1x2x128xbf16>,
        tensor<?x2x1280xbf16>, tensor<?x1x128xbf16>) {
  %di1_c0 = arith.constant 0 : index
  %di1_b = tensor.dim %qr, %di1_c0 : tensor<?x1x1024xbf16>
  %di1_init0 = tensor.empty(%di1_b) : tensor<?x1x8x128xbf16>
  %di1_init1 = tensor.empty(%di1_b) : tensor<?x1x2x128xbf16>
  %di1_init2 = tensor.empty(%di1_b) : tensor<?x1x2x128xbf16>
  %q, %k, %v, %cs_out, %ss_out = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di1_init0, %di1_init1, %di1_init2) conv_state(%cs)
      shift_state(%ss) positions(%pos)
      {num_heads = 8 : i64, num_kv_heads = 2 : i64, head_dim = 128 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift,
       temperature = #attn.temperature<clamped>,
       rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
      : (tensor<?x1x1024xbf16>, tensor<?x1x256xbf16>, tensor<?x1x128xbf16>, tensor<?x1x128xbf16>, tensor<1280x1x2xbf16>, tensor<1280xbf16>, tensor<1280x128x2xbf16>, tensor<1280xbf16>, tensor<2xbf16>, tensor<?x1x8x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x2x1280xbf16>, tensor<?x1x128xbf16>, tensor<?xi32>)
      -> (tensor<?x1x8x128xbf16>, tensor<?x1x2x128xbf16>,
          tensor<?x1x2x128xbf16>, tensor<?x2x1280xbf16>, tensor<?x1x128xbf16>)
  return %q, %k, %v, %cs_out, %ss_out
      : tensor<?x1x8x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x1x2x128xbf16>,
        tensor<?x2x1280xbf16>, tensor<?x1x128xbf16>
}

// Without the value shift: no v_prev, no shift state in or out; v_cur holds
// all KV heads. CCA (Hq = Hk), conv kernels 3/2 (P = 3), static batch, i64
// positions, raw temperature (the default, not printed), no RoPE.
// CHECK-LABEL: func.func @cca_plain_step
// CHECK: %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = attn.cca_decode_prologue %arg0, %arg1, %arg2 conv_dw(%arg3, %arg4) conv_g(%arg5, %arg6) temp(%arg7) outs(%{{.*}}, %{{.*}}, %{{.*}}) conv_state(%arg8) positions(%arg9)
// CHECK-SAME: {conv_kernel_sizes = array<i64: 3, 2>, eps = 9.9999999999999995E-7 : f64, head_dim = 8 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64}
// CHECK-SAME: -> (tensor<3x1x4x8xf32>, tensor<3x1x4x8xf32>, tensor<3x1x4x8xf32>, tensor<3x3x64xf32>)
// CHECK-NOT: shift_state
func.func @cca_plain_step(%qr: tensor<3x1x32xf32>, %kr: tensor<3x1x32xf32>,
                          %vc: tensor<3x1x32xf32>, %dw: tensor<64x1x3xf32>,
                          %dwb: tensor<64xf32>, %gw: tensor<64x8x2xf32>,
                          %gwb: tensor<64xf32>, %temp: tensor<4xf32>,
                          %cs: tensor<3x3x64xf32>, %pos: tensor<3xi64>)
    -> (tensor<3x1x4x8xf32>, tensor<3x1x4x8xf32>, tensor<3x1x4x8xf32>,
        tensor<3x3x64xf32>) {
  %di2_init0 = tensor.empty() : tensor<3x1x4x8xf32>
  %di2_init1 = tensor.empty() : tensor<3x1x4x8xf32>
  %di2_init2 = tensor.empty() : tensor<3x1x4x8xf32>
  %q, %k, %v, %cs_out = attn.cca_decode_prologue %qr, %kr, %vc
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di2_init0, %di2_init1, %di2_init2) conv_state(%cs)
      positions(%pos)
      {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 8 : i64,
       conv_kernel_sizes = array<i64: 3, 2>, eps = 1.0e-6}
      : (tensor<3x1x32xf32>, tensor<3x1x32xf32>, tensor<3x1x32xf32>, tensor<64x1x3xf32>, tensor<64xf32>, tensor<64x8x2xf32>, tensor<64xf32>, tensor<4xf32>, tensor<3x1x4x8xf32>, tensor<3x1x4x8xf32>, tensor<3x1x4x8xf32>, tensor<3x3x64xf32>, tensor<3xi64>)
      -> (tensor<3x1x4x8xf32>, tensor<3x1x4x8xf32>, tensor<3x1x4x8xf32>,
          tensor<3x3x64xf32>)
  return %q, %k, %v, %cs_out
      : tensor<3x1x4x8xf32>, tensor<3x1x4x8xf32>, tensor<3x1x4x8xf32>,
        tensor<3x3x64xf32>
}
