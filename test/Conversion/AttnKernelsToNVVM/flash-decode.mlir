// RUN: attnfuse-opt %s --convert-attn-kernels-to-nvvm -split-input-file | FileCheck %s

// K=V cache, GQA-4, RoPE on load: the op becomes two launches, the split
// kernel (its launch returns the f32 workspace and the cache, updated in
// place) and the combine kernel (workspace -> output). The split kernel
// streams key rows with 1-D bulk copies completing on mbarriers, writes the
// new key with vector stores and keeps the softmax state with shuffles.
// CHECK-LABEL: func.func @decode_kv
// CHECK: %[[SPLIT:.*]]:2 = call @attn_flash_decode_launch(%arg0, %arg1, %arg2, %arg3) : (tensor<?x1x16x128xbf16>, tensor<?x1x4x128xbf16>, tensor<?x?x4x128xbf16>, tensor<?xi32>) -> (tensor<?x16x?x132xf32>, tensor<?x?x4x128xbf16>)
// CHECK: %[[OUT:.*]] = call @attn_flash_decode_combine_launch(%[[SPLIT]]#0) : (tensor<?x16x?x132xf32>) -> tensor<?x1x16x128xbf16>
// CHECK: return %[[OUT]], %[[SPLIT]]#1
// CHECK: gpu.module @attn_flash_decode
// CHECK: gpu.func @attn_flash_decode(%{{.*}}: !llvm.ptr<1>, {{.*}}, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32) kernel attributes {{{.*}}nvvm.maxntid = array<i32: 128, 1, 1>, nvvm.minctasm = 2 : i32}
// CHECK: nvvm.mbarrier.init
// CHECK: nvvm.mbarrier.arrive.expect_tx
// CHECK: nvvm.bar.warp.sync
// CHECK: nvvm.cp.async.bulk.shared.cluster.global %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : !llvm.ptr<7>, <1>
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.shfl.sync bfly
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: llvm.call_intrinsic "llvm.nvvm.lg2.approx.f"
// CHECK: gpu.module @attn_flash_decode_combine
// CHECK: gpu.func @attn_flash_decode_combine(%{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: i32) kernel attributes {{{.*}}nvvm.maxntid = array<i32: 128, 1, 1>
// CHECK: func.func private @attn_flash_decode_launch
// CHECK-SAME: kind = "flash_decode_split"
// CHECK-SAME: grid = [{expr = "max(1, min(ceil_div(264, 4*B), ceil_div(S, 256)))"}, {value = 4 : i64}, {expr = "B"}]
// CHECK-SAME: #attn.kernel_param<name = "positions", kind = "pointer", detail = "i32", value = "positions">
// CHECK-SAME: #attn.kernel_param<name = "rope_cos", kind = "pointer", detail = "f32">
// CHECK-SAME: #attn.kernel_param<name = "capacity", kind = "scalar", detail = "i32", value = "S">
// CHECK-SAME: aliases = [{result = "key_cache_out", tensor = "key_cache"}]
// CHECK-SAME: then = "attn_flash_decode_combine"
// CHECK-SAME: workspace = {bytes = "4*B*16*(max(1, min(ceil_div(264, 4*B), ceil_div(S, 256))))*132"
// CHECK: func.func private @attn_flash_decode_combine_launch
// CHECK-SAME: kind = "flash_decode_combine"
// CHECK-SAME: grid = [{value = 16 : i64}, {expr = "B"}]
func.func @decode_kv(%q: tensor<?x1x16x128xbf16>, %k: tensor<?x1x4x128xbf16>,
                     %cache: tensor<?x?x4x128xbf16>, %pos: tensor<?xi32>)
    -> (tensor<?x1x16x128xbf16>, tensor<?x?x4x128xbf16>) {
  %di49_c0 = arith.constant 0 : index
  %di49_b = tensor.dim %q, %di49_c0 : tensor<?x1x16x128xbf16>
  %di49_init = tensor.empty(%di49_b) : tensor<?x1x16x128xbf16>
  %o, %c = attn.flash_decode %q, %k outs(%di49_init) cache(%cache) positions(%pos)
      {block_kv = 64 : i64, query_rope = #attn.rope<theta = 10000.0>,
       key_rope = #attn.rope<theta = 10000.0>}
      : (tensor<?x1x16x128xbf16>, tensor<?x1x4x128xbf16>, tensor<?x1x16x128xbf16>, tensor<?x?x4x128xbf16>, tensor<?xi32>) -> (tensor<?x1x16x128xbf16>, tensor<?x?x4x128xbf16>)
  return %o, %c : tensor<?x1x16x128xbf16>, tensor<?x?x4x128xbf16>
}

// -----

// Paged separate K/V with a fixed split count: the block table and both
// caches are pointer parameters, the capacity is page_size * S, and both
// caches alias results.
// CHECK-LABEL: func.func @decode_paged
// CHECK: call @attn_flash_decode_launch({{.*}}) : ({{.*}}) -> (tensor<?x8x8x68xf32>, tensor<?x64x2x64xbf16>, tensor<?x64x2x64xbf16>)
// CHECK: func.func private @attn_flash_decode_launch
// CHECK-SAME: grid = [{expr = "8"}, {value = 2 : i64}, {expr = "B"}]
// CHECK-SAME: #attn.kernel_param<name = "block_table", kind = "pointer", detail = "i32", value = "block_table">
// CHECK-SAME: #attn.kernel_param<name = "capacity", kind = "scalar", detail = "i32", value = "64*S">
// CHECK-SAME: #attn.kernel_param<name = "max_pages", kind = "scalar", detail = "i32", value = "S">
// CHECK-SAME: shape = ["T", 64, 2, 64]
// CHECK-SAME: aliases = [{result = "key_cache_out", tensor = "key_cache"}, {result = "value_cache_out", tensor = "value_cache"}]
func.func @decode_paged(%q: tensor<?x1x8x64xbf16>, %k: tensor<?x1x2x64xbf16>,
                        %v: tensor<?x1x2x64xbf16>, %kp: tensor<?x64x2x64xbf16>,
                        %vp: tensor<?x64x2x64xbf16>, %pos: tensor<?xi32>,
                        %bt: tensor<?x?xi32>)
    -> (tensor<?x1x8x64xbf16>, tensor<?x64x2x64xbf16>, tensor<?x64x2x64xbf16>) {
  %di50_c0 = arith.constant 0 : index
  %di50_b = tensor.dim %q, %di50_c0 : tensor<?x1x8x64xbf16>
  %di50_init = tensor.empty(%di50_b) : tensor<?x1x8x64xbf16>
  %o, %kc, %vc = attn.flash_decode %q, %k, %v outs(%di50_init) cache(%kp, %vp) positions(%pos)
      block_table(%bt) {block_kv = 64 : i64, num_splits = 8 : i64}
      : (tensor<?x1x8x64xbf16>, tensor<?x1x2x64xbf16>, tensor<?x1x2x64xbf16>, tensor<?x1x8x64xbf16>, tensor<?x64x2x64xbf16>, tensor<?x64x2x64xbf16>, tensor<?xi32>, tensor<?x?xi32>)
        -> (tensor<?x1x8x64xbf16>, tensor<?x64x2x64xbf16>, tensor<?x64x2x64xbf16>)
  return %o, %kc, %vc
      : tensor<?x1x8x64xbf16>, tensor<?x64x2x64xbf16>, tensor<?x64x2x64xbf16>
}

