// RUN: attnfuse-opt %s --transform-interpreter --split-input-file --verify-diagnostics | FileCheck %s

// The fused kernel ops implement TilingInterface: upstream transforms tile
// them with any tile sizes. attn.flash_attention over (batch, kv heads,
// query rows): a tile reads the query rows and the G = 2 query heads of its
// kv head, every key of that head, and carries the position of its rows
// among the whole attention's 40 (query_rows).
// CHECK-LABEL: func.func @flash_attention
// CHECK: scf.forall (%[[B:.*]], %[[H:.*]], %[[RB:.*]]) in (2, 2, 3) shared_outs(%[[OUT:.*]] = %arg2)
// CHECK: %[[R:.*]] = affine.apply #{{.*}}(%[[RB]])
// CHECK: %[[ROWS:.*]] = affine.min #{{.*}}(%[[R]])
// CHECK: %[[H0:.*]] = affine.apply #{{.*}}(%[[H]])
// CHECK: %[[Q:.*]] = tensor.extract_slice %arg0[%[[B]], %[[R]], %[[H0]], 0] [1, %[[ROWS]], 2, 8] [1, 1, 1, 1] : tensor<2x40x4x8xf32> to tensor<1x?x2x8xf32>
// CHECK: %[[K:.*]] = tensor.extract_slice %arg1[%[[B]], 0, %[[H]], 0] [1, 40, 1, 8] [1, 1, 1, 1] : tensor<2x40x2x8xf32> to tensor<1x40x1x8xf32>
// CHECK: %[[INIT:.*]] = tensor.extract_slice %[[OUT]][%[[B]], %[[R]], %{{.*}}, 0] [1, %[[ROWS]], 2, 8] [1, 1, 1, 1]
// CHECK: %[[COUNT:.*]] = tensor.dim %arg0, %{{.*}} : tensor<2x40x4x8xf32>
// CHECK: %[[TILE:.*]] = attn.flash_attention %[[Q]], %[[K]] query_rows(%[[R]], %[[COUNT]]) outs(%[[INIT]]) {block_kv = 64 : i64, block_q = 64 : i64, causal}
// CHECK: tensor.parallel_insert_slice %[[TILE]] into %[[OUT]][%[[B]], %[[R]], %{{.*}}, 0] [1, %[[ROWS]], 2, 8]
func.func @flash_attention(%q: tensor<2x40x4x8xf32>, %k: tensor<2x40x2x8xf32>,
                           %init: tensor<2x40x4x8xf32>) -> tensor<2x40x4x8xf32> {
  %o = attn.flash_attention %q, %k outs(%init)
      {causal, block_q = 64 : i64, block_kv = 64 : i64}
      : (tensor<2x40x4x8xf32>, tensor<2x40x2x8xf32>, tensor<2x40x4x8xf32>)
      -> tensor<2x40x4x8xf32>
  return %o : tensor<2x40x4x8xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["attn.flash_attention"]} in %root
        : (!transform.any_op) -> !transform.any_op
    %tiled, %loop = transform.structured.tile_using_forall %op tile_sizes [1, 1, 16]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

// Tiling a tile again: the inner tile's rows start at the sum of the two
// offsets, among the same 40 rows.
// CHECK-LABEL: func.func @flash_attention_twice
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %[[RB:.*]]) in (2, 2, 3)
// CHECK: %[[R:.*]] = affine.apply #{{.*}}(%[[RB]])
// CHECK: %[[COUNT:.*]] = tensor.dim %arg0
// CHECK: scf.forall (%[[RB2:.*]]) in (%{{.*}})
// CHECK: %[[R2:.*]] = affine.apply #{{.*}}(%[[RB2]])
// CHECK: %[[FIRST:.*]] = arith.addi %[[R]], %[[R2]] : index
// CHECK: attn.flash_attention %{{.*}}, %{{.*}} query_rows(%[[FIRST]], %[[COUNT]])
func.func @flash_attention_twice(%q: tensor<2x40x4x8xf32>, %k: tensor<2x40x2x8xf32>,
                                 %init: tensor<2x40x4x8xf32>) -> tensor<2x40x4x8xf32> {
  %o = attn.flash_attention %q, %k outs(%init)
      {causal, block_q = 64 : i64, block_kv = 64 : i64}
      : (tensor<2x40x4x8xf32>, tensor<2x40x2x8xf32>, tensor<2x40x4x8xf32>)
      -> tensor<2x40x4x8xf32>
  return %o : tensor<2x40x4x8xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["attn.flash_attention"]} in %root
        : (!transform.any_op) -> !transform.any_op
    %tiled, %loop = transform.structured.tile_using_forall %op tile_sizes [1, 1, 16]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %inner, %loop2 = transform.structured.tile_using_forall %tiled tile_sizes [0, 0, 8]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

// attn.fused_projection over (batch, tokens, heads, head dim): a tile of
// tokens carries their position (token_offset); a tile of half a head
// (no rope) is a projection with heads of 4 dims by its 4 weight rows.
// CHECK-LABEL: func.func @fused_projection
// CHECK: scf.forall (%[[B:.*]], %[[SB:.*]], %[[H:.*]], %[[IB:.*]]) in (2, 2, 2, 2) shared_outs(%[[OUT:.*]] = %arg2)
// CHECK: %[[S0:.*]] = affine.apply #{{.*}}(%[[SB]])
// CHECK: %[[I:.*]] = affine.apply #{{.*}}(%[[IB]])
// CHECK: %[[ROWS:.*]] = affine.min #{{.*}}(%[[S0]])
// CHECK: %[[N0:.*]] = affine.apply #{{.*}}(%[[H]], %[[I]])
// CHECK: %[[X:.*]] = tensor.extract_slice %arg0[%[[B]], %[[S0]], 0] [1, %[[ROWS]], 16] [1, 1, 1] : tensor<2x24x16xf32> to tensor<1x?x16xf32>
// CHECK: %[[W:.*]] = tensor.extract_slice %arg1[%[[N0]], 0] [4, 16] [1, 1] : tensor<16x16xf32> to tensor<4x16xf32>
// CHECK: %[[INIT:.*]] = tensor.extract_slice %[[OUT]][%[[B]], %[[S0]], %[[H]], %[[I]]] [1, %[[ROWS]], 1, 4] [1, 1, 1, 1]
// CHECK: attn.fused_projection %[[X]], %[[W]] token_offset(%[[S0]]) outs(%[[INIT]]) {block_k = 64 : i64, block_n = 64 : i64, block_s = 64 : i64, head_dim = 4 : i64}
func.func @fused_projection(%x: tensor<2x24x16xf32>, %w: tensor<16x16xf32>,
                            %init: tensor<2x24x2x8xf32>) -> tensor<2x24x2x8xf32> {
  %y = attn.fused_projection %x, %w outs(%init)
      {head_dim = 8 : i64, block_s = 64 : i64, block_n = 64 : i64, block_k = 64 : i64}
      : (tensor<2x24x16xf32>, tensor<16x16xf32>, tensor<2x24x2x8xf32>)
      -> tensor<2x24x2x8xf32>
  return %y : tensor<2x24x2x8xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["attn.fused_projection"]} in %root
        : (!transform.any_op) -> !transform.any_op
    %tiled, %loop = transform.structured.tile_using_forall %op tile_sizes [1, 16, 1, 4]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

// A rotation pair spans its head: a tile of part of a head is refused.
func.func @fused_projection_rope_part_of_head(%x: tensor<2x24x16xf32>, %w: tensor<16x16xf32>,
                                              %init: tensor<2x24x2x8xf32>) -> tensor<2x24x2x8xf32> {
  // expected-error @+4 {{a tile takes whole heads, or a static part of one head without rope}}
  // expected-error @+3 {{to tile operation}}
  // expected-error @+2 {{failed to generate tiling loops}}
  // expected-note @+1 {{when applied to this op}}
  %y = attn.fused_projection %x, %w outs(%init)
      {head_dim = 8 : i64, rope = #attn.rope<theta = 10000.0>,
       block_s = 64 : i64, block_n = 64 : i64, block_k = 64 : i64}
      : (tensor<2x24x16xf32>, tensor<16x16xf32>, tensor<2x24x2x8xf32>)
      -> tensor<2x24x2x8xf32>
  return %y : tensor<2x24x2x8xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["attn.fused_projection"]} in %root
        : (!transform.any_op) -> !transform.any_op
    // expected-error @+1 {{failed to apply}}
    %tiled, %loop = transform.structured.tile_using_forall %op tile_sizes [1, 16, 1, 4]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

// A tile of heads must have a static number of weight rows.
func.func @fused_projection_dynamic_heads(%x: tensor<2x24x16xf32>, %w: tensor<24x16xf32>,
                                          %init: tensor<2x24x3x8xf32>) -> tensor<2x24x3x8xf32> {
  // expected-error @+4 {{a tile needs a static number of features (its weight rows)}}
  // expected-error @+3 {{to tile operation}}
  // expected-error @+2 {{failed to generate tiling loops}}
  // expected-note @+1 {{when applied to this op}}
  %y = attn.fused_projection %x, %w outs(%init)
      {head_dim = 8 : i64, block_s = 64 : i64, block_n = 64 : i64, block_k = 64 : i64}
      : (tensor<2x24x16xf32>, tensor<24x16xf32>, tensor<2x24x3x8xf32>)
      -> tensor<2x24x3x8xf32>
  return %y : tensor<2x24x3x8xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["attn.fused_projection"]} in %root
        : (!transform.any_op) -> !transform.any_op
    // expected-error @+1 {{failed to apply}}
    %tiled, %loop = transform.structured.tile_using_forall %op tile_sizes [1, 16, 2, 0]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}
