// RUN: attnfuse-opt %s --convert-attn-kernels-to-nvvm -split-input-file | FileCheck %s

// A weight gradient from zero (attn-fuse's form for a weight used once):
// the fill is not read, and the kernel reads dY and X as they lie, 64 tokens
// per stage, both operands MN-major (wgmma's transposed A and B).
// CHECK-LABEL: func.func @weight_grad
// CHECK: %[[DW:.*]] = call @[[K:attn_wgrad_bf16_in1152_out1024]]_launch(%arg0, %arg1) : (tensor<?x1152xbf16>, tensor<?x1024xbf16>) -> tensor<1024x1152xbf16>
// CHECK-NOT: linalg.fill
// CHECK: return %[[DW]]
// CHECK: gpu.module @[[K]]
// CHECK: gpu.func @[[K]](%{{.*}}: !llvm.ptr {llvm.align = 64 : i64}, %{{.*}}: !llvm.ptr {llvm.align = 64 : i64}, %{{.*}}: !llvm.ptr {llvm.align = 64 : i64}, %{{.*}}: i32) kernel attributes {attnfuse.tma_params = array<i32: 0, 1, 2>, nvvm.maxntid = array<i32: 384, 1, 1>
// CHECK-COUNT-4: nvvm.mbarrier.init %{{.*}}, %c256_i32
// The k steps: ceil(tokens / 64).
// CHECK: arith.addi %arg3, %c63_i32
// CHECK: nvvm.setmaxregister  decrease 40
// CHECK: scf.for
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c32768_i32
// CHECK-COUNT-4: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg{{[01]}}, %{{.*}}, box[%{{.*}}, %{{.*}}] : !llvm.ptr<7>, !llvm.ptr
// CHECK: nvvm.setmaxregister  increase 232
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <col>], B[<bf16>, <one>, <row>]
// CHECK-COUNT-3: nvvm.wgmma.mma_async {{.*}} D[<f32>, <one>], A[<bf16>, <one>, <col>], B[<bf16>, <one>, <row>]
// CHECK: scf.for
// CHECK-COUNT-4: nvvm.wgmma.mma_async {{.*}} A[<bf16>, <one>, <col>], B[<bf16>, <one>, <row>]
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-COUNT-2: nvvm.cp.async.bulk.tensor.global.shared.cta %arg2
// CHECK: func.func private @[[K]]_launch
// CHECK-SAME: kind = "weight_grad_gemm"
// CHECK-SAME: grid = [{expr = "8", value = 8 : i64}, {expr = "9", value = 9 : i64}, {expr = "1", value = 1 : i64}]
// CHECK-SAME: #attn.kernel_tensor<name = "input", role = "input", operand = 0, dtype = "bf16", shape = ["T", 1152]
// CHECK-SAME: #attn.kernel_tensor<name = "result_grad", role = "result_grad", operand = 1, dtype = "bf16", shape = ["T", 1024]
// CHECK-SAME: #attn.kernel_tensor<name = "weight_grad", role = "result", operand = -1, dtype = "bf16", shape = [1024, 1152]
func.func @weight_grad(%x: tensor<?x1152xbf16>, %dy: tensor<?x1024xbf16>) -> tensor<1024x1152xbf16> {
  %zero = arith.constant 0.0 : bf16
  %empty = tensor.empty() : tensor<1024x1152xbf16>
  %init = linalg.fill ins(%zero : bf16) outs(%empty : tensor<1024x1152xbf16>) -> tensor<1024x1152xbf16>
  %dw = attn.fused_weight_grad %x, %dy outs(%init)
      {block_m = 64 : i64, block_n = 64 : i64, block_k = 64 : i64}
      : (tensor<?x1152xbf16>, tensor<?x1024xbf16>, tensor<1024x1152xbf16>) -> tensor<1024x1152xbf16>
  return %dw : tensor<1024x1152xbf16>
}

// -----

// A gradient added to another (a weight shared by two projections): the
// kernel reads the init in its epilogue.
// CHECK-LABEL: func.func @weight_grad_into_init
// CHECK: call @[[K:attn_wgrad_bf16_in1152_out1024_acc]]_launch(%arg0, %arg1, %arg2) : (tensor<?x1152xbf16>, tensor<?x1024xbf16>, tensor<1024x1152xbf16>) -> tensor<1024x1152xbf16>
// CHECK: gpu.func @[[K]](%{{.*}}: !llvm.ptr {llvm.align = 64 : i64}, %{{.*}}: !llvm.ptr {llvm.align = 64 : i64}, %{{.*}}: !llvm.ptr {llvm.align = 64 : i64}, %{{.*}}: i32, %{{.*}}: !llvm.ptr<1>)
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<1> -> vector<2xbf16>
// CHECK: func.func private @[[K]]_launch
// CHECK-SAME: #attn.kernel_tensor<name = "init", role = "init", operand = 2, dtype = "bf16", shape = [1024, 1152]
func.func @weight_grad_into_init(%x: tensor<?x1152xbf16>, %dy: tensor<?x1024xbf16>, %init: tensor<1024x1152xbf16>) -> tensor<1024x1152xbf16> {
  %dw = attn.fused_weight_grad %x, %dy outs(%init)
      {block_m = 64 : i64, block_n = 64 : i64, block_k = 64 : i64}
      : (tensor<?x1152xbf16>, tensor<?x1024xbf16>, tensor<1024x1152xbf16>) -> tensor<1024x1152xbf16>
  return %dw : tensor<1024x1152xbf16>
}

// -----

// A weight of few tiles (128 x 256: two, against 132 SMs) splits over the
// tokens: 8 CTAs per tile (grid z), each over its share of the k steps,
// store f32 partials from registers (an empty share stores zeros); the
// combine kernel adds the 8 partials in order and the init, and rounds once.
// CHECK-LABEL: func.func @weight_grad_split_into_init
// CHECK: %[[P:.*]] = call @[[K:attn_wgrad_bf16_in256_out128_split8]]_launch(%arg0, %arg1) : (tensor<?x256xbf16>, tensor<?x128xbf16>) -> tensor<8x128x256xf32>
// CHECK: %[[DW:.*]] = call @[[C:attn_wgrad_combine_bf16_in256_out128_split8_acc]]_launch(%[[P]], %arg2) : (tensor<8x128x256xf32>, tensor<128x256xbf16>) -> tensor<128x256xbf16>
// CHECK: return %[[DW]]
// CHECK: gpu.func @[[K]](%{{.*}}: !llvm.ptr {llvm.align = 64 : i64}, %{{.*}}: !llvm.ptr {llvm.align = 64 : i64}, %{{.*}}: !llvm.ptr<1>, %{{.*}}: i32) kernel attributes {attnfuse.tma_params = array<i32: 0, 1>
// CHECK: nvvm.read.ptx.sreg.ctaid.z
// CHECK: scf.if
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 8 : i64} : vector<2xf32>, !llvm.ptr<1>
// CHECK-NOT: nvvm.cp.async.bulk.tensor.global.shared.cta
// CHECK: gpu.func @[[C]](%{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>) kernel attributes {{{.*}}nvvm.maxntid = array<i32: 256, 1, 1>
// CHECK-COUNT-8: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
// CHECK: llvm.load %{{.*}} {alignment = 8 : i64} : !llvm.ptr<1> -> vector<4xbf16>
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 8 : i64} : vector<4xbf16>, !llvm.ptr<1>
// CHECK: func.func private @[[K]]_launch
// CHECK-SAME: grid = [{expr = "1", value = 1 : i64}, {expr = "2", value = 2 : i64}, {expr = "8", value = 8 : i64}]
// CHECK-SAME: #attn.kernel_tensor<name = "partials", {{.*}}operand = -1, dtype = "f32", shape = [8, 128, 256]
// CHECK-SAME: splits = 8
// CHECK: func.func private @[[C]]_launch
// CHECK-SAME: kind = "weight_grad_combine"
// CHECK-SAME: grid = [{expr = "32", value = 32 : i64}]
func.func @weight_grad_split_into_init(%x: tensor<?x256xbf16>, %dy: tensor<?x128xbf16>, %init: tensor<128x256xbf16>) -> tensor<128x256xbf16> {
  %dw = attn.fused_weight_grad %x, %dy outs(%init)
      {block_m = 64 : i64, block_n = 64 : i64, block_k = 64 : i64}
      : (tensor<?x256xbf16>, tensor<?x128xbf16>, tensor<128x256xbf16>) -> tensor<128x256xbf16>
  return %dw : tensor<128x256xbf16>
}

// -----

// A bias gradient (attn-fuse's form: X a fill of ones [T, 1]): the
// column-sum kernel. Neither fill is read, so the launch takes only dY; 8
// warps, 8 columns (16 bytes) per lane, 4 rows in flight, the partial sums
// meeting in shared memory.
// CHECK-LABEL: func.func @bias_grad
// CHECK: %[[DB:.*]] = call @[[K:attn_wgrad_colsum_bf16_out320]]_launch(%arg0) : (tensor<?x320xbf16>) -> tensor<320x1xbf16>
// CHECK-NOT: linalg.fill
// CHECK: return %[[DB]]
// CHECK: gpu.func @[[K]](%{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: i32) kernel attributes {{{.*}}nvvm.maxntid = array<i32: 256, 1, 1>
// CHECK: scf.for
// CHECK-COUNT-4: llvm.load {{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// CHECK: scf.yield
// CHECK: nvvm.barrier0
// CHECK: func.func private @[[K]]_launch
// CHECK-SAME: kind = "weight_grad_colsum"
// CHECK-SAME: grid = [{expr = "2", value = 2 : i64}]
// CHECK-SAME: #attn.kernel_tensor<name = "result_grad", role = "result_grad", operand = 0, dtype = "bf16", shape = ["T", 320]
// CHECK-SAME: config = {{{.*}}input = "a constant, not read", input_value = 1.000000e+00 : f64
func.func @bias_grad(%dy: tensor<?x320xbf16>) -> tensor<320x1xbf16> {
  %c0 = arith.constant 0 : index
  %tokens = tensor.dim %dy, %c0 : tensor<?x320xbf16>
  %one = arith.constant 1.0 : bf16
  %xempty = tensor.empty(%tokens) : tensor<?x1xbf16>
  %x = linalg.fill ins(%one : bf16) outs(%xempty : tensor<?x1xbf16>) -> tensor<?x1xbf16>
  %zero = arith.constant 0.0 : bf16
  %empty = tensor.empty() : tensor<320x1xbf16>
  %init = linalg.fill ins(%zero : bf16) outs(%empty : tensor<320x1xbf16>) -> tensor<320x1xbf16>
  %db = attn.fused_weight_grad %x, %dy outs(%init)
      {block_m = 64 : i64, block_n = 64 : i64, block_k = 64 : i64}
      : (tensor<?x1xbf16>, tensor<?x320xbf16>, tensor<320x1xbf16>) -> tensor<320x1xbf16>
  return %db : tensor<320x1xbf16>
}

// -----

// One input feature read per token, into an init (a column of a weight
// that is not a constant): both are launch operands.
// CHECK-LABEL: func.func @one_feature_into_init
// CHECK: call @[[K:attn_wgrad_colsum_bf16_out6_x_acc]]_launch(%arg0, %arg1, %arg2) : (tensor<?x1xbf16>, tensor<?x6xbf16>, tensor<6x1xbf16>) -> tensor<6x1xbf16>
// CHECK: gpu.func @[[K]](%{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: i32, %{{.*}}: !llvm.ptr<1>)
// CHECK-COUNT-4: llvm.load {{.*}} {alignment = 4 : i64} : !llvm.ptr<1> -> vector<2xbf16>
func.func @one_feature_into_init(%x: tensor<?x1xbf16>, %dy: tensor<?x6xbf16>, %init: tensor<6x1xbf16>) -> tensor<6x1xbf16> {
  %dw = attn.fused_weight_grad %x, %dy outs(%init)
      {block_m = 64 : i64, block_n = 64 : i64, block_k = 64 : i64}
      : (tensor<?x1xbf16>, tensor<?x6xbf16>, tensor<6x1xbf16>) -> tensor<6x1xbf16>
  return %dw : tensor<6x1xbf16>
}
