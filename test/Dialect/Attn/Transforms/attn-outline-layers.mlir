// RUN: attnfuse-opt %s --split-input-file --attn-outline-layers | FileCheck %s
// RUN: attnfuse-opt %s --split-input-file --attn-outline-layers=min-uses=3 | FileCheck %s --check-prefix=THREE

// Two identical K=V layers (different weights) and one with another window:
// the pair shares one function, the odd one stays in place.
// CHECK-LABEL: func.func @stack(
// CHECK-SAME:      %[[X:.+]]: tensor<?x?x16xf32>, %[[WQ0:.+]]: tensor<16x16xf32>, %[[WK0:.+]]: tensor<8x16xf32>, %[[WO0:.+]]: tensor<16x16xf32>, %[[WQ1:.+]]: tensor<16x16xf32>, %[[WK1:.+]]: tensor<8x16xf32>, %[[WO1:.+]]: tensor<16x16xf32>
// CHECK:         %[[Y0:.+]] = call @qkv_attention_layer_0(%[[X]], %[[WQ0]], %[[WK0]], %[[WO0]])
// CHECK:         %[[Y1:.+]] = call @qkv_attention_layer_0(%[[Y0]], %[[WQ1]], %[[WK1]], %[[WO1]])
// CHECK:         %[[Y2:.+]] = attn.qkv_attention <kv> %[[Y1]] wq(%[[WQ0]]) wk(%[[WK0]]) wo(%[[WO0]]) {{.*}}window = 4
// CHECK:         return %[[Y2]]
// CHECK-LABEL: func.func private @qkv_attention_layer_0(
// CHECK-SAME:      %[[A0:.+]]: tensor<?x?x16xf32>, %[[A1:.+]]: tensor<16x16xf32>, %[[A2:.+]]: tensor<8x16xf32>, %[[A3:.+]]: tensor<16x16xf32>) -> tensor<?x?x16xf32>
// CHECK:         %[[Y:.+]] = attn.qkv_attention <kv> %[[A0]] wq(%[[A1]]) wk(%[[A2]]) wo(%[[A3]]) {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64}
// CHECK:         return %[[Y]]
// CHECK-NOT:   func.func

// With min-uses=3 nothing occurs often enough.
// THREE-LABEL: func.func @stack(
// THREE-NOT:     call
// THREE-COUNT-3: attn.qkv_attention <kv>
// THREE-NOT:   func.func private @qkv_attention_layer
func.func @stack(%x: tensor<?x?x16xf32>,
                 %wq0: tensor<16x16xf32>, %wk0: tensor<8x16xf32>,
                 %wo0: tensor<16x16xf32>, %wq1: tensor<16x16xf32>,
                 %wk1: tensor<8x16xf32>, %wo1: tensor<16x16xf32>)
    -> tensor<?x?x16xf32> {
  %y0 = attn.qkv_attention <kv> %x wq(%wq0) wk(%wk0) wo(%wo0)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, causal}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>) -> tensor<?x?x16xf32>
  %y1 = attn.qkv_attention <kv> %y0 wq(%wq1) wk(%wk1) wo(%wo1)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, causal}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>) -> tensor<?x?x16xf32>
  %y2 = attn.qkv_attention <kv> %y1 wq(%wq0) wk(%wk0) wo(%wo0)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, causal,
       window = 4 : i64}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>) -> tensor<?x?x16xf32>
  return %y2 : tensor<?x?x16xf32>
}

// -----

// A decode module: @prefill and @step run the same layer over their own
// shapes (T tokens vs one): each shape is one function, shared by the
// layers; a name the input already uses is not taken.
// CHECK-LABEL: func.func @prefill(
// CHECK-COUNT-2: call @qkv_decode_layer_0_0(
// CHECK-NOT:     attn.qkv_decode
// CHECK-LABEL: func.func @step(
// CHECK-COUNT-2: call @qkv_decode_layer_1(
// CHECK-NOT:     attn.qkv_decode
// CHECK:       func.func private @qkv_decode_layer_0(tensor<2xf32>)
// CHECK-LABEL: func.func private @qkv_decode_layer_0_0(
// CHECK-SAME:      tensor<2x?x16xf32>
// CHECK:         attn.qkv_decode <kv>
// CHECK-LABEL: func.func private @qkv_decode_layer_1(
// CHECK-SAME:      tensor<2x1x16xf32>
// CHECK:         attn.qkv_decode <kv>
func.func @prefill(%x: tensor<2x?x16xf32>, %wq: tensor<16x16xf32>,
                   %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>,
                   %c0: tensor<2x32x2x4xf32>, %c1: tensor<2x32x2x4xf32>,
                   %pos: tensor<2xi32>)
    -> (tensor<2x?x16xf32>, tensor<2x32x2x4xf32>, tensor<2x32x2x4xf32>) {
  %y0, %n0 = attn.qkv_decode <kv> %x wq(%wq) wk(%wk) wo(%wo) cache(%c0)
      positions(%pos)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x?x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>, tensor<2x32x2x4xf32>, tensor<2xi32>)
      -> (tensor<2x?x16xf32>, tensor<2x32x2x4xf32>)
  %y1, %n1 = attn.qkv_decode <kv> %y0 wq(%wq) wk(%wk) wo(%wo) cache(%c1)
      positions(%pos)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x?x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>, tensor<2x32x2x4xf32>, tensor<2xi32>)
      -> (tensor<2x?x16xf32>, tensor<2x32x2x4xf32>)
  return %y1, %n0, %n1
      : tensor<2x?x16xf32>, tensor<2x32x2x4xf32>, tensor<2x32x2x4xf32>
}
func.func @step(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>,
                %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>,
                %c0: tensor<2x32x2x4xf32>, %c1: tensor<2x32x2x4xf32>,
                %pos: tensor<2xi32>)
    -> (tensor<2x1x16xf32>, tensor<2x32x2x4xf32>, tensor<2x32x2x4xf32>) {
  %y0, %n0 = attn.qkv_decode <kv> %x wq(%wq) wk(%wk) wo(%wo) cache(%c0)
      positions(%pos)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>, tensor<2x32x2x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x16xf32>, tensor<2x32x2x4xf32>)
  %y1, %n1 = attn.qkv_decode <kv> %y0 wq(%wq) wk(%wk) wo(%wo) cache(%c1)
      positions(%pos)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>, tensor<2x32x2x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x16xf32>, tensor<2x32x2x4xf32>)
  return %y1, %n0, %n1
      : tensor<2x1x16xf32>, tensor<2x32x2x4xf32>, tensor<2x32x2x4xf32>
}
func.func private @qkv_decode_layer_0(tensor<2xf32>)

// -----

// Residual adds repeat between the layers: the two adds of one type share
// @addf_0, the add of another element type stays in place; a scalar add
// is not a tensor op.
// CHECK-LABEL: func.func @residuals(
// CHECK:         %[[Y0:.+]] = call @qkv_attention_layer_0(
// CHECK:         %[[H0:.+]] = call @addf_0(%{{.+}}, %[[Y0]]) : (tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
// CHECK:         %[[Y1:.+]] = call @qkv_attention_layer_0(%[[H0]],
// CHECK:         %[[H1:.+]] = call @addf_0(%[[H0]], %[[Y1]])
// CHECK:         arith.addf %{{.+}}, %{{.+}} : tensor<4xf64>
// CHECK:         arith.addf %{{.+}}, %{{.+}} : f32
// CHECK:         return %[[H1]]
// CHECK-LABEL: func.func private @qkv_attention_layer_0(
// CHECK-LABEL: func.func private @addf_0(
// CHECK-SAME:      %[[A:.+]]: tensor<?x?x16xf32>, %[[B:.+]]: tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
// CHECK:         %[[S:.+]] = arith.addf %[[A]], %[[B]] : tensor<?x?x16xf32>
// CHECK:         return %[[S]]
// CHECK-NOT:   func.func
// THREE-LABEL: func.func @residuals(
// THREE-NOT:     call
func.func @residuals(%x: tensor<?x?x16xf32>,
                     %wq0: tensor<16x16xf32>, %wk0: tensor<8x16xf32>,
                     %wo0: tensor<16x16xf32>, %wq1: tensor<16x16xf32>,
                     %wk1: tensor<8x16xf32>, %wo1: tensor<16x16xf32>,
                     %d: tensor<4xf64>, %s: f32)
    -> (tensor<?x?x16xf32>, tensor<4xf64>, f32) {
  %y0 = attn.qkv_attention <kv> %x wq(%wq0) wk(%wk0) wo(%wo0)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, causal}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>) -> tensor<?x?x16xf32>
  %h0 = arith.addf %x, %y0 : tensor<?x?x16xf32>
  %y1 = attn.qkv_attention <kv> %h0 wq(%wq1) wk(%wk1) wo(%wo1)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, causal}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>) -> tensor<?x?x16xf32>
  %h1 = arith.addf %h0, %y1 : tensor<?x?x16xf32>
  %e = arith.addf %d, %d : tensor<4xf64>
  %t = arith.addf %s, %s : f32
  return %h1, %e, %t : tensor<?x?x16xf32>, tensor<4xf64>, f32
}
