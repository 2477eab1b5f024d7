// RUN: attnfuse-opt %s --convert-attn-to-linalg | FileCheck %s
// RUN: attnfuse-opt %s --convert-attn-to-linalg --canonicalize | FileCheck %s --check-prefix=CANON --implicit-check-not=attn.

// The indexing maps the lowering relies on.
// CHECK-DAG: #[[BIAS:.+]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-DAG: #[[ID3:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[PX:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[PW:.+]] = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
// CHECK-DAG: #[[PO:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// Conv, loops (b, t, g, k, ci, co) over [.., groups, channels per group]
// views: tap k of output step t reads padded step t + k; the weight is read
// as [g, k, ci, co] (transposed once), so the output channels go innermost.
// CHECK-DAG: #[[CX:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1 + d3, d2, d4)>
// CHECK-DAG: #[[CW:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d2, d3, d4, d5)>
// CHECK-DAG: #[[CO:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5)>
// CHECK-DAG: #[[ID4:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[KEYMASK:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d3)>
// CHECK-DAG: #[[TOKEN:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// qk_mean: query head h adds k_raw of KV head h floordiv G (G = 2); the
// group mean reduces over the G axis of q_raw viewed as [B, S, Hk, G, d].
// CHECK-DAG: #[[KVH:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2 floordiv 2, d3)>
// CHECK-DAG: #[[GRP:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4, d3)>
// CHECK-DAG: #[[GRPO:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[HEAD:.+]] = affine_map<(d0, d1, d2, d3) -> (d2)>
// rope: the angle tables [S, r/2] read the frequencies at the pair; the
// rotation reads the tables at (token, pair), the same for every head.
// CHECK-DAG: #[[FMAP:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[ID2:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[TABLE:.+]] = affine_map<(d0, d1, d2, d3) -> (d1, d3)>
// sdpa with G = 2: scores[b, h, i, j] = q[b, i, h] . k[b, j, h floordiv 2]
// over k^T[b, g, e, j] with loops (b, h, i, e, j), keys innermost;
// out[b, i, h] = sum_j p[b, h, i, j] v[b, j, h floordiv 2] with loops
// (b, i, h, j, e), value dims innermost.
// CHECK-DAG: #[[SQ:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d1, d3)>
// CHECK-DAG: #[[SK:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1 floordiv 2, d3, d4)>
// CHECK-DAG: #[[SO:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
// CHECK-DAG: #[[SV:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d2 floordiv 2, d4)>
// CHECK-DAG: #[[ROW:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d1)>
// CHECK-DAG: #[[HB:.+]] = affine_map<(d0, d1, d2, d3) -> (d1, d2, d3)>

// CHECK-LABEL: func.func @project(
// CHECK-SAME: %[[X:.+]]: tensor<?x?x8xf32>, %[[W:.+]]: tensor<4x8xf32>, %[[B:.+]]: tensor<4xf32>
// CHECK-DAG: %[[BATCH:.+]] = tensor.dim %[[X]], %c0
// CHECK-DAG: %[[SEQ:.+]] = tensor.dim %[[X]], %c1
// CHECK: %[[EMPTY:.+]] = tensor.empty(%[[BATCH]], %[[SEQ]]) : tensor<?x?x4xf32>
// The bias, broadcast over batch and sequence, initializes the accumulator.
// CHECK: %[[INIT:.+]] = linalg.generic {indexing_maps = [#[[BIAS]], #[[ID3]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[B]] : tensor<4xf32>) outs(%[[EMPTY]]
// CHECK: %[[Y:.+]] = linalg.generic {indexing_maps = [#[[PX]], #[[PW]], #[[PO]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[X]], %[[W]] : tensor<?x?x8xf32>, tensor<4x8xf32>) outs(%[[INIT]] : tensor<?x?x4xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: return %[[Y]]
func.func @project(%x: tensor<?x?x8xf32>, %w: tensor<4x8xf32>, %b: tensor<4xf32>) -> tensor<?x?x4xf32> {
  %y = attn.project %x, %w, %b : (tensor<?x?x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<?x?x4xf32>
  return %y : tensor<?x?x4xf32>
}

// bf16 is widened in the loop body, accumulated in f32 and truncated once.
// CHECK-LABEL: func.func @project_bf16(
// CHECK: %[[ZERO:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<2x3x4xf32>)
// CHECK: %[[ACC:.+]] = linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<2x3x8xbf16>, tensor<4x8xbf16>) outs(%[[ZERO]] : tensor<2x3x4xf32>)
// CHECK: ^bb0(%[[IN:.+]]: bf16, %[[IN2:.+]]: bf16, %[[OUT:.+]]: f32):
// CHECK: arith.extf %[[IN]] : bf16 to f32
// CHECK: arith.extf %[[IN2]] : bf16 to f32
// CHECK: %[[TRUNC:.+]] = linalg.generic {{.+}} ins(%[[ACC]] : tensor<2x3x4xf32>) outs(%{{.+}} : tensor<2x3x4xbf16>)
// CHECK: arith.truncf %{{.+}} : f32 to bf16
// CHECK: return %[[TRUNC]] : tensor<2x3x4xbf16>
func.func @project_bf16(%x: tensor<2x3x8xbf16>, %w: tensor<4x8xbf16>) -> tensor<2x3x4xbf16> {
  %y = attn.project %x, %w : (tensor<2x3x8xbf16>, tensor<4x8xbf16>) -> tensor<2x3x4xbf16>
  return %y : tensor<2x3x4xbf16>
}

// Left padding by 2 zero steps, then a valid grouped convolution (2 groups of
// 4 channels, 3 taps): the output keeps the input length.
// CHECK-LABEL: func.func @causal_conv1d(
// CHECK-SAME: %[[U:.+]]: tensor<?x?x8xf32>, %[[W:.+]]: tensor<8x4x3xf32>, %[[B:.+]]: tensor<8xf32>
// CHECK: %[[SEQ:.+]] = tensor.dim %[[U]], %c1
// CHECK: %[[PSEQ:.+]] = arith.addi %[[SEQ]], %c2
// CHECK: %[[PEMPTY:.+]] = tensor.empty(%{{.+}}, %[[PSEQ]]) : tensor<?x?x8xf32>
// CHECK: %[[ZEROS:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[PEMPTY]]
// CHECK: %[[PADDED:.+]] = tensor.insert_slice %[[U]] into %[[ZEROS]][0, 2, 0]
// CHECK: %[[OEMPTY:.+]] = tensor.empty(%{{.+}}, %[[SEQ]]) : tensor<?x?x8xf32>
// CHECK: %[[INIT:.+]] = linalg.generic {{.+}} ins(%[[B]] : tensor<8xf32>) outs(%[[OEMPTY]]
// CHECK: %[[WG:.+]] = tensor.expand_shape %[[W]] {{\[}}[0, 1], [2], [3]] output_shape [2, 4, 4, 3] : tensor<8x4x3xf32> into tensor<2x4x4x3xf32>
// CHECK: %[[WT:.+]] = linalg.transpose ins(%[[WG]] : tensor<2x4x4x3xf32>) outs(%{{.+}} : tensor<2x3x4x4xf32>) permutation = [0, 3, 2, 1]
// CHECK: %[[XG:.+]] = tensor.expand_shape %[[PADDED]] {{\[}}[0], [1], [2, 3]]
// CHECK: %[[IG:.+]] = tensor.expand_shape %[[INIT]] {{\[}}[0], [1], [2, 3]]
// CHECK: %[[OG:.+]] = linalg.generic {indexing_maps = [#[[CX]], #[[CW]], #[[CO]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "parallel"]} ins(%[[XG]], %[[WT]] : tensor<?x?x2x4xf32>, tensor<2x3x4x4xf32>) outs(%[[IG]]
// CHECK: tensor.collapse_shape %[[OG]] {{\[}}[0], [1], [2, 3]] : tensor<?x?x2x4xf32> into tensor<?x?x8xf32>
func.func @causal_conv1d(%u: tensor<?x?x8xf32>, %w: tensor<8x4x3xf32>, %b: tensor<8xf32>) -> tensor<?x?x8xf32> {
  %y = attn.causal_conv1d %u, %w, %b {groups = 2 : i64, padding = 2 : i64} : (tensor<?x?x8xf32>, tensor<8x4x3xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// Depthwise, padded for a following k = 2 convolution: S + 1 output steps.
// CHECK-LABEL: func.func @causal_conv1d_depthwise(
// CHECK: %[[SEQ:.+]] = tensor.dim %{{.+}}, %c1
// CHECK: arith.addi %[[SEQ]], %c2
// CHECK: %[[OSEQ:.+]] = arith.addi %[[SEQ]], %c1
// CHECK: tensor.empty(%{{.+}}, %[[OSEQ]]) : tensor<?x?x6xf32>
// CHECK: linalg.generic {indexing_maps = [#{{.+}}, #[[CW]], #[[CO]]]
// CHECK: return %{{.+}} : tensor<?x?x6xf32>
func.func @causal_conv1d_depthwise(%u: tensor<?x?x6xf32>, %w: tensor<6x1x2xf32>) -> tensor<?x?x6xf32> {
  %y = attn.causal_conv1d %u, %w {groups = 6 : i64, padding = 2 : i64} : (tensor<?x?x6xf32>, tensor<6x1x2xf32>) -> tensor<?x?x6xf32>
  return %y : tensor<?x?x6xf32>
}

// CHECK-LABEL: func.func @qk_mean(
// CHECK-SAME: %[[QC:[^:]+]]: tensor<?x?x4x8xf32>, %[[KC:[^:]+]]: tensor<?x?x2x8xf32>, %[[QR:[^:]+]]: tensor<?x?x4x8xf32>, %[[KR:[^:]+]]: tensor<?x?x2x8xf32>
// CHECK: %[[HALF:.+]] = arith.constant 5.000000e-01 : f32
// q = q_conv + 0.5 q_raw + 0.5 k_raw[h / G]
// CHECK: %[[Q:.+]] = linalg.generic {indexing_maps = [#[[ID4]], #[[ID4]], #[[KVH]], #[[ID4]]], {{.+}} ins(%[[QC]], %[[QR]], %[[KR]] :
// CHECK: %[[GROUPED:.+]] = tensor.expand_shape %[[QR]] {{\[}}[0], [1], [2, 3], [4]] output_shape [%{{.+}}, %{{.+}}, 2, 2, 8] : tensor<?x?x4x8xf32> into tensor<?x?x2x2x8xf32>
// CHECK: %[[GSUM:.+]] = linalg.generic {indexing_maps = [#[[GRP]], #[[GRPO]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[GROUPED]]
// k = k_conv + 0.5 * (sum / G) + 0.5 k_raw
// CHECK: %[[K:.+]] = linalg.generic {{.+}} ins(%[[KC]], %[[GSUM]], %[[KR]] :
// CHECK: arith.mulf %{{.+}}, %{{.+}} : f32
// CHECK: return %[[Q]], %[[K]]
func.func @qk_mean(%qc: tensor<?x?x4x8xf32>, %kc: tensor<?x?x2x8xf32>, %qr: tensor<?x?x4x8xf32>, %kr: tensor<?x?x2x8xf32>) -> (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>) {
  %q, %k = attn.qk_mean %qc, %kc, %qr, %kr : tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>
  return %q, %k : tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>
}

// Sum of squares per head, then x * sqrt(d) / sqrt(ss + eps); keys times
// exp(clamp(temp, 1e-7, 2)).
// CHECK-LABEL: func.func @qk_norm(
// CHECK: %[[QSS:.+]] = linalg.generic {indexing_maps = [#[[ID4]], #[[PO]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK: %[[SQRTD:.+]] = arith.constant 2.82842708 : f32
// CHECK: linalg.generic {{.+}} ins(%{{.+}}, %[[QSS]] :
// CHECK: math.sqrt
// CHECK: arith.divf
// CHECK: %[[KSS:.+]] = linalg.generic {indexing_maps = [#[[ID4]], #[[PO]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK: linalg.generic {indexing_maps = [#[[ID4]], #[[PO]], #[[HEAD]], #[[ID4]]], {{.+}} ins(%{{.+}}, %[[KSS]], %{{.+}} : tensor<?x?x2x8xf32>, tensor<?x?x2xf32>, tensor<2xf32>)
// CHECK: math.sqrt
// CHECK: %[[LO:.+]] = arith.maximumf %{{.+}}, %cst
// CHECK: %[[HI:.+]] = arith.minimumf %[[LO]], %cst
// CHECK: math.exp %[[HI]]
func.func @qk_norm(%q: tensor<?x?x4x8xf32>, %k: tensor<?x?x2x8xf32>, %t: tensor<2xf32>) -> (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>) {
  %qn, %kn = attn.qk_norm %q, %k, %t {temperature = #attn.temperature<clamped>} : tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<2xf32>
  return %qn, %kn : tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>
}

// Raw temperature: no clamp, no exp.
// CHECK-LABEL: func.func @qk_norm_raw(
// CHECK-NOT: math.exp
// CHECK: return
func.func @qk_norm_raw(%q: tensor<1x3x2x4xf32>, %k: tensor<1x3x2x4xf32>, %t: tensor<2xf32>) -> (tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>) {
  %qn, %kn = attn.qk_norm %q, %k, %t : tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>, tensor<2xf32>
  return %qn, %kn : tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>
}

// norm = clamp_eps: x * sqrt(d) / max(|x|, eps), as the square root of the
// sum of squares clamped at eps^2 (2^-14 for eps 2^-7), for the query and
// the key heads.
// CHECK-LABEL: func.func @qk_norm_clamp_eps(
// CHECK: %[[QEPS2:.+]] = arith.constant 6.10351563E-5 : f32
// CHECK: %[[QFLOOR:.+]] = arith.maximumf %{{.+}}, %[[QEPS2]] : f32
// CHECK-NEXT: math.sqrt %[[QFLOOR]] : f32
// CHECK: %[[KEPS2:.+]] = arith.constant 6.10351563E-5 : f32
// CHECK: %[[KFLOOR:.+]] = arith.maximumf %{{.+}}, %[[KEPS2]] : f32
// CHECK-NEXT: math.sqrt %[[KFLOOR]] : f32
// CHECK: return
func.func @qk_norm_clamp_eps(%q: tensor<1x3x2x4xf32>, %k: tensor<1x3x2x4xf32>, %t: tensor<2xf32>) -> (tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>) {
  %qn, %kn = attn.qk_norm %q, %k, %t {norm = #attn.norm<clamp_eps>, eps = 0.0078125 : f64} : tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>, tensor<2xf32>
  return %qn, %kn : tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>
}

// result[:, :, 0:6] = current; result[:, 1:, 6:12] = previous[:, :S-1]; zeros
// elsewhere.
// CHECK-LABEL: func.func @value_shift(
// CHECK-SAME: %[[CUR:.+]]: tensor<?x?x6xf32>, %[[PREV:.+]]: tensor<?x?x6xf32>
// CHECK: %[[SEQ:.+]] = tensor.dim %[[CUR]], %c1
// CHECK: %[[ZEROS:.+]] = linalg.fill
// CHECK: %[[WITHCUR:.+]] = tensor.insert_slice %[[CUR]] into %[[ZEROS]][0, 0, 0]
// CHECK: %[[SM1:.+]] = arith.subi %[[SEQ]], %c1
// CHECK: %[[LEN:.+]] = arith.maxsi %[[SM1]], %c0
// CHECK: %[[HEAD:.+]] = tensor.extract_slice %[[PREV]][0, 0, 0] [%{{.+}}, %[[LEN]], 6] [1, 1, 1]
// CHECK: %[[OUT:.+]] = tensor.insert_slice %[[HEAD]] into %[[WITHCUR]][0, 1, 6] [%{{.+}}, %[[LEN]], 6] [1, 1, 1]
// CHECK: return %[[OUT]] : tensor<?x?x12xf32>
func.func @value_shift(%c: tensor<?x?x6xf32>, %p: tensor<?x?x6xf32>) -> tensor<?x?x12xf32> {
  %y = attn.value_shift %c, %p : (tensor<?x?x6xf32>, tensor<?x?x6xf32>) -> tensor<?x?x12xf32>
  return %y : tensor<?x?x12xf32>
}

// NeoX rotate-half on the first r = 4 of 8 dims: pairs (i, i + 2), inverse
// frequencies 10000^(-2i/4) = [1, 0.01] in f64, position = index along S.
// cos and sin are computed once per (position, pair) into [S, 2] tables,
// which the rotation of every head reads.
// CHECK-LABEL: func.func @rope(
// CHECK-SAME: %[[X:.+]]: tensor<?x?x2x8xf32>
// CHECK: %[[FREQ:.+]] = arith.constant dense<[1.000000e+00, 1.000000e-02]> : tensor<2xf64>
// CHECK: %[[X1:.+]] = tensor.extract_slice %[[X]][0, 0, 0, 0] [%{{.+}}, %{{.+}}, 2, 2]
// CHECK: %[[X2:.+]] = tensor.extract_slice %[[X]][0, 0, 0, 2] [%{{.+}}, %{{.+}}, 2, 2]
// CHECK: %[[TABLES:.+]]:2 = linalg.generic {indexing_maps = [#[[FMAP]], #[[ID2]], #[[ID2]]], {{.+}} ins(%[[FREQ]] : tensor<2xf64>) outs(%{{.+}}, %{{.+}} : tensor<?x2xf32>, tensor<?x2xf32>)
// CHECK: %[[POS:.+]] = linalg.index 0 : index
// CHECK: %[[ANGLE:.+]] = arith.mulf %{{.+}}, %{{.+}} : f64
// CHECK: math.cos %[[ANGLE]] : f64
// CHECK: math.sin %[[ANGLE]] : f64
// CHECK: %[[ROT:.+]]:2 = linalg.generic {indexing_maps = [#[[ID4]], #[[ID4]], #[[TABLE]], #[[TABLE]], #[[ID4]], #[[ID4]]], {{.+}} ins(%[[X1]], %[[X2]], %[[TABLES]]#0, %[[TABLES]]#1 :
// CHECK-NOT: math.cos
// CHECK: arith.subf
// CHECK: arith.addf
// CHECK: %[[R1:.+]] = tensor.insert_slice %[[ROT]]#0 into %{{.+}}[0, 0, 0, 0]
// CHECK: %[[R2:.+]] = tensor.insert_slice %[[ROT]]#1 into %[[R1]][0, 0, 0, 2]
// CHECK: %[[PASS:.+]] = tensor.extract_slice %[[X]][0, 0, 0, 4] [%{{.+}}, %{{.+}}, 2, 4]
// CHECK: %[[R3:.+]] = tensor.insert_slice %[[PASS]] into %[[R2]][0, 0, 0, 4]
// CHECK: return %[[R3]]
func.func @rope(%x: tensor<?x?x2x8xf32>) -> tensor<?x?x2x8xf32> {
  %y = attn.rope %x {rope = #attn.rope<theta = 10000.0, fraction = 0.5>} : tensor<?x?x2x8xf32>
  return %y : tensor<?x?x2x8xf32>
}

// CHECK-LABEL: func.func @sdpa(
// CHECK-SAME: %[[Q:[^:]+]]: tensor<?x?x4x8xf32>, %[[K:[^:]+]]: tensor<?x?x2x8xf32>, %[[V:[^:]+]]: tensor<?x?x2x8xf32>, %[[B:[^:]+]]: tensor<?x?xf32>
// CHECK-DAG: %[[S:.+]] = tensor.dim %[[Q]], %c1
// CHECK-DAG: %[[T:.+]] = tensor.dim %[[K]], %c1
// 1. Scores in f32 over the GQA head mapping.
// CHECK: %[[KEYT:.+]] = linalg.transpose ins(%[[K]] : tensor<?x?x2x8xf32>) outs(%{{.+}} : tensor<?x2x8x?xf32>) permutation = [0, 2, 3, 1]
// CHECK: %[[SCORES:.+]] = linalg.generic {indexing_maps = [#[[SQ]], #[[SK]], #[[SO]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]} ins(%[[Q]], %[[KEYT]] :
// 2. Scale, bias, causal and window masks; query i sits at i + (T - S).
// CHECK: %[[OFFSET:.+]] = arith.subi %[[T]], %[[S]] : index
// CHECK-DAG: %[[SCALE:.+]] = arith.constant 0.353553385 : f32
// CHECK-DAG: %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[W:.+]] = arith.constant 3 : index
// CHECK: %[[LOGITS:.+]] = linalg.generic {indexing_maps = [#[[ID4]], #[[PW]], #[[ID4]]], {{.+}} ins(%[[SCORES]], %[[B]] :
// CHECK: arith.mulf %{{.+}}, %[[SCALE]]
// CHECK: arith.addf
// CHECK: %[[I:.+]] = linalg.index 2
// CHECK: %[[J:.+]] = linalg.index 3
// CHECK: %[[POS:.+]] = arith.addi %[[I]], %[[OFFSET]]
// CHECK: %[[CAUSAL:.+]] = arith.cmpi sle, %[[J]], %[[POS]]
// CHECK: %[[DIST:.+]] = arith.subi %[[POS]], %[[J]]
// CHECK: %[[INWIN:.+]] = arith.cmpi slt, %[[DIST]], %[[W]]
// CHECK: %[[KEEP:.+]] = arith.andi %[[CAUSAL]], %[[INWIN]]
// CHECK: arith.select %[[KEEP]], %{{.+}}, %[[NEGINF]]
// 3. Row max from -inf.
// CHECK: %[[MAXINIT:.+]] = linalg.fill ins(%{{.+}} : f32)
// CHECK: %[[MAX:.+]] = linalg.generic {indexing_maps = [#[[ID4]], #[[PO]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[LOGITS]] : {{.+}}) outs(%[[MAXINIT]]
// CHECK: arith.maximumf
// 4. exp(l - max), zero where the whole row is masked.
// CHECK: %[[P:.+]] = linalg.generic {{.+}} ins(%[[LOGITS]], %[[MAX]] :
// CHECK: %[[SHIFTED:.+]] = arith.subf
// CHECK: %[[E:.+]] = math.exp %[[SHIFTED]]
// CHECK: %[[DEAD:.+]] = arith.cmpf oeq, %{{.+}}, %[[NEGINF]]
// CHECK: arith.select %[[DEAD]], %{{.+}}, %[[E]]
// 5. Row sums; 6. p . v with the GQA mapping; 7. normalize, 0 for empty rows.
// CHECK: %[[SUM:.+]] = linalg.generic {indexing_maps = [#[[ID4]], #[[PO]]], {{.+}} ins(%[[P]] :
// CHECK: %[[ACC:.+]] = linalg.generic {indexing_maps = [#[[SQ]], #[[SV]], #[[SO]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]} ins(%[[P]], %[[V]] :
// CHECK: %[[OUT:.+]] = linalg.generic {indexing_maps = [#[[ID4]], #[[ROW]], #[[ID4]]], {{.+}} ins(%[[ACC]], %[[SUM]] :
// CHECK: arith.cmpf oeq
// CHECK: arith.divf
// CHECK: arith.select
// CHECK: return %[[OUT]] : tensor<?x?x4x8xf32>
func.func @sdpa(%q: tensor<?x?x4x8xf32>, %k: tensor<?x?x2x8xf32>, %v: tensor<?x?x2x8xf32>, %b: tensor<?x?xf32>) -> tensor<?x?x4x8xf32> {
  %o = attn.sdpa %q, %k, %v bias(%b) {causal, window = 3 : i64} : (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?xf32>) -> tensor<?x?x4x8xf32>
  return %o : tensor<?x?x4x8xf32>
}

// No mask: no index arithmetic; an explicit scale; a per-head bias; bf16.
// CHECK-LABEL: func.func @sdpa_unmasked_bf16(
// CHECK: arith.constant 2.500000e-01 : f32
// CHECK: linalg.generic {indexing_maps = [#[[ID4]], #[[HB]], #[[ID4]]], {{.+}} ins(%{{.+}}, %{{.+}} : tensor<2x4x3x3xf32>, tensor<4x3x3xbf16>)
// CHECK-NOT: linalg.index
// CHECK: arith.extf %{{.+}} : bf16 to f32
// CHECK-NOT: linalg.index
// CHECK: arith.truncf %{{.+}} : f32 to bf16
// CHECK: return %{{.+}} : tensor<2x3x4x8xbf16>
func.func @sdpa_unmasked_bf16(%q: tensor<2x3x4x8xbf16>, %k: tensor<2x3x4x8xbf16>, %v: tensor<2x3x4x8xbf16>, %b: tensor<4x3x3xbf16>) -> tensor<2x3x4x8xbf16> {
  %o = attn.sdpa %q, %k, %v bias(%b) {scale = 0.25 : f64} : (tensor<2x3x4x8xbf16>, tensor<2x3x4x8xbf16>, tensor<2x3x4x8xbf16>, tensor<4x3x3xbf16>) -> tensor<2x3x4x8xbf16>
  return %o : tensor<2x3x4x8xbf16>
}

// KV cache writes: a loop over the sequences and their real new tokens,
// each row written at its position through the block table, with run-time
// range checks of the position and of the page.
// CHECK-LABEL: func.func @cache_update_paged(
// CHECK: %[[CAP:.+]] = arith.muli %c4{{.*}}, %c4{{.*}} : index
// CHECK: scf.for %[[B:.+]] = %c0 to %c2 step %c1 iter_args(%[[OUTER:.+]] = %arg0) -> (tensor<9x4x2x4xf32>)
// CHECK:   %[[START:.+]] = tensor.extract %arg2[%[[B]]] : tensor<2xi32>
// CHECK:   %[[LEN:.+]] = tensor.extract %arg3[%[[B]]] : tensor<2xi32>
// CHECK:   %[[LENI:.+]] = arith.index_cast %[[LEN]] : i32 to index
// CHECK:   %[[NONNEG:.+]] = arith.maxsi %[[LENI]], %c0
// CHECK:   %[[COUNT:.+]] = arith.minsi %[[NONNEG]], %{{.+}} : index
// CHECK:   scf.for %[[T:.+]] = %c0 to %[[COUNT]] step %c1 iter_args(%[[INNER:.+]] = %[[OUTER]])
// CHECK:     cf.assert %{{.+}}, "KV cache update: a token's position is outside the sequence's cache capacity"
// CHECK:     %[[PAGE:.+]] = tensor.extract %arg4[%[[B]], %{{.+}}] : tensor<2x4xi32>
// CHECK:     cf.assert %{{.+}}, "KV cache update: a block table entry is not a page of the cache"
// CHECK:     %[[ROW:.+]] = tensor.extract_slice %arg1[%[[B]], %[[T]], 0, 0] [1, 1, 2, 4]
// CHECK:     tensor.insert_slice %[[ROW]] into %[[INNER]][%{{.+}}, %{{.+}}, 0, 0] [1, 1, 2, 4]
func.func @cache_update_paged(%cache: tensor<9x4x2x4xf32>, %k: tensor<2x?x2x4xf32>, %pos: tensor<2xi32>, %len: tensor<2xi32>, %bt: tensor<2x4xi32>) -> tensor<9x4x2x4xf32> {
  %c2 = attn.cache_update %cache, %k positions(%pos) lengths(%len) block_table(%bt) : (tensor<9x4x2x4xf32>, tensor<2x?x2x4xf32>, tensor<2xi32>, tensor<2xi32>, tensor<2x4xi32>) -> tensor<9x4x2x4xf32>
  return %c2 : tensor<9x4x2x4xf32>
}

// The per-sequence view of a paged cache reads row [table[b, j / P], j % P].
// CHECK-LABEL: func.func @cache_gather(
// CHECK: linalg.generic {{.+}} outs(%{{.+}} : tensor<2x16x2x4xf32>)
// CHECK:   %[[J:.+]] = linalg.index 1 : index
// CHECK:   %[[PI:.+]] = arith.divui %[[J]], %c4
// CHECK:   tensor.extract %arg1[%{{.+}}, %[[PI]]] : tensor<2x4xi32>
// CHECK:   arith.remui %[[J]], %c4
// CHECK:   tensor.extract %arg0[
func.func @cache_gather(%cache: tensor<9x4x2x4xf32>, %bt: tensor<2x4xi32>) -> tensor<2x16x2x4xf32> {
  %v = attn.cache_gather %cache block_table(%bt) : (tensor<9x4x2x4xf32>, tensor<2x4xi32>) -> tensor<2x16x2x4xf32>
  return %v : tensor<2x16x2x4xf32>
}

// Row r of the new state is row lengths[b] + r of [state | new].
// CHECK-LABEL: func.func @state_update(
// CHECK: linalg.generic {{.+}} outs(%{{.+}} : tensor<2x2x12xf32>)
// CHECK:   tensor.extract %arg2[
// CHECK:   arith.addi
// CHECK:   arith.cmpi slt
// CHECK:   scf.if
// CHECK:     tensor.extract %arg1[
func.func @state_update(%s: tensor<2x2x12xf32>, %u: tensor<2x?x12xf32>, %len: tensor<2xi32>) -> tensor<2x2x12xf32> {
  %r = attn.state_update %s, %u lengths(%len) : (tensor<2x2x12xf32>, tensor<2x?x12xf32>, tensor<2xi32>) -> tensor<2x2x12xf32>
  return %r : tensor<2x2x12xf32>
}

// Per-sequence positions: RoPE angles and the causal mask use
// positions[b] + t, read through a (d0) indexing map; the angle tables are
// then [B, S, r/2].
// CHECK-LABEL: func.func @rope_sdpa_positions(
// CHECK: linalg.generic {{.+}} ins(%{{.+}}, %arg2 : tensor<4xf64>, tensor<2xi32>) outs(%{{.+}}, %{{.+}} : tensor<2x1x4xf32>, tensor<2x1x4xf32>)
// CHECK:   linalg.index 1
// CHECK:   arith.index_cast %{{.+}} : i32 to index
// CHECK:   arith.addi
// CHECK: linalg.generic {{.+}} ins(%{{.+}}, %arg2 : tensor<2x4x1x16xf32>, tensor<2xi32>)
// CHECK:   linalg.index 2
// CHECK:   arith.index_cast %{{.+}} : i32 to index
// CHECK:   arith.addi
// CHECK:   arith.cmpi sle
func.func @rope_sdpa_positions(%q: tensor<2x1x4x8xf32>, %k: tensor<2x16x2x8xf32>, %pos: tensor<2xi32>) -> tensor<2x1x4x8xf32> {
  %qr = attn.rope %q positions(%pos : tensor<2xi32>) {rope = #attn.rope<theta = 10000.0>} : tensor<2x1x4x8xf32>
  %o = attn.sdpa %qr, %k, %k positions(%pos) {causal} : (tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x8xf32>, tensor<2xi32>) -> tensor<2x1x4x8xf32>
  return %o : tensor<2x1x4x8xf32>
}

// A key mask [B, T] is read at (b, j) by the logits pass: keys whose mask
// is 0 get -inf after the causal mask (a row with no visible key gives 0).
// CHECK-LABEL: func.func @sdpa_key_mask(
// CHECK: linalg.generic {indexing_maps = [#[[ID4]], #[[KEYMASK]], #[[ID4]]], {{.+}} ins(%{{.+}}, %arg2 : tensor<2x4x5x5xf32>, tensor<2x5xi64>)
// CHECK:   ^bb0(%{{.+}}: f32, %[[M:.+]]: i64, %{{.+}}: f32):
// CHECK:   %[[CAUSAL:.+]] = arith.select
// CHECK:   %[[REAL:.+]] = arith.cmpi ne, %[[M]], %{{.+}} : i64
// CHECK:   %[[LOGIT:.+]] = arith.select %[[REAL]], %[[CAUSAL]], %{{.+}} : f32
// CHECK:   linalg.yield %[[LOGIT]]
func.func @sdpa_key_mask(%q: tensor<2x5x4x8xf32>, %k: tensor<2x5x2x8xf32>, %m: tensor<2x5xi64>) -> tensor<2x5x4x8xf32> {
  %o = attn.sdpa %q, %k, %k key_mask(%m) {causal} : (tensor<2x5x4x8xf32>, tensor<2x5x2x8xf32>, tensor<2x5x2x8xf32>, tensor<2x5xi64>) -> tensor<2x5x4x8xf32>
  return %o : tensor<2x5x4x8xf32>
}

// attn.mask_tokens: x where the mask is nonzero, else 0, per token.
// CHECK-LABEL: func.func @mask_tokens(
// CHECK: %[[ZERO:.+]] = arith.constant 0.000000e+00 : bf16
// CHECK: linalg.generic {indexing_maps = [#{{.+}}, #[[TOKEN]], #{{.+}}], {{.+}} ins(%arg0, %arg1 : tensor<?x?x16xbf16>, tensor<?x?xi1>)
// CHECK:   ^bb0(%[[X:.+]]: bf16, %[[M:.+]]: i1, %{{.+}}: bf16):
// CHECK:   %[[REAL:.+]] = arith.cmpi ne, %[[M]], %{{.+}} : i1
// CHECK:   arith.select %[[REAL]], %[[X]], %[[ZERO]] : bf16
func.func @mask_tokens(%x: tensor<?x?x16xbf16>, %m: tensor<?x?xi1>) -> tensor<?x?x16xbf16> {
  %y = attn.mask_tokens %x, %m : tensor<?x?x16xbf16>, tensor<?x?xi1>
  return %y : tensor<?x?x16xbf16>
}

// After canonicalization nothing of the attn dialect is left and the dims
// are shared.
// CANON-LABEL: func.func @project(
// CANON-COUNT-2: tensor.dim
// CANON-NOT: tensor.dim
// CANON: return
