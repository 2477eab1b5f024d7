// RUN: attnfuse-opt %s --attn-free-buffers-early -split-input-file | FileCheck %s

// Each temporary is freed right after the last op that reads it, not at the
// return: at most two of the three are live at once.
// CHECK-LABEL: func.func @chain
// CHECK:      %[[A:.*]] = memref.alloc
// CHECK-NEXT: linalg.copy ins(%arg0 {{.*}} outs(%[[A]]
// CHECK-NEXT: %[[B:.*]] = memref.alloc
// CHECK-NEXT: linalg.copy ins(%[[A]] {{.*}} outs(%[[B]]
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: linalg.copy ins(%[[B]] {{.*}} outs(%arg1
// CHECK-NEXT: memref.dealloc %[[B]]
// CHECK-NEXT: return
func.func @chain(%x: memref<?xf32>, %y: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  %a = memref.alloc(%n) : memref<?xf32>
  linalg.copy ins(%x : memref<?xf32>) outs(%a : memref<?xf32>)
  %b = memref.alloc(%n) : memref<?xf32>
  linalg.copy ins(%a : memref<?xf32>) outs(%b : memref<?xf32>)
  linalg.copy ins(%b : memref<?xf32>) outs(%y : memref<?xf32>)
  memref.dealloc %a : memref<?xf32>
  memref.dealloc %b : memref<?xf32>
  return
}

// -----

// A view's use is the buffer's use, and so is a use inside a loop's body:
// the dealloc follows the loop that reads the view.
// CHECK-LABEL: func.func @view_in_loop
// CHECK:      %[[A:.*]] = memref.alloc
// CHECK:      scf.for
// CHECK:        memref.load %[[V:.*]][
// CHECK:      }
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: linalg.copy ins(%arg0
// CHECK-NEXT: return
func.func @view_in_loop(%x: memref<8xf32>, %y: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %a = memref.alloc() : memref<16xf32>
  %v = memref.subview %a[4] [4] [1] : memref<16xf32> to memref<4xf32, strided<[1], offset: 4>>
  scf.for %i = %c0 to %c4 step %c1 {
    %e = memref.load %v[%i] : memref<4xf32, strided<[1], offset: 4>>
    memref.store %e, %y[%i] : memref<8xf32>
  }
  linalg.copy ins(%x : memref<8xf32>) outs(%y : memref<8xf32>)
  memref.dealloc %a : memref<16xf32>
  return
}

// -----

// Scalar stores into a buffer and loads from it are uses like any other.
// CHECK-LABEL: func.func @scalar_access
// CHECK:      %[[A:.*]] = memref.alloc
// CHECK-NEXT: memref.store %arg1, %[[A]][%c0]
// CHECK-NEXT: %[[V:.*]] = memref.load %[[A]][%c0]
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: memref.store %[[V]], %arg0[%c0]
func.func @scalar_access(%y: memref<8xf32>, %v: f32) {
  %c0 = arith.constant 0 : index
  %a = memref.alloc() : memref<8xf32>
  memref.store %v, %a[%c0] : memref<8xf32>
  %e = memref.load %a[%c0] : memref<8xf32>
  memref.store %e, %y[%c0] : memref<8xf32>
  memref.dealloc %a : memref<8xf32>
  return
}

// -----

// A buffer nothing reads is freed at once.
// CHECK-LABEL: func.func @unused
// CHECK:      %[[A:.*]] = memref.alloc
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: linalg.copy
func.func @unused(%x: memref<8xf32>, %y: memref<8xf32>) {
  %a = memref.alloc() : memref<8xf32>
  linalg.copy ins(%x : memref<8xf32>) outs(%y : memref<8xf32>)
  memref.dealloc %a : memref<8xf32>
  return
}

// -----

// Buffers whose view may outlive the uses stay where they are: a view
// yielded by a loop, one passed to a call, and a buffer whose address is
// taken (here stored in a table).
// CHECK-LABEL: func.func @escapes
// CHECK:      call @use
// CHECK-NEXT: memref.store
// CHECK-NEXT: memref.dealloc
// CHECK-NEXT: memref.dealloc
// CHECK-NEXT: memref.dealloc
// CHECK-NEXT: return
func.func private @use(memref<8xf32>)
func.func @escapes(%x: memref<8xf32>, %table: memref<1xindex>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = memref.alloc() : memref<8xf32>
  %b = memref.alloc() : memref<8xf32>
  %c = memref.alloc() : memref<8xf32>
  %r = scf.for %i = %c0 to %c1 step %c1 iter_args(%it = %a) -> memref<8xf32> {
    scf.yield %it : memref<8xf32>
  }
  linalg.copy ins(%r : memref<8xf32>) outs(%x : memref<8xf32>)
  %p = memref.extract_aligned_pointer_as_index %c : memref<8xf32> -> index
  call @use(%b) : (memref<8xf32>) -> ()
  memref.store %p, %table[%c0] : memref<1xindex>
  memref.dealloc %a : memref<8xf32>
  memref.dealloc %b : memref<8xf32>
  memref.dealloc %c : memref<8xf32>
  return
}

// -----

// The dealloc is moved only within the block that allocated the buffer.
// CHECK-LABEL: func.func @other_block
// CHECK:      scf.if
// CHECK-NEXT:   linalg.copy
// CHECK-NEXT:   linalg.copy
// CHECK-NEXT:   memref.dealloc
func.func @other_block(%x: memref<8xf32>, %y: memref<8xf32>, %flag: i1,
                       %a: memref<8xf32>) {
  scf.if %flag {
    linalg.copy ins(%a : memref<8xf32>) outs(%y : memref<8xf32>)
    linalg.copy ins(%x : memref<8xf32>) outs(%y : memref<8xf32>)
    memref.dealloc %a : memref<8xf32>
  }
  return
}
