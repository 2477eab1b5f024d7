// attnfuse-compile end to end without ptxas: one Q-K=V layer (GQA-4, causal,
// RoPE) -> attn-decompose -> attn-fuse -> attn-to-ptx -> per kernel PTX and a
// manifest.
// RUN: rm -rf %t && attnfuse-compile %s --target=sm_90a -o %t --no-cubin | FileCheck %s --check-prefix=OUT
// RUN: FileCheck %s --check-prefix=PTX --input-file=%t/attn_fa_bf16_d64_h16_g4_q128_kv128_s2_causal_keqv_krope64.ptx
// RUN: FileCheck %s --check-prefix=GEMM --input-file=%t/attn_gemm_bf16_k1024_n1024_rope64of64.ptx
// RUN: FileCheck %s --check-prefix=MANIFEST --input-file=%t/manifest.json
// RUN: FileCheck %s --check-prefix=HOST --input-file=%t/host.mlir

// OUT: attnfuse-compile: 4 kernel(s) for sm_90a written to

// PTX: .version 8.0
// PTX: .target sm_90a
// PTX: .extern .shared .align 1024 .b8 attn_dynamic_smem[];
// PTX: .visible .entry attn_fa_bf16_d64_h16_g4_q128_kv128_s2_causal_keqv_krope64(
// PTX-NEXT: .param .align 64 .b8 attn_fa_bf16_d64_h16_g4_q128_kv128_s2_causal_keqv_krope64_param_0[128],
// PTX-NEXT: .param .align 64 .b8 attn_fa_bf16_d64_h16_g4_q128_kv128_s2_causal_keqv_krope64_param_1[128],
// PTX-NEXT: .param .align 64 .b8 attn_fa_bf16_d64_h16_g4_q128_kv128_s2_causal_keqv_krope64_param_2[128],
// PTX: .maxntid 384, 1, 1
// PTX: .minnctapersm 1
// PTX-DAG: cvta.param.u64
// PTX-DAG: mbarrier.init.shared.b64
// PTX-DAG: setmaxnreg.dec.sync.aligned.u32 	56;
// PTX-DAG: setmaxnreg.inc.sync.aligned.u32 	224;
// PTX-DAG: elect.sync
// PTX-DAG: mbarrier.arrive.expect_tx.shared.b64
// PTX-DAG: cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTX-DAG: mbarrier.try_wait.parity.shared.b64
// PTX-DAG: wgmma.fence.sync.aligned;
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, p, 1,  1, 0,  0;
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, %rd{{[0-9]+}}, p, 1, 1, 1;
// PTX-DAG: wgmma.commit_group.sync.aligned;
// PTX-DAG: wgmma.wait_group.sync.aligned 	0;
// PTX-DAG: shfl.sync.bfly.b32
// PTX-DAG: ex2.approx.ftz.f32
// PTX-DAG: cvt.rn.bf16x2.f32
// PTX-DAG: fence.proxy.async.shared::cta;
// PTX-DAG: mbarrier.arrive.shared.b64
// PTX-DAG: bar.sync 	1, 128;
// PTX-DAG: cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group
// PTX-DAG: cp.async.bulk.wait_group.read 	0;

// GEMM: .visible .entry attn_gemm_bf16_k1024_n1024_rope64of64(
// GEMM-DAG: setmaxnreg.dec.sync.aligned.u32 	40;
// GEMM-DAG: setmaxnreg.inc.sync.aligned.u32 	232;
// GEMM-DAG: cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// GEMM-DAG: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// GEMM-DAG: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// GEMM-DAG: wgmma.wait_group.sync.aligned 	1;
// GEMM-DAG: cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group

// MANIFEST: "format": "attnfuse-sm90a-manifest"
// MANIFEST: "host_ops": [
// MANIFEST: "op": "tensor.collapse_shape"
// MANIFEST: "kernels": [
// MANIFEST: "block": [
// MANIFEST-NEXT: 384,
// MANIFEST: "dynamic_smem_bytes": 83000,
// MANIFEST: "expr": "ceil_div(S, 32)",
// MANIFEST: "kind": "flash_attention",
// MANIFEST: "name": "attn_fa_bf16_d64_h16_g4_q128_kv128_s2_causal_keqv_krope64",
// MANIFEST: "ptx": "attn_fa_bf16_d64_h16_g4_q128_kv128_s2_causal_keqv_krope64.ptx",
// MANIFEST: "rope_tables": [
// MANIFEST: "tma_descriptors": [
// MANIFEST: "box_dim": [
// MANIFEST-NEXT: 64,
// MANIFEST-NEXT: 4,
// MANIFEST-NEXT: 16,
// MANIFEST-NEXT: 1
// MANIFEST: "swizzle": "CU_TENSOR_MAP_SWIZZLE_128B",
// MANIFEST: "launches": [
// MANIFEST: "kernel": "attn_gemm_bf16_k1024_n256",
// MANIFEST: "kernel": "attn_gemm_bf16_k1024_n1024_rope64of64",
// MANIFEST: "kernel": "attn_fa_bf16_d64_h16_g4_q128_kv128_s2_causal_keqv_krope64",
// MANIFEST-NEXT: "op": "attn.flash_attention",
// MANIFEST: "kernel": "attn_gemm_bf16_k1024_n1024",
// MANIFEST-NEXT: "op": "attn.{{(fused_projection|project)}}",
// MANIFEST: "numerically_verified": false

// HOST: call @attn_fa_bf16_d64_h16_g4_q128_kv128_s2_causal_keqv_krope64_launch
// HOST-NOT: gpu.binary
func.func @layer(%x: tensor<?x?x1024xbf16>, %wq: tensor<1024x1024xbf16>,
                 %wk: tensor<256x1024xbf16>, %wo: tensor<1024x1024xbf16>)
    -> tensor<?x?x1024xbf16> {
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 16 : i64, num_kv_heads = 4 : i64, head_dim = 64 : i64,
       causal, rope = #attn.rope<theta = 10000.0>}
      : (tensor<?x?x1024xbf16>, tensor<1024x1024xbf16>, tensor<256x1024xbf16>,
         tensor<1024x1024xbf16>) -> tensor<?x?x1024xbf16>
  return %y : tensor<?x?x1024xbf16>
}
