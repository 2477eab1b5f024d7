// RUN: attnfuse-opt %s -split-input-file --attn-differentiate=residuals=true | FileCheck %s
// RUN: attnfuse-opt %s -split-input-file --attn-differentiate=residuals=true --attn-to-cpu | FileCheck %s --check-prefix=CPU
// RUN: attnfuse-opt %s -split-input-file --attn-differentiate=residuals=true --attn-to-cpu=fused=false | FileCheck %s --check-prefix=CPU

// With residuals, @f_fwd returns, after the result, the attention's query,
// key and value (those that are not arguments), its output and the
// log-sum-exp of its rows; @f_bwd reads them (after the arguments, before
// the cotangent): its attn.sdpa_grad reads only residuals, the
// up-projection's gradient reads the output, and nothing recomputes the
// attention or the projections and rotations that only feed it. K=V with
// RoPE: the key is the rotated value, so only the value is kept and the
// backward rotates it again (the fused backward then sees the K=V form).
// CHECK-LABEL: func.func @kv_rope(
// CHECK: attn.qkv_attention <kv>
// CHECK-LABEL: func.func @kv_rope_fwd(
// CHECK-SAME: -> (tensor<2x5x16xf32>, tensor<2x5x4x4xf32>, tensor<2x5x2x4xf32>, tensor<2x5x4x4xf32>, tensor<2x5x4xf32>)
// CHECK: %[[KV:.*]] = tensor.expand_shape {{.*}} into tensor<2x5x2x4xf32>
// CHECK: %[[K:.*]] = attn.rope %[[KV]]
// CHECK: %[[Q:.*]] = attn.rope
// CHECK: %[[O:.*]], %[[LSE:.*]] = attn.sdpa %[[Q]], %[[K]], %[[KV]]
// CHECK: %[[Y:.*]] = attn.project
// CHECK: return %[[Y]], %[[Q]], %[[KV]], %[[O]], %[[LSE]] : tensor<2x5x16xf32>, tensor<2x5x4x4xf32>, tensor<2x5x2x4xf32>, tensor<2x5x4x4xf32>, tensor<2x5x4xf32>
// CHECK-LABEL: func.func @kv_rope_bwd(
// CHECK-SAME: %arg4: tensor<2x5x4x4xf32>, %arg5: tensor<2x5x2x4xf32>, %arg6: tensor<2x5x4x4xf32>, %arg7: tensor<2x5x4xf32>, %arg8: tensor<2x5x16xf32>) -> (tensor<2x5x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<16x16xf32>)
// CHECK-NOT: attn.sdpa
// CHECK: %[[KEY:.*]] = attn.rope %arg5
// CHECK-NOT: attn.rope %
// CHECK: %[[OUT:.*]] = tensor.collapse_shape %arg6
// CHECK: attn.project_grad %[[OUT]], %arg3, %arg8
// CHECK: attn.sdpa_grad %arg4, %[[KEY]], %arg5, %arg6, %{{.*}} lse(%arg7) {causal}
// CHECK-NOT: attn.sdpa
// CHECK: return
// CHECK-NOT: func.func @kv_rope_vjp
// CPU-LABEL: llvm.func @kv_rope_fwd(
// CPU-LABEL: llvm.func @kv_rope_bwd(
func.func @kv_rope(%x: tensor<2x5x16xf32>, %wq: tensor<16x16xf32>,
                   %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>)
    -> tensor<2x5x16xf32> {
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       causal, rope = #attn.rope<theta = 10000.0>}
      : (tensor<2x5x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>) -> tensor<2x5x16xf32>
  return %y : tensor<2x5x16xf32>
}

// -----

// Two layers (qkv: one tensor is the query, the key and the value): three
// residuals per attention, in the order of the layers.
// CHECK-LABEL: func.func @two_layers_fwd(
// CHECK-SAME: -> (tensor<?x?x16xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2xf32>, tensor<?x?x4x4xf32>, tensor<?x?x4x4xf32>, tensor<?x?x4xf32>)
// CHECK-LABEL: func.func @two_layers_bwd(
// CHECK-SAME: %arg3: tensor<?x?x2x8xf32>, %arg4: tensor<?x?x2x8xf32>, %arg5: tensor<?x?x2xf32>, %arg6: tensor<?x?x4x4xf32>, %arg7: tensor<?x?x4x4xf32>, %arg8: tensor<?x?x4xf32>, %arg9: tensor<?x?x16xf32>)
// CHECK-DAG: attn.sdpa_grad %arg3, %arg3, %arg3, %arg4, %{{.*}} lse(%arg5) :
// CHECK-DAG: attn.sdpa_grad %arg6, %arg6, %arg6, %arg7, %{{.*}} lse(%arg8) {causal} :
// CPU-LABEL: llvm.func @two_layers_bwd(
func.func @two_layers(%x: tensor<?x?x16xf32>, %w1: tensor<16x16xf32>,
                      %w2: tensor<16x16xf32>) -> tensor<?x?x16xf32> {
  %h = attn.qkv_attention <qkv> %x wk(%w1) wo(%w1)
      {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 8 : i64}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>)
      -> tensor<?x?x16xf32>
  %y = attn.qkv_attention <qkv> %h wk(%w2) wo(%w2)
      {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 4 : i64,
       causal}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>)
      -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

