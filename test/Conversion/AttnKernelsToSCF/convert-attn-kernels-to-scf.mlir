// RUN: attnfuse-opt %s --convert-attn-kernels-to-scf --canonicalize --cse -split-input-file | FileCheck %s
// RUN: attnfuse-opt %s --convert-attn-kernels-to-scf=parallel=true --canonicalize --cse -split-input-file | FileCheck %s --check-prefix=PAR

// attn.flash_attention is tiled through its TilingInterface by upstream
// scf::tileUsingSCF, one tile per (batch, KV head, block_q query rows), and
// each tile is decomposed into linalg. parallel=true: the tile loops are one
// scf.forall writing into slices of the op's init; the key loop (the softmax
// reduction) stays a sequential scf.for inside. The key and value blocks are
// packed before it by a forall of their own, one (batch, KV head, key
// block) per iteration.
// PAR-LABEL: func.func @flash_kv
// PAR: %[[OUT:.*]] = tensor.empty(%{{.*}}, %{{.*}}) : tensor<?x?x4x16xf32>
// The key rotation tables serve every tile: built once, before the loops.
// PAR: linalg.generic {{.*}} outs(%{{.*}} : tensor<?x8xf64>)
// PAR: %[[BLOCKS:.*]]:2 = scf.forall (%[[PB:.*]], %[[PH:.*]], %[[PJ:.*]]) in (%{{.*}}, 2, %{{.*}}) shared_outs(%[[KOUT:.*]] = %{{.*}}, %[[VOUT:.*]] = %{{.*}}) -> (tensor<?x2x?x32x16xf32>, tensor<?x2x?x32x16xf32>)
// PAR: tensor.extract_slice %arg1[%[[PB]], %{{.*}}, %[[PH]], 0] [1, %{{.*}}, 1, 16]
// PAR: tensor.pad
// PAR: scf.forall.in_parallel
// PAR-NEXT: tensor.parallel_insert_slice %{{.*}} into %[[KOUT]][%[[PB]], %[[PH]], %[[PJ]], 0, 0] [1, 1, 1, 32, 16]
// PAR-NEXT: tensor.parallel_insert_slice %{{.*}} into %[[VOUT]][%[[PB]], %[[PH]], %[[PJ]], 0, 0] [1, 1, 1, 32, 16]
// PAR: scf.forall (%[[B:.*]], %[[H:.*]], %[[R:.*]]) = (0, 0, 0) to (%{{.*}}, 2, %[[S:.*]]) step (1, 1, 16) shared_outs(%[[ACC:.*]] = %[[OUT]]) -> (tensor<?x?x4x16xf32>)
// PAR: %[[ROWS:.*]] = affine.min #{{.*}}(%[[R]])[%[[S]]]
// PAR: %[[H0:.*]] = affine.apply #{{.*}}(%[[H]])
// PAR: tensor.extract_slice %arg0[%[[B]], %[[R]], %[[H0]], 0] [1, %[[ROWS]], 2, 16] [1, 1, 1, 1] : tensor<?x?x4x16xf32> to tensor<1x?x2x16xf32>
// PAR: %[[DEST:.*]] = tensor.extract_slice %[[ACC]][%[[B]], %[[R]], %[[H0]], 0] [1, %[[ROWS]], 2, 16] [1, 1, 1, 1]
// PAR-NOT: tensor<?x8xf64>
// PAR: scf.for %{{.*}} iter_args({{.*}}) -> (tensor<2x16xf32>, tensor<2x16xf32>, tensor<2x16x16xf32>)
// PAR: tensor.extract_slice %[[BLOCKS]]#0[%[[B]], %[[H]], %{{.*}}, 0, 0] [1, 1, 1, 32, 16] [1, 1, 1, 1, 1] : tensor<?x2x?x32x16xf32> to tensor<32x16xf32>
// The partial key tile after the loop: its block was zero-padded when packed.
// PAR: scf.if %{{.*}} -> (tensor<2x16xf32>, tensor<2x16x16xf32>)
// PAR: tensor.extract_slice %[[BLOCKS]]#0[%[[B]], %[[H]], %{{.*}}, 0, 0] [1, 1, 1, 32, 16]
// PAR: %[[O:.*]] = linalg.generic {{.*}} outs(%[[DEST]] : tensor<1x?x2x16xf32>)
// PAR: scf.forall.in_parallel
// PAR-NEXT: tensor.parallel_insert_slice %[[O]] into %[[ACC]][%[[B]], %[[R]], %[[H0]], 0] [1, %[[ROWS]], 2, 16] [1, 1, 1, 1] : tensor<1x?x2x16xf32> into tensor<?x?x4x16xf32>

// K=V with GQA-2 and RoPE: first the rows of every (batch, KV head, key
// block) of the shared tensor, zero-padded, rotated for Q K^T (in the rows'
// layout) and as they are for P V, packed once into contiguous blocks; then
// loops over batch, KV head and query block, whose key loop stops at the
// causal diagonal and slices both blocks of each key tile. The query tile
// is stored [G, d, block_q] and the scores [G, block_kv, block_q]: no key
// tile is transposed.
// CHECK-LABEL: func.func @flash_kv
// CHECK: %[[BLOCKS:.*]]:2 = scf.for %[[PB:.*]] = %c0 to %{{.*}} step %c1 iter_args({{.*}}) -> (tensor<?x2x?x32x16xf32>, tensor<?x2x?x32x16xf32>)
// CHECK: scf.for %[[PH:.*]] = %c0 to %c2 step %c1
// CHECK: scf.for %[[PJ:.*]] = %c0 to %{{.*}} step %c1
// CHECK: tensor.extract_slice %arg1[%[[PB]], %{{.*}}, %[[PH]], 0] [1, %{{.*}}, 1, 16]
// CHECK: tensor.pad
// CHECK: %[[KEYROWS:.*]] = tensor.extract_slice %{{.*}}[0, 0, 0, 0] [1, 32, 1, 16] [1, 1, 1, 1] : tensor<1x?x1x16xf32> to tensor<32x16xf32>
// CHECK: %[[ROTATED:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0], [1, 2]] : tensor<32x2x8xf32> into tensor<32x16xf32>
// CHECK: tensor.insert_slice %[[ROTATED]] into %{{.*}}[%[[PB]], %[[PH]], %[[PJ]], 0, 0] [1, 1, 1, 32, 16]
// CHECK: tensor.insert_slice %[[KEYROWS]] into %{{.*}}[%[[PB]], %[[PH]], %[[PJ]], 0, 0] [1, 1, 1, 32, 16]
// CHECK: scf.for %[[B:.*]] = %c0 to %{{.*}} step %c1
// CHECK: scf.for %[[H:.*]] = %c0 to %c2 step %c1
// CHECK: scf.for %[[R:.*]] = %c0 to %{{.*}} step %c16
// CHECK: %[[Q:.*]] = tensor.pad %{{.*}} low[0, 0, 0, 0] high[0, %{{.*}}, 0, 0]
// CHECK: %[[QROWS:.*]] = tensor.extract_slice %[[Q]][0, 0, 0, 0] [1, 16, 2, 16] [1, 1, 1, 1] : tensor<1x?x2x16xf32> to tensor<16x2x16xf32>
// CHECK: %[[QT:.*]] = linalg.generic {{.*}} ins(%[[QROWS]] : tensor<16x2x16xf32>) outs(%{{.*}} : tensor<2x16x16xf32>)
// CHECK: %[[HI:.*]] = arith.minsi
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c1 iter_args({{.*}}) -> (tensor<2x16xf32>, tensor<2x16xf32>, tensor<2x16x16xf32>)
// CHECK: %[[KT:.*]] = tensor.extract_slice %[[BLOCKS]]#0[%[[B]], %[[H]], %{{.*}}, 0, 0] [1, 1, 1, 32, 16] [1, 1, 1, 1, 1] : tensor<?x2x?x32x16xf32> to tensor<32x16xf32>
// CHECK: %[[VT:.*]] = tensor.extract_slice %[[BLOCKS]]#1[%[[B]], %[[H]], %{{.*}}, 0, 0] [1, 1, 1, 32, 16] [1, 1, 1, 1, 1] : tensor<?x2x?x32x16xf32> to tensor<32x16xf32>
// CHECK-NOT: tensor.pad
// CHECK: scf.if %{{.*}} -> (tensor<2x32x16xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[KT]], %[[QT]] : tensor<32x16xf32>, tensor<2x16x16xf32>) outs(%{{.*}} : tensor<2x32x16xf32>)
// CHECK: arith.cmpi sle
// CHECK: } else {
// CHECK-NOT: arith.cmpi sle
// CHECK: math.exp
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[VT]] : tensor<2x32x16xf32>, tensor<32x16xf32>) outs(%{{.*}} : tensor<2x16x16xf32>)
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[%[[B]], %[[R]], %{{.*}}, 0] [1, %{{.*}}, 2, 16] [1, 1, 1, 1] : tensor<1x?x2x16xf32> into tensor<?x?x4x16xf32>
// CHECK-NOT: attn.
func.func @flash_kv(%q: tensor<?x?x4x16xf32>, %kv: tensor<?x?x2x16xf32>)
    -> tensor<?x?x4x16xf32> {
  %o_c0 = arith.constant 0 : index
  %o_d0 = tensor.dim %q, %o_c0 : tensor<?x?x4x16xf32>
  %o_c1 = arith.constant 1 : index
  %o_d1 = tensor.dim %q, %o_c1 : tensor<?x?x4x16xf32>
  %o_init = tensor.empty(%o_d0, %o_d1) : tensor<?x?x4x16xf32>
  %o = attn.flash_attention %q, %kv
      outs(%o_init) {causal, block_q = 16 : i64, block_kv = 32 : i64,
       key_rope = #attn.rope<theta = 10000.0>}
      : (tensor<?x?x4x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x4x16xf32>) -> tensor<?x?x4x16xf32>
  return %o : tensor<?x?x4x16xf32>
}

// -----

// A sliding window raises the key loop's lower bound; bf16 key and value
// rows are extended to f32 once, as their blocks are packed, and the output
// truncated once.
// CHECK-LABEL: func.func @flash_window_bf16
// CHECK: scf.for
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: tensor.insert_slice %{{.*}} : tensor<8x8xf32> into tensor<1x2x?x8x8xf32>
// CHECK: arith.maxsi
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c1 iter_args({{.*}}) -> (tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8x8xf32>)
// CHECK-NOT: arith.extf %{{.*}} : bf16 to f32
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @flash_window_bf16(%q: tensor<1x20x2x8xbf16>, %k: tensor<1x20x2x8xbf16>,
                             %v: tensor<1x20x2x8xbf16>) -> tensor<1x20x2x8xbf16> {
  %o_init = tensor.empty() : tensor<1x20x2x8xbf16>
  %o = attn.flash_attention %q, %k, %v
      outs(%o_init) {causal, window = 5 : i64, block_q = 8 : i64, block_kv = 8 : i64}
      : (tensor<1x20x2x8xbf16>, tensor<1x20x2x8xbf16>, tensor<1x20x2x8xbf16>, tensor<1x20x2x8xbf16>)
      -> tensor<1x20x2x8xbf16>
  return %o : tensor<1x20x2x8xbf16>
}

// -----

// A projection with a reduction of 40 in steps of 16, tiled through its
// TilingInterface over (batch, 8 tokens, 2 heads = 16 features): the
// rotation tables and W packed into [2, 3, 16, 16] blocks of W^T (zero-padded
// to a width of 48, k innermost in the packing loops) are built once, before
// the tile loops, and only when there is a whole block of 8 tokens. With
// parallel=true the threads pack W, one block of 16 features per iteration.
// PAR-LABEL: func.func @projection
// PAR: %[[OUT:.*]] = tensor.empty(%{{.*}}, %{{.*}}) : tensor<?x?x4x8xf32>
// PAR: %[[PACKED:.*]] = scf.if %{{.*}} -> (tensor<2x3x16x16xf32>)
// PAR: scf.forall (%[[NB:.*]]) in (2) shared_outs(%[[BLOCKS:.*]] = %{{.*}}) -> (tensor<2x3x16x16xf32>)
// PAR: linalg.generic {{.*}} ins(%{{.*}} : tensor<1x16x3x16xf32>) outs(%{{.*}} : tensor<1x3x16x16xf32>)
// PAR: tensor.parallel_insert_slice %{{.*}} into %[[BLOCKS]][%[[NB]], 0, 0, 0] [1, 3, 16, 16]
// PAR: scf.forall (%[[B:.*]], %[[S0:.*]], %[[H0:.*]]) = (0, 0, 0) to (%{{.*}}, %[[S:.*]], 4) step (1, 8, 2) shared_outs(%[[ACC:.*]] = %[[OUT]]) -> (tensor<?x?x4x8xf32>)
// PAR: %[[ROWS:.*]] = affine.min #{{.*}}(%[[S0]])[%[[S]]]
// PAR: %[[N0:.*]] = affine.apply #{{.*}}(%[[H0]])
// PAR: tensor.extract_slice %arg0[%[[B]], %[[S0]], 0] [1, %[[ROWS]], 40] [1, 1, 1] : tensor<?x?x40xf32> to tensor<1x?x40xf32>
// PAR: tensor.extract_slice %arg1[%[[N0]], 0] [16, 40] [1, 1] : tensor<32x40xf32> to tensor<16x40xf32>
// PAR: %[[DEST:.*]] = tensor.extract_slice %[[ACC]][%[[B]], %[[S0]], %[[H0]], 0] [1, %[[ROWS]], 2, 8] [1, 1, 1, 1]
// PAR: %[[O:.*]] = scf.if %{{.*}} -> (tensor<1x?x2x8xf32>)
// PAR: scf.forall.in_parallel
// PAR-NEXT: tensor.parallel_insert_slice %[[O]] into %[[ACC]][%[[B]], %[[S0]], %[[H0]], 0] [1, %[[ROWS]], 2, 8] [1, 1, 1, 1] : tensor<1x?x2x8xf32> into tensor<?x?x4x8xf32>

// Each tile: fewer than 8 tokens (a last partial block, a decode step's
// tokens) one by one, never padded: W's 16 rows of 40 read in their own
// layout as [16, 5, 8] against the token's row as [5, 8], partial sums over
// 8 lanes, then their sum, the bias and RoPE at the token's position (each
// head's row as [2, 4] pairs beside the table's row, no element reads). A
// whole block: x zero-padded to a width of 48, three reduction steps each
// reading one packed block, then the bias and RoPE epilogue. Both branches
// write the tile's rows of the output, split into heads, into the init.
// CHECK-LABEL: func.func @projection
// CHECK: math.cos
// CHECK: %[[PACKED:.*]] = scf.if %{{.*}} -> (tensor<2x3x16x16xf32>) {
// CHECK: %[[W:.*]] = tensor.pad %arg1 low[0, 0] high[0, 8]
// CHECK: %[[WB:.*]] = tensor.expand_shape %[[W]] {{\[\[}}0, 1], [2, 3]] output_shape [2, 16, 3, 16]
// CHECK: linalg.generic {{.*}} ins(%[[WB]] : tensor<2x16x3x16xf32>) outs(%{{.*}} : tensor<2x3x16x16xf32>)
// CHECK: scf.for %[[B:.*]] = %c0 to %{{.*}} step %c1
// CHECK: scf.for %[[S0:.*]] = %c0 to %{{.*}} step %c8
// CHECK: scf.for %[[H0:.*]] = %c0 to %c4 step %c2
// CHECK: %[[ROWS:.*]] = affine.min
// CHECK: %[[N0:.*]] = affine.apply #{{.*}}(%[[H0]])
// CHECK: %[[X:.*]] = tensor.extract_slice %arg0[%[[B]], %[[S0]], 0] [1, %[[ROWS]], 40]
// CHECK: %[[WROWS:.*]] = tensor.extract_slice %arg1[%[[N0]], 0] [16, 40] [1, 1] : tensor<32x40xf32> to tensor<16x40xf32>
// CHECK: %[[DEST:.*]] = tensor.extract_slice %{{.*}}[%[[B]], %[[S0]], %[[H0]], 0] [1, %[[ROWS]], 2, 8]
// CHECK: scf.if %{{.*}} -> (tensor<1x?x2x8xf32>) {
// CHECK: %[[WL:.*]] = tensor.expand_shape %[[WROWS]] {{\[\[}}0], [1, 2]] output_shape [16, 5, 8] : tensor<16x40xf32> into tensor<16x5x8xf32>
// CHECK: scf.for %[[T:.*]] = %c0 to %[[ROWS]] step %c1
// CHECK: %[[ROW:.*]] = tensor.extract_slice %[[X]][0, %[[T]], 0] [1, 1, 40] [1, 1, 1] : tensor<1x?x40xf32> to tensor<40xf32>
// CHECK: %[[XL:.*]] = tensor.expand_shape %[[ROW]] {{\[\[}}0, 1]] output_shape [5, 8] : tensor<40xf32> into tensor<5x8xf32>
// CHECK: %[[PARTIAL:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[XL]], %[[WL]] : tensor<5x8xf32>, tensor<16x5x8xf32>) outs(%{{.*}} : tensor<16x8xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[PARTIAL]] : tensor<16x8xf32>) outs(%{{.*}} : tensor<1x16xf32>)
// CHECK-NOT: tensor.extract %
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2]] output_shape [1, 2, 4] : tensor<1x8xf32> into tensor<1x2x4xf32>
// CHECK: tensor.extract_slice %{{.*}}[%{{.*}}, 0] [1, 4] [1, 1] : tensor<?x4xf32> to tensor<1x4xf32>
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0], [1, 2]] : tensor<1x2x4xf32> into tensor<1x8xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2]] output_shape [1, 2, 4] : tensor<1x8xf32> into tensor<1x2x4xf32>
// CHECK-NOT: tensor.extract %
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[%[[T]], 0] [1, 16] [1, 1] : tensor<1x16xf32> into tensor<8x16xf32>
// CHECK: linalg.generic {{.*}} outs(%[[DEST]] : tensor<1x?x2x8xf32>)
// CHECK: } else {
// CHECK: %[[XP:.*]] = tensor.pad %[[X]] low[0, 0, 0] high[0, 0, 8]
// CHECK: %[[XB:.*]] = tensor.extract_slice %[[XP]][0, 0, 0] [1, 8, 48] [1, 1, 1] : tensor<1x?x48xf32> to tensor<8x48xf32>
// CHECK: scf.for %[[STEP:.*]] = %{{.*}} to %c3 step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (tensor<8x16xf32>)
// CHECK: tensor.extract_slice %[[XB]][0, %{{.*}}] [8, 16] [1, 1] : tensor<8x48xf32> to tensor<8x16xf32>
// CHECK: tensor.extract_slice %[[PACKED]][%{{.*}}, %[[STEP]], 0, 0] [1, 1, 16, 16] [1, 1, 1, 1] : tensor<2x3x16x16xf32> to tensor<16x16xf32>
// CHECK-NOT: tensor.extract %
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2]] output_shape [8, 2, 4] : tensor<8x8xf32> into tensor<8x2x4xf32>
// CHECK: tensor.extract_slice %{{.*}}[%{{.*}}, 0] [8, 4] [1, 1] : tensor<?x4xf32> to tensor<8x4xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2]] output_shape [8, 2, 4] : tensor<8x8xf32> into tensor<8x2x4xf32>
// CHECK-NOT: tensor.extract %
// CHECK: linalg.generic {{.*}} outs(%[[DEST]] : tensor<1x?x2x8xf32>)
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[%[[B]], %[[S0]], %[[H0]], 0] [1, %[[ROWS]], 2, 8] [1, 1, 1, 1] : tensor<1x?x2x8xf32> into tensor<?x?x4x8xf32>
// CHECK-NOT: attn.
func.func @projection(%x: tensor<?x?x40xf32>, %w: tensor<32x40xf32>,
                      %b: tensor<32xf32>) -> tensor<?x?x4x8xf32> {
  %q_c0 = arith.constant 0 : index
  %q_d0 = tensor.dim %x, %q_c0 : tensor<?x?x40xf32>
  %q_c1 = arith.constant 1 : index
  %q_d1 = tensor.dim %x, %q_c1 : tensor<?x?x40xf32>
  %q_init = tensor.empty(%q_d0, %q_d1) : tensor<?x?x4x8xf32>
  %q = attn.fused_projection %x, %w, %b
      outs(%q_init) {head_dim = 8 : i64, rope = #attn.rope<theta = 10000.0>,
       block_s = 8 : i64, block_n = 16 : i64, block_k = 16 : i64}
      : (tensor<?x?x40xf32>, tensor<32x40xf32>, tensor<32xf32>, tensor<?x?x4x8xf32>)
      -> tensor<?x?x4x8xf32>
  return %q : tensor<?x?x4x8xf32>
}

// -----


// A projection by W^T given as W (transposed_weight, the input gradient dx =
// dy W): the CPU lowering first transposes the large weight in 64 x 64
// blocks (one block's rows stay in L1, not one element per 4 KiB page), then
// packs and multiplies as for any projection.
// CHECK-LABEL: func.func @projection_transposed_weight
// CHECK:      scf.for %[[I:.*]] = %c0 to %c256 step %c64
// CHECK:        scf.for %[[J:.*]] = %c0 to %c128 step %c64
// CHECK:          %[[BLOCK:.*]] = tensor.extract_slice %arg1[%[[J]], %[[I]]] [64, 64] [1, 1] : tensor<128x256xf32> to tensor<64x64xf32>
// CHECK:          linalg.transpose ins(%[[BLOCK]] : tensor<64x64xf32>) {{.*}} permutation = [1, 0]
// CHECK:          tensor.insert_slice %{{.*}}[%[[I]], %[[J]]] [64, 64] [1, 1] : tensor<64x64xf32> into tensor<256x128xf32>
// CHECK:      linalg.generic {{.*}} ins(%{{.*}} : tensor<4x64x2x64xf32>)
// CHECK-NOT: attn.
func.func @projection_transposed_weight(%dy: tensor<?x?x128xf32>, %w: tensor<128x256xf32>)
    -> tensor<?x?x1x256xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tensor.dim %dy, %c0 : tensor<?x?x128xf32>
  %s = tensor.dim %dy, %c1 : tensor<?x?x128xf32>
  %init = tensor.empty(%b, %s) : tensor<?x?x1x256xf32>
  %dx = attn.fused_projection %dy, %w outs(%init)
      {head_dim = 256 : i64, block_s = 64 : i64, block_n = 64 : i64,
       block_k = 64 : i64, transposed_weight}
      : (tensor<?x?x128xf32>, tensor<128x256xf32>, tensor<?x?x1x256xf32>)
      -> tensor<?x?x1x256xf32>
  return %dx : tensor<?x?x1x256xf32>
}

// -----

// The CCA prologue is tiled through its TilingInterface, one tile per
// (batch, block of block_s = 4 tokens): a tile reads its tokens and the halo
// of P = 2 rows before them (none at the sequence start), zero-padded to a
// static 6-row block, and writes Q, K and V of its tokens.
// PAR-LABEL: func.func @prologue
// PAR: scf.forall (%[[B:[a-z0-9_]+]], %[[S0:[a-z0-9_]+]]) = (0, 0) to (%{{.*}}, %{{.*}}) step (1, 4) shared_outs(%[[Q:[a-z0-9_]+]] = %{{.*}}, %[[K:[a-z0-9_]+]] = %{{.*}}, %[[V:[a-z0-9_]+]] = %{{.*}}) -> (tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>)
// PAR: %[[FIRST:.*]] = affine.max #{{.*}}(%[[S0]], %{{.*}})
// PAR: tensor.extract_slice %arg0[%[[B]], %[[FIRST]], 0] [1, %{{.*}}, 16] [1, 1, 1] : tensor<?x?x16xbf16> to tensor<1x?x16xbf16>
// PAR: scf.forall.in_parallel
// PAR-NEXT: tensor.parallel_insert_slice %{{.*}} into %[[Q]][%[[B]], %[[S0]], 0, 0] [1, %{{.*}}, 4, 8]
// PAR-NEXT: tensor.parallel_insert_slice %{{.*}} into %[[K]][%[[B]], %[[S0]], 0, 0] [1, %{{.*}}, 2, 8]
// PAR-NEXT: tensor.parallel_insert_slice %{{.*}} into %[[V]][%[[B]], %[[S0]], 0, 0] [1, %{{.*}}, 2, 8]
// CHECK-LABEL: func.func @prologue
// CHECK: scf.for %[[B:[a-z0-9_]+]] = {{.*}} -> (tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>)
// CHECK: scf.for %[[S0:[a-z0-9_]+]] = %{{.*}} to %{{.*}} step %c4 iter_args(%[[QO:[a-z0-9_]+]] = %{{.*}}, %[[KO:[a-z0-9_]+]] = %{{.*}}, %[[VO:[a-z0-9_]+]] = %{{.*}}) -> (tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>)
// CHECK: %[[FIRST:.*]] = affine.max #{{.*}}(%[[S0]], %{{.*}})
// CHECK: tensor.extract_slice %arg0[%[[B]], %[[FIRST]], 0] [1, %{{.*}}, 16] [1, 1, 1] : tensor<?x?x16xbf16> to tensor<1x?x16xbf16>
// CHECK: tensor.pad %{{.*}} low[0, %{{.*}}, 0] high[0, %{{.*}}, 0]
// CHECK: } : tensor<1x?x16xbf16> to tensor<1x6x16xbf16>
// CHECK: math.sqrt
// CHECK: tensor.insert_slice %{{.*}} into %[[QO]][%[[B]], %[[S0]], 0, 0] [1, %{{.*}}, 4, 8]
// CHECK: tensor.insert_slice %{{.*}} into %[[KO]][%[[B]], %[[S0]], 0, 0] [1, %{{.*}}, 2, 8]
// CHECK: tensor.insert_slice %{{.*}} into %[[VO]][%[[B]], %[[S0]], 0, 0] [1, %{{.*}}, 2, 8]
// CHECK-NOT: attn.
func.func @prologue(%x: tensor<?x?x16xbf16>, %wq: tensor<32x16xbf16>,
                    %wk: tensor<16x16xbf16>, %wv: tensor<8x16xbf16>,
                    %wvp: tensor<8x16xbf16>, %dw: tensor<48x1x2xbf16>,
                    %dwb: tensor<48xbf16>, %gw: tensor<48x8x2xbf16>,
                    %gwb: tensor<48xbf16>, %temp: tensor<2xbf16>)
    -> (tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>) {
  %cp_c0 = arith.constant 0 : index
  %cp_c1 = arith.constant 1 : index
  %cp_batch = tensor.dim %x, %cp_c0 : tensor<?x?x16xbf16>
  %cp_seq = tensor.dim %x, %cp_c1 : tensor<?x?x16xbf16>
  %cp_init0 = tensor.empty(%cp_batch, %cp_seq) : tensor<?x?x4x8xbf16>
  %cp_init1 = tensor.empty(%cp_batch, %cp_seq) : tensor<?x?x2x8xbf16>
  %cp_init2 = tensor.empty(%cp_batch, %cp_seq) : tensor<?x?x2x8xbf16>
  %q, %k, %v = attn.cca_prologue %x wq(%wq) wk(%wk) wv(%wv) wv_prev(%wvp)
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp)
      outs(%cp_init0, %cp_init1, %cp_init2) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 8 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift,
       temperature = #attn.temperature<clamped>,
       rope = #attn.rope<theta = 10000.0, fraction = 0.5>, block_s = 4 : i64}
      : (tensor<?x?x16xbf16>, tensor<32x16xbf16>, tensor<16x16xbf16>,
         tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<48x1x2xbf16>,
         tensor<48xbf16>, tensor<48x8x2xbf16>, tensor<48xbf16>,
         tensor<2xbf16>, tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>)
      -> (tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>)
  return %q, %k, %v
      : tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>
}

// -----

// norm = clamp_eps in the CPU kernel: the sum of squares of each head is
// clamped at eps^2 (2^-14) before the square root.
// CHECK-LABEL: func.func @prologue_clamp_eps
// CHECK: %[[EPS2:.+]] = arith.constant 6.10351563E-5 : f32
// CHECK: %[[FLOOR:.+]] = arith.maximumf %{{.+}}, %[[EPS2]] : f32
// CHECK-NEXT: math.sqrt %[[FLOOR]] : f32
// CHECK: return
func.func @prologue_clamp_eps(%x: tensor<?x?x16xbf16>, %wq: tensor<32x16xbf16>,
                    %wk: tensor<16x16xbf16>, %wv: tensor<8x16xbf16>,
                    %wvp: tensor<8x16xbf16>, %dw: tensor<48x1x2xbf16>,
                    %dwb: tensor<48xbf16>, %gw: tensor<48x8x2xbf16>,
                    %gwb: tensor<48xbf16>, %temp: tensor<2xbf16>)
    -> (tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>) {
  %cp2_c0 = arith.constant 0 : index
  %cp2_c1 = arith.constant 1 : index
  %cp2_batch = tensor.dim %x, %cp2_c0 : tensor<?x?x16xbf16>
  %cp2_seq = tensor.dim %x, %cp2_c1 : tensor<?x?x16xbf16>
  %cp2_init0 = tensor.empty(%cp2_batch, %cp2_seq) : tensor<?x?x4x8xbf16>
  %cp2_init1 = tensor.empty(%cp2_batch, %cp2_seq) : tensor<?x?x2x8xbf16>
  %cp2_init2 = tensor.empty(%cp2_batch, %cp2_seq) : tensor<?x?x2x8xbf16>
  %q, %k, %v = attn.cca_prologue %x wq(%wq) wk(%wk) wv(%wv) wv_prev(%wvp)
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp)
      outs(%cp2_init0, %cp2_init1, %cp2_init2) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 8 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift,
       norm = #attn.norm<clamp_eps>, eps = 0.0078125 : f64,
       rope = #attn.rope<theta = 10000.0, fraction = 0.5>, block_s = 4 : i64}
      : (tensor<?x?x16xbf16>, tensor<32x16xbf16>, tensor<16x16xbf16>,
         tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<48x1x2xbf16>,
         tensor<48xbf16>, tensor<48x8x2xbf16>, tensor<48xbf16>,
         tensor<2xbf16>, tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>)
      -> (tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>)
  return %q, %k, %v
      : tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>
}

// -----

// A padding mask: x's padded tokens are zeroed once, before the halo
// padding, so the projections, the convolutions and the delayed values of
// every block read zeros there.
// CHECK-LABEL: func.func @prologue_padding_mask
// CHECK: tensor.extract_slice %arg0
// CHECK: tensor.extract_slice %arg10
// CHECK: %[[MASKED:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x?x16xbf16>, tensor<1x?xi64>)
// CHECK:   %[[REAL:.*]] = arith.cmpi ne, %{{.*}}, %{{.*}} : i64
// CHECK:   arith.select %[[REAL]], %{{.*}}, %{{.*}} : bf16
// CHECK: tensor.pad %[[MASKED]] low[0, %{{.*}}, 0] high[0, %{{.*}}, 0]
// CHECK-NOT: attn.
func.func @prologue_padding_mask(%x: tensor<?x?x16xbf16>, %wq: tensor<32x16xbf16>,
                                 %wk: tensor<16x16xbf16>, %wv: tensor<8x16xbf16>,
                                 %wvp: tensor<8x16xbf16>, %dw: tensor<48x1x2xbf16>,
                                 %dwb: tensor<48xbf16>, %gw: tensor<48x8x2xbf16>,
                                 %gwb: tensor<48xbf16>, %temp: tensor<2xbf16>,
                                 %m: tensor<?x?xi64>)
    -> (tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>) {
  %cp3_c0 = arith.constant 0 : index
  %cp3_c1 = arith.constant 1 : index
  %cp3_batch = tensor.dim %x, %cp3_c0 : tensor<?x?x16xbf16>
  %cp3_seq = tensor.dim %x, %cp3_c1 : tensor<?x?x16xbf16>
  %cp3_init0 = tensor.empty(%cp3_batch, %cp3_seq) : tensor<?x?x4x8xbf16>
  %cp3_init1 = tensor.empty(%cp3_batch, %cp3_seq) : tensor<?x?x2x8xbf16>
  %cp3_init2 = tensor.empty(%cp3_batch, %cp3_seq) : tensor<?x?x2x8xbf16>
  %q, %k, %v = attn.cca_prologue %x wq(%wq) wk(%wk) wv(%wv) wv_prev(%wvp)
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) padding_mask(%m)
      outs(%cp3_init0, %cp3_init1, %cp3_init2) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 8 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift,
       block_s = 4 : i64}
      : (tensor<?x?x16xbf16>, tensor<32x16xbf16>, tensor<16x16xbf16>,
         tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<48x1x2xbf16>,
         tensor<48xbf16>, tensor<48x8x2xbf16>, tensor<48xbf16>,
         tensor<2xbf16>, tensor<?x?xi64>, tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>)
      -> (tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>)
  return %q, %k, %v
      : tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>
}

// -----

// A key mask: the tile's row of it padded to whole key tiles with zeros
// (masked like the keys past the end), one [block_kv] slice per key tile,
// and every tile takes the masked path (no scf.if choosing the unmasked
// one; the only scf.if is the partial key tile's, after the key loop).
// CHECK-LABEL: func.func @flash_key_mask
// CHECK: %[[ROW:.*]] = tensor.extract_slice %arg2[%{{.*}}, 0] [1, %{{.*}}] [1, 1] : tensor<?x?xi32> to tensor<1x?xi32>
// CHECK: %[[MASK:.*]] = tensor.pad %[[ROW]] low[0, 0] high[0, %{{.*}}]
// CHECK-NOT: scf.if
// CHECK: %[[TILE:.*]] = tensor.extract_slice %[[MASK]][0, %{{.*}}] [1, 8] [1, 1] : tensor<1x?xi32> to tensor<8xi32>
// CHECK: linalg.generic {{.*}} ins(%[[TILE]] : tensor<8xi32>)
// CHECK:   arith.cmpi sle
// CHECK:   %[[REAL:.*]] = arith.cmpi ne, %{{.*}}, %{{.*}} : i32
// CHECK:   %[[VISIBLE:.*]] = arith.andi %{{.*}}, %[[REAL]] : i1
// CHECK:   arith.select %[[VISIBLE]]
// CHECK-NOT: scf.if
// CHECK: scf.yield {{.*}} : tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8x16xf32>
// CHECK: scf.if
// CHECK-NOT: scf.if
// CHECK-NOT: attn.
func.func @flash_key_mask(%q: tensor<?x?x4x16xf32>, %k: tensor<?x?x2x16xf32>,
                          %m: tensor<?x?xi32>) -> tensor<?x?x4x16xf32> {
  %o_c0 = arith.constant 0 : index
  %o_d0 = tensor.dim %q, %o_c0 : tensor<?x?x4x16xf32>
  %o_c1 = arith.constant 1 : index
  %o_d1 = tensor.dim %q, %o_c1 : tensor<?x?x4x16xf32>
  %o_init = tensor.empty(%o_d0, %o_d1) : tensor<?x?x4x16xf32>
  %o = attn.flash_attention %q, %k key_mask(%m)
      outs(%o_init) {block_q = 8 : i64, block_kv = 8 : i64, causal}
      : (tensor<?x?x4x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?xi32>, tensor<?x?x4x16xf32>)
      -> tensor<?x?x4x16xf32>
  return %o : tensor<?x?x4x16xf32>
}

// -----

// attn.flash_attention_grad: one tile per (batch, KV head) with its G = 2
// query heads, decomposed into loops over static tiles. The keys and values
// are converted once into [T / 32, 32, ..] tiles; a loop over the 16-row
// query tiles keeps each tile's query (both layouts), output gradient (both
// layouts), D and L in [S / 16, G, ..] tensors, with a key loop for L (the
// online max and sum); a loop over the key tiles then sums dK and dV over
// the query tiles and adds each pair's dQ into f32 query tiles
// [S / 16, G, 16, d], stored at the end. Scores are [G, block_kv, block_q]
// tiles: no tensor is S x T.
// CHECK-LABEL: func.func @flash_grad
// CHECK-NOT: tensor<?x?xf32>
// CHECK-NOT: x?x?xf32>
// CHECK: return
// PAR-LABEL: func.func @flash_grad
// PAR: scf.forall (%[[B:.*]], %[[H:.*]]) in (%{{.*}}, 2) shared_outs(%[[DQ:.*]] = %arg5, %[[DK:.*]] = %arg6, %[[DV:.*]] = %arg7)
// PAR: %[[H0:.*]] = affine.apply #{{.*}}(%[[H]])
// PAR: tensor.extract_slice %arg0[%[[B]], 0, %[[H0]], 0] [1, %{{.*}}, 2, 16] [1, 1, 1, 1] : tensor<?x?x4x16xf32> to tensor<1x?x2x16xf32>
// PAR: tensor.extract_slice %arg1[%[[B]], 0, %[[H]], 0] [1, %{{.*}}, 1, 16] [1, 1, 1, 1] : tensor<?x?x2x16xf32> to tensor<1x?x1x16xf32>
// PAR: scf.for {{.*}} -> (tensor<?x32x16xf32>)
// PAR: scf.for {{.*}} -> (tensor<?x32x8xf32>)
// PAR: scf.for {{.*}} -> (tensor<?x2x16x16xf32>, tensor<?x2x16x16xf32>, tensor<?x2x8x16xf32>, tensor<?x2x16x8xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>)
// PAR: scf.for {{.*}} -> (tensor<2x16xf32>, tensor<2x16xf32>)
// PAR: linalg.generic {{.*}} outs(%{{.*}} : tensor<2x32x16xf32>)
// PAR: math.log
// PAR: %[[DQT:.*]] = linalg.fill {{.*}} -> tensor<?x2x16x16xf32>
// PAR: scf.for {{.*}} iter_args({{.*}}, %{{.*}} = %[[DQT]]) -> (tensor<1x?x1x16xf32>, tensor<1x?x1x8xf32>, tensor<?x2x16x16xf32>)
// PAR: scf.for {{.*}} -> (tensor<32x16xf32>, tensor<32x8xf32>, tensor<?x2x16x16xf32>)
// PAR: linalg.generic {{.*}} outs(%{{.*}} : tensor<2x16x16xf32>)
// PAR: linalg.generic {{.*}} outs(%{{.*}} : tensor<32x16xf32>)
// PAR: linalg.generic {{.*}} outs(%{{.*}} : tensor<32x8xf32>)
// PAR: scf.for {{.*}} -> (tensor<1x?x2x16xf32>)
// PAR: tensor.insert_slice %{{.*}} into %{{.*}}[0, %{{.*}}, 0, 0] [1, %{{.*}}, 2, 16] [1, 1, 1, 1] : tensor<1x?x2x16xf32> into tensor<1x?x2x16xf32>
// PAR: scf.forall.in_parallel
// PAR-NEXT: tensor.parallel_insert_slice %{{.*}} into %[[DQ]][%[[B]], 0, %[[H0]], 0] [1, %{{.*}}, 2, 16]
// PAR-NEXT: tensor.parallel_insert_slice %{{.*}} into %[[DK]][%[[B]], 0, %[[H]], 0] [1, %{{.*}}, 1, 16]
// PAR-NEXT: tensor.parallel_insert_slice %{{.*}} into %[[DV]][%[[B]], 0, %[[H]], 0] [1, %{{.*}}, 1, 8]
func.func @flash_grad(%q: tensor<?x?x4x16xf32>, %k: tensor<?x?x2x16xf32>,
                      %v: tensor<?x?x2x8xf32>, %o: tensor<?x?x4x8xf32>,
                      %do: tensor<?x?x4x8xf32>, %dq0: tensor<?x?x4x16xf32>,
                      %dk0: tensor<?x?x2x16xf32>, %dv0: tensor<?x?x2x8xf32>)
    -> (tensor<?x?x4x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x8xf32>) {
  %dq, %dk, %dv = attn.flash_attention_grad %q, %k, %v, %o, %do
      outs(%dq0, %dk0, %dv0) {causal, block_q = 16 : i64, block_kv = 32 : i64}
      : (tensor<?x?x4x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x8xf32>,
         tensor<?x?x4x8xf32>, tensor<?x?x4x8xf32>, tensor<?x?x4x16xf32>,
         tensor<?x?x2x16xf32>, tensor<?x?x2x8xf32>)
      -> (tensor<?x?x4x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x8xf32>)
  return %dq, %dk, %dv
      : tensor<?x?x4x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x8xf32>
}

// -----

// attn.flash_attention_grad, K=V with key_rope (half of each head rotated):
// the key tiles are rotated as they are loaded ([32, 2, 4] pairs of the 8
// rotated dims), the value tiles are the un-rotated shared tensor, and each
// key tile's dK is rotated back (rope^T) and added to its dV before the one
// store of the shared gradient: two results, no separate dv. The rotation
// tables are built once, before the tile loop.
// PAR-LABEL: func.func @flash_grad_shared
// PAR: math.cos
// PAR: math.sin
// PAR: scf.forall (%[[B:.*]], %[[H:.*]]) in (%{{.*}}, 2) shared_outs(%[[DQ:.*]] = %arg5, %[[DKV:.*]] = %arg6) -> (tensor<?x?x4x16xf32>, tensor<?x?x2x16xf32>)
// PAR-NOT: math.cos
// PAR: scf.for {{.*}} -> (tensor<?x32x16xf32>)
// PAR: tensor.expand_shape {{.*}} into tensor<32x2x4xf32>
// PAR: linalg.generic
// PAR: } -> tensor<32x2x4xf32>
// PAR: scf.for {{.*}} -> (tensor<?x32x16xf32>)
// PAR-NOT: tensor<32x2x4xf32>
// PAR: scf.for {{.*}} -> (tensor<?x2x16x16xf32>, tensor<?x2x16x16xf32>, tensor<?x2x16x16xf32>, tensor<?x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>)
// PAR: scf.for {{.*}} -> (tensor<1x?x1x16xf32>, tensor<?x2x16x16xf32>)
// PAR: %[[GRADS:.*]]:3 = scf.for {{.*}} -> (tensor<32x16xf32>, tensor<32x16xf32>, tensor<?x2x16x16xf32>)
// PAR: %[[DKROWS:.*]] = tensor.extract_slice %[[GRADS]]#0[0, 0] [32, 8] [1, 1]
// PAR: tensor.expand_shape %[[DKROWS]] {{.*}} into tensor<32x2x4xf32>
// PAR: linalg.generic
// PAR: } -> tensor<32x2x4xf32>
// PAR: %[[SUM:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[GRADS]]#1 : tensor<32x16xf32>, tensor<32x16xf32>)
// PAR: arith.addf
// PAR: linalg.generic {{.*}} ins(%{{.*}} : tensor<?x16xf32>) outs(%{{.*}} : tensor<1x?x1x16xf32>)
// PAR: scf.forall.in_parallel
// PAR-NEXT: tensor.parallel_insert_slice %{{.*}} into %[[DQ]][%[[B]], 0, %{{.*}}, 0] [1, %{{.*}}, 2, 16]
// PAR-NEXT: tensor.parallel_insert_slice %{{.*}} into %[[DKV]][%[[B]], 0, %[[H]], 0] [1, %{{.*}}, 1, 16]
// PAR-NEXT: }
func.func @flash_grad_shared(%q: tensor<?x?x4x16xf32>,
                             %kv: tensor<?x?x2x16xf32>,
                             %o: tensor<?x?x4x16xf32>,
                             %do: tensor<?x?x4x16xf32>,
                             %lse: tensor<?x?x4xf32>,
                             %dq0: tensor<?x?x4x16xf32>,
                             %dkv0: tensor<?x?x2x16xf32>)
    -> (tensor<?x?x4x16xf32>, tensor<?x?x2x16xf32>) {
  %dq, %dkv = attn.flash_attention_grad %q, %kv, %o, %do lse(%lse)
      outs(%dq0, %dkv0)
      {block_q = 16 : i64, block_kv = 32 : i64, causal,
       key_rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
      : (tensor<?x?x4x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x4x16xf32>,
         tensor<?x?x4x16xf32>, tensor<?x?x4xf32>, tensor<?x?x4x16xf32>,
         tensor<?x?x2x16xf32>)
      -> (tensor<?x?x4x16xf32>, tensor<?x?x2x16xf32>)
  return %dq, %dkv : tensor<?x?x4x16xf32>, tensor<?x?x2x16xf32>
}

// -----

// attn.flash_attention_grad with a per-head logit bias and its gradient
// accumulated: the batch entries all add into the [Hq, S, T] gradient, so
// they are a sequential loop around the parallel KV heads, each of which
// owns the slice of its G = 2 query heads. Each score tile reads its
// [2, 16, 32] bias tile; each tile pair adds the valid part of its dS^T
// into the gradient, which the key and query loops carry.
// PAR-LABEL: func.func @flash_grad_bias
// PAR: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %arg5, %{{.*}} = %arg6, %[[DBB:.*]] = %arg7) -> (tensor<?x?x4x16xf32>, tensor<?x?x2x16xf32>, tensor<4x?x?xf32>)
// PAR: %[[DBT:.*]] = tensor.extract_slice %[[DBB]][0, 0, 0] [4, %{{.*}}, %{{.*}}]
// PAR: scf.forall (%[[H:.*]]) in (2) shared_outs(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %[[DB:.*]] = %[[DBT]])
// PAR: %[[H0:.*]] = affine.apply #{{.*}}(%[[H]])
// PAR: tensor.extract_slice %[[DB]][%[[H0]], 0, 0] [2, %{{.*}}, %{{.*}}] [1, 1, 1] : tensor<4x?x?xf32> to tensor<2x?x?xf32>
// PAR: tensor.extract_slice %{{.*}}[0, %{{.*}}, %{{.*}}] [2, 16, 32] [1, 1, 1] : tensor<2x?x?xf32> to tensor<2x16x32xf32>
// PAR: scf.for {{.*}} -> (tensor<1x?x1x16xf32>, tensor<2x?x?xf32>, tensor<?x2x16x16xf32>)
// PAR: scf.for {{.*}} -> (tensor<32x16xf32>, tensor<32x16xf32>, tensor<?x2x16x16xf32>, tensor<2x?x?xf32>)
// PAR: %[[DS:.*]] = tensor.extract_slice %{{.*}}[0, 0, 0] [2, %{{.*}}, %{{.*}}] [1, 1, 1] : tensor<2x32x16xf32> to tensor<2x?x?xf32>
// PAR: linalg.generic {{.*}} ins(%[[DS]] : tensor<2x?x?xf32>) outs(%{{.*}} : tensor<2x?x?xf32>)
// PAR: arith.addf
// PAR: tensor.insert_slice %{{.*}} : tensor<2x?x?xf32> into tensor<2x?x?xf32>
// PAR: scf.forall.in_parallel
// PAR: tensor.parallel_insert_slice %{{.*}} into %[[DB]][%[[H0]], 0, 0] [2, %{{.*}}, %{{.*}}] [1, 1, 1] : tensor<2x?x?xf32> into tensor<4x?x?xf32>
// PAR: tensor.insert_slice %{{.*}} into %[[DBB]][0, 0, 0] [4, %{{.*}}, %{{.*}}] [1, 1, 1] : tensor<4x?x?xf32> into tensor<4x?x?xf32>
func.func @flash_grad_bias(%q: tensor<?x?x4x16xf32>,
                           %kv: tensor<?x?x2x16xf32>,
                           %o: tensor<?x?x4x16xf32>,
                           %do: tensor<?x?x4x16xf32>,
                           %bias: tensor<4x?x?xf32>,
                           %dq0: tensor<?x?x4x16xf32>,
                           %dkv0: tensor<?x?x2x16xf32>,
                           %db0: tensor<4x?x?xf32>)
    -> (tensor<?x?x4x16xf32>, tensor<?x?x2x16xf32>, tensor<4x?x?xf32>) {
  %dq, %dkv, %db = attn.flash_attention_grad %q, %kv, %o, %do bias(%bias)
      outs(%dq0, %dkv0) accumulate(%db0)
      {block_q = 16 : i64, block_kv = 32 : i64, causal}
      : (tensor<?x?x4x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x4x16xf32>,
         tensor<?x?x4x16xf32>, tensor<4x?x?xf32>, tensor<?x?x4x16xf32>,
         tensor<?x?x2x16xf32>, tensor<4x?x?xf32>)
      -> (tensor<?x?x4x16xf32>, tensor<?x?x2x16xf32>, tensor<4x?x?xf32>)
  return %dq, %dkv, %db
      : tensor<?x?x4x16xf32>, tensor<?x?x2x16xf32>, tensor<4x?x?xf32>
}

// -----

// attn.fused_weight_grad: the whole 8-token chunks of both operands packed
// once, before the tile loops, into panels [columns / block, chunks, 8,
// block]; one tile per (16 output, 24 input features), each a GEMM over the
// chunks of its two panels (the cotangent read transposed, the input
// features innermost), then the zero-padded last chunk, then one add into
// the init tile.
// CHECK-LABEL: func.func @weight_grad
// CHECK: scf.for %[[O:.*]] = %c0 to %c32 step %c16 iter_args(%{{.*}} = %arg2) -> (tensor<32x48xf32>)
// CHECK: scf.for %[[I:.*]] = %c0 to %c48 step %c24 iter_args(%[[DW:.*]] = %{{.*}}) -> (tensor<32x48xf32>)
// CHECK: scf.for {{.*}} -> (tensor<16x24xf32>)
// CHECK: scf.if {{.*}} -> (tensor<16x24xf32>)
// CHECK: tensor.insert_slice %{{.*}} into %[[DW]][%[[O]], %[[I]]] [16, 24] [1, 1]
// PAR-LABEL: func.func @weight_grad
// PAR: %[[CHUNKS:.*]] = arith.floordivsi %{{.*}}, %c8
// PAR: %[[WHOLE:.*]] = arith.muli %[[CHUNKS]], %c8
// PAR: %[[DYWHOLE:.*]] = tensor.extract_slice %arg1[0, 0] [%[[WHOLE]], 32] [1, 1]
// PAR: %[[DYBLOCKS:.*]] = tensor.expand_shape %[[DYWHOLE]] {{\[}}[0, 1], [2, 3]] output_shape [%[[CHUNKS]], 8, 2, 16]
// With parallel=true each operand's panels are packed by the threads, one
// chunk per iteration.
// PAR: %[[DYPANELS:.*]] = scf.forall (%[[CHUNK:.*]]) in (%{{.*}}) shared_outs(%[[DYPACKED:.*]] = %{{.*}}) -> (tensor<2x?x8x16xf32>)
// PAR: tensor.extract_slice %[[DYBLOCKS]][%[[CHUNK]], 0, 0, 0] [1, 8, 2, 16]
// PAR: linalg.generic {indexing_maps = [#[[IDENTITY:.*]], #[[PANEL:.*]]], {{.*}} ins(%{{.*}} : tensor<1x8x2x16xf32>) outs(%{{.*}} : tensor<2x1x8x16xf32>)
// PAR: tensor.parallel_insert_slice %{{.*}} into %[[DYPACKED]][0, %[[CHUNK]], 0, 0] [2, 1, 8, 16]
// PAR: %[[XPANELS:.*]] = scf.forall
// PAR: linalg.generic {{.*}} ins(%{{.*}} : tensor<1x8x2x24xf32>) outs(%{{.*}} : tensor<2x1x8x24xf32>)
// PAR: scf.forall (%[[O:.*]], %[[I:.*]]) = (0, 0) to (32, 48) step (16, 24) shared_outs(%[[DW:.*]] = %arg2)
// PAR: %[[X:.*]] = tensor.extract_slice %arg0[0, %[[I]]] [%{{.*}}, 24] [1, 1] : tensor<?x48xf32> to tensor<?x24xf32>
// PAR: %[[DY:.*]] = tensor.extract_slice %arg1[0, %[[O]]] [%{{.*}}, 16] [1, 1] : tensor<?x32xf32> to tensor<?x16xf32>
// PAR: %[[INIT:.*]] = tensor.extract_slice %[[DW]][%[[O]], %[[I]]] [16, 24] [1, 1]
// PAR: %[[DYPANEL:.*]] = arith.floordivsi %[[O]], %c16
// PAR: %[[XPANEL:.*]] = arith.floordivsi %[[I]], %c24
// PAR: %[[SUM:.*]] = scf.for %[[STEP:.*]] = %c0 to %[[CHUNKS]] step %c1 iter_args(%{{.*}} = %{{.*}}) -> (tensor<16x24xf32>)
// PAR: tensor.extract_slice %[[DYPANELS]][%[[DYPANEL]], %[[STEP]], 0, 0] [1, 1, 8, 16] [1, 1, 1, 1] : tensor<2x?x8x16xf32> to tensor<8x16xf32>
// PAR: tensor.extract_slice %[[XPANELS]][%[[XPANEL]], %[[STEP]], 0, 0] [1, 1, 8, 24] [1, 1, 1, 1] : tensor<2x?x8x24xf32> to tensor<8x24xf32>
// PAR: linalg.generic {indexing_maps = [#[[TRANSPOSED:.*]], #[[ROWS:.*]], #[[ACC:.*]]], iterator_types = ["parallel", "reduction", "parallel"]}
// PAR: scf.if %{{.*}} -> (tensor<16x24xf32>)
// PAR: tensor.extract_slice %[[DY]][%[[WHOLE]], 0]
// PAR: tensor.pad
// PAR: } : tensor<?x16xf32> to tensor<8x16xf32>
// PAR: tensor.pad
// PAR: } : tensor<?x24xf32> to tensor<8x24xf32>
// PAR: linalg.generic {{.*}} outs(%[[SUM]] : tensor<16x24xf32>)
// PAR: linalg.generic {{.*}} outs(%[[INIT]] : tensor<16x24xf32>)
// PAR: tensor.parallel_insert_slice %{{.*}} into %[[DW]][%[[O]], %[[I]]] [16, 24] [1, 1]
func.func @weight_grad(%x: tensor<?x48xf32>, %dy: tensor<?x32xf32>,
                       %init: tensor<32x48xf32>) -> tensor<32x48xf32> {
  %dw = attn.fused_weight_grad %x, %dy outs(%init)
      {block_m = 16 : i64, block_n = 24 : i64, block_k = 8 : i64}
      : (tensor<?x48xf32>, tensor<?x32xf32>, tensor<32x48xf32>)
      -> tensor<32x48xf32>
  return %dw : tensor<32x48xf32>
}
