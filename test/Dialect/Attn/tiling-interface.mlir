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

// attn.flash_attention_grad over (batch, kv heads): a tile of 2 KV heads
// reads all the rows of its G * 2 = 4 query heads and of its 2 KV heads,
// and writes the same slices of the three gradients.
// CHECK-LABEL: func.func @flash_attention_grad
// CHECK: scf.forall (%[[B:.*]], %[[HB:.*]]) in (2, 2) shared_outs(%[[DQ:.*]] = %arg4, %[[DK:.*]] = %arg5, %[[DV:.*]] = %arg6)
// CHECK: %[[H:.*]] = affine.apply #{{.*}}(%[[HB]])
// CHECK: %[[H0:.*]] = affine.apply #{{.*}}(%[[H]])
// CHECK: %[[Q:.*]] = tensor.extract_slice %arg0[%[[B]], 0, %[[H0]], 0] [1, 40, 4, 8] [1, 1, 1, 1] : tensor<2x40x8x8xf32> to tensor<1x40x4x8xf32>
// CHECK: %[[K:.*]] = tensor.extract_slice %arg1[%[[B]], 0, %[[H]], 0] [1, 24, 2, 8] [1, 1, 1, 1] : tensor<2x24x4x8xf32> to tensor<1x24x2x8xf32>
// CHECK: %[[V:.*]] = tensor.extract_slice %arg1[%[[B]], 0, %[[H]], 0] [1, 24, 2, 8]
// CHECK: %[[O:.*]] = tensor.extract_slice %arg2[%[[B]], 0, %{{.*}}, 0] [1, 40, 4, 8]
// CHECK: %[[DO:.*]] = tensor.extract_slice %arg3[%[[B]], 0, %{{.*}}, 0] [1, 40, 4, 8]
// CHECK: %[[DQ0:.*]] = tensor.extract_slice %[[DQ]][%[[B]], 0, %{{.*}}, 0] [1, 40, 4, 8]
// CHECK: %[[DK0:.*]] = tensor.extract_slice %[[DK]][%[[B]], 0, %[[H]], 0] [1, 24, 2, 8]
// CHECK: %[[DV0:.*]] = tensor.extract_slice %[[DV]][%[[B]], 0, %[[H]], 0] [1, 24, 2, 8]
// CHECK: %[[M:.*]] = tensor.extract_slice %arg7[%[[B]], 0] [1, 24] [1, 1]
// CHECK: %[[GQ:.*]], %[[GK:.*]], %[[GV:.*]] = attn.flash_attention_grad %[[Q]], %[[K]], %[[V]], %[[O]], %[[DO]] key_mask(%[[M]]) outs(%[[DQ0]], %[[DK0]], %[[DV0]]) {block_kv = 16 : i64, block_q = 16 : i64, causal}
// CHECK: tensor.parallel_insert_slice %[[GQ]] into %[[DQ]][%[[B]], 0, %{{.*}}, 0] [1, 40, 4, 8]
// CHECK: tensor.parallel_insert_slice %[[GK]] into %[[DK]][%[[B]], 0, %[[H]], 0] [1, 24, 2, 8]
// CHECK: tensor.parallel_insert_slice %[[GV]] into %[[DV]][%[[B]], 0, %[[H]], 0] [1, 24, 2, 8]
func.func @flash_attention_grad(
    %q: tensor<2x40x8x8xf32>, %k: tensor<2x24x4x8xf32>,
    %o: tensor<2x40x8x8xf32>, %do: tensor<2x40x8x8xf32>,
    %dq0: tensor<2x40x8x8xf32>, %dk0: tensor<2x24x4x8xf32>,
    %dv0: tensor<2x24x4x8xf32>, %mask: tensor<2x24xi32>)
    -> (tensor<2x40x8x8xf32>, tensor<2x24x4x8xf32>, tensor<2x24x4x8xf32>) {
  %dq, %dk, %dv = attn.flash_attention_grad %q, %k, %k, %o, %do
      key_mask(%mask) outs(%dq0, %dk0, %dv0)
      {causal, block_q = 16 : i64, block_kv = 16 : i64}
      : (tensor<2x40x8x8xf32>, tensor<2x24x4x8xf32>, tensor<2x24x4x8xf32>,
         tensor<2x40x8x8xf32>, tensor<2x40x8x8xf32>, tensor<2x24xi32>,
         tensor<2x40x8x8xf32>, tensor<2x24x4x8xf32>, tensor<2x24x4x8xf32>)
      -> (tensor<2x40x8x8xf32>, tensor<2x24x4x8xf32>, tensor<2x24x4x8xf32>)
  return %dq, %dk, %dv
      : tensor<2x40x8x8xf32>, tensor<2x24x4x8xf32>, tensor<2x24x4x8xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["attn.flash_attention_grad"]} in %root
        : (!transform.any_op) -> !transform.any_op
    %tiled, %loop = transform.structured.tile_using_forall %op tile_sizes [1, 2]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

// With a bias gradient the batch is a reduction: tiled over the KV heads
// only, a tile of 2 KV heads reads the [4, S, T] slice of the per-head bias
// of its query heads and accumulates into the same slice of the gradient.
// CHECK-LABEL: func.func @flash_attention_grad_bias
// CHECK: scf.forall (%[[HB:.*]]) in (2) shared_outs(%{{.*}} = %arg4, %{{.*}} = %arg5, %[[DB:.*]] = %arg6)
// CHECK: %[[B:.*]] = tensor.extract_slice %arg3[%{{.*}}, 0, 0] [4, 40, 24] [1, 1, 1] : tensor<8x40x24xf32> to tensor<4x40x24xf32>
// CHECK: %[[DB0:.*]] = tensor.extract_slice %[[DB]][%{{.*}}, 0, 0] [4, 40, 24] [1, 1, 1] : tensor<8x40x24xf32> to tensor<4x40x24xf32>
// CHECK: %{{.*}}, %{{.*}}, %[[G:.*]] = attn.flash_attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} bias(%[[B]]) outs(%{{.*}}, %{{.*}}) accumulate(%[[DB0]])
// CHECK: tensor.parallel_insert_slice %[[G]] into %[[DB]][%{{.*}}, 0, 0] [4, 40, 24]
func.func @flash_attention_grad_bias(
    %q: tensor<2x40x8x8xf32>, %k: tensor<2x24x4x8xf32>,
    %o: tensor<2x40x8x8xf32>, %bias: tensor<8x40x24xf32>,
    %dq0: tensor<2x40x8x8xf32>, %dk0: tensor<2x24x4x8xf32>,
    %db0: tensor<8x40x24xf32>)
    -> (tensor<2x40x8x8xf32>, tensor<2x24x4x8xf32>, tensor<8x40x24xf32>) {
  %dq, %dk, %db = attn.flash_attention_grad %q, %k, %o, %o bias(%bias)
      outs(%dq0, %dk0) accumulate(%db0) {block_q = 16 : i64, block_kv = 16 : i64}
      : (tensor<2x40x8x8xf32>, tensor<2x24x4x8xf32>, tensor<2x40x8x8xf32>,
         tensor<2x40x8x8xf32>, tensor<8x40x24xf32>, tensor<2x40x8x8xf32>,
         tensor<2x24x4x8xf32>, tensor<8x40x24xf32>)
      -> (tensor<2x40x8x8xf32>, tensor<2x24x4x8xf32>, tensor<8x40x24xf32>)
  return %dq, %dk, %db
      : tensor<2x40x8x8xf32>, tensor<2x24x4x8xf32>, tensor<8x40x24xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["attn.flash_attention_grad"]} in %root
        : (!transform.any_op) -> !transform.any_op
    %tiled, %loop = transform.structured.tile_using_forall %op tile_sizes [0, 2]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

// attn.fused_weight_grad over (out, in) features: a tile reads every token
// of the cotangent's columns of its output features and of the input's
// columns of its input features.
// CHECK-LABEL: func.func @fused_weight_grad
// CHECK: scf.forall (%[[O:.*]], %[[IB:.*]]) in (2, 2) shared_outs(%[[DW:.*]] = %arg2)
// CHECK: %[[I:.*]] = affine.apply #{{.*}}(%[[IB]])
// CHECK: %[[X:.*]] = tensor.extract_slice %arg0[0, %[[I]]] [%{{.*}}, 10] [1, 1] : tensor<?x20xf32> to tensor<?x10xf32>
// CHECK: %[[DY:.*]] = tensor.extract_slice %arg1[0, %[[O]]] [%{{.*}}, 1] [1, 1] : tensor<?x2xf32> to tensor<?x1xf32>
// CHECK: %[[INIT:.*]] = tensor.extract_slice %[[DW]][%[[O]], %[[I]]] [1, 10] [1, 1]
// CHECK: %[[TILE:.*]] = attn.fused_weight_grad %[[X]], %[[DY]] outs(%[[INIT]]) {block_k = 4 : i64, block_m = 8 : i64, block_n = 8 : i64} : (tensor<?x10xf32>, tensor<?x1xf32>, tensor<1x10xf32>) -> tensor<1x10xf32>
// CHECK: tensor.parallel_insert_slice %[[TILE]] into %[[DW]][%[[O]], %[[I]]] [1, 10] [1, 1]
func.func @fused_weight_grad(%x: tensor<?x20xf32>, %dy: tensor<?x2xf32>,
                             %init: tensor<2x20xf32>) -> tensor<2x20xf32> {
  %dw = attn.fused_weight_grad %x, %dy outs(%init)
      {block_m = 8 : i64, block_n = 8 : i64, block_k = 4 : i64}
      : (tensor<?x20xf32>, tensor<?x2xf32>, tensor<2x20xf32>)
      -> tensor<2x20xf32>
  return %dw : tensor<2x20xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["attn.fused_weight_grad"]} in %root
        : (!transform.any_op) -> !transform.any_op
    %tiled, %loop = transform.structured.tile_using_forall %op tile_sizes [1, 10]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

// A partial tile (20 input features in tiles of 8) would have a dynamic
// number of features.
func.func @fused_weight_grad_partial_tile(%x: tensor<?x20xf32>,
                                          %dy: tensor<?x2xf32>,
                                          %init: tensor<2x20xf32>)
    -> tensor<2x20xf32> {
  // expected-error @+4 {{a tile needs static numbers of output and input features (tile sizes that divide 'tensor<2x20xf32>')}}
  // expected-error @+3 {{to tile operation}}
  // expected-error @+2 {{failed to generate tiling loops}}
  // expected-note @+1 {{when applied to this op}}
  %dw = attn.fused_weight_grad %x, %dy outs(%init)
      {block_m = 8 : i64, block_n = 8 : i64, block_k = 4 : i64}
      : (tensor<?x20xf32>, tensor<?x2xf32>, tensor<2x20xf32>)
      -> tensor<2x20xf32>
  return %dw : tensor<2x20xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["attn.fused_weight_grad"]} in %root
        : (!transform.any_op) -> !transform.any_op
    // expected-error @+1 {{failed to apply}}
    %tiled, %loop = transform.structured.tile_using_forall %op tile_sizes [1, 8]
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

// With transposed_weight a tile's weight is W^T's columns of its features.
// CHECK-LABEL: func.func @fused_projection_transposed_weight
// CHECK: %[[N0:.*]] = affine.apply #{{.*}}(%{{.*}}, %{{.*}})
// CHECK: %[[W:.*]] = tensor.extract_slice %arg1[0, %[[N0]]] [16, 4] [1, 1] : tensor<16x16xf32> to tensor<16x4xf32>
// CHECK: attn.fused_projection %{{.*}}, %[[W]] token_offset(%{{.*}}) outs(%{{.*}}) {{.*}}head_dim = 4 : i64, transposed_weight}
func.func @fused_projection_transposed_weight(%x: tensor<2x24x16xf32>, %w: tensor<16x16xf32>,
                            %init: tensor<2x24x2x8xf32>) -> tensor<2x24x2x8xf32> {
  %y = attn.fused_projection %x, %w outs(%init)
      {head_dim = 8 : i64, block_s = 64 : i64, block_n = 64 : i64, block_k = 64 : i64,
       transposed_weight}
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

// -----

// attn.cca_prologue over (batch, tokens): a tile of tokens [s0, s0 + 16)
// reads input rows from max(0, s0 - 2) (the halo of P = 2 convolution rows
// before its tokens, none before the sequence start) and carries its tokens'
// position (token_offset) for the rotation. Tiling a tile again counts from
// the tile's history.
// CHECK-DAG: #[[HALO:.*]] = affine_map<(d0) -> (d0 - 2, 0)>
// CHECK-DAG: #[[ROWS:.*]] = affine_map<(d0, d1, d2) -> (d0 + d1 - d2)>
// CHECK-LABEL: func.func @cca_prologue
// CHECK: scf.forall (%[[B:[a-z0-9_]+]], %[[SB:[a-z0-9_]+]]) in (2, 3) shared_outs(%[[Q:[a-z0-9_]+]] = %arg11, %[[K:[a-z0-9_]+]] = %arg12, %[[V:[a-z0-9_]+]] = %arg13)
// CHECK: %[[S0:.*]] = affine.apply #{{.*}}(%[[SB]])
// CHECK: %[[N:.*]] = affine.min #{{.*}}(%[[S0]])
// CHECK: %[[FIRST:.*]] = affine.max #[[HALO]](%[[S0]])
// CHECK: %[[COUNT:.*]] = affine.apply #[[ROWS]](%[[S0]], %[[N]], %[[FIRST]])
// CHECK: %[[X:.*]] = tensor.extract_slice %arg0[%[[B]], %[[FIRST]], 0] [1, %[[COUNT]], 16] [1, 1, 1] : tensor<2x40x16xf32> to tensor<1x?x16xf32>
// CHECK: %[[M:.*]] = tensor.extract_slice %arg10[%[[B]], %[[FIRST]]] [1, %[[COUNT]]] [1, 1] : tensor<2x40xi32> to tensor<1x?xi32>
// CHECK: tensor.extract_slice %[[Q]][%[[B]], %[[S0]], 0, 0] [1, %[[N]], 4, 4]
// CHECK: scf.forall (%[[IB:[a-z0-9_]+]]) in (%{{.*}})
// CHECK: %[[I0:.*]] = affine.apply #{{.*}}(%[[IB]])
// CHECK: %[[INNER_FIRST:.*]] = affine.max
// CHECK: tensor.extract_slice %[[X]][0, %[[INNER_FIRST]], 0]
// CHECK: %[[T:.*]] = arith.addi %[[S0]], %[[I0]] : index
// CHECK: attn.cca_prologue %{{.*}} wq(%arg1) wk(%arg2) wv(%arg3) wv_prev(%arg4) conv_dw(%arg5, %arg6) conv_g(%arg7, %arg8) temp(%arg9) padding_mask(%{{.*}}) token_offset(%[[T]]) outs(%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}})
// CHECK-SAME: -> (tensor<1x?x4x4xf32>, tensor<1x?x2x4xf32>, tensor<1x?x2x4xf32>)
// CHECK: tensor.parallel_insert_slice %{{.*}} into %[[Q]][%[[B]], %[[S0]], 0, 0] [1, %[[N]], 4, 4]
// CHECK: tensor.parallel_insert_slice %{{.*}} into %[[K]][%[[B]], %[[S0]], 0, 0] [1, %[[N]], 2, 4]
// CHECK: tensor.parallel_insert_slice %{{.*}} into %[[V]][%[[B]], %[[S0]], 0, 0] [1, %[[N]], 2, 4]
func.func @cca_prologue(%x: tensor<2x40x16xf32>, %wq: tensor<16x16xf32>,
                        %wk: tensor<8x16xf32>, %wv: tensor<4x16xf32>,
                        %wvp: tensor<4x16xf32>, %dw: tensor<24x1x2xf32>,
                        %dwb: tensor<24xf32>, %gw: tensor<24x4x2xf32>,
                        %gwb: tensor<24xf32>, %temp: tensor<2xf32>,
                        %m: tensor<2x40xi32>, %qi: tensor<2x40x4x4xf32>,
                        %ki: tensor<2x40x2x4xf32>, %vi: tensor<2x40x2x4xf32>)
    -> (tensor<2x40x4x4xf32>, tensor<2x40x2x4xf32>, tensor<2x40x2x4xf32>) {
  %q, %k, %v = attn.cca_prologue %x wq(%wq) wk(%wk) wv(%wv) wv_prev(%wvp)
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) padding_mask(%m)
      outs(%qi, %ki, %vi)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift,
       rope = #attn.rope<theta = 10000.0>, block_s = 64 : i64}
      : (tensor<2x40x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<4x16xf32>, tensor<4x16xf32>, tensor<24x1x2xf32>,
         tensor<24xf32>, tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>,
         tensor<2x40xi32>, tensor<2x40x4x4xf32>, tensor<2x40x2x4xf32>,
         tensor<2x40x2x4xf32>)
      -> (tensor<2x40x4x4xf32>, tensor<2x40x2x4xf32>, tensor<2x40x2x4xf32>)
  return %q, %k, %v
      : tensor<2x40x4x4xf32>, tensor<2x40x2x4xf32>, tensor<2x40x2x4xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["attn.cca_prologue"]} in %root
        : (!transform.any_op) -> !transform.any_op
    %tiled, %loop = transform.structured.tile_using_forall %op tile_sizes [1, 16]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %inner, %loop2 = transform.structured.tile_using_forall %tiled tile_sizes [0, 8]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

// attn.flash_decode over (batch, kv heads): a tile writes the new key and
// value rows of its sequence and KV head into its slice of the caches (the
// inits) and attends its G = 2 query heads to that slice.
// CHECK-LABEL: func.func @flash_decode
// CHECK: scf.forall (%[[B:[a-z0-9_]+]], %[[H:[a-z0-9_]+]]) in (3, 2) shared_outs(%[[O:[a-z0-9_]+]] = %arg3, %[[KC:[a-z0-9_]+]] = %arg4, %[[VC:[a-z0-9_]+]] = %arg5)
// CHECK: %[[Q:.*]] = tensor.extract_slice %arg0[%[[B]], 0, %{{.*}}, 0] [1, 1, 2, 8]
// CHECK: %[[K:.*]] = tensor.extract_slice %arg1[%[[B]], 0, %[[H]], 0] [1, 1, 1, 8]
// CHECK: %[[V:.*]] = tensor.extract_slice %arg2[%[[B]], 0, %[[H]], 0] [1, 1, 1, 16]
// CHECK: %[[INIT:.*]] = tensor.extract_slice %[[O]][%[[B]], 0, %{{.*}}, 0] [1, 1, 2, 16]
// CHECK: %[[KS:.*]] = tensor.extract_slice %[[KC]][%[[B]], 0, %[[H]], 0] [1, 32, 1, 8]
// CHECK: %[[VS:.*]] = tensor.extract_slice %[[VC]][%[[B]], 0, %[[H]], 0] [1, 32, 1, 16]
// CHECK: %[[P:.*]] = tensor.extract_slice %arg6[%[[B]]] [1] [1]
// CHECK: %[[R:.*]], %[[RK:.*]], %[[RV:.*]] = attn.flash_decode %[[Q]], %[[K]], %[[V]] outs(%[[INIT]]) cache(%[[KS]], %[[VS]]) positions(%[[P]]) {block_kv = 16 : i64}
// CHECK: tensor.parallel_insert_slice %[[R]] into %[[O]][%[[B]], 0, %{{.*}}, 0] [1, 1, 2, 16]
// CHECK: tensor.parallel_insert_slice %[[RK]] into %[[KC]][%[[B]], 0, %[[H]], 0] [1, 32, 1, 8]
// CHECK: tensor.parallel_insert_slice %[[RV]] into %[[VC]][%[[B]], 0, %[[H]], 0] [1, 32, 1, 16]
func.func @flash_decode(%q: tensor<3x1x4x8xf32>, %k: tensor<3x1x2x8xf32>,
                        %v: tensor<3x1x2x16xf32>, %init: tensor<3x1x4x16xf32>,
                        %kc: tensor<3x32x2x8xf32>, %vc: tensor<3x32x2x16xf32>,
                        %pos: tensor<3xi32>)
    -> (tensor<3x1x4x16xf32>, tensor<3x32x2x8xf32>, tensor<3x32x2x16xf32>) {
  %o, %kc2, %vc2 = attn.flash_decode %q, %k, %v outs(%init) cache(%kc, %vc)
      positions(%pos) {block_kv = 16 : i64}
      : (tensor<3x1x4x8xf32>, tensor<3x1x2x8xf32>, tensor<3x1x2x16xf32>,
         tensor<3x1x4x16xf32>, tensor<3x32x2x8xf32>, tensor<3x32x2x16xf32>,
         tensor<3xi32>)
      -> (tensor<3x1x4x16xf32>, tensor<3x32x2x8xf32>, tensor<3x32x2x16xf32>)
  return %o, %kc2, %vc2
      : tensor<3x1x4x16xf32>, tensor<3x32x2x8xf32>, tensor<3x32x2x16xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["attn.flash_decode"]} in %root
        : (!transform.any_op) -> !transform.any_op
    %tiled, %loop = transform.structured.tile_using_forall %op tile_sizes [1, 1]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

// The sequences of a paged cache share its pages: a tile of the batch is
// refused, a tile of KV heads over the whole batch is not.
func.func @flash_decode_paged(%q: tensor<3x1x4x8xf32>, %k: tensor<3x1x2x8xf32>,
                              %init: tensor<3x1x4x8xf32>, %kp: tensor<8x4x2x8xf32>,
                              %pos: tensor<3xi32>, %bt: tensor<3x4xi32>)
    -> (tensor<3x1x4x8xf32>, tensor<8x4x2x8xf32>) {
  // expected-error @+4 {{a tile of a paged cache takes the whole batch (its sequences share the pages)}}
  // expected-error @+3 {{to tile operation}}
  // expected-error @+2 {{failed to generate tiling loops}}
  // expected-note @+1 {{when applied to this op}}
  %o, %kp2 = attn.flash_decode %q, %k outs(%init) cache(%kp) positions(%pos)
      block_table(%bt) {block_kv = 4 : i64}
      : (tensor<3x1x4x8xf32>, tensor<3x1x2x8xf32>, tensor<3x1x4x8xf32>,
         tensor<8x4x2x8xf32>, tensor<3xi32>, tensor<3x4xi32>)
      -> (tensor<3x1x4x8xf32>, tensor<8x4x2x8xf32>)
  return %o, %kp2 : tensor<3x1x4x8xf32>, tensor<8x4x2x8xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["attn.flash_decode"]} in %root
        : (!transform.any_op) -> !transform.any_op
    // expected-error @+1 {{failed to apply}}
    %tiled, %loop = transform.structured.tile_using_forall %op tile_sizes [1, 1]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

// CHECK-LABEL: func.func @flash_decode_paged_heads
// CHECK: scf.forall (%[[H:[a-z0-9_]+]]) in (2) shared_outs(%{{.*}} = %arg2, %[[KP:[a-z0-9_]+]] = %arg3)
// CHECK: %[[PAGES:.*]] = tensor.extract_slice %[[KP]][0, 0, %[[H]], 0] [8, 4, 1, 8]
// CHECK: attn.flash_decode %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} outs(%{{[a-z0-9_]+}}) cache(%[[PAGES]]) positions(%{{[a-z0-9_]+}}) block_table(%{{[a-z0-9_]+}})
// CHECK-SAME: -> (tensor<3x1x2x8xf32>, tensor<8x4x1x8xf32>)
func.func @flash_decode_paged_heads(%q: tensor<3x1x4x8xf32>, %k: tensor<3x1x2x8xf32>,
                                    %init: tensor<3x1x4x8xf32>, %kp: tensor<8x4x2x8xf32>,
                                    %pos: tensor<3xi32>, %bt: tensor<3x4xi32>)
    -> (tensor<3x1x4x8xf32>, tensor<8x4x2x8xf32>) {
  %o, %kp2 = attn.flash_decode %q, %k outs(%init) cache(%kp) positions(%pos)
      block_table(%bt) {block_kv = 4 : i64}
      : (tensor<3x1x4x8xf32>, tensor<3x1x2x8xf32>, tensor<3x1x4x8xf32>,
         tensor<8x4x2x8xf32>, tensor<3xi32>, tensor<3x4xi32>)
      -> (tensor<3x1x4x8xf32>, tensor<8x4x2x8xf32>)
  return %o, %kp2 : tensor<3x1x4x8xf32>, tensor<8x4x2x8xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["attn.flash_decode"]} in %root
        : (!transform.any_op) -> !transform.any_op
    %tiled, %loop = transform.structured.tile_using_forall %op tile_sizes [0, 1]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

// attn.cca_decode_prologue over the batch: a tile of sequences reads and
// writes its rows of the states.
// CHECK-LABEL: func.func @cca_decode_prologue
// CHECK: scf.forall (%[[I:[a-z0-9_]+]]) in (2) shared_outs(%[[QO:[a-z0-9_]+]] = %arg9, %{{.*}} = %arg10, %{{.*}} = %arg10, %[[CS:[a-z0-9_]+]] = %arg11, %[[SS:[a-z0-9_]+]] = %arg12)
// CHECK: %[[B0:.*]] = affine.apply #{{.*}}(%[[I]])
// CHECK: %[[QI:.*]] = tensor.extract_slice %[[QO]][%[[B0]], 0, 0, 0] [2, 1, 4, 4]
// CHECK: %[[CSI:.*]] = tensor.extract_slice %[[CS]][%[[B0]], 0, 0] [2, 2, 24]
// CHECK: %[[QR:.*]] = tensor.extract_slice %arg0[%[[B0]], 0, 0] [2, 1, 16]
// CHECK: %[[POS:.*]] = tensor.extract_slice %arg13[%[[B0]]] [2] [1]
// CHECK: attn.cca_decode_prologue %[[QR]], %{{.*}}, %{{.*}}, %{{.*}} conv_dw(%arg4, %arg5) conv_g(%arg6, %arg7) temp(%arg8) outs(%[[QI]], %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) conv_state(%[[CSI]]) shift_state(%{{.*}}) positions(%[[POS]])
// CHECK: tensor.parallel_insert_slice %{{.*}} into %[[CS]][%[[B0]], 0, 0] [2, 2, 24]
func.func @cca_decode_prologue(%qr: tensor<4x1x16xf32>, %kr: tensor<4x1x8xf32>,
                               %vc: tensor<4x1x4xf32>, %vp: tensor<4x1x4xf32>,
                               %dw: tensor<24x1x2xf32>, %dwb: tensor<24xf32>,
                               %gw: tensor<24x4x2xf32>, %gwb: tensor<24xf32>,
                               %temp: tensor<2xf32>, %qi: tensor<4x1x4x4xf32>,
                               %kvi: tensor<4x1x2x4xf32>, %cs: tensor<4x2x24xf32>,
                               %ss: tensor<4x1x4xf32>, %pos: tensor<4xi32>)
    -> (tensor<4x1x4x4xf32>, tensor<4x2x24xf32>) {
  %q, %k, %v, %cso, %sso = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%qi, %kvi, %kvi)
      conv_state(%cs) shift_state(%ss) positions(%pos)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, value_shift}
      : (tensor<4x1x16xf32>, tensor<4x1x8xf32>, tensor<4x1x4xf32>,
         tensor<4x1x4xf32>, tensor<24x1x2xf32>, tensor<24xf32>,
         tensor<24x4x2xf32>, tensor<24xf32>, tensor<2xf32>,
         tensor<4x1x4x4xf32>, tensor<4x1x2x4xf32>, tensor<4x1x2x4xf32>,
         tensor<4x2x24xf32>, tensor<4x1x4xf32>, tensor<4xi32>)
      -> (tensor<4x1x4x4xf32>, tensor<4x1x2x4xf32>, tensor<4x1x2x4xf32>,
          tensor<4x2x24xf32>, tensor<4x1x4xf32>)
  return %q, %cso : tensor<4x1x4x4xf32>, tensor<4x2x24xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["attn.cca_decode_prologue"]} in %root
        : (!transform.any_op) -> !transform.any_op
    %tiled, %loop = transform.structured.tile_using_forall %op tile_sizes [2]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}
