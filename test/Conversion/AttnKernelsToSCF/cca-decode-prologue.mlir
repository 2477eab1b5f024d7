// RUN: attnfuse-opt %s --convert-attn-kernels-to-scf | FileCheck %s

// One decode step over the whole batch: the window [state | u], the rolled
// state as its last P rows, the k1 depthwise rows (a k0-tap reduction) and
// the grouped conv (reduction over taps and a head's input channels), the
// norm; values are v_cur reshaped to heads. Conv 3/2: P = 3, window 4 rows.
// CHECK-LABEL: func.func @cca_plain_step
// CHECK-NOT: attn.
// CHECK: %[[U:.*]] = tensor.concat dim(2) %arg0, %arg1 : (tensor<3x1x32xf32>, tensor<3x1x32xf32>) -> tensor<3x1x64xf32>
// CHECK: %[[W:.*]] = tensor.concat dim(1) %arg8, %[[U]] : (tensor<3x3x64xf32>, tensor<3x1x64xf32>) -> tensor<3x4x64xf32>
// CHECK: %[[STATE:.*]] = tensor.extract_slice %[[W]][0, 1, 0] [3, 3, 64] [1, 1, 1]
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[W]], %arg3 : tensor<3x4x64xf32>, tensor<64x1x3xf32>) outs(%{{.*}} : tensor<3x2x64xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%{{.*}}, %{{.*}} : tensor<3x2x8x8xf32>, tensor<8x8x8x2xf32>) outs(%{{.*}} : tensor<3x8x8xf32>)
// CHECK: math.sqrt
// CHECK: %[[V:.*]] = tensor.expand_shape %arg2 {{\[\[}}0], [1], [2, 3]] output_shape [3, 1, 4, 8]
// CHECK: return %{{.*}}, %{{.*}}, %[[V]], %[[STATE]]
func.func @cca_plain_step(%qr: tensor<3x1x32xf32>, %kr: tensor<3x1x32xf32>,
                          %vc: tensor<3x1x32xf32>, %dw: tensor<64x1x3xf32>,
                          %dwb: tensor<64xf32>, %gw: tensor<64x8x2xf32>,
                          %gwb: tensor<64xf32>, %temp: tensor<4xf32>,
                          %cs: tensor<3x3x64xf32>, %pos: tensor<3xi64>)
    -> (tensor<3x1x4x8xf32>, tensor<3x1x4x8xf32>, tensor<3x1x4x8xf32>,
        tensor<3x3x64xf32>) {
  %di41_init0 = tensor.empty() : tensor<3x1x4x8xf32>
  %di41_init1 = tensor.empty() : tensor<3x1x4x8xf32>
  %di41_init2 = tensor.empty() : tensor<3x1x4x8xf32>
  %q, %k, %v, %cs_out = attn.cca_decode_prologue %qr, %kr, %vc
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di41_init0, %di41_init1, %di41_init2) conv_state(%cs)
      positions(%pos)
      {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 8 : i64,
       conv_kernel_sizes = array<i64: 3, 2>}
      : (tensor<3x1x32xf32>, tensor<3x1x32xf32>, tensor<3x1x32xf32>, tensor<64x1x3xf32>, tensor<64xf32>, tensor<64x8x2xf32>, tensor<64xf32>, tensor<4xf32>, tensor<3x1x4x8xf32>, tensor<3x1x4x8xf32>, tensor<3x1x4x8xf32>, tensor<3x3x64xf32>, tensor<3xi64>)
      -> (tensor<3x1x4x8xf32>, tensor<3x1x4x8xf32>, tensor<3x1x4x8xf32>,
          tensor<3x3x64xf32>)
  return %q, %k, %v, %cs_out
      : tensor<3x1x4x8xf32>, tensor<3x1x4x8xf32>, tensor<3x1x4x8xf32>,
        tensor<3x3x64xf32>
}

// With the value shift and a dynamic batch: the value is [v_cur |
// shift_state] and the new shift state is v_prev itself; RoPE angles come
// from each sequence's position (cos/sin in f64).
// CHECK-LABEL: func.func @shift_step
// CHECK: arith.sitofp %{{.*}} : i32 to f64
// CHECK: math.cos %{{.*}} : f64
// CHECK: math.sin %{{.*}} : f64
// CHECK: %[[VALUES:.*]] = tensor.concat dim(2) %arg2, %arg10 : (tensor<?x1x8xbf16>, tensor<?x1x8xbf16>) -> tensor<?x1x16xbf16>
// CHECK: %[[V:.*]] = tensor.expand_shape %[[VALUES]]
// CHECK: return %{{.*}}, %{{.*}}, %[[V]], %{{.*}}, %arg3 :
func.func @shift_step(%qr: tensor<?x1x32xbf16>, %kr: tensor<?x1x16xbf16>,
                      %vc: tensor<?x1x8xbf16>, %vp: tensor<?x1x8xbf16>,
                      %dw: tensor<48x1x2xbf16>, %dwb: tensor<48xbf16>,
                      %gw: tensor<48x8x2xbf16>, %gwb: tensor<48xbf16>,
                      %temp: tensor<2xbf16>, %cs: tensor<?x2x48xbf16>,
                      %ss: tensor<?x1x8xbf16>, %pos: tensor<?xi32>)
    -> (tensor<?x1x4x8xbf16>, tensor<?x1x2x8xbf16>, tensor<?x1x2x8xbf16>,
        tensor<?x2x48xbf16>, tensor<?x1x8xbf16>) {
  %di42_c0 = arith.constant 0 : index
  %di42_b = tensor.dim %qr, %di42_c0 : tensor<?x1x32xbf16>
  %di42_init0 = tensor.empty(%di42_b) : tensor<?x1x4x8xbf16>
  %di42_init1 = tensor.empty(%di42_b) : tensor<?x1x2x8xbf16>
  %di42_init2 = tensor.empty(%di42_b) : tensor<?x1x2x8xbf16>
  %q, %k, %v, %cs_out, %ss_out = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di42_init0, %di42_init1, %di42_init2) conv_state(%cs)
      shift_state(%ss) positions(%pos)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 8 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift,
       temperature = #attn.temperature<clamped>,
       rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
      : (tensor<?x1x32xbf16>, tensor<?x1x16xbf16>, tensor<?x1x8xbf16>, tensor<?x1x8xbf16>, tensor<48x1x2xbf16>, tensor<48xbf16>, tensor<48x8x2xbf16>, tensor<48xbf16>, tensor<2xbf16>, tensor<?x1x4x8xbf16>, tensor<?x1x2x8xbf16>, tensor<?x1x2x8xbf16>, tensor<?x2x48xbf16>, tensor<?x1x8xbf16>, tensor<?xi32>)
      -> (tensor<?x1x4x8xbf16>, tensor<?x1x2x8xbf16>, tensor<?x1x2x8xbf16>,
          tensor<?x2x48xbf16>, tensor<?x1x8xbf16>)
  return %q, %k, %v, %cs_out, %ss_out
      : tensor<?x1x4x8xbf16>, tensor<?x1x2x8xbf16>, tensor<?x1x2x8xbf16>,
        tensor<?x2x48xbf16>, tensor<?x1x8xbf16>
}
