// RUN: attnfuse-opt %s --attn-lower-kernel-vectors --canonicalize -split-input-file | FileCheck %s

// A 2-D read of a row-major buffer: one vector.load per row.
// CHECK-LABEL: func.func @block_read
// CHECK-COUNT-4: vector.load %arg0[%{{.*}}, %{{.*}}] : memref<64x64xf32>, vector<16xf32>
// CHECK-NOT: memref.load
func.func @block_read(%m: memref<64x64xf32>, %i: index, %j: index)
    -> vector<4x16xf32> {
  %pad = ub.poison : f32
  %v = vector.transfer_read %m[%i, %j], %pad {in_bounds = [true, true]}
      : memref<64x64xf32>, vector<4x16xf32>
  return %v : vector<4x16xf32>
}

// -----

// exp on vectors: a polynomial (no math.exp left for LLVM to scalarize into
// expf calls).
// CHECK-LABEL: func.func @exp_row
// CHECK-NOT: math.exp
// CHECK: math.fma
// CHECK-NOT: math.exp
func.func @exp_row(%x: vector<64xf32>) -> vector<64xf32> {
  %e = math.exp %x : vector<64xf32>
  return %e : vector<64xf32>
}

// -----

// Both branches yield a row-major buffer cast to a dynamic layout (as
// bufferization leaves an scf.if): the if yields the row-major type, and the
// row read after it is a vector load, not a loop of scalar loads.
// CHECK-LABEL: func.func @if_layout
// CHECK: %[[TILE:.*]] = scf.if %{{.*}} -> (memref<4x64xf32>)
// CHECK: vector.load %[[TILE]][%{{.*}}, %{{.*}}] : memref<4x64xf32>, vector<64xf32>
// CHECK-NOT: memref.load
func.func @if_layout(%c: i1, %i: index) -> vector<64xf32> {
  %pad = ub.poison : f32
  %t = scf.if %c -> (memref<4x64xf32, strided<[?, ?], offset: ?>>) {
    %a = memref.alloc() : memref<4x64xf32>
    %ca = memref.cast %a : memref<4x64xf32> to memref<4x64xf32, strided<[?, ?], offset: ?>>
    scf.yield %ca : memref<4x64xf32, strided<[?, ?], offset: ?>>
  } else {
    %b = memref.alloc() : memref<4x64xf32>
    %cb = memref.cast %b : memref<4x64xf32> to memref<4x64xf32, strided<[?, ?], offset: ?>>
    scf.yield %cb : memref<4x64xf32, strided<[?, ?], offset: ?>>
  }
  %v = vector.transfer_read %t[%i, %i], %pad {in_bounds = [true]}
      : memref<4x64xf32, strided<[?, ?], offset: ?>>, vector<64xf32>
  return %v : vector<64xf32>
}

// -----

// A copy into a strided view (an input copied into its padded buffer):
// linalg.copy, which lowers to loops, instead of the element-by-element
// memrefCopy runtime call. Row-major to row-major stays a memref.copy
// (a memcpy).
// CHECK-LABEL: func.func @copies
// CHECK: linalg.copy ins(%arg0 : memref<?x64xf32>) outs(%{{.*}} : memref<?x64xf32, strided<[64, 1]>>)
// CHECK: memref.copy %arg0, %arg2 : memref<?x64xf32> to memref<?x64xf32>
func.func @copies(%src: memref<?x64xf32>, %padded: memref<?x64xf32>,
                  %same: memref<?x64xf32>, %n: index) {
  %view = memref.subview %padded[0, 0] [%n, 64] [1, 1]
      : memref<?x64xf32> to memref<?x64xf32, strided<[64, 1]>>
  memref.copy %src, %view : memref<?x64xf32> to memref<?x64xf32, strided<[64, 1]>>
  memref.copy %src, %same : memref<?x64xf32> to memref<?x64xf32>
  return
}
