// RUN: attnfuse-opt %s --convert-attn-kernels-to-nvvm -split-input-file | FileCheck %s

// K=V with GQA-4, causal, key RoPE on load, head_dim 64 (the paper's Q-K=V
// variant): the op becomes a call to a launch declaration and a
// warp-specialized kernel in its own gpu.module. The 4 query heads of a KV
// group share each K/V tile (heads_per_cta = 4).
// CHECK-LABEL: func.func @flash_kv_gqa4
// CHECK: %[[O:.*]] = call @[[K:attn_fa_bf16_d64_h16_g4_q128_kv128_s2_causal_keqv_krope64]]_launch(%arg0, %arg1) : (tensor<?x?x16x64xbf16>, tensor<?x?x4x64xbf16>) -> tensor<?x?x16x64xbf16>
// CHECK-NOT: attn.flash_attention
// CHECK: return %[[O]]

// CHECK: gpu.module @[[K]] {
// CHECK: llvm.mlir.global external @attn_dynamic_smem() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
// Three CUtensorMap parameters (Q, K=V, O), the two lengths, the RoPE tables.
// CHECK: gpu.func @[[K]](%{{.*}}: !llvm.ptr {llvm.align = 64 : i64}, %{{.*}}: !llvm.ptr {llvm.align = 64 : i64}, %{{.*}}: !llvm.ptr {llvm.align = 64 : i64}, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>) kernel attributes {attnfuse.tma_params = array<i32: 0, 1, 2>, nvvm.maxntid = array<i32: 384, 1, 1>, nvvm.minctasm = 1 : i32}
// Barriers: full (1 arrival + tx bytes), empty (256 consumer threads),
// rotated (96 rotating threads) per stage, and the Q barrier.
// CHECK: nvvm.mbarrier.init %{{.*}}, %c1_i32{{.*}} : !llvm.ptr<3>, i32
// CHECK: nvvm.mbarrier.init %{{.*}}, %c256_i32{{.*}} : !llvm.ptr<3>, i32
// CHECK: nvvm.mbarrier.init %{{.*}}, %c96_i32{{.*}} : !llvm.ptr<3>, i32
// The initialising thread fences the inits for the async proxy (TMA complete_tx)
// before the CTA barrier publishes them.
// CHECK: nvvm.fence.mbarrier.init
// CHECK: nvvm.barrier0
// Producer warpgroup: give registers back, one elected thread issues TMA.
// CHECK: nvvm.setmaxregister  decrease 56
// CHECK: nvvm.elect.sync -> i1
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c16384_i32{{.*}} : !llvm.ptr<3>, i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg0, %{{.*}}, box[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : !llvm.ptr<7>, !llvm.ptr
// The K/V ring: wait for a free stage, then one 128 x 64 K=V box.
// CHECK: scf.for
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c16384_i32{{.*}} : !llvm.ptr<3>, i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg1, %{{.*}}, box[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : !llvm.ptr<7>, !llvm.ptr
// CHECK-NOT: nvvm.cp.async.bulk.tensor.shared.cluster.global
// Producer warps 1-3 rotate each landed key tile into the second buffer.
// CHECK: scf.for
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<3> -> vector<8xbf16>
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xf32>
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<8xbf16>, !llvm.ptr<3>
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK: nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3>
// Consumer warpgroups: take the registers, wait for Q, then per key tile
// S = Q K^T with four SS wgmmas (the first starts the accumulator).
// CHECK: nvvm.setmaxregister  increase 224
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (!llvm.struct<(f32, f32
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK-COUNT-3: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// Only tiles crossing the diagonal or the end of the keys are masked.
// CHECK: scf.if %{{.*}} -> (f32, f32
// CHECK: arith.cmpi sle
// Online softmax: row max across the quad, exp2 with the prescaled scale.
// CHECK: nvvm.shfl.sync  bfly %{{.*}}, %{{.*}}, %c1_i32{{.*}}, %c31_i32{{.*}} : f32 -> f32
// CHECK: nvvm.shfl.sync  bfly %{{.*}}, %{{.*}}, %c2_i32{{.*}}, %c31_i32{{.*}} : f32 -> f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// P stays in registers, packed to bf16 pairs, for the RS wgmma on the
// un-rotated K=V tile (MN-major: imm-trans-b 1).
// CHECK: nvvm.convert.f32x2.to.bf16x2
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-8: llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred p;\0Asetp.ne.b32 p, 1, 0;\0Awgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 1;\0A}"
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvvm.mbarrier.arrive
// Epilogue: O / l staged in shared memory, stored with TMA.
// CHECK: nvvm.fence.proxy
// CHECK: nvvm.barrier id = %c1_i32{{.*}} number_of_threads = %c128_i32
// CHECK: nvvm.barrier id = %c2_i32{{.*}} number_of_threads = %c128_i32
// CHECK: nvvm.cp.async.bulk.tensor.global.shared.cta %arg2, %{{.*}}, box[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : !llvm.ptr, <3>
// CHECK: nvvm.cp.async.bulk.commit.group
// CHECK: nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK: gpu.return

// The host-side description the manifest is written from.
// CHECK: func.func private @[[K]]_launch(tensor<?x?x16x64xbf16>, tensor<?x?x4x64xbf16>) -> tensor<?x?x16x64xbf16>
// CHECK-SAME: attnfuse.kernel = @[[K]]::@[[K]]
// CHECK-SAME: attnfuse.launch = #attn.kernel_launch<kernel = "[[K]]", kind = "flash_attention"
// CHECK-SAME: block = [384, 1, 1]
// CHECK-SAME: grid = [{ceil_div = 32 : i64, expr = "ceil_div(S, 32)", symbol = "S"}, {expr = "4", value = 4 : i64}, {ceil_div = 1 : i64, expr = "B", symbol = "B"}]
// CHECK-SAME: dynamic_smem_bytes = 83000
// CHECK-SAME: params = [#attn.kernel_param<name = "tma_q", kind = "tma_descriptor", detail = "tma_q">
// CHECK-SAME: #attn.kernel_param<name = "seq_q", kind = "scalar", detail = "i32", value = "S">
// CHECK-SAME: tensors = [#attn.kernel_tensor<name = "query", role = "query", operand = 0, dtype = "bf16", shape = ["B", "S", 16, 64], strides = ["1024*S", 1024, 64, 1], layout = "row-major [batch, seq, heads, dim], contiguous">
// CHECK-SAME: tma_descriptors = [{box_dim = [64, 4, 16, 1], element_strides = [1, 1, 1, 1], element_type = "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16", global_dim = [64, 16, "S", "B"], global_strides_bytes = [128, 2048, "2048*S"], interleave = "CU_TENSOR_MAP_INTERLEAVE_NONE", l2_promotion = "CU_TENSOR_MAP_L2_PROMOTION_L2_256B", oob_fill = "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE", param = "tma_q", rank = 4 : i64, swizzle = "CU_TENSOR_MAP_SWIZZLE_128B", tensor = "query", use = "load"}
// CHECK-SAME: box_dim = [64, 1, 128, 1]
// CHECK-SAME: rope_tables = [{dtype = "f32", formula = "cos
// CHECK-SAME: config = {
// CHECK-SAME: causal = true
// CHECK-SAME: heads_per_cta = 4
// CHECK-SAME: key_is_value = true
// CHECK-SAME: key_rope_dims = 64
// CHECK-SAME: attnfuse.op = "attn.flash_attention"
func.func @flash_kv_gqa4(%q: tensor<?x?x16x64xbf16>, %kv: tensor<?x?x4x64xbf16>)
    -> tensor<?x?x16x64xbf16> {
  %o_c0 = arith.constant 0 : index
  %o_d0 = tensor.dim %q, %o_c0 : tensor<?x?x16x64xbf16>
  %o_c1 = arith.constant 1 : index
  %o_d1 = tensor.dim %q, %o_c1 : tensor<?x?x16x64xbf16>
  %o_init = tensor.empty(%o_d0, %o_d1) : tensor<?x?x16x64xbf16>
  %o = attn.flash_attention %q, %kv
      outs(%o_init) {causal, block_q = 128 : i64, block_kv = 128 : i64,
       key_rope = #attn.rope<theta = 10000.0>}
      : (tensor<?x?x16x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x16x64xbf16>) -> tensor<?x?x16x64xbf16>
  return %o : tensor<?x?x16x64xbf16>
}

// -----

// Separate K and V, MHA, head_dim 128, not causal: four tensor maps, the
// FlashAttention-3 register split (producer 24, consumers 240), eight SS
// wgmmas per score tile (d / 16) across the two 64-column blocks of Q and K,
// V in its own ring, no mask code outside the tail tile branch.
// CHECK-LABEL: func.func @flash_mha_d128
// CHECK: call @[[K:attn_fa_bf16_d128_h8_g1_q128_kv128_s2]]_launch(%arg0, %arg1, %arg2)
// CHECK: gpu.func @[[K]](%{{.*}}: !llvm.ptr {llvm.align = 64 : i64}, %{{.*}}: !llvm.ptr {llvm.align = 64 : i64}, %{{.*}}: !llvm.ptr {llvm.align = 64 : i64}, %{{.*}}: !llvm.ptr {llvm.align = 64 : i64}, %{{.*}}: i32, %{{.*}}: i32) kernel attributes {attnfuse.tma_params = array<i32: 0, 1, 2, 3>
// CHECK: nvvm.setmaxregister  decrease 24
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c65536_i32{{.*}} : !llvm.ptr<3>, i32
// CHECK-COUNT-2: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg1,
// CHECK-COUNT-2: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg2,
// CHECK: nvvm.setmaxregister  increase 240
// CHECK-COUNT-8: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>
// CHECK-NOT: nvvm.wgmma.mma_async
// CHECK: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// CHECK: func.func private @[[K]]_launch
// CHECK-SAME: dynamic_smem_bytes = 164920
// CHECK-SAME: causal = false
// CHECK-SAME: consumer_registers = 240
// CHECK-SAME: key_is_value = false
func.func @flash_mha_d128(%q: tensor<?x?x8x128xbf16>, %k: tensor<?x?x8x128xbf16>,
                          %v: tensor<?x?x8x128xbf16>) -> tensor<?x?x8x128xbf16> {
  %o_c0 = arith.constant 0 : index
  %o_d0 = tensor.dim %q, %o_c0 : tensor<?x?x8x128xbf16>
  %o_c1 = arith.constant 1 : index
  %o_d1 = tensor.dim %q, %o_c1 : tensor<?x?x8x128xbf16>
  %o_init = tensor.empty(%o_d0, %o_d1) : tensor<?x?x8x128xbf16>
  %o = attn.flash_attention %q, %k, %v outs(%o_init) {block_q = 128 : i64, block_kv = 128 : i64}
      : (tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>)
      -> tensor<?x?x8x128xbf16>
  return %o : tensor<?x?x8x128xbf16>
}

// -----

// Layers of the same shape share one kernel; each call site keeps its
// launch. GQA-8 packs 8 heads into the 128-row tile (16 positions per CTA).
// CHECK-LABEL: func.func @two_layers
// CHECK: call @[[K:attn_fa_bf16_d64_h8_g8_q128_kv128_s2_causal]]_launch(%arg0, %arg1, %arg2)
// CHECK: call @[[K]]_launch(%{{.*}}, %arg1, %arg2)
// CHECK: gpu.module @[[K]]
// CHECK-NOT: gpu.module
// CHECK: func.func private @[[K]]_launch
// CHECK-SAME: expr = "ceil_div(S, 16)"
// CHECK-SAME: heads_per_cta = 8
func.func @two_layers(%q: tensor<?x?x8x64xbf16>, %k: tensor<?x?x1x64xbf16>,
                      %v: tensor<?x?x1x64xbf16>) -> tensor<?x?x8x64xbf16> {
  %a_c0 = arith.constant 0 : index
  %a_d0 = tensor.dim %q, %a_c0 : tensor<?x?x8x64xbf16>
  %a_c1 = arith.constant 1 : index
  %a_d1 = tensor.dim %q, %a_c1 : tensor<?x?x8x64xbf16>
  %a_init = tensor.empty(%a_d0, %a_d1) : tensor<?x?x8x64xbf16>
  %a = attn.flash_attention %q, %k, %v outs(%a_init) {causal, block_q = 128 : i64, block_kv = 128 : i64}
      : (tensor<?x?x8x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x8x64xbf16>)
      -> tensor<?x?x8x64xbf16>
  %b_c0 = arith.constant 0 : index
  %b_d0 = tensor.dim %a, %b_c0 : tensor<?x?x8x64xbf16>
  %b_c1 = arith.constant 1 : index
  %b_d1 = tensor.dim %a, %b_c1 : tensor<?x?x8x64xbf16>
  %b_init = tensor.empty(%b_d0, %b_d1) : tensor<?x?x8x64xbf16>
  %b = attn.flash_attention %a, %k, %v outs(%b_init) {causal, block_q = 128 : i64, block_kv = 128 : i64}
      : (tensor<?x?x8x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x8x64xbf16>)
      -> tensor<?x?x8x64xbf16>
  return %b : tensor<?x?x8x64xbf16>
}

// -----

// A sliding window raises the first key tile; query RoPE rotates each
// consumer's Q slab in place once (its own table pair), f16 on request.
// CHECK-LABEL: func.func @window_qrope
// CHECK: call @[[K:attn_fa_bf16_d64_h4_g1_q128_kv128_s2_causal_w256_qrope32]]_launch
// CHECK: gpu.func @[[K]]({{.*}}, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>) kernel
// CHECK: arith.maxsi
// CHECK: nvvm.setmaxregister  increase 240
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<3> -> vector<8xbf16>
// CHECK: nvvm.fence.proxy
// CHECK: nvvm.barrier id
// CHECK: func.func private @[[K]]_launch
// CHECK-SAME: query_rope_dims = 32
// CHECK-SAME: window = 256
func.func @window_qrope(%q: tensor<?x?x4x64xbf16>, %k: tensor<?x?x4x64xbf16>,
                        %v: tensor<?x?x4x64xbf16>) -> tensor<?x?x4x64xbf16> {
  %o_c0 = arith.constant 0 : index
  %o_d0 = tensor.dim %q, %o_c0 : tensor<?x?x4x64xbf16>
  %o_c1 = arith.constant 1 : index
  %o_d1 = tensor.dim %q, %o_c1 : tensor<?x?x4x64xbf16>
  %o_init = tensor.empty(%o_d0, %o_d1) : tensor<?x?x4x64xbf16>
  %o = attn.flash_attention %q, %k, %v
      outs(%o_init) {causal, window = 256 : i64, block_q = 128 : i64, block_kv = 128 : i64,
       query_rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
      : (tensor<?x?x4x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64xbf16>)
      -> tensor<?x?x4x64xbf16>
  return %o : tensor<?x?x4x64xbf16>
}

// -----

// A padded batch: the i32 key mask is one more pointer parameter (after the
// lengths) and operand 2 of the launch; every key tile takes the masked
// path, reading the mask entry of each of the thread's columns
// (key_mask[b * T + min(key, T - 1)]) and masking where it is 0.
// CHECK-LABEL: func.func @flash_key_mask
// CHECK: call @[[K:attn_fa_bf16_d64_h4_g1_q64_kv64_s2_causal_keqv_kmask32]]_launch(%arg0, %arg1, %arg2) : (tensor<?x?x4x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?xi32>) -> tensor<?x?x4x64xbf16>
// CHECK: gpu.func @[[K]](%{{.*}}: !llvm.ptr {llvm.align = 64 : i64}, %{{.*}}: !llvm.ptr {llvm.align = 64 : i64}, %{{.*}}: !llvm.ptr {llvm.align = 64 : i64}, %{{.*}}: i32, %[[T:.*]]: i32, %[[MASK:.*]]: !llvm.ptr<1>)
// CHECK: %[[ROW:.*]] = arith.muli %{{.*}}, %[[T]] : i32
// CHECK: %[[IDX:.*]] = arith.addi %[[ROW]], %{{.*}} : i32
// CHECK: %[[PTR:.*]] = llvm.getelementptr %[[MASK]][%[[IDX]]] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
// CHECK: %[[ENTRY:.*]] = llvm.load %[[PTR]] {alignment = 4 : i64} : !llvm.ptr<1> -> i32
// CHECK: arith.cmpi ne, %[[ENTRY]], %{{.*}} : i32
// CHECK: func.func private @[[K]]_launch
// CHECK-SAME: #attn.kernel_param<name = "key_mask", kind = "pointer", detail = "i32", value = "key_mask">
// CHECK-SAME: #attn.kernel_tensor<name = "key_mask", role = "{{[^"]*}}", operand = 2, dtype = "i32", shape = ["B", "T"], strides = ["T", 1], layout = "row-major [batch, seq], contiguous">
// CHECK-SAME: key_mask_bits = 32
func.func @flash_key_mask(%q: tensor<?x?x4x64xbf16>, %k: tensor<?x?x4x64xbf16>, %m: tensor<?x?xi32>) -> tensor<?x?x4x64xbf16> {
  %o_c0 = arith.constant 0 : index
  %o_d0 = tensor.dim %q, %o_c0 : tensor<?x?x4x64xbf16>
  %o_c1 = arith.constant 1 : index
  %o_d1 = tensor.dim %q, %o_c1 : tensor<?x?x4x64xbf16>
  %o_init = tensor.empty(%o_d0, %o_d1) : tensor<?x?x4x64xbf16>
  %o = attn.flash_attention %q, %k key_mask(%m) outs(%o_init) {block_q = 64 : i64, block_kv = 64 : i64, causal}
      : (tensor<?x?x4x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?xi32>, tensor<?x?x4x64xbf16>) -> tensor<?x?x4x64xbf16>
  return %o : tensor<?x?x4x64xbf16>
}

// -----

// Head dim 256 (Gemma): the K and V stages of 128 keys would take 128 KiB
// each, so the kernel streams 64-key tiles (block_kv 128 becomes kv64); at
// block_q 64 two CTAs no longer fit an SM, so one runs per SM and its one
// consumer warpgroup keeps the 248 registers it starts with. S = Q K^T is
// 16 k-steps of 16; O += P V one m64n256k16 per 16 keys.
// CHECK-LABEL: func.func @flash_d256_block_q64
// CHECK: call @[[K:attn_fa_bf16_d256_h4_g4_q64_kv64_s2_causal]]_launch
// CHECK: gpu.func @[[K]]
// CHECK-SAME: nvvm.maxntid = array<i32: 256, 1, 1>, nvvm.minctasm = 1 : i32
// CHECK: nvvm.setmaxregister  decrease 24
// CHECK: nvvm.setmaxregister  increase 248
// CHECK-COUNT-16: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>
// CHECK: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// CHECK: func.func private @[[K]]_launch
// CHECK-SAME: dynamic_smem_bytes = 164920
// CHECK-SAME: block_kv = 64 : i64
// CHECK-SAME: head_columns = 256 : i64, head_dim = 256 : i64
// CHECK-SAME: min_blocks_per_sm = 1 : i64
func.func @flash_d256_block_q64(%q: tensor<?x?x4x256xbf16>, %k: tensor<?x?x1x256xbf16>, %v: tensor<?x?x1x256xbf16>) -> tensor<?x?x4x256xbf16> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tensor.dim %q, %c0 : tensor<?x?x4x256xbf16>
  %s = tensor.dim %q, %c1 : tensor<?x?x4x256xbf16>
  %init = tensor.empty(%b, %s) : tensor<?x?x4x256xbf16>
  %o = attn.flash_attention %q, %k, %v outs(%init) {block_q = 64 : i64, block_kv = 128 : i64, causal}
      : (tensor<?x?x4x256xbf16>, tensor<?x?x1x256xbf16>, tensor<?x?x1x256xbf16>, tensor<?x?x4x256xbf16>) -> tensor<?x?x4x256xbf16>
  return %o : tensor<?x?x4x256xbf16>
}

// -----

// Head dim 96 (Phi-3): shared memory holds two 64-column slabs per row, the
// second one half zero-filled by TMA past the tensor's 96 columns (the
// descriptors keep the tensor's own width); the scores take 8 k-steps, of
// which the last two add zeros, and the TMA store clips O at column 96.
// The scale is 1/sqrt(96).
// CHECK-LABEL: func.func @flash_d96
// CHECK: call @[[K:attn_fa_bf16_d96_h4_g2_q64_kv64_s2_keqv]]_launch
// CHECK: gpu.func @[[K]]
// CHECK: box[%c0_i32{{.*}}
// CHECK: box[%c64_i32{{.*}}
// CHECK-COUNT-8: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>
// CHECK: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// CHECK: func.func private @[[K]]_launch
// CHECK-SAME: {box_dim = [64, 2, 32, 1], {{.*}}, global_dim = [96, 4, "S", "B"], global_strides_bytes = [192, 768, "768*S"], {{.*}}, oob_fill = "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE", param = "tma_q"
// CHECK-SAME: head_columns = 128 : i64, head_dim = 96 : i64
// CHECK-SAME: scale = 0.102062072615965
func.func @flash_d96(%q: tensor<?x?x4x96xbf16>, %k: tensor<?x?x2x96xbf16>) -> tensor<?x?x4x96xbf16> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tensor.dim %q, %c0 : tensor<?x?x4x96xbf16>
  %s = tensor.dim %q, %c1 : tensor<?x?x4x96xbf16>
  %init = tensor.empty(%b, %s) : tensor<?x?x4x96xbf16>
  %o = attn.flash_attention %q, %k outs(%init) {block_q = 64 : i64, block_kv = 64 : i64}
      : (tensor<?x?x4x96xbf16>, tensor<?x?x2x96xbf16>, tensor<?x?x4x96xbf16>) -> tensor<?x?x4x96xbf16>
  return %o : tensor<?x?x4x96xbf16>
}
