// RUN: attnfuse-opt %s -split-input-file --attn-differentiate | FileCheck %s
// RUN: attnfuse-opt %s -split-input-file --attn-differentiate --attn-to-cpu | FileCheck %s --check-prefix=CPU
// RUN: attnfuse-opt %s -split-input-file --attn-differentiate --attn-to-cpu=fused=false | FileCheck %s --check-prefix=CPU
// RUN: not attnfuse-opt %s -split-input-file --attn-differentiate=wrt=1 2>&1 | FileCheck %s --check-prefix=MASK
// RUN: not attnfuse-opt %s -split-input-file --attn-differentiate=wrt=7 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not attnfuse-opt %s -split-input-file --attn-differentiate=function=nowhere 2>&1 | FileCheck %s --check-prefix=NOFUNC

// K=V with GQA and RoPE: the shared key projection feeds the rotated key and
// the un-rotated value, so its gradient is rope^T(dK) + dV; the input gets
// the sum over both projections that read it.
// CHECK-LABEL: func.func @kv_rope(
// CHECK: attn.qkv_attention <kv>
// CHECK-LABEL: func.func @kv_rope_vjp(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x5x16xf32>, %[[WQ:[a-z0-9]+]]: tensor<16x16xf32>, %[[WK:[a-z0-9]+]]: tensor<8x16xf32>, %[[WO:[a-z0-9]+]]: tensor<16x16xf32>, %[[DY:[a-z0-9]+]]: tensor<2x5x16xf32>)
// CHECK-SAME: -> (tensor<2x5x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<16x16xf32>)
// CHECK-NOT: attn.qkv_attention
// CHECK: %[[K:.*]] = tensor.expand_shape {{.*}} into tensor<2x5x2x4xf32>
// CHECK: %[[KR:.*]] = attn.rope %[[K]]
// The attention also returns the log-sum-exp of its rows, which its
// gradient reads.
// CHECK: %[[O:.*]], %[[LSE:.*]] = attn.sdpa %{{.*}}, %[[KR]], %[[K]] {causal} : {{.*}} -> (tensor<2x5x4x4xf32>, tensor<2x5x4xf32>)
// CHECK: %[[DO:.*]], %[[DWO:.*]], %{{.*}} = attn.project_grad %{{.*}}, %[[WO]], %[[DY]]
// CHECK: %[[DQR:.*]], %[[DKR:.*]], %[[DV:.*]] = attn.sdpa_grad %{{.*}}, %[[KR]], %[[K]], %[[O]], %{{.*}} lse(%[[LSE]]) {causal}
// CHECK: %[[DQ:.*]] = attn.rope_grad %[[DQR]]
// CHECK: %[[DK:.*]] = attn.rope_grad %[[DKR]]
// CHECK: %[[DSHARED:.*]] = arith.addf %[[DV]], %[[DK]] : tensor<2x5x2x4xf32>
// CHECK: %[[DX1:.*]], %[[DWQ:.*]], %{{.*}} = attn.project_grad %[[X]], %[[WQ]]
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[DSHARED]]
// CHECK: %[[DX2:.*]], %[[DWK:.*]], %{{.*}} = attn.project_grad %[[X]], %[[WK]], %[[FLAT]]
// CHECK: %[[DX:.*]] = arith.addf %[[DX1]], %[[DX2]]
// CHECK: return %[[DX]], %[[DWQ]], %[[DWK]], %[[DWO]]
// CPU-LABEL: llvm.func @kv_rope_vjp(
// CPU-NOT: attn.
// MASK: attn-differentiate: argument #1 of @cca ('tensor<?x?xi64>') is not a floating-point tensor and has no gradient
// RANGE: wrt names argument #7, but @kv_rope has 4 arguments
// NOFUNC: attn-differentiate: no function @nowhere
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

// CCGQA with a padding mask, QK-mean and the value shift: every step has its
// gradient op; the mask (argument #1) takes no gradient.
// CHECK-LABEL: func.func @cca_vjp(
// CHECK-SAME: -> (tensor<?x?x16xf32>, tensor<8x16xf32>, tensor<4x16xf32>, tensor<2x16xf32>, tensor<2x16xf32>, tensor<12x1x2xf32>, tensor<12xf32>, tensor<12x4x2xf32>, tensor<12xf32>, tensor<1xf32>, tensor<16x8xf32>)
// CHECK-DAG: attn.sdpa_grad {{.*}} key_mask(%arg1) lse(%{{.*}}) {causal}
// CHECK-DAG: attn.value_shift_grad
// CHECK-DAG: attn.qk_norm_grad
// CHECK-DAG: attn.qk_mean_grad
// CHECK-DAG: attn.causal_conv1d_grad {{.*}} {groups = 3 : i64, padding = 0 : i64}
// CHECK-DAG: attn.causal_conv1d_grad {{.*}} {groups = 12 : i64, padding = 2 : i64}
// CHECK-DAG: attn.mask_tokens %{{.*}}, %arg1
// CPU-LABEL: llvm.func @cca_vjp(
func.func @cca(%x: tensor<?x?x16xf32>, %mask: tensor<?x?xi64>,
               %wq: tensor<8x16xf32>, %wk: tensor<4x16xf32>,
               %wv: tensor<2x16xf32>, %wvp: tensor<2x16xf32>,
               %dw: tensor<12x1x2xf32>, %dwb: tensor<12xf32>,
               %gw: tensor<12x4x2xf32>, %gwb: tensor<12xf32>,
               %temp: tensor<1xf32>, %wo: tensor<16x8xf32>)
    -> tensor<?x?x16xf32> {
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv) wv_prev(%wvp) conv_dw(%dw, %dwb)
      conv_g(%gw, %gwb) temp(%temp) wo(%wo) padding_mask(%mask)
      {num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift, causal,
       rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
      : (tensor<?x?x16xf32>, tensor<8x16xf32>, tensor<4x16xf32>,
         tensor<2x16xf32>, tensor<2x16xf32>, tensor<12x1x2xf32>,
         tensor<12xf32>, tensor<12x4x2xf32>, tensor<12xf32>, tensor<1xf32>,
         tensor<16x8xf32>, tensor<?x?xi64>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

// Slices that split a value into consecutive parts along one dimension (a
// fused projection's Q, K and V columns): the value's gradient is the concat
// of the parts' gradients, in offset order, whatever the order of the slices.
// CHECK-LABEL: func.func @split_vjp(
// CHECK-SAME: %[[X:.*]]: tensor<?x6xf32>, %[[DY:.*]]: tensor<?x2xf32>
// CHECK: %[[NEG:.*]] = arith.negf %[[DY]]
// CHECK-NOT: tensor.insert_slice
// CHECK: %[[DX:.*]] = tensor.concat dim(1) %[[NEG]], %[[DY]], %[[DY]]
// CHECK: return %[[DX]]
func.func @split(%x: tensor<?x6xf32>) -> tensor<?x2xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x6xf32>
  %b = tensor.extract_slice %x[0, 2] [%n, 2] [1, 1]
      : tensor<?x6xf32> to tensor<?x2xf32>
  %c = tensor.extract_slice %x[0, 4] [%n, 2] [1, 1]
      : tensor<?x6xf32> to tensor<?x2xf32>
  %a = tensor.extract_slice %x[0, 0] [%n, 2] [1, 1]
      : tensor<?x6xf32> to tensor<?x2xf32>
  %bc = arith.addf %b, %c : tensor<?x2xf32>
  %y = arith.subf %bc, %a : tensor<?x2xf32>
  return %y : tensor<?x2xf32>
}

// -----

// Overlapping slices do not split the value: each slice's gradient goes into
// zeros at its offset, and the two are added.
// CHECK-LABEL: func.func @overlap_vjp(
// CHECK-NOT: tensor.concat
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 2] [%{{.*}}, 4] [1, 1]
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 0] [%{{.*}}, 4] [1, 1]
// CHECK: arith.addf
func.func @overlap(%x: tensor<?x6xf32>) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x6xf32>
  %a = tensor.extract_slice %x[0, 0] [%n, 4] [1, 1]
      : tensor<?x6xf32> to tensor<?x4xf32>
  %b = tensor.extract_slice %x[0, 2] [%n, 4] [1, 1]
      : tensor<?x6xf32> to tensor<?x4xf32>
  %y = arith.addf %a, %b : tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}
