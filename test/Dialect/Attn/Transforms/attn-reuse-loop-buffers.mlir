// RUN: attnfuse-opt %s --attn-reuse-loop-buffers -split-input-file | FileCheck %s

// A tile buffer each iteration of two nested loops allocates and frees is
// allocated once, before the outer loop, and freed after it.
// CHECK-LABEL: func.func @nested_loops
// CHECK-NEXT: %[[C0:.*]] = arith.constant 0
// CHECK-NEXT: %[[C1:.*]] = arith.constant 1
// CHECK-NEXT: %[[T:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x4xf32>
// CHECK-NEXT: scf.for
// CHECK-NEXT: scf.for
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%[[T]] : memref<4x4xf32>)
// CHECK-NEXT: memref.copy %[[T]], %arg0
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: memref.dealloc %[[T]] : memref<4x4xf32>
// CHECK-NEXT: return
func.func @nested_loops(%out: memref<4x4xf32>, %n: index, %x: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    scf.for %j = %c0 to %n step %c1 {
      %t = memref.alloc() {alignment = 64 : i64} : memref<4x4xf32>
      linalg.fill ins(%x : f32) outs(%t : memref<4x4xf32>)
      memref.copy %t, %out : memref<4x4xf32> to memref<4x4xf32>
      memref.dealloc %t : memref<4x4xf32>
    }
  }
  return
}

// -----

// The iterations of a parallel loop may run at once: each keeps its own
// buffer, which still leaves the sequential loop inside it.
// CHECK-LABEL: func.func @parallel_loop
// CHECK: scf.parallel
// CHECK-NEXT: %[[T:.*]] = memref.alloc() : memref<4xf32>
// CHECK-NEXT: scf.for
// CHECK-NOT: memref.alloc
// CHECK: }
// CHECK-NEXT: memref.dealloc %[[T]] : memref<4xf32>
// CHECK-NEXT: scf.reduce
func.func @parallel_loop(%out: memref<4xf32>, %n: index, %x: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.parallel (%p) = (%c0) to (%n) step (%c1) {
    scf.for %i = %c0 to %n step %c1 {
      %t = memref.alloc() : memref<4xf32>
      linalg.fill ins(%x : f32) outs(%t : memref<4xf32>)
      memref.copy %t, %out : memref<4xf32> to memref<4xf32>
      memref.dealloc %t : memref<4xf32>
    }
  }
  return
}

// -----

// Left in the loop: a dynamic size, a buffer freed in another block, and one
// whose view leaves the iteration.
// CHECK-LABEL: func.func @kept_in_loop
// CHECK: scf.for
// CHECK-NEXT: memref.alloc(%arg1) : memref<?xf32>
// CHECK: memref.alloc() : memref<4xf32>
// CHECK: scf.if
// CHECK: memref.alloc() : memref<8xf32>
// CHECK: memref.dealloc
// CHECK-NEXT: scf.yield
// CHECK-NOT: memref.dealloc
func.func @kept_in_loop(%out: memref<4xf32>, %n: index, %x: f32, %c: i1)
    -> memref<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %out) -> (memref<4xf32>) {
    %d = memref.alloc(%n) : memref<?xf32>
    linalg.fill ins(%x : f32) outs(%d : memref<?xf32>)
    memref.dealloc %d : memref<?xf32>
    %u = memref.alloc() : memref<4xf32>
    linalg.fill ins(%x : f32) outs(%u : memref<4xf32>)
    scf.if %c {
      memref.dealloc %u : memref<4xf32>
    }
    %y = memref.alloc() : memref<8xf32>
    %v = memref.subview %y[0] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1]>>
    %w = memref.cast %v : memref<4xf32, strided<[1]>> to memref<4xf32>
    memref.dealloc %y : memref<8xf32>
    scf.yield %w : memref<4xf32>
  }
  return %r : memref<4xf32>
}
