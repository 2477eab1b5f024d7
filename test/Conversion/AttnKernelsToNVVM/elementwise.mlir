// RUN: attnfuse-opt %s --convert-attn-kernels-to-nvvm -split-input-file | FileCheck %s

// The residual add of a function that launches kernels becomes an
// element-wise kernel: each thread adds one 16-byte chunk (8 bf16) in f32 and
// rounds once; the tail of the last chunk goes element by element. The two
// adds of one type share the kernel.
// CHECK-LABEL: func.func @residual
// CHECK: %[[C:.+]] = call @attn_gemm_bf16_k256_n256_launch(%arg0, %arg1)
// CHECK: %[[H:.+]] = call @[[ADD:attn_ewise_add_bf16]]_launch(%arg0, %[[C]])
// CHECK: call @[[ADD]]_launch(%[[H]], %[[C]])
// CHECK: gpu.module @[[ADD]]
// CHECK: gpu.func @[[ADD]](%{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: i32) kernel
// CHECK: scf.if
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// CHECK: arith.extf %{{.*}} : vector<8xbf16> to vector<8xf32>
// CHECK: arith.addf %{{.*}} : vector<8xf32>
// CHECK: arith.truncf %{{.*}} : vector<8xf32> to vector<8xbf16>
// CHECK: llvm.store %{{.*}} {alignment = 16 : i64} : vector<8xbf16>, !llvm.ptr<1>
// CHECK: } else {
// CHECK: scf.for
// CHECK: llvm.load %{{.*}} : !llvm.ptr<1> -> bf16
// CHECK: func.func private @[[ADD]]_launch(tensor<?x?x256xbf16>, tensor<?x?x256xbf16>) -> tensor<?x?x256xbf16> attributes {attnfuse.kernel = @[[ADD]]::@[[ADD]], attnfuse.launch = #attn.kernel_launch<kernel = "[[ADD]]", kind = "elementwise"
// CHECK-SAME: block = [256, 1, 1], grid = [{expr = "ceil_div(256*B*S, 2048)"}]
// CHECK-SAME: config = {count = "256*B*S", elements_per_thread = 8 : i64, op = "add"}
func.func @residual(%x: tensor<?x?x256xbf16>, %w: tensor<256x256xbf16>) -> tensor<?x?x256xbf16> {
  %c = attn.project %x, %w : (tensor<?x?x256xbf16>, tensor<256x256xbf16>) -> tensor<?x?x256xbf16>
  %h = arith.addf %x, %c : tensor<?x?x256xbf16>
  %h2 = arith.addf %h, %c : tensor<?x?x256xbf16>
  return %h2 : tensor<?x?x256xbf16>
}

// -----

// f32 adds need no rounding: 4 values per thread.
// CHECK-LABEL: func.func @f32_add
// CHECK: call @attn_ewise_add_f32_launch
// CHECK: gpu.func @attn_ewise_add_f32
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
// CHECK-NOT: arith.truncf
// CHECK: arith.addf %{{.*}} : vector<4xf32>
func.func @f32_add(%x: tensor<?x?x256xbf16>, %w: tensor<256x256xbf16>, %r: tensor<4x256xf32>) -> (tensor<?x?x256xbf16>, tensor<4x256xf32>) {
  %y = attn.project %x, %w : (tensor<?x?x256xbf16>, tensor<256x256xbf16>) -> tensor<?x?x256xbf16>
  %s = arith.addf %r, %r : tensor<4x256xf32>
  return %y, %s : tensor<?x?x256xbf16>, tensor<4x256xf32>
}

// -----

// A function without kernels is not a device program: its adds stay.
// CHECK-LABEL: func.func @no_kernels
// CHECK: arith.addf %arg0, %arg0 : tensor<4xbf16>
func.func @no_kernels(%x: tensor<4xbf16>) -> tensor<4xbf16> {
  %h = arith.addf %x, %x : tensor<4xbf16>
  return %h : tensor<4xbf16>
}

// -----

// Adds of two shapes are two kernels: a launch description names its
// tensors' sizes ([B, S, 256] here, [B, S, 2, 64] there), so one kernel
// cannot describe both.
// CHECK-LABEL: func.func @two_shapes
// CHECK: call @[[FLAT:attn_ewise_add_bf16]]_launch(%arg0, %{{.*}}) : (tensor<?x?x256xbf16>
// CHECK: call @[[HEADS:attn_ewise_add_bf16_1]]_launch(%arg2, %arg2) : (tensor<?x?x2x64xbf16>
// CHECK: func.func private @[[FLAT]]_launch
// CHECK-SAME: shape = ["B", "S", 256]
// CHECK: func.func private @[[HEADS]]_launch
// CHECK-SAME: shape = ["B", "S", 2, 64]
func.func @two_shapes(%x: tensor<?x?x256xbf16>, %w: tensor<256x256xbf16>, %k: tensor<?x?x2x64xbf16>) -> (tensor<?x?x256xbf16>, tensor<?x?x2x64xbf16>) {
  %c = attn.project %x, %w : (tensor<?x?x256xbf16>, tensor<256x256xbf16>) -> tensor<?x?x256xbf16>
  %h = arith.addf %x, %c : tensor<?x?x256xbf16>
  %k2 = arith.addf %k, %k : tensor<?x?x2x64xbf16>
  return %h, %k2 : tensor<?x?x256xbf16>, tensor<?x?x2x64xbf16>
}
