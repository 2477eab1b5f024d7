// RUN: attnfuse-opt %s --convert-attn-kernels-to-nvvm -split-input-file | FileCheck %s

// A query projection with bias and RoPE: a warp-specialized TMA + wgmma GEMM
// (128 x 128 tiles, k step 64, 4 stages) whose epilogue adds the bias and
// rotates each head in registers before a TMA store.
// CHECK-LABEL: func.func @qproj
// CHECK: call @[[K:attn_gemm_bf16_k1024_n1024_bias_rope64of64]]_launch(%arg0, %arg1, %arg2)
// CHECK: gpu.module @[[K]]
// CHECK: gpu.func @[[K]](%{{.*}}: !llvm.ptr {llvm.align = 64 : i64}, %{{.*}}: !llvm.ptr {llvm.align = 64 : i64}, %{{.*}}: !llvm.ptr {llvm.align = 64 : i64}, %{{.*}}: i32, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>) kernel attributes {attnfuse.tma_params = array<i32: 0, 1, 2>, nvvm.maxntid = array<i32: 384, 1, 1>, nvvm.minctasm = 1 : i32}
// CHECK-COUNT-4: nvvm.mbarrier.init %{{.*}}, %c256_i32
// CHECK: nvvm.fence.mbarrier.init
// CHECK: nvvm.barrier0
// CHECK: nvvm.setmaxregister  decrease 40
// CHECK: nvvm.elect.sync
// CHECK: scf.for %{{.*}} = %{{.*}} to %c16_i32 step
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c32768_i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg0, %{{.*}}, box[%{{.*}}, %{{.*}}, %{{.*}}] : !llvm.ptr<7>, !llvm.ptr
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg1, %{{.*}}, box[%{{.*}}, %{{.*}}] : !llvm.ptr<7>, !llvm.ptr
// CHECK: nvvm.setmaxregister  increase 232
// The first k block starts the accumulator (scale-d 0); the loop keeps one
// wgmma group in flight and releases the stage of the previous one.
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>, D[<f32>, <zero>]
// CHECK-COUNT-3: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>, D[<f32>, <one>]
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: scf.for %{{.*}} = %c1_i32{{.*}} to %c16_i32
// CHECK-COUNT-4: nvvm.wgmma.mma_async
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: nvvm.mbarrier.arrive
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// Epilogue: bias pairs, RoPE tables, 16-bit pairs, TMA store.
// CHECK: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<1> -> vector<2xbf16>
// CHECK: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<1> -> f32
// CHECK: nvvm.convert.f32x2.to.bf16x2 %{{.*}}, %{{.*}} {rnd = #nvvm.fp_rnd_mode<rn>} : vector<2xbf16>
// CHECK: nvvm.fence.proxy
// CHECK-COUNT-2: nvvm.cp.async.bulk.tensor.global.shared.cta %arg2
// CHECK: func.func private @[[K]]_launch
// CHECK-SAME: kind = "projection_gemm"
// CHECK-SAME: name = "rope_cos"
// CHECK-SAME: attnfuse.op = "attn.fused_projection"
func.func @qproj(%x: tensor<?x?x1024xbf16>, %w: tensor<1024x1024xbf16>,
                 %b: tensor<1024xbf16>) -> tensor<?x?x16x64xbf16> {
  %q_c0 = arith.constant 0 : index
  %q_d0 = tensor.dim %x, %q_c0 : tensor<?x?x1024xbf16>
  %q_c1 = arith.constant 1 : index
  %q_d1 = tensor.dim %x, %q_c1 : tensor<?x?x1024xbf16>
  %q_init = tensor.empty(%q_d0, %q_d1) : tensor<?x?x16x64xbf16>
  %q = attn.fused_projection %x, %w, %b
      outs(%q_init) {head_dim = 64 : i64, rope = #attn.rope<theta = 10000.0>,
       block_s = 64 : i64, block_n = 64 : i64, block_k = 64 : i64}
      : (tensor<?x?x1024xbf16>, tensor<1024x1024xbf16>, tensor<1024xbf16>, tensor<?x?x16x64xbf16>)
      -> tensor<?x?x16x64xbf16>
  return %q : tensor<?x?x16x64xbf16>
}

// -----

// Without RoPE a fused_projection and an attn.project of the same sizes
// share one kernel (one gpu.module), each with its own launch declaration.
// CHECK-LABEL: func.func @share
// CHECK: call @[[K:attn_gemm_bf16_k512_n512]]_launch(
// CHECK: call @[[K]]_launch_1(
// CHECK: gpu.module @[[K]]
// CHECK-NOT: gpu.module
// CHECK: func.func private @[[K]]_launch(
// CHECK-SAME: attnfuse.op = "attn.fused_projection"
// CHECK: func.func private @[[K]]_launch_1(
// CHECK-SAME: attnfuse.op = "attn.project"
func.func @share(%x: tensor<?x?x512xbf16>, %w: tensor<512x512xbf16>)
    -> (tensor<?x?x8x64xbf16>, tensor<?x?x512xbf16>) {
  %a_c0 = arith.constant 0 : index
  %a_d0 = tensor.dim %x, %a_c0 : tensor<?x?x512xbf16>
  %a_c1 = arith.constant 1 : index
  %a_d1 = tensor.dim %x, %a_c1 : tensor<?x?x512xbf16>
  %a_init = tensor.empty(%a_d0, %a_d1) : tensor<?x?x8x64xbf16>
  %a = attn.fused_projection %x, %w
      outs(%a_init) {head_dim = 64 : i64, block_s = 64 : i64, block_n = 64 : i64, block_k = 64 : i64}
      : (tensor<?x?x512xbf16>, tensor<512x512xbf16>, tensor<?x?x8x64xbf16>) -> tensor<?x?x8x64xbf16>
  %b = attn.project %x, %w : (tensor<?x?x512xbf16>, tensor<512x512xbf16>) -> tensor<?x?x512xbf16>
  return %a, %b : tensor<?x?x8x64xbf16>, tensor<?x?x512xbf16>
}

// -----

// Heads of 96 (or 256) dims do not tile the GEMM's 128 columns, so the RoPE
// epilogue cannot rotate a pair (i, i + 48) of one head in one tile: the
// projection runs without rotation and an attn.rope kernel rotates its result.
// CHECK-LABEL: func.func @qproj_d96_rope
// CHECK: %[[P:.*]] = call @attn_gemm_bf16_k1024_n768_bias_launch(%arg0, %arg1, %arg2)
// CHECK: %[[R:.*]] = call @attn_rope_bf16_h8_d96_r96_launch(%[[P]])
// CHECK: return %[[R]]
func.func @qproj_d96_rope(%x: tensor<?x?x1024xbf16>, %w: tensor<768x1024xbf16>, %b: tensor<768xbf16>) -> tensor<?x?x8x96xbf16> {
  %c0 = arith.constant 0 : index
  %d0 = tensor.dim %x, %c0 : tensor<?x?x1024xbf16>
  %c1 = arith.constant 1 : index
  %d1 = tensor.dim %x, %c1 : tensor<?x?x1024xbf16>
  %init = tensor.empty(%d0, %d1) : tensor<?x?x8x96xbf16>
  %q = attn.fused_projection %x, %w, %b
      outs(%init) {head_dim = 96 : i64, rope = #attn.rope<theta = 10000.0>,
       block_s = 64 : i64, block_n = 96 : i64, block_k = 64 : i64}
      : (tensor<?x?x1024xbf16>, tensor<768x1024xbf16>, tensor<768xbf16>, tensor<?x?x8x96xbf16>)
      -> tensor<?x?x8x96xbf16>
  return %q : tensor<?x?x8x96xbf16>
}
