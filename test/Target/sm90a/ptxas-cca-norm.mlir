// The CCA kernels with transformers' numerics (norm = clamp_eps, raw
// temperature), prefill prologue and decode prologue, assemble with ptxas
// for sm_90a with no spills and no "wgmma ... serialized" (C7515) warning.
// REQUIRES: ptxas
// RUN: rm -rf %t && attnfuse-compile %s --target=sm_90a -o %t --no-programs
// RUN: cat %t/*.ptxas.log | FileCheck %s
// RUN: FileCheck %s --check-prefix=MANIFEST --input-file=%t/manifest.json

// CHECK-NOT: C7515
// CHECK: Compiling entry function 'attn_cca_decode_prologue_bf16_h8_g4_d128_k2x2_qkmean_vshift_nclamp_rope64' for 'sm_90a'
// CHECK: bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK-NOT: C7515
// CHECK: Compiling entry function 'attn_cca_prologue_bf16_e2048_h8_g4_d128_k2x2_qkmean_vshift_nclamp_rope64' for 'sm_90a'
// CHECK: bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK-NOT: C7515

// MANIFEST-DAG: "name": "attn_cca_prologue_bf16_e2048_h8_g4_d128_k2x2_qkmean_vshift_nclamp_rope64",
// MANIFEST-DAG: "norm": "clamp_eps",
func.func @prologue(%x: tensor<?x?x2048xbf16>, %wq: tensor<1024x2048xbf16>,
                    %wk: tensor<256x2048xbf16>, %wv: tensor<128x2048xbf16>,
                    %wvp: tensor<128x2048xbf16>, %dw: tensor<1280x1x2xbf16>,
                    %dwb: tensor<1280xbf16>, %gw: tensor<1280x128x2xbf16>,
                    %gwb: tensor<1280xbf16>, %temp: tensor<2xbf16>)
    -> (tensor<?x?x8x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>) {
  %cp_c0 = arith.constant 0 : index
  %cp_c1 = arith.constant 1 : index
  %cp_batch = tensor.dim %x, %cp_c0 : tensor<?x?x2048xbf16>
  %cp_seq = tensor.dim %x, %cp_c1 : tensor<?x?x2048xbf16>
  %cp_init0 = tensor.empty(%cp_batch, %cp_seq) : tensor<?x?x8x128xbf16>
  %cp_init1 = tensor.empty(%cp_batch, %cp_seq) : tensor<?x?x2x128xbf16>
  %cp_init2 = tensor.empty(%cp_batch, %cp_seq) : tensor<?x?x2x128xbf16>
  %q, %k, %v = attn.cca_prologue %x wq(%wq) wk(%wk) wv(%wv) wv_prev(%wvp)
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp)
      outs(%cp_init0, %cp_init1, %cp_init2) {num_heads = 8 : i64, num_kv_heads = 2 : i64, head_dim = 128 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift,
       norm = #attn.norm<clamp_eps>, eps = 0.0078125 : f64,
       rope = #attn.rope<theta = 5000000.0, fraction = 0.5>, block_s = 64 : i64}
      : (tensor<?x?x2048xbf16>, tensor<1024x2048xbf16>, tensor<256x2048xbf16>,
         tensor<128x2048xbf16>, tensor<128x2048xbf16>, tensor<1280x1x2xbf16>,
         tensor<1280xbf16>, tensor<1280x128x2xbf16>, tensor<1280xbf16>,
         tensor<2xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>)
      -> (tensor<?x?x8x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>)
  return %q, %k, %v
      : tensor<?x?x8x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>
}

func.func @step(%qr: tensor<?x1x1024xbf16>, %kr: tensor<?x1x256xbf16>, %vc: tensor<?x1x128xbf16>, %vp: tensor<?x1x128xbf16>, %dw: tensor<1280x1x2xbf16>, %dwb: tensor<1280xbf16>, %gw: tensor<1280x128x2xbf16>, %gwb: tensor<1280xbf16>, %temp: tensor<2xbf16>, %cs: tensor<?x2x1280xbf16>, %ss: tensor<?x1x128xbf16>, %pos: tensor<?xi32>) -> (tensor<?x1x8x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x2x1280xbf16>, tensor<?x1x128xbf16>) {
  %di48_c0 = arith.constant 0 : index
  %di48_b = tensor.dim %qr, %di48_c0 : tensor<?x1x1024xbf16>
  %di48_init0 = tensor.empty(%di48_b) : tensor<?x1x8x128xbf16>
  %di48_init1 = tensor.empty(%di48_b) : tensor<?x1x2x128xbf16>
  %di48_init2 = tensor.empty(%di48_b) : tensor<?x1x2x128xbf16>
  %r0, %r1, %r2, %r3, %r4 = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%di48_init0, %di48_init1, %di48_init2) conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 8 : i64, num_kv_heads = 2 : i64, head_dim = 128 : i64, conv_kernel_sizes = array<i64: 2, 2>, norm = #attn.norm<clamp_eps>, eps = 0.0078125 : f64, qk_mean, value_shift, rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
      : (tensor<?x1x1024xbf16>, tensor<?x1x256xbf16>, tensor<?x1x128xbf16>, tensor<?x1x128xbf16>, tensor<1280x1x2xbf16>, tensor<1280xbf16>, tensor<1280x128x2xbf16>, tensor<1280xbf16>, tensor<2xbf16>, tensor<?x1x8x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x2x1280xbf16>, tensor<?x1x128xbf16>, tensor<?xi32>) -> (tensor<?x1x8x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x2x1280xbf16>, tensor<?x1x128xbf16>)
  return %r0, %r1, %r2, %r3, %r4 : tensor<?x1x8x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x2x1280xbf16>, tensor<?x1x128xbf16>
}
