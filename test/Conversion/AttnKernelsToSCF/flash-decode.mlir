// RUN: attnfuse-opt %s --convert-attn-kernels-to-scf --canonicalize --cse -split-input-file | FileCheck %s
// RUN: attnfuse-opt %s --convert-attn-kernels-to-scf=parallel=true --canonicalize --cse -split-input-file | FileCheck %s --check-prefix=PAR

// attn.flash_decode is tiled through its TilingInterface, one tile per
// (sequence, KV head), after the RoPE tables every tile shares. With
// parallel=true the tiles are one scf.forall whose shared_outs are the
// output's init and the cache: a tile checks its position, writes its new
// key row into its slice of the cache and attends to that slice only.
// PAR-LABEL: func.func @decode_kv
// PAR: scf.forall (%[[B:[a-z0-9_]+]], %[[H:[a-z0-9_]+]]) in (%{{.*}}, 2) shared_outs(%[[ACC:[a-z0-9_]+]] = %{{.*}}, %[[CACHE:[a-z0-9_]+]] = %arg2) -> (tensor<?x1x4x16xf32>, tensor<?x64x2x16xf32>)
// PAR: %[[SLICE:.*]] = tensor.extract_slice %[[CACHE]][%[[B]], 0, %[[H]], 0] [1, 64, 1, 16]
// PAR: cf.assert %{{.*}}, "attn.flash_decode: positions[b] is outside the cache capacity"
// PAR: %[[WRITTEN:.*]] = tensor.insert_slice %{{.*}} into %[[SLICE]][0, %{{.*}}, 0, 0] [1, 1, 1, 16]
// PAR: tensor.extract %[[WRITTEN]][%c0, %{{.*}}, %c0, %{{.*}}]
// PAR: scf.forall.in_parallel
// PAR-NEXT: tensor.parallel_insert_slice %{{.*}} into %[[ACC]][%[[B]], 0, %{{.*}}, 0] [1, 1, 2, 16] [1, 1, 1, 1] : tensor<1x1x2x16xf32> into tensor<?x1x4x16xf32>
// PAR-NEXT: tensor.parallel_insert_slice %[[WRITTEN]] into %[[CACHE]][%[[B]], 0, %[[H]], 0] [1, 64, 1, 16] [1, 1, 1, 1] : tensor<1x64x1x16xf32> into tensor<?x64x2x16xf32>
// The sequences of a paged cache share its pages: one tile per KV head
// (one here, so the forall folds away) walks the sequences in order.
// PAR-LABEL: func.func @decode_paged
// PAR-NOT: scf.forall
// PAR: scf.for %{{.*}} = %c0 to %{{.*}} step %c1 iter_args({{.*}}) -> (tensor<?x1x4x48xf16>, tensor<?x16x1x32xf16>, tensor<?x16x1x48xf16>)

// K=V cache with GQA-2 and key RoPE: the RoPE tables cover the positions
// the step rotates at, [0, end of the key tile holding the largest p) over
// the batch, not the 64 rows of the capacity. A tile's position is checked
// against the capacity, the new key is inserted at it, and the two query
// heads of its KV head stream over key tiles. Tiles whose rows all
// lie at or before p are read in place from the updated cache slice,
// rotated in their own layout as [32, 2, 8] (a dim and its partner) with
// the table rows of the tile, then transposed; the same rows are multiplied
// un-rotated with the probabilities (K=V). The tile holding p, when p + 1
// is not a whole number of tiles, is gathered with the rows past p clamped.
// CHECK-LABEL: func.func @decode_kv
// CHECK: %[[RANGE:.*]]:2 = scf.for %{{.*}} = %c0 to %{{.*}} step %c1 iter_args(%{{.*}} = %c64, %{{.*}} = %c0) -> (index, index)
// CHECK: arith.ceildivsi %{{.*}}, %c32
// CHECK: %[[TABLEROWS:.*]] = arith.maxsi %{{.*}}, %c0
// CHECK: math.cos
// CHECK: %[[COS:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<?x8xf32>)
// CHECK: scf.for %[[B:[a-z0-9_]+]] = %c0 to %{{.*}} step %c1 iter_args(%[[OUT:[a-z0-9_]+]] = %{{.*}}, %[[CACHE:[a-z0-9_]+]] = %arg2)
// CHECK: scf.for %[[H:[a-z0-9_]+]] = %c0 to %c2 step %c1 iter_args(%[[OUT2:[a-z0-9_]+]] = %[[OUT]], %[[CACHE2:[a-z0-9_]+]] = %[[CACHE]])
// CHECK: %[[QUERY:.*]] = tensor.extract_slice %arg0[%[[B]], 0, %{{.*}}, 0] [1, 1, 2, 16]
// CHECK: %[[NEW:.*]] = tensor.extract_slice %arg1[%[[B]], 0, %[[H]], 0] [1, 1, 1, 16]
// CHECK: %[[SLICE:.*]] = tensor.extract_slice %[[CACHE2]][%[[B]], 0, %[[H]], 0] [1, 64, 1, 16] [1, 1, 1, 1] : tensor<?x64x2x16xf32> to tensor<1x64x1x16xf32>
// CHECK: tensor.extract_slice %arg3[%[[B]]] [1] [1]
// CHECK: cf.assert %{{.*}}, "attn.flash_decode: positions[b] is outside the cache capacity"
// CHECK: %[[WRITTEN:.*]] = tensor.insert_slice %[[NEW]] into %[[SLICE]][0, %{{.*}}, 0, 0] [1, 1, 1, 16]
// CHECK: tensor.extract_slice %[[QUERY]][0, 0, 0, 0] [1, 1, 2, 16] [1, 1, 1, 1] : tensor<1x1x2x16xf32> to tensor<2x16xf32>
// CHECK: %[[STATE:.*]]:3 = scf.for {{.*}} -> (tensor<2xf32>, tensor<2xf32>, tensor<2x16xf32>)
// CHECK: %[[ROWS:.*]] = tensor.extract_slice %[[WRITTEN]][0, %{{.*}}, 0, 0] [1, 32, 1, 16] [1, 1, 1, 1] : tensor<1x64x1x16xf32> to tensor<32x16xf32>
// CHECK: %[[PAIRS:.*]] = tensor.expand_shape %[[ROWS]] {{\[\[}}0], [1, 2]] output_shape [32, 2, 8]
// CHECK: %[[COSROWS:.*]] = tensor.extract_slice %[[COS]][%{{.*}}, 0] [32, 8] [1, 1] : tensor<?x8xf32> to tensor<32x8xf32>
// CHECK: %[[ROT:.*]] = linalg.generic {{.*}} ins(%[[PAIRS]], %[[PAIRS]], %[[COSROWS]], %{{.*}} : tensor<32x2x8xf32>, tensor<32x2x8xf32>, tensor<32x8xf32>, tensor<32x8xf32>) outs(%{{.*}} : tensor<32x2x8xf32>)
// CHECK: %[[ROTROWS:.*]] = tensor.collapse_shape %[[ROT]] {{\[\[}}0], [1, 2]]
// CHECK: %[[KT:.*]] = linalg.generic {{.*}} ins(%[[ROTROWS]] : tensor<32x16xf32>) outs(%{{.*}} : tensor<16x32xf32>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[KT]] : tensor<2x16xf32>, tensor<16x32xf32>) outs(%{{.*}} : tensor<2x32xf32>)
// CHECK: math.exp
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[ROWS]] : tensor<2x32xf32>, tensor<32x16xf32>) outs(%{{.*}} : tensor<2x16xf32>)
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[STATE]]#0, %{{.*}} = %[[STATE]]#1, %{{.*}} = %[[STATE]]#2)
// CHECK: %[[GATHERED:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<32x16xf32>)
// CHECK: arith.minsi
// CHECK: tensor.extract %[[WRITTEN]][%c0, %{{.*}}, %c0, %{{.*}}] : tensor<1x64x1x16xf32>
// CHECK: tensor.expand_shape %[[GATHERED]] {{\[\[}}0], [1, 2]] output_shape [32, 2, 8]
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[GATHERED]] : tensor<2x32xf32>, tensor<32x16xf32>) outs(%{{.*}} : tensor<2x16xf32>)
// CHECK: %[[TILEOUT:.*]] = tensor.insert_slice %{{.*}} into %[[OUT2]][%[[B]], 0, %{{.*}}, 0] [1, 1, 2, 16]
// CHECK: %[[TILECACHE:.*]] = tensor.insert_slice %[[WRITTEN]] into %[[CACHE2]][%[[B]], 0, %[[H]], 0] [1, 64, 1, 16]
// CHECK: scf.yield %[[TILEOUT]], %[[TILECACHE]] : tensor<?x1x4x16xf32>, tensor<?x64x2x16xf32>
// CHECK-NOT: attn.
func.func @decode_kv(%q: tensor<?x1x4x16xf32>, %k: tensor<?x1x2x16xf32>,
                     %cache: tensor<?x64x2x16xf32>, %pos: tensor<?xi32>)
    -> (tensor<?x1x4x16xf32>, tensor<?x64x2x16xf32>) {
  %di46_c0 = arith.constant 0 : index
  %di46_b = tensor.dim %q, %di46_c0 : tensor<?x1x4x16xf32>
  %di46_init = tensor.empty(%di46_b) : tensor<?x1x4x16xf32>
  %o, %c = attn.flash_decode %q, %k outs(%di46_init) cache(%cache) positions(%pos)
      {block_kv = 32 : i64, key_rope = #attn.rope<theta = 10000.0>}
      : (tensor<?x1x4x16xf32>, tensor<?x1x2x16xf32>, tensor<?x1x4x16xf32>, tensor<?x64x2x16xf32>, tensor<?xi32>) -> (tensor<?x1x4x16xf32>, tensor<?x64x2x16xf32>)
  return %o, %c : tensor<?x1x4x16xf32>, tensor<?x64x2x16xf32>
}

// -----

// Paged separate K/V: one tile per KV head takes every sequence (they share
// the pages). The write goes to the page the block table names at
// position / page_size (checked to exist), both caches are updated, and
// every tile is gathered through the block table (none is read in place).
// CHECK-LABEL: func.func @decode_paged
// CHECK: %[[P:.*]] = arith.index_cast %{{.*}} : i32 to index
// CHECK: %[[PAGEIDX:.*]] = arith.divsi %[[P]], %c16
// CHECK: %[[SLOT:.*]] = arith.remsi %[[P]], %c16
// CHECK: %[[PAGE:.*]] = tensor.extract %{{.*}}[%{{.*}}, %[[PAGEIDX]]] : tensor<?x?xi32>
// CHECK: cf.assert %{{.*}}, "attn.flash_decode: block_table names a page outside the paged cache"
// CHECK: %[[KC:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[%{{.*}}, %[[SLOT]], 0, 0] [1, 1, 1, 32]
// CHECK: %[[VC:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[%{{.*}}, %[[SLOT]], 0, 0] [1, 1, 1, 48]
// CHECK-NOT: tensor.extract_slice %[[KC]]
// CHECK: tensor.extract %{{.*}} : tensor<?x?xi32>
// CHECK: tensor.extract %[[KC]]
// CHECK: tensor.extract %{{.*}} : tensor<?x?xi32>
// CHECK: tensor.extract %[[VC]]
// CHECK: scf.yield %{{.*}}, %[[KC]], %[[VC]]
func.func @decode_paged(%q: tensor<?x1x4x32xf16>, %k: tensor<?x1x1x32xf16>,
                        %v: tensor<?x1x1x48xf16>, %kp: tensor<?x16x1x32xf16>,
                        %vp: tensor<?x16x1x48xf16>, %pos: tensor<?xi32>,
                        %bt: tensor<?x?xi32>)
    -> (tensor<?x1x4x48xf16>, tensor<?x16x1x32xf16>, tensor<?x16x1x48xf16>) {
  %di47_c0 = arith.constant 0 : index
  %di47_b = tensor.dim %q, %di47_c0 : tensor<?x1x4x32xf16>
  %di47_init = tensor.empty(%di47_b) : tensor<?x1x4x48xf16>
  %o, %kc, %vc = attn.flash_decode %q, %k, %v outs(%di47_init) cache(%kp, %vp) positions(%pos)
      block_table(%bt) {block_kv = 16 : i64, window = 100 : i64}
      : (tensor<?x1x4x32xf16>, tensor<?x1x1x32xf16>, tensor<?x1x1x48xf16>, tensor<?x1x4x48xf16>, tensor<?x16x1x32xf16>, tensor<?x16x1x48xf16>, tensor<?xi32>, tensor<?x?xi32>)
        -> (tensor<?x1x4x48xf16>, tensor<?x16x1x32xf16>, tensor<?x16x1x48xf16>)
  return %o, %kc, %vc
      : tensor<?x1x4x48xf16>, tensor<?x16x1x32xf16>, tensor<?x16x1x48xf16>
}

// -----

// A sliding window with RoPE: the tables start at the first key tile of the
// window (max(p - 39, 0) rounded down to a tile of 32), and every lookup
// subtracts that first position: the query's at p, each in-place tile's
// rows from its first key.
// CHECK-LABEL: func.func @decode_window_rope
// CHECK: %[[CLAMPED:.*]] = arith.minsi %{{.*}}, %c255 : index
// CHECK: %[[LO:.*]] = arith.subi %[[CLAMPED]], %c39 : index
// CHECK: %[[LOBLOCK:.*]] = arith.floordivsi %{{.*}}, %c32 : index
// CHECK: %[[START:.*]] = arith.muli %[[LOBLOCK]], %c32 : index
// CHECK: %[[FIRST:.*]] = arith.minsi %[[START]], %c256 : index
// CHECK: math.cos
// CHECK: %[[COS:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<?x8xf32>)
// CHECK: cf.assert
// CHECK: %[[QROW:.*]] = arith.subi %{{.*}}, %[[FIRST]] : index
// CHECK: tensor.extract %[[COS]][%[[QROW]], %{{.*}}] : tensor<?x8xf32>
// CHECK: scf.for %[[BLOCK:.*]] = %{{.*}} to %{{.*}} step %c1
// CHECK: %[[KEY0:.*]] = arith.muli %[[BLOCK]], %c32 : index
// CHECK: %[[KROW:.*]] = arith.subi %[[KEY0]], %[[FIRST]] : index
// CHECK: tensor.extract_slice %[[COS]][%[[KROW]], 0] [32, 8] [1, 1] : tensor<?x8xf32> to tensor<32x8xf32>
// CHECK-NOT: attn.
func.func @decode_window_rope(%q: tensor<1x1x2x16xf32>,
                              %k: tensor<1x1x1x16xf32>,
                              %cache: tensor<1x256x1x16xf32>,
                              %pos: tensor<1xi32>)
    -> (tensor<1x1x2x16xf32>, tensor<1x256x1x16xf32>) {
  %di48_init = tensor.empty() : tensor<1x1x2x16xf32>
  %o, %c = attn.flash_decode %q, %k outs(%di48_init) cache(%cache) positions(%pos)
      {block_kv = 32 : i64, window = 40 : i64,
       query_rope = #attn.rope<theta = 10000.0>,
       key_rope = #attn.rope<theta = 10000.0>}
      : (tensor<1x1x2x16xf32>, tensor<1x1x1x16xf32>, tensor<1x1x2x16xf32>, tensor<1x256x1x16xf32>, tensor<1xi32>) -> (tensor<1x1x2x16xf32>, tensor<1x256x1x16xf32>)
  return %o, %c : tensor<1x1x2x16xf32>, tensor<1x256x1x16xf32>
}
