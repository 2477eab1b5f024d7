// attnfuse-compile writes a device program per public function: the kernel
// launches in order over numbered values (the inputs first), the reshapes
// between them as views, and the residual add as an element-wise kernel, so
// nothing is left for the host to compute.
// RUN: rm -rf %t && attnfuse-compile %s --target=sm_90a -o %t --no-cubin 2>&1 | FileCheck %s --check-prefix=OUT
// RUN: FileCheck %s --check-prefix=MANIFEST --input-file=%t/manifest.json
// RUN: rm -rf %t.decode && attnfuse-compile %examples/gpt300m_kv_gqa4_decode.mlir --target=sm_90a -o %t.decode --no-cubin 2>&1 | FileCheck %s --check-prefix=OUT-DECODE
// RUN: FileCheck %s --check-prefix=DECODE --input-file=%t.decode/manifest.json

// OUT-NOT: warning
// OUT: attnfuse-compile: 4 kernel(s) for sm_90a written to

// The element-wise kernel: one 16-byte chunk of 8 bf16 per thread.
// MANIFEST: "kind": "elementwise",
// MANIFEST: "name": "attn_ewise_add_bf16",
// MANIFEST: "name": "count",
// MANIFEST-NEXT: "value": "256*B*S"

// MANIFEST: "programs": [
// MANIFEST: "function": "layer",
// MANIFEST: "inputs": [
// MANIFEST-NEXT: {
// MANIFEST-NEXT: "dtype": "bf16",
// MANIFEST-NEXT: "shape": [
// MANIFEST-NEXT: -1,
// MANIFEST-NEXT: -1,
// MANIFEST-NEXT: 256
// MANIFEST-NEXT: ],
// MANIFEST-NEXT: "value": 0
// The projections (the shared key/value; query), attention, the output
// projection, its reshape and the residual add, in program order.
// MANIFEST: "outputs": [
// MANIFEST-NEXT: [[RES:[0-9]+]]
// MANIFEST: "kernel": "attn_gemm_bf16_k256_n128_bias",
// MANIFEST: "kernel": "attn_gemm_bf16_k256_n256_bias",
// MANIFEST: "kernel": "attn_fa_bf16_d64_h4_g2_q128_kv128_s2_causal_keqv",
// MANIFEST: "op": "view",
// MANIFEST: "kernel": "attn_gemm_bf16_k256_n256_bias",
// MANIFEST: "op": "view",
// MANIFEST: "kernel": "attn_ewise_add_bf16",
// MANIFEST-NEXT: "op": "launch",
// MANIFEST-NEXT: "results": [
// MANIFEST-NEXT: {
// MANIFEST-NEXT: "dtype": "bf16",
// MANIFEST-NEXT: "shape": [
// MANIFEST-NEXT: -1,
// MANIFEST-NEXT: -1,
// MANIFEST-NEXT: 256
// MANIFEST-NEXT: ],
// MANIFEST-NEXT: "tensor": "output",
// MANIFEST-NEXT: "value": [[RES]]
// MANIFEST: "lhs": 0,
// MANIFEST: "values":
func.func @layer(%x: tensor<?x?x256xbf16>, %wq: tensor<256x256xbf16>,
                 %bq: tensor<256xbf16>, %wk: tensor<128x256xbf16>,
                 %bk: tensor<128xbf16>, %wo: tensor<256x256xbf16>,
                 %bo: tensor<256xbf16>) -> tensor<?x?x256xbf16> {
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      bq(%bq) bk(%bk) bo(%bo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 64 : i64, causal}
      : (tensor<?x?x256xbf16>, tensor<256x256xbf16>, tensor<128x256xbf16>,
         tensor<256x256xbf16>, tensor<256xbf16>, tensor<128xbf16>,
         tensor<256xbf16>) -> tensor<?x?x256xbf16>
  %h = arith.addf %x, %y : tensor<?x?x256xbf16>
  return %h : tensor<?x?x256xbf16>
}

// The decode example: nothing is left to the host in @prefill (the cache
// writes, gathers, rotations and attention over the cache have kernels) or
// @step; the query rotation at given positions sizes its RoPE tables by the
// cache (64 pages x 16 tokens), which no operand gives. The residual adds
// of @prefill ([B, S, E]) and @step ([B, 1, E]) are two element-wise kernels:
// a kernel's launch description names its tensors' sizes.
// OUT-DECODE-NOT: warning
// OUT-DECODE: attnfuse-compile: 11 kernel(s) for sm_90a written to
// DECODE: "function": "prefill",
// DECODE: "kernel": "attn_cache_update_bf16_paged_h4_d64",
// DECODE: "kernel": "attn_cache_gather_bf16_p16_h4_d64",
// DECODE: "kernel": "attn_rope_bf16_h16_d64_r64_pos",
// DECODE: "sizes": {{{$}}
// DECODE-NEXT: "T": 1024
// DECODE: "kernel": "attn_sdpa_bf16_h16_4_d64_64_causal_pos",
// DECODE: "function": "step",
// DECODE: "aliases": {{{$}}
// DECODE-NEXT: "key_cache_out": "key_cache"
// DECODE: "kernel": "attn_flash_decode",
// DECODE: "kernel": "attn_flash_decode_combine",
