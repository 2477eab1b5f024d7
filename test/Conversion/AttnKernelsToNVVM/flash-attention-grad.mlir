// RUN: attnfuse-opt %s --convert-attn-kernels-to-nvvm -split-input-file | FileCheck %s

// GQA-2, causal: the op becomes two launches, the dQ kernel (its launch
// returns dQ and the f32 workspace D = rowsum(dO * O)) and the dK/dV kernel,
// which reads D. Both are warp-specialized TMA + wgmma kernels: the dQ
// kernel has the forward's query-tile grid, the dK/dV kernel one CTA of two
// consumer warpgroups per 128 keys of a KV head.
// CHECK-LABEL: func.func @grad_gqa
// CHECK: %[[DQ:.*]]:2 = call @attn_fa_dq_bf16_d64_h4_g2_q64_kv64_s2_causal_launch(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5) : (tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>) -> (tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>)
// CHECK: %[[DKV:.*]]:2 = call @attn_fa_dkv_bf16_d64_h4_g2_k128_s2_causal_launch(%arg0, %arg1, %arg2, %arg4, %arg5, %[[DQ]]#1)
// CHECK: return %[[DQ]]#0, %[[DKV]]#0, %[[DKV]]#1
// CHECK: gpu.func @attn_fa_dq_bf16_d64_h4_g2_q64_kv64_s2_causal({{.*}}) kernel attributes {{{.*}}nvvm.maxntid = array<i32: 256, 1, 1>
// CHECK: nvvm.setmaxregister decrease 24
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK: nvvm.wgmma.mma_async
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// CHECK: nvvm.cp.async.bulk.tensor.global.shared.cta
// CHECK: gpu.func @attn_fa_dkv_bf16_d64_h4_g2_k128_s2_causal({{.*}}) kernel attributes {{{.*}}nvvm.maxntid = array<i32: 384, 1, 1>
// CHECK: nvvm.wgmma.mma_async
// CHECK: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// CHECK: nvvm.cp.async.bulk.tensor.global.shared.cta
// CHECK: func.func private @attn_fa_dq_bf16_d64_h4_g2_q64_kv64_s2_causal_launch
// CHECK-SAME: kind = "flash_attention_grad_dq"
// CHECK-SAME: grid = [{ceil_div = 32 : i64, expr = "ceil_div(S, 32)", symbol = "S"}, {expr = "2", value = 2 : i64}, {ceil_div = 1 : i64, expr = "B", symbol = "B"}]
// CHECK-SAME: #attn.kernel_param<name = "delta", kind = "pointer", detail = "f32", value = "delta">
// CHECK-SAME: #attn.kernel_tensor<name = "delta", role = "result (the dK/dV kernel's workspace): D = rowsum(dO * O)", operand = -1, dtype = "f32"
// CHECK-SAME: then = "attn_fa_dkv_bf16_d64_h4_g2_k128_s2_causal"
// CHECK-SAME: workspace = {bytes = "4*B*S*4"
// CHECK: func.func private @attn_fa_dkv_bf16_d64_h4_g2_k128_s2_causal_launch
// CHECK-SAME: kind = "flash_attention_grad_dkv"
// CHECK-SAME: grid = [{ceil_div = 128 : i64, expr = "ceil_div(T, 128)", symbol = "T"}, {expr = "2", value = 2 : i64}, {ceil_div = 1 : i64, expr = "B", symbol = "B"}]
// CHECK-SAME: #attn.kernel_tensor<name = "delta", role = "workspace: D = rowsum(dO * O), from the dQ kernel", operand = 5, dtype = "f32"
func.func @grad_gqa(%q: tensor<?x?x4x64xbf16>, %k: tensor<?x?x2x64xbf16>, %v: tensor<?x?x2x64xbf16>, %o: tensor<?x?x4x64xbf16>, %do: tensor<?x?x4x64xbf16>, %l: tensor<?x?x4xf32>) -> (tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tensor.dim %q, %c0 : tensor<?x?x4x64xbf16>
  %s = tensor.dim %q, %c1 : tensor<?x?x4x64xbf16>
  %t = tensor.dim %k, %c1 : tensor<?x?x2x64xbf16>
  %dq0 = tensor.empty(%b, %s) : tensor<?x?x4x64xbf16>
  %dk0 = tensor.empty(%b, %t) : tensor<?x?x2x64xbf16>
  %dq, %dk, %dv = attn.flash_attention_grad %q, %k, %v, %o, %do lse(%l) outs(%dq0, %dk0, %dk0) {causal, block_q = 64 : i64, block_kv = 64 : i64} : (tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>) -> (tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>)
  return %dq, %dk, %dv : tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>
}

// -----

// K=V with a key mask: one gradient for the shared tensor (dKV), so the
// dK/dV kernel has one result.
// CHECK-LABEL: func.func @grad_kv_masked
// CHECK: %[[DQ:.*]]:2 = call @attn_fa_dq_bf16_d128_h8_g8_q128_kv64_s2_keqv_kmask64_launch(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5)
// CHECK: %[[DKV:.*]] = call @attn_fa_dkv_bf16_d128_h8_g8_k128_s2_keqv_kmask64_launch(%arg0, %arg1, %arg3, %arg4, %arg5, %[[DQ]]#1) : (tensor<?x?x8x128xbf16>, tensor<?x?x1x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?xi64>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x1x128xbf16>
// CHECK: return %[[DQ]]#0, %[[DKV]]
func.func @grad_kv_masked(%q: tensor<?x?x8x128xbf16>, %kv: tensor<?x?x1x128xbf16>, %o: tensor<?x?x8x128xbf16>, %do: tensor<?x?x8x128xbf16>, %m: tensor<?x?xi64>, %l: tensor<?x?x8xf32>) -> (tensor<?x?x8x128xbf16>, tensor<?x?x1x128xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tensor.dim %q, %c0 : tensor<?x?x8x128xbf16>
  %s = tensor.dim %q, %c1 : tensor<?x?x8x128xbf16>
  %t = tensor.dim %kv, %c1 : tensor<?x?x1x128xbf16>
  %dq0 = tensor.empty(%b, %s) : tensor<?x?x8x128xbf16>
  %dk0 = tensor.empty(%b, %t) : tensor<?x?x1x128xbf16>
  %dq, %dkv = attn.flash_attention_grad %q, %kv, %o, %do key_mask(%m) lse(%l) outs(%dq0, %dk0) {block_q = 128 : i64, block_kv = 64 : i64} : (tensor<?x?x8x128xbf16>, tensor<?x?x1x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?xi64>, tensor<?x?x8xf32>, tensor<?x?x8x128xbf16>, tensor<?x?x1x128xbf16>) -> (tensor<?x?x8x128xbf16>, tensor<?x?x1x128xbf16>)
  return %dq, %dkv : tensor<?x?x8x128xbf16>, tensor<?x?x1x128xbf16>
}

// -----

// K=V with key RoPE: the keys are rotated by their own kernel, the backward
// runs on the rotated keys with the un-rotated tensor as the value, and dK
// is rotated back (rope_grad) and added to dV: one dKV result.
// CHECK-LABEL: func.func @key_rope_kv
// CHECK: %[[KR:.*]] = call @attn_rope_bf16_h2_d64_r64_launch(%arg1)
// CHECK: %[[DQ:.*]]:2 = call @attn_fa_dq_{{.*}}_launch(%arg0, %[[KR]], %arg1, %arg0, %arg0, %arg2)
// CHECK: %[[DKV:.*]]:2 = call @attn_fa_dkv_{{.*}}_launch(%arg0, %[[KR]], %arg1, %arg0, %arg2, %[[DQ]]#1)
// CHECK: %[[DK:.*]] = call @attn_rope_grad_bf16_h2_d64_r64_launch(%[[DKV]]#0)
// CHECK: %[[SUM:.*]] = call @attn_ewise_add_bf16_launch(%[[DK]], %[[DKV]]#1)
// CHECK: return %[[DQ]]#0, %[[SUM]]
func.func @key_rope_kv(%q: tensor<?x?x4x64xbf16>, %k: tensor<?x?x2x64xbf16>, %l: tensor<?x?x4xf32>, %dq0: tensor<?x?x4x64xbf16>, %dk0: tensor<?x?x2x64xbf16>) -> (tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>) {
  %dq, %dkv = attn.flash_attention_grad %q, %k, %q, %q lse(%l) outs(%dq0, %dk0) {causal, block_q = 64 : i64, block_kv = 64 : i64, key_rope = #attn.rope<theta = 10000.0>} : (tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>) -> (tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>)
  return %dq, %dkv : tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>
}

// -----

// MHA at head dim 128 with separate K and V (the Llama shape): dK and dV
// (64 + 64 f32 per thread) beside the two score tiles. Each consumer stages
// the tile's lse and D in shared memory (one value per thread, a
// warpgroup barrier) instead of loading 32 per thread, and its index is
// made warp-uniform (shfl.idx) so the slab descriptors live in uniform
// registers: that is what keeps the kernel from spilling.
// CHECK-LABEL: func.func @grad_mha_d128
// CHECK: call @attn_fa_dq_bf16_d128_h4_g1_q64_kv64_s2_launch
// CHECK: %[[DKV:.*]]:2 = call @attn_fa_dkv_bf16_d128_h4_g1_k128_s2_launch
// CHECK: gpu.func @attn_fa_dkv_bf16_d128_h4_g1_k128_s2(
// CHECK: nvvm.setmaxregister increase 240
// CHECK: nvvm.shfl.sync idx
// CHECK: scf.for
// CHECK: nvvm.wgmma.mma_async
// CHECK: llvm.load {{.*}} : !llvm.ptr<1> -> f32
// CHECK: llvm.store {{.*}} : f32, !llvm.ptr<3>
// CHECK: nvvm.barrier id = {{.*}} number_of_threads = {{.*}}
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: llvm.load {{.*}} : !llvm.ptr<3> -> f32
// CHECK: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
func.func @grad_mha_d128(%q: tensor<?x?x4x128xbf16>, %k: tensor<?x?x4x128xbf16>, %v: tensor<?x?x4x128xbf16>, %l: tensor<?x?x4xf32>, %dq0: tensor<?x?x4x128xbf16>, %dk0: tensor<?x?x4x128xbf16>) -> (tensor<?x?x4x128xbf16>, tensor<?x?x4x128xbf16>, tensor<?x?x4x128xbf16>) {
  %dq, %dk, %dv = attn.flash_attention_grad %q, %k, %v, %q, %q lse(%l) outs(%dq0, %dk0, %dk0) {block_q = 64 : i64, block_kv = 64 : i64} : (tensor<?x?x4x128xbf16>, tensor<?x?x4x128xbf16>, tensor<?x?x4x128xbf16>, tensor<?x?x4x128xbf16>, tensor<?x?x4x128xbf16>, tensor<?x?x4xf32>, tensor<?x?x4x128xbf16>, tensor<?x?x4x128xbf16>, tensor<?x?x4x128xbf16>) -> (tensor<?x?x4x128xbf16>, tensor<?x?x4x128xbf16>, tensor<?x?x4x128xbf16>)
  return %dq, %dk, %dv : tensor<?x?x4x128xbf16>, tensor<?x?x4x128xbf16>, tensor<?x?x4x128xbf16>
}

// -----

// K=V with key RoPE at head dim 128 takes the same split as at 64: the
// dK/dV kernel of the rotated key and the value has separate dK and dV.
// CHECK-LABEL: func.func @key_rope_kv_d128
// CHECK: %[[KR:.*]] = call @attn_rope_bf16_h2_d128_r128_launch(%arg1)
// CHECK: %[[DKV:.*]]:2 = call @attn_fa_dkv_bf16_d128_h4_g2_k128_s2_causal_launch(%arg0, %[[KR]], %arg1,
// CHECK: %[[DK:.*]] = call @attn_rope_grad_bf16_h2_d128_r128_launch(%[[DKV]]#0)
// CHECK: call @attn_ewise_add_bf16_launch(%[[DK]], %[[DKV]]#1)
func.func @key_rope_kv_d128(%q: tensor<?x?x4x128xbf16>, %k: tensor<?x?x2x128xbf16>, %l: tensor<?x?x4xf32>, %dq0: tensor<?x?x4x128xbf16>, %dk0: tensor<?x?x2x128xbf16>) -> (tensor<?x?x4x128xbf16>, tensor<?x?x2x128xbf16>) {
  %dq, %dkv = attn.flash_attention_grad %q, %k, %q, %q lse(%l) outs(%dq0, %dk0) {causal, block_q = 64 : i64, block_kv = 64 : i64, key_rope = #attn.rope<theta = 10000.0>} : (tensor<?x?x4x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x4x128xbf16>, tensor<?x?x4x128xbf16>, tensor<?x?x4xf32>, tensor<?x?x4x128xbf16>, tensor<?x?x2x128xbf16>) -> (tensor<?x?x4x128xbf16>, tensor<?x?x2x128xbf16>)
  return %dq, %dkv : tensor<?x?x4x128xbf16>, tensor<?x?x2x128xbf16>
}
