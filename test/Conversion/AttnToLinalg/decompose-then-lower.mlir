// RUN: attnfuse-opt %s --attn-decompose --convert-attn-to-linalg --canonicalize --cse | FileCheck %s --implicit-check-not=attn.

// A K=V GQA-2 layer with RoPE, decomposed then lowered: the scores use the
// rotated query and key, the values the UN-rotated shared projection.
// CHECK-LABEL: func.func @kv_gqa_rope(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x?x16xf32>, %[[WQ:[^:]+]]: tensor<16x16xf32>, %[[WK:[^:]+]]: tensor<8x16xf32>, %[[WO:[^:]+]]: tensor<16x16xf32>
// CHECK: %[[KPROJ:.+]] = linalg.generic {{.+}} ins(%[[X]], %[[WK]] :
// CHECK: %[[K:.+]] = tensor.expand_shape %[[KPROJ]] {{.+}} into tensor<?x?x2x4xf32>
// CHECK: %[[QPROJ:.+]] = linalg.generic {{.+}} ins(%[[X]], %[[WQ]] :
// CHECK: %[[Q:.+]] = tensor.expand_shape %[[QPROJ]] {{.+}} into tensor<?x?x4x4xf32>
// CHECK: tensor.extract_slice %[[K]]
// CHECK: math.cos
// CHECK: %[[RK:.+]] = tensor.insert_slice %{{.+}}#1 into {{.+}} : tensor<?x?x2x2xf32> into tensor<?x?x2x4xf32>
// CHECK: tensor.extract_slice %[[Q]]
// CHECK: math.cos
// CHECK: %[[RQ:.+]] = tensor.insert_slice %{{.+}}#1 into {{.+}} : tensor<?x?x4x2xf32> into tensor<?x?x4x4xf32>
// CHECK: %[[RKT:.+]] = linalg.transpose ins(%[[RK]] : tensor<?x?x2x4xf32>)
// CHECK: linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]} ins(%[[RQ]], %[[RKT]] :
// CHECK: %[[P:[^ ]+]] = linalg.generic {{.+}} : tensor<?x4x?x?xf32>, tensor<?x4x?xf32>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.subf
// CHECK-NEXT: math.exp
// CHECK: linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]} ins(%[[P]], %[[K]] :
// CHECK: %[[O:.+]] = tensor.collapse_shape
// CHECK: %[[Y:.+]] = linalg.generic {{.+}} ins(%[[O]], %[[WO]] :
// CHECK: return %[[Y]] : tensor<?x?x16xf32>
func.func @kv_gqa_rope(%x: tensor<?x?x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>) -> tensor<?x?x16xf32> {
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, causal,
       rope = #attn.rope<theta = 10000.0>}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}
