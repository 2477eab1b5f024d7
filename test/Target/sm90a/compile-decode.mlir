// attnfuse-compile on decode steps (one new token per sequence): a K=V GQA
// layer with RoPE over a paged cache, and a ZAYA1-shaped CCGQA layer over its
// conv and shift states. Everything becomes sm_90a kernels: projection GEMMs,
// attn.cca_decode_prologue, and attn.flash_decode's split-KV and combine
// kernels, whose launch updates the caches in place.
// RUN: rm -rf %t && attnfuse-compile %s --target=sm_90a -o %t --no-cubin 2>&1 | FileCheck %s --check-prefix=OUT
// RUN: FileCheck %s --check-prefix=MANIFEST --input-file=%t/manifest.json
// RUN: FileCheck %s --check-prefix=HOST --input-file=%t/host.mlir

// OUT-NOT: have no sm_90a kernel
// OUT: attnfuse-compile: 11 kernel(s) for sm_90a written to

// MANIFEST: "host_ops": [
// MANIFEST-NOT: "op": "attn.
// MANIFEST-DAG: "kind": "cca_decode_prologue",
// MANIFEST-DAG: "kind": "flash_decode_split",
// MANIFEST-DAG: "kind": "flash_decode_combine",
// MANIFEST-DAG: "kind": "projection_gemm",

// The K=V step: the query and key projections, one split-KV launch that
// writes the shared key through the block table and returns the cache, its
// combine, and the output projection.
// HOST-LABEL: func.func @kv_step
// HOST-COUNT-2: call @attn_gemm_
// HOST: %[[WS:.+]]:2 = call @attn_flash_decode_launch(
// HOST: call @attn_flash_decode_combine_launch(%[[WS]]#0)
// HOST: call @attn_gemm_
// HOST: return %{{.+}}, %[[WS]]#1
// HOST-LABEL: func.func @zaya_step
// HOST: call @attn_cca_decode_prologue_bf16_h8_g4_d128_k2x2_qkmean_vshift_tclamp_rope64_launch(
// HOST: call @attn_flash_decode_1_launch(
func.func @kv_step(%x: tensor<?x1x1024xbf16>, %wq: tensor<1024x1024xbf16>,
    %wk: tensor<256x1024xbf16>, %wo: tensor<1024x1024xbf16>, %kv: tensor<?x64x4x64xbf16>,
    %pos: tensor<?xi32>, %bt: tensor<?x?xi32>)
    -> (tensor<?x1x1024xbf16>, tensor<?x64x4x64xbf16>) {
  %y, %kv2 = attn.qkv_decode <kv> %x wq(%wq) wk(%wk) wo(%wo) cache(%kv)
      positions(%pos) block_table(%bt)
      {num_heads = 16 : i64, num_kv_heads = 4 : i64, head_dim = 64 : i64,
       rope = #attn.rope<theta = 10000.0>}
      : (tensor<?x1x1024xbf16>, tensor<1024x1024xbf16>, tensor<256x1024xbf16>,
         tensor<1024x1024xbf16>, tensor<?x64x4x64xbf16>, tensor<?xi32>,
         tensor<?x?xi32>) -> (tensor<?x1x1024xbf16>, tensor<?x64x4x64xbf16>)
  return %y, %kv2 : tensor<?x1x1024xbf16>, tensor<?x64x4x64xbf16>
}
func.func @zaya_step(%x: tensor<?x1x2048xbf16>, %wq: tensor<1024x2048xbf16>,
    %wk: tensor<256x2048xbf16>, %wv: tensor<128x2048xbf16>, %wvp: tensor<128x2048xbf16>,
    %dw: tensor<1280x1x2xbf16>, %dwb: tensor<1280xbf16>, %gw: tensor<1280x128x2xbf16>,
    %gwb: tensor<1280xbf16>, %temp: tensor<2xbf16>, %wo: tensor<2048x1024xbf16>,
    %kc: tensor<?x?x2x128xbf16>, %vc: tensor<?x?x2x128xbf16>,
    %cs: tensor<?x2x1280xbf16>, %ss: tensor<?x1x128xbf16>, %pos: tensor<?xi32>)
    -> (tensor<?x1x2048xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>,
        tensor<?x2x1280xbf16>, tensor<?x1x128xbf16>) {
  %y, %k2, %v2, %c2, %s2 = attn.cca_decode %x wq(%wq) wk(%wk) wv(%wv)
      wv_prev(%wvp) conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) wo(%wo)
      cache(%kc, %vc) conv_state(%cs) shift_state(%ss) positions(%pos)
      {num_heads = 8 : i64, num_kv_heads = 2 : i64, head_dim = 128 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift,
       temperature = #attn.temperature<clamped>,
       rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
      : (tensor<?x1x2048xbf16>, tensor<1024x2048xbf16>, tensor<256x2048xbf16>,
         tensor<128x2048xbf16>, tensor<128x2048xbf16>, tensor<1280x1x2xbf16>,
         tensor<1280xbf16>, tensor<1280x128x2xbf16>, tensor<1280xbf16>, tensor<2xbf16>,
         tensor<2048x1024xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>,
         tensor<?x2x1280xbf16>, tensor<?x1x128xbf16>, tensor<?xi32>)
      -> (tensor<?x1x2048xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>,
          tensor<?x2x1280xbf16>, tensor<?x1x128xbf16>)
  return %y, %k2, %v2, %c2, %s2 : tensor<?x1x2048xbf16>, tensor<?x?x2x128xbf16>,
      tensor<?x?x2x128xbf16>, tensor<?x2x1280xbf16>, tensor<?x1x128xbf16>
}
