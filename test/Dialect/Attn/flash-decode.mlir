// RUN: attnfuse-opt %s | attnfuse-opt | FileCheck %s
// RUN: attnfuse-opt %s --mlir-print-op-generic | attnfuse-opt | FileCheck %s

// Round trip of attn.flash_decode: contiguous and paged caches, K=V and
// separate values, RoPE on load, window, scale and splits.

// CHECK-LABEL: func.func @contiguous_kv
// CHECK: %{{.*}}, %{{.*}} = attn.flash_decode %arg0, %arg1 outs(%{{.*}}) cache(%arg2) positions(%arg3) {block_kv = 64 : i64}
// CHECK-SAME: (tensor<?x1x16x64xbf16>, tensor<?x1x4x64xbf16>, tensor<?x1x16x64xbf16>, tensor<?x4096x4x64xbf16>, tensor<?xi32>) -> (tensor<?x1x16x64xbf16>, tensor<?x4096x4x64xbf16>)
func.func @contiguous_kv(%q: tensor<?x1x16x64xbf16>, %k: tensor<?x1x4x64xbf16>,
                         %cache: tensor<?x4096x4x64xbf16>, %pos: tensor<?xi32>)
    -> (tensor<?x1x16x64xbf16>, tensor<?x4096x4x64xbf16>) {
  %di1_c0 = arith.constant 0 : index
  %di1_b = tensor.dim %q, %di1_c0 : tensor<?x1x16x64xbf16>
  %di1_init = tensor.empty(%di1_b) : tensor<?x1x16x64xbf16>
  %o, %c = attn.flash_decode %q, %k outs(%di1_init) cache(%cache) positions(%pos)
      {block_kv = 64 : i64}
      : (tensor<?x1x16x64xbf16>, tensor<?x1x4x64xbf16>, tensor<?x1x16x64xbf16>, tensor<?x4096x4x64xbf16>, tensor<?xi32>)
        -> (tensor<?x1x16x64xbf16>, tensor<?x4096x4x64xbf16>)
  return %o, %c : tensor<?x1x16x64xbf16>, tensor<?x4096x4x64xbf16>
}

// CHECK-LABEL: func.func @contiguous_rope
// CHECK: attn.flash_decode %arg0, %arg1 outs(%{{.*}}) cache(%arg2) positions(%arg3)
// CHECK-SAME: block_kv = 32 : i64
// CHECK-SAME: key_rope = #attn.rope<theta = 10000.0>
// CHECK-SAME: num_splits = 4 : i64
// CHECK-SAME: query_rope = #attn.rope<theta = 10000.0, fraction = 0.5>
// CHECK-SAME: scale = 1.250000e-01 : f64
// CHECK-SAME: window = 128 : i64
func.func @contiguous_rope(%q: tensor<2x1x8x16xf32>, %k: tensor<2x1x8x16xf32>,
                           %cache: tensor<2x256x8x16xf32>, %pos: tensor<2xi32>)
    -> (tensor<2x1x8x16xf32>, tensor<2x256x8x16xf32>) {
  %di2_init = tensor.empty() : tensor<2x1x8x16xf32>
  %o, %c = attn.flash_decode %q, %k outs(%di2_init) cache(%cache) positions(%pos)
      {block_kv = 32 : i64, num_splits = 4 : i64, window = 128 : i64,
       scale = 0.125 : f64,
       query_rope = #attn.rope<theta = 10000.0, fraction = 0.5>,
       key_rope = #attn.rope<theta = 10000.0>}
      : (tensor<2x1x8x16xf32>, tensor<2x1x8x16xf32>, tensor<2x1x8x16xf32>, tensor<2x256x8x16xf32>, tensor<2xi32>) -> (tensor<2x1x8x16xf32>, tensor<2x256x8x16xf32>)
  return %o, %c : tensor<2x1x8x16xf32>, tensor<2x256x8x16xf32>
}

// CHECK-LABEL: func.func @paged_separate
// CHECK: %{{.*}}, %{{.*}}, %{{.*}} = attn.flash_decode %arg0, %arg1, %arg2 outs(%{{.*}}) cache(%arg3, %arg4) positions(%arg5) block_table(%arg6) {block_kv = 16 : i64}
// CHECK-SAME: -> (tensor<?x1x4x48xf16>, tensor<?x16x1x32xf16>, tensor<?x16x1x48xf16>)
func.func @paged_separate(%q: tensor<?x1x4x32xf16>, %k: tensor<?x1x1x32xf16>,
                          %v: tensor<?x1x1x48xf16>, %kp: tensor<?x16x1x32xf16>,
                          %vp: tensor<?x16x1x48xf16>, %pos: tensor<?xi32>,
                          %bt: tensor<?x?xi32>)
    -> (tensor<?x1x4x48xf16>, tensor<?x16x1x32xf16>, tensor<?x16x1x48xf16>) {
  %di3_c0 = arith.constant 0 : index
  %di3_b = tensor.dim %q, %di3_c0 : tensor<?x1x4x32xf16>
  %di3_init = tensor.empty(%di3_b) : tensor<?x1x4x48xf16>
  %o, %kc, %vc = attn.flash_decode %q, %k, %v outs(%di3_init) cache(%kp, %vp) positions(%pos)
      block_table(%bt) {block_kv = 16 : i64}
      : (tensor<?x1x4x32xf16>, tensor<?x1x1x32xf16>, tensor<?x1x1x48xf16>, tensor<?x1x4x48xf16>, tensor<?x16x1x32xf16>, tensor<?x16x1x48xf16>, tensor<?xi32>, tensor<?x?xi32>)
        -> (tensor<?x1x4x48xf16>, tensor<?x16x1x32xf16>, tensor<?x16x1x48xf16>)
  return %o, %kc, %vc
      : tensor<?x1x4x48xf16>, tensor<?x16x1x32xf16>, tensor<?x16x1x48xf16>
}

// CHECK-LABEL: func.func @paged_kv
// CHECK: attn.flash_decode %arg0, %arg1 outs(%{{.*}}) cache(%arg2) positions(%arg3) block_table(%arg4) {block_kv = 64 : i64}
func.func @paged_kv(%q: tensor<3x1x2x64xbf16>, %k: tensor<3x1x2x64xbf16>,
                    %kp: tensor<40x64x2x64xbf16>, %pos: tensor<3xi32>,
                    %bt: tensor<3x8xi32>)
    -> (tensor<3x1x2x64xbf16>, tensor<40x64x2x64xbf16>) {
  %di4_init = tensor.empty() : tensor<3x1x2x64xbf16>
  %o, %c = attn.flash_decode %q, %k outs(%di4_init) cache(%kp) positions(%pos) block_table(%bt)
      {block_kv = 64 : i64}
      : (tensor<3x1x2x64xbf16>, tensor<3x1x2x64xbf16>, tensor<3x1x2x64xbf16>, tensor<40x64x2x64xbf16>, tensor<3xi32>, tensor<3x8xi32>)
        -> (tensor<3x1x2x64xbf16>, tensor<40x64x2x64xbf16>)
  return %o, %c : tensor<3x1x2x64xbf16>, tensor<40x64x2x64xbf16>
}
