// RUN: attnfuse-opt %s --convert-attn-to-linalg | FileCheck %s --implicit-check-not=attn.

// The gradient ops lower to linalg: every loop of a contraction is a plain
// dimension of some operand, so sums over the query heads of a KV head read
// [.., Hk, G, ..] views and the convolution's input gradient reads
// [.., groups, channels per group] views.

// Conv input gradient, loops (b, s, g, k, co, ci): tap k of input step s
// reads output step s + padding - k, stored at s + padding - k + (kernel - 1)
// in the padded dy. Weight gradient, loops (b, t, c, k, cl): the tokens
// outermost, so each step reads rows of dy and of the padded input.
// CHECK-DAG: #[[CDX:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1 - d3 + 3, d2, d4)>
// CHECK-DAG: #[[CDW:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d2, d4, d5, d3)>
// CHECK-DAG: #[[WDY:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>
// CHECK-DAG: #[[WX:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1 + d3, (d2 floordiv 4) * 4 + d4)>
// CHECK-DAG: #[[WDW:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d2, d4, d3)>
// Value shift: the previous half's gradient is the next token's.
// CHECK-DAG: #[[NEXT:.+]] = affine_map<(d0, d1, d2) -> (d0, d1 + 1, d2 + 4)>

// CHECK-LABEL: func.func @project_grad
// CHECK-COUNT-3: linalg.generic
func.func @project_grad(%x: tensor<?x?x16xbf16>, %w: tensor<8x16xbf16>,
                        %dy: tensor<?x?x8xbf16>)
    -> (tensor<?x?x16xbf16>, tensor<8x16xbf16>, tensor<8xbf16>) {
  %dx, %dw, %db = attn.project_grad %x, %w, %dy
      : (tensor<?x?x16xbf16>, tensor<8x16xbf16>, tensor<?x?x8xbf16>)
      -> (tensor<?x?x16xbf16>, tensor<8x16xbf16>, tensor<8xbf16>)
  return %dx, %dw, %db : tensor<?x?x16xbf16>, tensor<8x16xbf16>, tensor<8xbf16>
}

// CHECK-LABEL: func.func @causal_conv1d_grad
// CHECK: tensor.expand_shape {{.*}} into tensor<2x10x3x4xf32>
// CHECK: tensor.expand_shape {{.*}} into tensor<3x4x4x2xf32>
// CHECK: linalg.generic {indexing_maps = [#[[CDX]], #[[CDW]], {{.*}}], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "parallel"]}
// CHECK: linalg.generic {indexing_maps = [#[[WDY]], #[[WX]], #[[WDW]]], iterator_types = ["reduction", "reduction", "parallel", "parallel", "parallel"]}
func.func @causal_conv1d_grad(%u: tensor<2x7x12xf32>, %w: tensor<12x4x2xf32>,
                              %dm: tensor<2x8x12xf32>)
    -> (tensor<2x7x12xf32>, tensor<12x4x2xf32>, tensor<12xf32>) {
  %dx, %dw, %db = attn.causal_conv1d_grad %u, %w, %dm
      {groups = 3 : i64, padding = 2 : i64}
      : (tensor<2x7x12xf32>, tensor<12x4x2xf32>, tensor<2x8x12xf32>)
      -> (tensor<2x7x12xf32>, tensor<12x4x2xf32>, tensor<12xf32>)
  return %dx, %dw, %db : tensor<2x7x12xf32>, tensor<12x4x2xf32>, tensor<12xf32>
}

// CHECK-LABEL: func.func @value_shift_grad
// CHECK: linalg.generic {indexing_maps = [#[[NEXT]],
func.func @value_shift_grad(%dv: tensor<?x?x8xf32>)
    -> (tensor<?x?x4xf32>, tensor<?x?x4xf32>) {
  %dc, %dp = attn.value_shift_grad %dv
      : (tensor<?x?x8xf32>) -> (tensor<?x?x4xf32>, tensor<?x?x4xf32>)
  return %dc, %dp : tensor<?x?x4xf32>, tensor<?x?x4xf32>
}

// The transposed rotation negates the sine.
// CHECK-LABEL: func.func @rope_grad
// CHECK: math.sin
// CHECK: arith.negf
func.func @rope_grad(%g: tensor<?x?x4x8xf32>) -> tensor<?x?x4x8xf32> {
  %0 = attn.rope_grad %g {rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
      : tensor<?x?x4x8xf32>
  return %0 : tensor<?x?x4x8xf32>
}

// CHECK-LABEL: func.func @qk_norm_and_mean_grad
// CHECK: math.sqrt
// CHECK: tensor.expand_shape {{.*}} into tensor<1x5x2x2x8xf32>
func.func @qk_norm_and_mean_grad(%q: tensor<1x5x4x8xf32>,
                                 %k: tensor<1x5x2x8xf32>,
                                 %temp: tensor<2xf32>)
    -> (tensor<1x5x4x8xf32>, tensor<1x5x2x8xf32>, tensor<2xf32>) {
  %gq, %gk, %gt = attn.qk_norm_grad %q, %k, %temp, %q, %k
      {temperature = #attn.temperature<clamped>}
      : tensor<1x5x4x8xf32>, tensor<1x5x2x8xf32>, tensor<2xf32>
  %dqr, %dkr = attn.qk_mean_grad %gq, %gk
      : tensor<1x5x4x8xf32>, tensor<1x5x2x8xf32>
  return %dqr, %dkr, %gt : tensor<1x5x4x8xf32>, tensor<1x5x2x8xf32>, tensor<2xf32>
}

// GQA: dK and dV sum over the two query heads of each KV head.
// CHECK-LABEL: func.func @sdpa_grad
// CHECK-DAG: tensor.expand_shape {{.*}} into tensor<?x2x2x?x?xf32>
// CHECK-DAG: tensor.expand_shape {{.*}} into tensor<?x?x2x2x8xf32>
func.func @sdpa_grad(%q: tensor<?x?x4x8xf32>, %k: tensor<?x?x2x8xf32>,
                     %o: tensor<?x?x4x8xf32>, %do: tensor<?x?x4x8xf32>,
                     %bias: tensor<?x?xf32>)
    -> (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>,
        tensor<?x?xf32>) {
  %dq, %dk, %dv, %db = attn.sdpa_grad %q, %k, %k, %o, %do bias(%bias)
      {causal, window = 3 : i64}
      : (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>,
         tensor<?x?x4x8xf32>, tensor<?x?x4x8xf32>, tensor<?x?xf32>)
      -> (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>,
          tensor<?x?xf32>)
  return %dq, %dk, %dv, %db : tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>,
      tensor<?x?x2x8xf32>, tensor<?x?xf32>
}
