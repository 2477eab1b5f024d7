// RUN: attnfuse-opt %s --attn-vectorize-kernel-tiles --canonicalize --cse -split-input-file | FileCheck %s
// RUN: attnfuse-opt %s --attn-vectorize-kernel-tiles="register-tile-m=8 register-tile-n=8" --canonicalize -split-input-file | FileCheck %s --check-prefix=BLOCK8
// RUN: attnfuse-opt %s --attn-vectorize-kernel-tiles="register-tile-m=6 register-tile-n=32" --canonicalize -split-input-file | FileCheck %s --check-prefix=SPLIT
// RUN: attnfuse-opt %s --attn-vectorize-kernel-tiles="register-tile-m=2 register-tile-n=64" --canonicalize -split-input-file | FileCheck %s --check-prefix=NARROW
// RUN: attnfuse-opt %s --attn-vectorize-kernel-tiles="max-vector-size=64 max-reduction-vector-size=16" --canonicalize -split-input-file | FileCheck %s --check-prefix=SHORT
// RUN: not attnfuse-opt %s --attn-vectorize-kernel-tiles="register-tile-m=0" -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not attnfuse-opt %s --attn-vectorize-kernel-tiles="max-reduction-vector-size=0" -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: attn-vectorize-kernel-tiles: register-tile-m, register-tile-n, max-vector-size and max-reduction-vector-size must be positive

// A GEMM tile [8, 16] x [16, 32]: 4 x 16 register blocks; the k loop is
// innermost and carries the block as a vector, each step one FMA of a
// broadcast column of x and a row of W.
// CHECK-LABEL: func.func @gemm_tile
// CHECK: scf.for %[[I:.*]] = %c0 to %c8 step %c4
// CHECK: scf.for %[[J:.*]] = %c0 to %c32 step %c16
// CHECK: %[[BLOCK:.*]] = tensor.extract_slice %{{.*}}[%[[I]], %[[J]]] [4, 16] [1, 1]
// CHECK: %[[INIT:.*]] = vector.transfer_read %[[BLOCK]]{{.*}} vector<4x16xf32>
// CHECK: %[[SUM:.*]] = scf.for %[[K:.*]] = %c0 to %c16 step %c1 iter_args(%[[ACC:.*]] = %[[INIT]]) -> (vector<4x16xf32>)
// CHECK: %[[LHS:.*]] = vector.transfer_read %arg0[%[[I]], %[[K]]]{{.*}} : tensor<8x16xf32>, vector<4x1x16xf32>
// CHECK: %[[RHS:.*]] = vector.transfer_read %arg1[%[[K]], %[[J]]]{{.*}} : tensor<16x32xf32>, vector<4x1x16xf32>
// CHECK: %[[L:.*]] = vector.shape_cast %[[LHS]]
// CHECK: %[[R:.*]] = vector.shape_cast %[[RHS]]
// CHECK: %[[FMA:.*]] = vector.fma %[[L]], %[[R]], %[[ACC]] : vector<4x16xf32>
// CHECK: scf.yield %[[FMA]]
// CHECK: vector.transfer_write %[[SUM]], %[[BLOCK]]
// CHECK: tensor.insert_slice
// BLOCK8-LABEL: func.func @gemm_tile
// BLOCK8: scf.for %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<8x8xf32>)
// BLOCK8: vector.fma %{{.*}} : vector<8x8xf32>
// Rows that are not a whole number of blocks: the 8 rows are one 6-row
// block and one 2-row block (not two 4-row blocks), each with its own k loop.
// SPLIT-LABEL: func.func @gemm_tile
// SPLIT: tensor.extract_slice %arg2[0, 0] [6, 32]
// SPLIT: scf.for {{.*}} -> (vector<6x32xf32>)
// SPLIT: vector.transfer_read %arg0[%c0, %{{.*}}]{{.*}} vector<6x1x32xf32>
// SPLIT: vector.fma %{{.*}} : vector<6x32xf32>
// SPLIT: tensor.insert_slice %{{.*}} into %arg2[0, 0] [6, 32]
// SPLIT: tensor.extract_slice %{{.*}}[6, 0] [2, 32]
// SPLIT: scf.for {{.*}} -> (vector<2x32xf32>)
// SPLIT: vector.transfer_read %arg0[%c6, %{{.*}}]{{.*}} vector<2x1x32xf32>
// SPLIT: vector.fma %{{.*}} : vector<2x32xf32>
// SPLIT-NOT: vector<4x32xf32>
// A tile narrower than the block (32 of 64 columns) takes twice the rows:
// 4 x 32 blocks keep the 2 x 64 block's accumulators.
// NARROW-LABEL: func.func @gemm_tile
// NARROW: scf.for %{{.*}} = %c0 to %c8 step %c4
// NARROW: scf.for {{.*}} -> (vector<4x32xf32>)
// NARROW: vector.fma %{{.*}} : vector<4x32xf32>
func.func @gemm_tile(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>,
                     %acc: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(s, k, n) -> (s, k)>,
                                        affine_map<(s, k, n) -> (k, n)>,
                                        affine_map<(s, k, n) -> (s, n)>],
                       iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x, %w : tensor<8x16xf32>, tensor<16x32xf32>)
      outs(%acc : tensor<8x32xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  } -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

// bf16 operands, f32 accumulation: the factors are extended as vectors.
// CHECK-LABEL: func.func @gemm_tile_bf16
// CHECK: scf.for %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (vector<4x16xf32>)
// CHECK: vector.transfer_read {{.*}} : tensor<8x16xbf16>, vector<4x1x16xbf16>
// CHECK: arith.extf %{{.*}} : vector<4x1x16xbf16> to vector<4x1x16xf32>
// CHECK: vector.fma %{{.*}}, %{{.*}}, %[[ACC]] : vector<4x16xf32>
func.func @gemm_tile_bf16(%x: tensor<8x16xbf16>, %w: tensor<16x32xf32>,
                          %acc: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(s, k, n) -> (s, k)>,
                                        affine_map<(s, k, n) -> (k, n)>,
                                        affine_map<(s, k, n) -> (s, n)>],
                       iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x, %w : tensor<8x16xbf16>, tensor<16x32xf32>)
      outs(%acc : tensor<8x32xf32>) {
  ^bb0(%a: bf16, %b: f32, %c: f32):
    %e = arith.extf %a : bf16 to f32
    %p = arith.mulf %e, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  } -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

// A row reduction (the softmax maximum of a score tile): each whole row
// of 64 (max-reduction-vector-size) is one vector.multi_reduction into the
// row's running maximum; with shorter reduction rows, 16-wide chunks each
// reduced on their own.
// CHECK-LABEL: func.func @row_max
// CHECK: scf.for %{{.*}} = %c0 to %c2 step %c1
// CHECK: scf.for %{{.*}} = %c0 to %c8 step %c1
// CHECK-NOT: scf.for %{{.*}} = %c0 to %c64
// CHECK: %[[ROW:.*]] = vector.transfer_read %arg0{{.*}} : tensor<2x8x64xf32>, vector<1x1x64xf32>
// CHECK: vector.multi_reduction <maxnumf>, %[[ROW]], %{{.*}} [2] : vector<1x1x64xf32> to vector<1x1xf32>
// SHORT-LABEL: func.func @row_max
// SHORT: scf.for %{{.*}} = %c0 to %c64 step %c16
// SHORT: vector.multi_reduction <maxnumf>, %{{.*}}, %{{.*}} [2] : vector<1x1x16xf32> to vector<1x1xf32>
func.func @row_max(%s: tensor<2x8x64xf32>, %m: tensor<2x8xf32>)
    -> tensor<2x8xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(g, i, j) -> (g, i, j)>,
                                        affine_map<(g, i, j) -> (g, i)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%s : tensor<2x8x64xf32>) outs(%m : tensor<2x8xf32>) {
  ^bb0(%a: f32, %c: f32):
    %x = arith.maxnumf %a, %c : f32
    linalg.yield %x : f32
  } -> tensor<2x8xf32>
  return %r : tensor<2x8xf32>
}

// -----

// Sums over an outer loop (a matrix-vector product's partial sums
// acc[n, l] += x[s, l] * w[n, s, l]): the step loop innermost carries the
// row of sums, 64 wide (max-reduction-vector-size): four 16-wide FMA
// chains that run side by side, where one 16-wide chain would wait out the
// FMA latency at every step.
// CHECK-LABEL: func.func @column_sums
// CHECK: scf.for %{{.*}} = %c0 to %c8 step %c1
// CHECK-NOT: scf.for %{{.*}} = %c0 to %c64
// CHECK: scf.for %{{.*}} = %c0 to %c32 step %c1 iter_args(%{{.*}} = %{{.*}}) -> (vector<1x64xf32>)
// CHECK: vector.fma %{{.*}}, %{{.*}}, %{{.*}} : vector<1x64xf32>
// SHORT-LABEL: func.func @column_sums
// SHORT: scf.for %{{.*}} = %c0 to %c64 step %c16
// SHORT: vector.fma %{{.*}}, %{{.*}}, %{{.*}} : vector<1x16xf32>
func.func @column_sums(%x: tensor<32x64xf32>, %w: tensor<8x32x64xf32>,
                       %acc: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(n, s, l) -> (s, l)>,
                                        affine_map<(n, s, l) -> (n, s, l)>,
                                        affine_map<(n, s, l) -> (n, l)>],
                       iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x, %w : tensor<32x64xf32>, tensor<8x32x64xf32>)
      outs(%acc : tensor<8x64xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %t = arith.addf %c, %p : f32
    linalg.yield %t : f32
  } -> tensor<8x64xf32>
  return %r : tensor<8x64xf32>
}

// -----

// Element-wise rows: exp over 16-wide vectors (max-vector-size), the outer
// dimensions loops.
// CHECK-LABEL: func.func @exp_rows
// CHECK: scf.for %{{.*}} = %c0 to %c4 step %c1
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c16
// CHECK: math.exp %{{.*}} : vector<1x16xf32>
// SHORT-LABEL: func.func @exp_rows
// SHORT-NOT: scf.for %{{.*}} = %c0 to %c64
// SHORT: math.exp %{{.*}} : vector<1x64xf32>
func.func @exp_rows(%a: tensor<4x64xf32>, %o: tensor<4x64xf32>)
    -> tensor<4x64xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>,
                                        affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x64xf32>) outs(%o : tensor<4x64xf32>) {
  ^bb0(%x: f32, %c: f32):
    %e = math.exp %x : f32
    linalg.yield %e : f32
  } -> tensor<4x64xf32>
  return %r : tensor<4x64xf32>
}

// -----

// Left alone: a transposing read (a key tile stored [d, keys]), dynamic
// sizes, a body that reads a tensor (a RoPE partner), and a compound index
// (a window at i + j, whose tiles tiling would over-approximate).
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: vector.
// CHECK: linalg.generic
// CHECK: linalg.generic
// CHECK: linalg.generic
// CHECK: linalg.generic
// CHECK-NOT: vector.
func.func @left_alone(%k: tensor<64x16xf32>, %o: tensor<16x64xf32>,
                      %a: tensor<?x64xf32>, %b: tensor<?x64xf32>,
                      %window: tensor<79xf32>)
    -> (tensor<16x64xf32>, tensor<?x64xf32>, tensor<16x64xf32>,
        tensor<16x64xf32>) {
  %t = linalg.generic {indexing_maps = [affine_map<(d, j) -> (j, d)>,
                                        affine_map<(d, j) -> (d, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%k : tensor<64x16xf32>) outs(%o : tensor<16x64xf32>) {
  ^bb0(%x: f32, %c: f32):
    linalg.yield %x : f32
  } -> tensor<16x64xf32>
  %d = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>,
                                        affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<?x64xf32>) outs(%b : tensor<?x64xf32>) {
  ^bb0(%x: f32, %c: f32):
    %e = math.exp %x : f32
    linalg.yield %e : f32
  } -> tensor<?x64xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      outs(%o : tensor<16x64xf32>) {
  ^bb0(%c: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %x = tensor.extract %t[%i, %j] : tensor<16x64xf32>
    linalg.yield %x : f32
  } -> tensor<16x64xf32>
  %w = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i + j)>,
                                        affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%window : tensor<79xf32>) outs(%o : tensor<16x64xf32>) {
  ^bb0(%x: f32, %c: f32):
    linalg.yield %x : f32
  } -> tensor<16x64xf32>
  return %t, %d, %g, %w : tensor<16x64xf32>, tensor<?x64xf32>,
                          tensor<16x64xf32>, tensor<16x64xf32>
}

