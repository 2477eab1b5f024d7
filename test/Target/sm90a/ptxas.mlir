// The emitted kernels assemble with ptxas for sm_90a with no spills and no
// "wgmma ... serialized" (C7515) warning.
// REQUIRES: ptxas
// RUN: rm -rf %t && attnfuse-compile %s --target=sm_90a -o %t
// RUN: cat %t/*.ptxas.log | FileCheck %s
// RUN: FileCheck %s --check-prefix=MANIFEST --input-file=%t/manifest.json

// CHECK-NOT: C7515
// CHECK-NOT: serialized
// CHECK: Compiling entry function 'attn_fa_bf16_d128_h8_g1_q128_kv128_s2_causal' for 'sm_90a'
// CHECK: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK-NOT: C7515
// CHECK: Compiling entry function 'attn_gemm_bf16_k1024_n1024' for 'sm_90a'
// CHECK: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK-NOT: C7515

// MANIFEST: "cubin": "attn_fa_bf16_d128_h8_g1_q128_kv128_s2_causal.cubin",
// MANIFEST: "ptxas": {
// MANIFEST: "spill_stores_bytes": 0,
// MANIFEST: "assembled_with_ptxas": true,
func.func @mha(%x: tensor<?x?x1024xbf16>, %wq: tensor<1024x1024xbf16>,
               %wk: tensor<1024x1024xbf16>, %wv: tensor<1024x1024xbf16>,
               %wo: tensor<1024x1024xbf16>) -> tensor<?x?x1024xbf16> {
  %y = attn.qkv_attention <none> %x wq(%wq) wk(%wk) wv(%wv) wo(%wo)
      {num_heads = 8 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64, causal}
      : (tensor<?x?x1024xbf16>, tensor<1024x1024xbf16>, tensor<1024x1024xbf16>,
         tensor<1024x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<?x?x1024xbf16>
  return %y : tensor<?x?x1024xbf16>
}
