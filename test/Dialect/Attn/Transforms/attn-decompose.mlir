// RUN: attnfuse-opt %s --attn-decompose | FileCheck %s

// Layer ops decompose into the primitive attn ops. Projections tied by the
// sharing mode are computed once. Shapes: E = 16, head_dim = 4.

//===----------------------------------------------------------------------===//
// attn.qkv_attention
//===----------------------------------------------------------------------===//

// none with GQA (4 query heads over 2 KV heads): three projections.
// CHECK-LABEL: func.func @none_gqa(
// CHECK-NOT:   attn.qkv_attention
// CHECK:       %[[K:.+]] = attn.project %arg0, %arg2 : (tensor<2x8x16xf32>, tensor<8x16xf32>) -> tensor<2x8x8xf32>
// CHECK:       %[[KH:.+]] = tensor.expand_shape %[[K]] {{\[}}[0], [1], [2, 3]] output_shape [2, 8, 2, 4] : tensor<2x8x8xf32> into tensor<2x8x2x4xf32>
// CHECK:       %[[Q:.+]] = attn.project %arg0, %arg1 : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
// CHECK:       %[[QH:.+]] = tensor.expand_shape %[[Q]] {{\[}}[0], [1], [2, 3]] output_shape [2, 8, 4, 4] : tensor<2x8x16xf32> into tensor<2x8x4x4xf32>
// CHECK:       %[[V:.+]] = attn.project %arg0, %arg3 : (tensor<2x8x16xf32>, tensor<8x16xf32>) -> tensor<2x8x8xf32>
// CHECK:       %[[VH:.+]] = tensor.expand_shape %[[V]] {{\[}}[0], [1], [2, 3]] output_shape [2, 8, 2, 4] : tensor<2x8x8xf32> into tensor<2x8x2x4xf32>
// CHECK-NOT:   attn.project
// CHECK-NOT:   attn.rope
// CHECK:       %[[O:.+]] = attn.sdpa %[[QH]], %[[KH]], %[[VH]] : (tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>) -> tensor<2x8x4x4xf32>
// CHECK:       %[[OF:.+]] = tensor.collapse_shape %[[O]] {{\[}}[0], [1], [2, 3]] : tensor<2x8x4x4xf32> into tensor<2x8x16xf32>
// CHECK:       %[[Y:.+]] = attn.project %[[OF]], %arg4 : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
// CHECK-NOT:   attn.
// CHECK:       return %[[Y]]
func.func @none_gqa(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
                    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
                    %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  %y = attn.qkv_attention <none> %x wq(%wq) wk(%wk) wv(%wv) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// none with all four biases, each on its own projection, and RoPE on both
// query and key (the value stays un-rotated).
// CHECK-LABEL: func.func @none_biases_rope(
// CHECK:       %[[K:.+]] = attn.project %arg0, %arg2, %arg6 : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<2x8x8xf32>
// CHECK:       %[[KH:.+]] = tensor.expand_shape %[[K]]
// CHECK:       %[[Q:.+]] = attn.project %arg0, %arg1, %arg5 : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
// CHECK:       %[[QH:.+]] = tensor.expand_shape %[[Q]]
// CHECK:       %[[V:.+]] = attn.project %arg0, %arg3, %arg7 : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<2x8x8xf32>
// CHECK:       %[[VH:.+]] = tensor.expand_shape %[[V]]
// CHECK-NOT:   attn.project
// CHECK-DAG:   %[[KR:.+]] = attn.rope %[[KH]] {rope = #attn.rope<theta = 10000.0>} : tensor<2x8x2x4xf32>
// CHECK-DAG:   %[[QR:.+]] = attn.rope %[[QH]] {rope = #attn.rope<theta = 10000.0>} : tensor<2x8x4x4xf32>
// CHECK-NOT:   attn.rope
// CHECK:       %[[O:.+]] = attn.sdpa %[[QR]], %[[KR]], %[[VH]] {causal}
// CHECK:       %[[OF:.+]] = tensor.collapse_shape %[[O]]
// CHECK:       %[[Y:.+]] = attn.project %[[OF]], %arg4, %arg8 : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
// CHECK:       return %[[Y]]
func.func @none_biases_rope(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
                            %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
                            %wo: tensor<16x16xf32>, %bq: tensor<16xf32>,
                            %bk: tensor<8xf32>, %bv: tensor<8xf32>,
                            %bo: tensor<16xf32>) -> tensor<2x8x16xf32> {
  %y = attn.qkv_attention <none> %x wq(%wq) wk(%wk) wv(%wv) wo(%wo)
      bq(%bq) bk(%bk) bv(%bv) bo(%bo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       causal, rope = #attn.rope<theta = 10000.0>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<8xf32>,
         tensor<8xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// K=V with GQA: exactly two projections before the attention (key/value and
// query); the key tensor is both the key and the value.
// CHECK-LABEL: func.func @kv_gqa(
// CHECK-NOT:   attn.project
// CHECK:       %[[K:.+]] = attn.project %arg0, %arg2 : (tensor<2x8x16xf32>, tensor<8x16xf32>) -> tensor<2x8x8xf32>
// CHECK-NOT:   attn.project
// CHECK:       %[[KH:.+]] = tensor.expand_shape %[[K]] {{\[}}[0], [1], [2, 3]] output_shape [2, 8, 2, 4]
// CHECK-NOT:   attn.project
// CHECK:       %[[Q:.+]] = attn.project %arg0, %arg1 : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
// CHECK:       %[[QH:.+]] = tensor.expand_shape %[[Q]] {{\[}}[0], [1], [2, 3]] output_shape [2, 8, 4, 4]
// CHECK-NOT:   attn.project
// CHECK:       %[[O:.+]] = attn.sdpa %[[QH]], %[[KH]], %[[KH]] {causal} : (tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>) -> tensor<2x8x4x4xf32>
// CHECK:       %[[OF:.+]] = tensor.collapse_shape %[[O]]
// CHECK:       %[[Y:.+]] = attn.project %[[OF]], %arg3 :
// CHECK-NOT:   attn.project
// CHECK:       return %[[Y]]
func.func @kv_gqa(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
                  %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>)
    -> tensor<2x8x16xf32> {
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       causal}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// K=V with RoPE: scores use the rotated key, the value is the UN-rotated
// shared tensor (what a decoder caches).
// CHECK-LABEL: func.func @kv_rope(
// CHECK:       %[[K:.+]] = attn.project %arg0, %arg2, %arg4 :
// CHECK:       %[[KH:.+]] = tensor.expand_shape %[[K]]
// CHECK:       %[[Q:.+]] = attn.project %arg0, %arg1, %arg3 :
// CHECK:       %[[QH:.+]] = tensor.expand_shape %[[Q]]
// CHECK-NOT:   attn.project
// CHECK-DAG:   %[[KR:.+]] = attn.rope %[[KH]] {rope = #attn.rope<theta = 10000.0, fraction = 0.5>} : tensor<2x8x2x4xf32>
// CHECK-DAG:   %[[QR:.+]] = attn.rope %[[QH]] {rope = #attn.rope<theta = 10000.0, fraction = 0.5>} : tensor<2x8x4x4xf32>
// CHECK-NOT:   attn.rope
// CHECK-NOT:   attn.project
// CHECK:       %[[O:.+]] = attn.sdpa %[[QR]], %[[KR]], %[[KH]] {causal, window = 4 : i64}
// CHECK:       %[[OF:.+]] = tensor.collapse_shape %[[O]]
// CHECK:       %[[Y:.+]] = attn.project %[[OF]], %arg5 :
// CHECK:       return %[[Y]]
func.func @kv_rope(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
                   %wk: tensor<8x16xf32>, %bq: tensor<16xf32>,
                   %bk: tensor<8xf32>, %wo: tensor<16x16xf32>)
    -> tensor<2x8x16xf32> {
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo) bq(%bq) bk(%bk)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       causal, window = 4 : i64,
       rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>, tensor<16xf32>, tensor<8xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// K=V with MQA, dynamic batch and sequence: heads are split with dynamic
// output shapes.
// CHECK-LABEL: func.func @kv_mqa_dynamic(
// CHECK:       %[[K:.+]] = attn.project %arg0, %arg2 : (tensor<?x?x16xf32>, tensor<4x16xf32>) -> tensor<?x?x4xf32>
// CHECK:       %[[KH:.+]] = tensor.expand_shape %[[K]] {{\[}}[0], [1], [2, 3]] output_shape [%{{.+}}, %{{.+}}, 1, 4] : tensor<?x?x4xf32> into tensor<?x?x1x4xf32>
// CHECK:       %[[Q:.+]] = attn.project %arg0, %arg1 : (tensor<?x?x16xf32>, tensor<16x16xf32>) -> tensor<?x?x16xf32>
// CHECK:       %[[QH:.+]] = tensor.expand_shape %[[Q]] {{\[}}[0], [1], [2, 3]] output_shape [%{{.+}}, %{{.+}}, 4, 4] : tensor<?x?x16xf32> into tensor<?x?x4x4xf32>
// CHECK-NOT:   attn.project
// CHECK:       %[[O:.+]] = attn.sdpa %[[QH]], %[[KH]], %[[KH]] {causal} : (tensor<?x?x4x4xf32>, tensor<?x?x1x4xf32>, tensor<?x?x1x4xf32>) -> tensor<?x?x4x4xf32>
// CHECK:       %[[OF:.+]] = tensor.collapse_shape %[[O]] {{\[}}[0], [1], [2, 3]] : tensor<?x?x4x4xf32> into tensor<?x?x16xf32>
// CHECK:       %[[Y:.+]] = attn.project %[[OF]], %arg3 : (tensor<?x?x16xf32>, tensor<16x16xf32>) -> tensor<?x?x16xf32>
// CHECK:       return %[[Y]]
func.func @kv_mqa_dynamic(%x: tensor<?x?x16xf32>, %wq: tensor<16x16xf32>,
                          %wk: tensor<4x16xf32>, %wo: tensor<16x16xf32>)
    -> tensor<?x?x16xf32> {
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64,
       causal}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<4x16xf32>,
         tensor<16x16xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// Q=K-V: the key is the query; two projections (key and value).
// CHECK-LABEL: func.func @qk(
// CHECK-NOT:   attn.project
// CHECK:       %[[K:.+]] = attn.project %arg0, %arg1, %arg4 : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<2x8x8xf32>
// CHECK:       %[[KH:.+]] = tensor.expand_shape %[[K]] {{\[}}[0], [1], [2, 3]] output_shape [2, 8, 2, 4]
// CHECK-NOT:   attn.project
// CHECK:       %[[V:.+]] = attn.project %arg0, %arg2, %arg5 : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<2x8x8xf32>
// CHECK:       %[[VH:.+]] = tensor.expand_shape %[[V]] {{\[}}[0], [1], [2, 3]] output_shape [2, 8, 2, 4]
// CHECK-NOT:   attn.project
// CHECK:       %[[O:.+]] = attn.sdpa %[[KH]], %[[KH]], %[[VH]] bias(%arg6) {scale = 2.500000e-01 : f64} : (tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>, tensor<8x8xf32>) -> tensor<2x8x2x4xf32>
// CHECK:       %[[OF:.+]] = tensor.collapse_shape %[[O]] {{\[}}[0], [1], [2, 3]] : tensor<2x8x2x4xf32> into tensor<2x8x8xf32>
// CHECK:       %[[Y:.+]] = attn.project %[[OF]], %arg3 : (tensor<2x8x8xf32>, tensor<16x8xf32>) -> tensor<2x8x16xf32>
// CHECK:       return %[[Y]]
func.func @qk(%x: tensor<2x8x16xf32>, %wk: tensor<8x16xf32>,
              %wv: tensor<8x16xf32>, %wo: tensor<16x8xf32>,
              %bk: tensor<8xf32>, %bv: tensor<8xf32>, %p: tensor<8x8xf32>)
    -> tensor<2x8x16xf32> {
  %y = attn.qkv_attention <qk> %x wk(%wk) wv(%wv) wo(%wo) bk(%bk) bv(%bv)
      logit_bias(%p)
      {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       scale = 0.25 : f64}
      : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>,
         tensor<16x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x8xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// Q=K-V with RoPE: the shared query/key is rotated once.
// CHECK-LABEL: func.func @qk_rope(
// CHECK:       %[[K:.+]] = attn.project %arg0, %arg1 :
// CHECK:       %[[KH:.+]] = tensor.expand_shape %[[K]]
// CHECK:       %[[V:.+]] = attn.project %arg0, %arg2 :
// CHECK:       %[[VH:.+]] = tensor.expand_shape %[[V]]
// CHECK-NOT:   attn.project
// CHECK:       %[[KR:.+]] = attn.rope %[[KH]] {rope = #attn.rope<theta = 10000.0>}
// CHECK-NOT:   attn.rope
// CHECK:       attn.sdpa %[[KR]], %[[KR]], %[[VH]] {causal}
func.func @qk_rope(%x: tensor<2x8x16xf32>, %wk: tensor<8x16xf32>,
                   %wv: tensor<8x16xf32>, %wo: tensor<16x8xf32>)
    -> tensor<2x8x16xf32> {
  %y = attn.qkv_attention <qk> %x wk(%wk) wv(%wv) wo(%wo)
      {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       causal, rope = #attn.rope<theta = 10000.0>}
      : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>,
         tensor<16x8xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// Q=K=V: exactly one projection before the attention, used as query, key
// and value; [num_heads, S, T] logit bias, window and output bias.
// CHECK-LABEL: func.func @qkv(
// CHECK-NOT:   attn.project
// CHECK:       %[[K:.+]] = attn.project %arg0, %arg1, %arg3 : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<2x8x8xf32>
// CHECK:       %[[KH:.+]] = tensor.expand_shape %[[K]] {{\[}}[0], [1], [2, 3]] output_shape [2, 8, 2, 4]
// CHECK-NOT:   attn.project
// CHECK:       %[[O:.+]] = attn.sdpa %[[KH]], %[[KH]], %[[KH]] bias(%arg5) {causal, window = 3 : i64} : (tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x8xf32>) -> tensor<2x8x2x4xf32>
// CHECK:       %[[OF:.+]] = tensor.collapse_shape %[[O]]
// CHECK:       %[[Y:.+]] = attn.project %[[OF]], %arg2, %arg4 : (tensor<2x8x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
// CHECK:       return %[[Y]]
func.func @qkv(%x: tensor<2x8x16xf32>, %wk: tensor<8x16xf32>,
               %wo: tensor<16x8xf32>, %bk: tensor<8xf32>, %bo: tensor<16xf32>,
               %p: tensor<2x8x8xf32>) -> tensor<2x8x16xf32> {
  %y = attn.qkv_attention <qkv> %x wk(%wk) wo(%wo) bk(%bk) bo(%bo)
      logit_bias(%p)
      {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       causal, window = 3 : i64}
      : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>,
         tensor<8xf32>, tensor<16xf32>, tensor<2x8x8xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// Q=K=V with RoPE: one rotation for query and key, the value un-rotated.
// CHECK-LABEL: func.func @qkv_rope(
// CHECK:       %[[K:.+]] = attn.project %arg0, %arg1 :
// CHECK:       %[[KH:.+]] = tensor.expand_shape %[[K]]
// CHECK-NOT:   attn.project
// CHECK:       %[[KR:.+]] = attn.rope %[[KH]] {rope = #attn.rope<theta = 10000.0>}
// CHECK-NOT:   attn.rope
// CHECK-NOT:   attn.project
// CHECK:       attn.sdpa %[[KR]], %[[KR]], %[[KH]] {causal}
func.func @qkv_rope(%x: tensor<2x8x16xf32>, %wk: tensor<8x16xf32>,
                    %wo: tensor<16x8xf32>) -> tensor<2x8x16xf32> {
  %y = attn.qkv_attention <qkv> %x wk(%wk) wo(%wo)
      {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       causal, rope = #attn.rope<theta = 10000.0>}
      : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>)
      -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// A result type less static than the input: the decomposition is cast back
// to the layer's result type.
// CHECK-LABEL: func.func @result_less_static(
// CHECK:       %[[Y:.+]] = attn.project %{{.+}}, %arg3 : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
// CHECK:       %[[C:.+]] = tensor.cast %[[Y]] : tensor<2x8x16xf32> to tensor<?x?x16xf32>
// CHECK:       return %[[C]] : tensor<?x?x16xf32>
func.func @result_less_static(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
                              %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>)
    -> tensor<?x?x16xf32> {
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

//===----------------------------------------------------------------------===//
// attn.cca
//===----------------------------------------------------------------------===//

// CCGQA (4 query heads over 2 KV heads, C = 16 + 8 = 24) without qk_mean,
// value shift or RoPE. k0 = 3, k1 = 2: P = 3, the depthwise conv yields
// S + 1 = 9 steps, the grouped conv (4 + 2 = 6 groups, unpadded) S = 8.
// CHECK-LABEL: func.func @cca_plain(
// CHECK:       %[[QR:.+]] = attn.project %arg0, %arg1 : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
// CHECK:       %[[KR:.+]] = attn.project %arg0, %arg2 : (tensor<2x8x16xf32>, tensor<8x16xf32>) -> tensor<2x8x8xf32>
// CHECK:       %[[U:.+]] = tensor.concat dim(2) %[[QR]], %[[KR]] : (tensor<2x8x16xf32>, tensor<2x8x8xf32>) -> tensor<2x8x24xf32>
// CHECK:       %[[M:.+]] = attn.causal_conv1d %[[U]], %arg4, %arg5 {groups = 24 : i64, padding = 3 : i64} : (tensor<2x8x24xf32>, tensor<24x1x3xf32>, tensor<24xf32>) -> tensor<2x9x24xf32>
// CHECK:       %[[C:.+]] = attn.causal_conv1d %[[M]], %arg6, %arg7 {groups = 6 : i64, padding = 0 : i64} : (tensor<2x9x24xf32>, tensor<24x4x2xf32>, tensor<24xf32>) -> tensor<2x8x24xf32>
// CHECK:       %[[QC:.+]] = tensor.extract_slice %[[C]][0, 0, 0] [2, 8, 16] [1, 1, 1] : tensor<2x8x24xf32> to tensor<2x8x16xf32>
// CHECK:       %[[QH:.+]] = tensor.expand_shape %[[QC]] {{\[}}[0], [1], [2, 3]] output_shape [2, 8, 4, 4] : tensor<2x8x16xf32> into tensor<2x8x4x4xf32>
// CHECK:       %[[KC:.+]] = tensor.extract_slice %[[C]][0, 0, 16] [2, 8, 8] [1, 1, 1] : tensor<2x8x24xf32> to tensor<2x8x8xf32>
// CHECK:       %[[KH:.+]] = tensor.expand_shape %[[KC]] {{\[}}[0], [1], [2, 3]] output_shape [2, 8, 2, 4] : tensor<2x8x8xf32> into tensor<2x8x2x4xf32>
// CHECK-NOT:   attn.qk_mean
// CHECK:       %[[QN:.+]], %[[KN:.+]] = attn.qk_norm %[[QH]], %[[KH]], %arg8 : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2xf32>
// CHECK-NOT:   attn.value_shift
// CHECK:       %[[V:.+]] = attn.project %arg0, %arg3 : (tensor<2x8x16xf32>, tensor<8x16xf32>) -> tensor<2x8x8xf32>
// CHECK-NOT:   attn.value_shift
// CHECK-NOT:   attn.rope
// CHECK:       %[[VH:.+]] = tensor.expand_shape %[[V]] {{\[}}[0], [1], [2, 3]] output_shape [2, 8, 2, 4]
// CHECK-NOT:   attn.rope
// CHECK:       %[[O:.+]] = attn.sdpa %[[QN]], %[[KN]], %[[VH]] : (tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>) -> tensor<2x8x4x4xf32>
// CHECK:       %[[OF:.+]] = tensor.collapse_shape %[[O]] {{\[}}[0], [1], [2, 3]] : tensor<2x8x4x4xf32> into tensor<2x8x16xf32>
// CHECK:       %[[Y:.+]] = attn.project %[[OF]], %arg9 : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
// CHECK-NOT:   attn.
// CHECK:       return %[[Y]]
func.func @cca_plain(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
                     %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
                     %dw: tensor<24x1x3xf32>, %dwb: tensor<24xf32>,
                     %gw: tensor<24x4x2xf32>, %gwb: tensor<24xf32>,
                     %temp: tensor<2xf32>, %wo: tensor<16x16xf32>)
    -> tensor<2x8x16xf32> {
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv) conv_dw(%dw, %dwb)
      conv_g(%gw, %gwb) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 3, 2>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x3xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>,
         tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// The full ZAYA1-style layer: qk_mean from the pre-conv projections,
// clamped temperature, eps and norm forwarded to qk_norm, value shift, partial
// RoPE on the normalized query and key, causal window. k0 = k1 = 2: P = 2.
// CHECK-LABEL: func.func @cca_full(
// CHECK:       %[[QR:.+]] = attn.project %arg0, %arg1 :
// CHECK:       %[[KR:.+]] = attn.project %arg0, %arg2 :
// CHECK:       %[[U:.+]] = tensor.concat dim(2) %[[QR]], %[[KR]]
// CHECK:       %[[M:.+]] = attn.causal_conv1d %[[U]], %arg5, %arg6 {groups = 24 : i64, padding = 2 : i64} : (tensor<2x8x24xf32>, tensor<24x1x2xf32>, tensor<24xf32>) -> tensor<2x9x24xf32>
// CHECK:       %[[C:.+]] = attn.causal_conv1d %[[M]], %arg7, %arg8 {groups = 6 : i64, padding = 0 : i64} : (tensor<2x9x24xf32>, tensor<24x4x2xf32>, tensor<24xf32>) -> tensor<2x8x24xf32>
// CHECK:       %[[QC:.+]] = tensor.extract_slice %[[C]][0, 0, 0] [2, 8, 16]
// CHECK:       %[[QCH:.+]] = tensor.expand_shape %[[QC]]
// CHECK:       %[[KC:.+]] = tensor.extract_slice %[[C]][0, 0, 16] [2, 8, 8]
// CHECK:       %[[KCH:.+]] = tensor.expand_shape %[[KC]]
// CHECK-DAG:   %[[QRH:.+]] = tensor.expand_shape %[[QR]] {{\[}}[0], [1], [2, 3]] output_shape [2, 8, 4, 4]
// CHECK-DAG:   %[[KRH:.+]] = tensor.expand_shape %[[KR]] {{\[}}[0], [1], [2, 3]] output_shape [2, 8, 2, 4]
// CHECK:       %[[QM:.+]], %[[KM:.+]] = attn.qk_mean %[[QCH]], %[[KCH]], %[[QRH]], %[[KRH]] : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>
// CHECK:       %[[QN:.+]], %[[KN:.+]] = attn.qk_norm %[[QM]], %[[KM]], %arg9 {eps = 9.9999999999999995E-7 : f64, norm = #attn.norm<clamp_eps>, temperature = #attn.temperature<clamped>}
// CHECK-DAG:   %[[VC:.+]] = attn.project %arg0, %arg3 : (tensor<2x8x16xf32>, tensor<4x16xf32>) -> tensor<2x8x4xf32>
// CHECK-DAG:   %[[VP:.+]] = attn.project %arg0, %arg4 : (tensor<2x8x16xf32>, tensor<4x16xf32>) -> tensor<2x8x4xf32>
// CHECK:       %[[V:.+]] = attn.value_shift %[[VC]], %[[VP]] : (tensor<2x8x4xf32>, tensor<2x8x4xf32>) -> tensor<2x8x8xf32>
// CHECK-DAG:   %[[QROT:.+]] = attn.rope %[[QN]] {rope = #attn.rope<theta = 10000.0, fraction = 0.5>} : tensor<2x8x4x4xf32>
// CHECK-DAG:   %[[KROT:.+]] = attn.rope %[[KN]] {rope = #attn.rope<theta = 10000.0, fraction = 0.5>} : tensor<2x8x2x4xf32>
// CHECK-DAG:   %[[VH:.+]] = tensor.expand_shape %[[V]] {{\[}}[0], [1], [2, 3]] output_shape [2, 8, 2, 4]
// CHECK:       %[[O:.+]] = attn.sdpa %[[QROT]], %[[KROT]], %[[VH]] {causal, window = 4 : i64} :
// CHECK:       %[[OF:.+]] = tensor.collapse_shape %[[O]]
// CHECK:       %[[Y:.+]] = attn.project %[[OF]], %arg10 :
// CHECK:       return %[[Y]]
func.func @cca_full(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
                    %wk: tensor<8x16xf32>, %wvc: tensor<4x16xf32>,
                    %wvp: tensor<4x16xf32>,
                    %dw: tensor<24x1x2xf32>, %dwb: tensor<24xf32>,
                    %gw: tensor<24x4x2xf32>, %gwb: tensor<24xf32>,
                    %temp: tensor<2xf32>, %wo: tensor<16x16xf32>)
    -> tensor<2x8x16xf32> {
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wvc) wv_prev(%wvp) conv_dw(%dw, %dwb)
      conv_g(%gw, %gwb) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift,
       temperature = #attn.temperature<clamped>, eps = 1.0e-6 : f64,
       norm = #attn.norm<clamp_eps>, causal, window = 4 : i64,
       rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<4x16xf32>, tensor<4x16xf32>, tensor<24x1x2xf32>,
         tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>,
         tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// CCA (2 heads over 2 KV heads, C = 16) with qk_mean only: 4 groups,
// unequal kernels k0 = 2, k1 = 3 (P = 3, the depthwise conv yields S + 2).
// CHECK-LABEL: func.func @cca_qk_mean(
// CHECK:       %[[M:.+]] = attn.causal_conv1d %{{.+}}, %arg4, %arg5 {groups = 16 : i64, padding = 3 : i64} : (tensor<2x8x16xf32>, tensor<16x1x2xf32>, tensor<16xf32>) -> tensor<2x10x16xf32>
// CHECK:       attn.causal_conv1d %[[M]], %arg6, %arg7 {groups = 4 : i64, padding = 0 : i64} : (tensor<2x10x16xf32>, tensor<16x4x3xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
// CHECK:       %[[QM:.+]], %[[KM:.+]] = attn.qk_mean
// CHECK:       attn.qk_norm %[[QM]], %[[KM]], %arg8 :
// CHECK-NOT:   attn.value_shift
// CHECK-NOT:   attn.rope
// CHECK:       attn.sdpa
func.func @cca_qk_mean(%x: tensor<2x8x16xf32>, %wq: tensor<8x16xf32>,
                       %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
                       %dw: tensor<16x1x2xf32>, %dwb: tensor<16xf32>,
                       %gw: tensor<16x4x3xf32>, %gwb: tensor<16xf32>,
                       %temp: tensor<2xf32>, %wo: tensor<16x8xf32>)
    -> tensor<2x8x16xf32> {
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv) conv_dw(%dw, %dwb)
      conv_g(%gw, %gwb) temp(%temp) wo(%wo)
      {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 3>, qk_mean}
      : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<16x1x2xf32>, tensor<16xf32>,
         tensor<16x4x3xf32>, tensor<16xf32>, tensor<2xf32>,
         tensor<16x8xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// Value shift and full RoPE without qk_mean, dynamic batch and sequence.
// CHECK-LABEL: func.func @cca_value_shift_rope_dynamic(
// CHECK:       %[[QR:.+]] = attn.project %arg0, %arg1 : (tensor<?x?x16xf32>, tensor<16x16xf32>) -> tensor<?x?x16xf32>
// CHECK:       %[[KR:.+]] = attn.project %arg0, %arg2 : (tensor<?x?x16xf32>, tensor<8x16xf32>) -> tensor<?x?x8xf32>
// CHECK:       %[[U:.+]] = tensor.concat dim(2) %[[QR]], %[[KR]] : (tensor<?x?x16xf32>, tensor<?x?x8xf32>) -> tensor<?x?x24xf32>
// CHECK:       %[[M:.+]] = attn.causal_conv1d %[[U]], %arg5, %arg6 {groups = 24 : i64, padding = 2 : i64} : (tensor<?x?x24xf32>, tensor<24x1x2xf32>, tensor<24xf32>) -> tensor<?x?x24xf32>
// CHECK:       %[[C:.+]] = attn.causal_conv1d %[[M]], %arg7, %arg8 {groups = 6 : i64, padding = 0 : i64} : (tensor<?x?x24xf32>, tensor<24x4x2xf32>, tensor<24xf32>) -> tensor<?x?x24xf32>
// CHECK:       tensor.extract_slice %[[C]][0, 0, 0] [%{{.+}}, %{{.+}}, 16] [1, 1, 1] : tensor<?x?x24xf32> to tensor<?x?x16xf32>
// CHECK:       tensor.extract_slice %[[C]][0, 0, 16] [%{{.+}}, %{{.+}}, 8] [1, 1, 1] : tensor<?x?x24xf32> to tensor<?x?x8xf32>
// CHECK-NOT:   attn.qk_mean
// CHECK:       %[[QN:.+]], %[[KN:.+]] = attn.qk_norm %{{.+}}, %{{.+}}, %arg9 : tensor<?x?x4x4xf32>, tensor<?x?x2x4xf32>, tensor<2xf32>
// CHECK:       %[[VC:.+]] = attn.project %arg0, %arg3 : (tensor<?x?x16xf32>, tensor<4x16xf32>) -> tensor<?x?x4xf32>
// CHECK:       %[[VP:.+]] = attn.project %arg0, %arg4 : (tensor<?x?x16xf32>, tensor<4x16xf32>) -> tensor<?x?x4xf32>
// CHECK:       %[[V:.+]] = attn.value_shift %[[VC]], %[[VP]] : (tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x8xf32>
// CHECK-DAG:   %[[QROT:.+]] = attn.rope %[[QN]] {rope = #attn.rope<theta = 10000.0>} : tensor<?x?x4x4xf32>
// CHECK-DAG:   %[[KROT:.+]] = attn.rope %[[KN]] {rope = #attn.rope<theta = 10000.0>} : tensor<?x?x2x4xf32>
// CHECK-DAG:   %[[VH:.+]] = tensor.expand_shape %[[V]] {{\[}}[0], [1], [2, 3]] output_shape [%{{.+}}, %{{.+}}, 2, 4] : tensor<?x?x8xf32> into tensor<?x?x2x4xf32>
// CHECK:       %[[O:.+]] = attn.sdpa %[[QROT]], %[[KROT]], %[[VH]] {causal} : (tensor<?x?x4x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>) -> tensor<?x?x4x4xf32>
// CHECK:       %[[OF:.+]] = tensor.collapse_shape %[[O]]
// CHECK:       %[[Y:.+]] = attn.project %[[OF]], %arg10 : (tensor<?x?x16xf32>, tensor<16x16xf32>) -> tensor<?x?x16xf32>
// CHECK:       return %[[Y]]
func.func @cca_value_shift_rope_dynamic(
    %x: tensor<?x?x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>,
    %wvc: tensor<4x16xf32>, %wvp: tensor<4x16xf32>, %dw: tensor<24x1x2xf32>,
    %dwb: tensor<24xf32>, %gw: tensor<24x4x2xf32>, %gwb: tensor<24xf32>,
    %temp: tensor<2xf32>, %wo: tensor<16x16xf32>) -> tensor<?x?x16xf32> {
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wvc) wv_prev(%wvp) conv_dw(%dw, %dwb)
      conv_g(%gw, %gwb) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, value_shift, causal,
       rope = #attn.rope<theta = 10000.0>}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<4x16xf32>, tensor<4x16xf32>, tensor<24x1x2xf32>,
         tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>,
         tensor<16x16xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// A CCA result more static than its input is cast back as well.
// CHECK-LABEL: func.func @cca_result_more_static(
// CHECK:       %[[Y:.+]] = attn.project %{{.+}}, %arg9 : (tensor<?x?x16xf32>, tensor<16x16xf32>) -> tensor<?x?x16xf32>
// CHECK:       %[[C:.+]] = tensor.cast %[[Y]] : tensor<?x?x16xf32> to tensor<2x8x16xf32>
// CHECK:       return %[[C]] : tensor<2x8x16xf32>
func.func @cca_result_more_static(
    %x: tensor<?x?x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>,
    %wv: tensor<8x16xf32>, %dw: tensor<24x1x2xf32>, %dwb: tensor<24xf32>,
    %gw: tensor<24x4x2xf32>, %gwb: tensor<24xf32>, %temp: tensor<2xf32>,
    %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv) conv_dw(%dw, %dwb)
      conv_g(%gw, %gwb) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>,
         tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

//===----------------------------------------------------------------------===//
// Decode forms over a KV cache
//===----------------------------------------------------------------------===//

// K=V with RoPE over a paged cache: the un-rotated shared key is written once;
// the scores rotate the new query at its position and the cached keys at
// theirs, and the values are the un-rotated cached rows.
// CHECK-LABEL: func.func @kv_decode_paged_rope(
// CHECK:       %[[K:.+]] = attn.project %arg0, %arg2
// CHECK:       %[[KH:.+]] = tensor.expand_shape %[[K]]
// CHECK:       %[[Q:.+]] = attn.project %arg0, %arg1
// CHECK:       %[[QH:.+]] = tensor.expand_shape %[[Q]]
// CHECK:       %[[C:.+]] = attn.cache_update %arg4, %[[KH]] positions(%arg5) block_table(%arg6) : (tensor<9x4x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2xi32>, tensor<2x4xi32>) -> tensor<9x4x2x4xf32>
// CHECK:       %[[VIEW:.+]] = attn.cache_gather %[[C]] block_table(%arg6) : (tensor<9x4x2x4xf32>, tensor<2x4xi32>) -> tensor<2x16x2x4xf32>
// CHECK:       %[[QR:.+]] = attn.rope %[[QH]] positions(%arg5 : tensor<2xi32>)
// CHECK:       %[[KR:.+]] = attn.rope %[[VIEW]] {rope
// CHECK:       %[[O:.+]] = attn.sdpa %[[QR]], %[[KR]], %[[VIEW]] positions(%arg5) {causal}
// CHECK:       %[[OF:.+]] = tensor.collapse_shape %[[O]]
// CHECK:       %[[Y:.+]] = attn.project %[[OF]], %arg3
// CHECK:       return %[[Y]], %[[C]]
func.func @kv_decode_paged_rope(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>, %kv: tensor<9x4x2x4xf32>,
    %pos: tensor<2xi32>, %bt: tensor<2x4xi32>)
    -> (tensor<2x1x16xf32>, tensor<9x4x2x4xf32>) {
  %y, %kv2 = attn.qkv_decode <kv> %x wq(%wq) wk(%wk) wo(%wo) cache(%kv)
      positions(%pos) block_table(%bt)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       rope = #attn.rope<theta = 10000.0>}
      : (tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>, tensor<9x4x2x4xf32>, tensor<2xi32>,
         tensor<2x4xi32>) -> (tensor<2x1x16xf32>, tensor<9x4x2x4xf32>)
  return %y, %kv2 : tensor<2x1x16xf32>, tensor<9x4x2x4xf32>
}

// CCGQA over its state: the conv state replaces the prefill's padding, the
// state keeps the last P pre-conv vectors, the shift state feeds the first
// shifted value and keeps the last one; the cache gets the final keys.
// CHECK-LABEL: func.func @cca_decode(
// CHECK:       %[[QR:.+]] = attn.project %arg0, %arg1
// CHECK:       %[[KR:.+]] = attn.project %arg0, %arg2
// CHECK:       %[[U:.+]] = tensor.concat dim(2) %[[QR]], %[[KR]]
// CHECK:       %[[W:.+]] = tensor.concat dim(1) %arg13, %[[U]] : (tensor<2x2x12xf32>, tensor<2x?x12xf32>) -> tensor<2x?x12xf32>
// CHECK:       %[[DW:.+]] = attn.causal_conv1d %[[W]], %arg5, %arg6 {groups = 12 : i64, padding = 0 : i64}
// CHECK:       %[[G:.+]] = attn.causal_conv1d %[[DW]], %arg7, %arg8 {groups = 3 : i64, padding = 0 : i64}
// CHECK:       attn.qk_mean
// CHECK:       %[[QN:.+]], %[[KN:.+]] = attn.qk_norm
// CHECK:       %[[VC:.+]] = attn.project %arg0, %arg3
// CHECK:       %[[VP:.+]] = attn.project %arg0, %arg4
// CHECK:       %[[V:.+]] = attn.value_shift %[[VC]], %[[VP]] state(%arg14)
// CHECK:       %[[CS:.+]] = attn.state_update %arg13, %[[U]] lengths(%arg16)
// CHECK:       %[[SS:.+]] = attn.state_update %arg14, %[[VP]] lengths(%arg16)
// CHECK:       %[[QROT:.+]] = attn.rope %[[QN]] positions(%arg15
// CHECK:       %[[KROT:.+]] = attn.rope %[[KN]] positions(%arg15
// CHECK:       %[[KC:.+]] = attn.cache_update %arg11, %[[KROT]] positions(%arg15) lengths(%arg16)
// CHECK:       %[[VH:.+]] = tensor.expand_shape %[[V]]
// CHECK:       %[[VCACHE:.+]] = attn.cache_update %arg12, %[[VH]] positions(%arg15) lengths(%arg16)
// CHECK:       %[[O:.+]] = attn.sdpa %[[QROT]], %[[KC]], %[[VCACHE]] positions(%arg15) {causal}
// CHECK:       %[[Y:.+]] = attn.project
// CHECK:       return %[[Y]], %[[KC]], %[[VCACHE]], %[[CS]], %[[SS]]
func.func @cca_decode(%x: tensor<2x?x16xf32>, %wq: tensor<8x16xf32>,
    %wk: tensor<4x16xf32>, %wv: tensor<2x16xf32>, %wvp: tensor<2x16xf32>,
    %dw: tensor<12x1x2xf32>, %dwb: tensor<12xf32>, %gw: tensor<12x4x2xf32>,
    %gwb: tensor<12xf32>, %temp: tensor<1xf32>, %wo: tensor<16x8xf32>,
    %kc: tensor<2x64x1x4xf32>, %vc: tensor<2x64x1x4xf32>,
    %cs: tensor<2x2x12xf32>, %ss: tensor<2x1x2xf32>, %pos: tensor<2xi32>,
    %len: tensor<2xi32>)
    -> (tensor<2x?x16xf32>, tensor<2x64x1x4xf32>, tensor<2x64x1x4xf32>,
        tensor<2x2x12xf32>, tensor<2x1x2xf32>) {
  %y, %k2, %v2, %c2, %s2 = attn.cca_decode %x wq(%wq) wk(%wk) wv(%wv)
      wv_prev(%wvp) conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) wo(%wo)
      cache(%kc, %vc) conv_state(%cs) shift_state(%ss) positions(%pos)
      lengths(%len)
      {num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift,
       rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
      : (tensor<2x?x16xf32>, tensor<8x16xf32>, tensor<4x16xf32>,
         tensor<2x16xf32>, tensor<2x16xf32>, tensor<12x1x2xf32>,
         tensor<12xf32>, tensor<12x4x2xf32>, tensor<12xf32>, tensor<1xf32>,
         tensor<16x8xf32>, tensor<2x64x1x4xf32>, tensor<2x64x1x4xf32>,
         tensor<2x2x12xf32>, tensor<2x1x2xf32>, tensor<2xi32>, tensor<2xi32>)
      -> (tensor<2x?x16xf32>, tensor<2x64x1x4xf32>, tensor<2x64x1x4xf32>,
          tensor<2x2x12xf32>, tensor<2x1x2xf32>)
  return %y, %k2, %v2, %c2, %s2
      : tensor<2x?x16xf32>, tensor<2x64x1x4xf32>, tensor<2x64x1x4xf32>,
        tensor<2x2x12xf32>, tensor<2x1x2xf32>
}

// A padded batch: every projection reads x with the padded tokens zeroed
// (their u, values and delayed values are zero) and the attention masks
// them as keys with the same mask.
// CHECK-LABEL: func.func @cca_padding_mask(
// CHECK:       %[[XM:.+]] = attn.mask_tokens %arg0, %arg11 : tensor<?x?x16xf32>, tensor<?x?xi64>
// CHECK:       attn.project %[[XM]], %arg1 :
// CHECK:       attn.project %[[XM]], %arg2 :
// CHECK-DAG:   attn.project %[[XM]], %arg3 :
// CHECK-DAG:   attn.project %[[XM]], %arg4 :
// CHECK:       %[[O:.+]] = attn.sdpa %{{.+}}, %{{.+}}, %{{.+}} key_mask(%arg11) {causal} :
// CHECK:       attn.project %{{.+}}, %arg10 :
// CHECK-NOT:   attn.project %arg0
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
