// RUN: attnfuse-opt %s --convert-attn-kernels-to-nvvm -split-input-file -verify-diagnostics

func.func @head_dim_40(%q: tensor<?x?x4x40xbf16>, %k: tensor<?x?x4x40xbf16>) -> tensor<?x?x4x40xbf16> {
  %o_c0 = arith.constant 0 : index
  %o_d0 = tensor.dim %q, %o_c0 : tensor<?x?x4x40xbf16>
  %o_c1 = arith.constant 1 : index
  %o_d1 = tensor.dim %q, %o_c1 : tensor<?x?x4x40xbf16>
  %o_init = tensor.empty(%o_d0, %o_d1) : tensor<?x?x4x40xbf16>
  // expected-error @+1 {{head_dim 40 is not supported by the sm_90a kernel (a multiple of 16 up to 256)}}
  %o = attn.flash_attention %q, %k outs(%o_init) {block_q = 64 : i64, block_kv = 64 : i64}
      : (tensor<?x?x4x40xbf16>, tensor<?x?x4x40xbf16>, tensor<?x?x4x40xbf16>) -> tensor<?x?x4x40xbf16>
  return %o : tensor<?x?x4x40xbf16>
}

// -----

func.func @head_dim_320(%q: tensor<?x?x4x320xbf16>, %k: tensor<?x?x4x320xbf16>) -> tensor<?x?x4x320xbf16> {
  %o_c0 = arith.constant 0 : index
  %o_d0 = tensor.dim %q, %o_c0 : tensor<?x?x4x320xbf16>
  %o_c1 = arith.constant 1 : index
  %o_d1 = tensor.dim %q, %o_c1 : tensor<?x?x4x320xbf16>
  %o_init = tensor.empty(%o_d0, %o_d1) : tensor<?x?x4x320xbf16>
  // expected-error @+1 {{head_dim 320 is not supported by the sm_90a kernel (a multiple of 16 up to 256)}}
  %o = attn.flash_attention %q, %k outs(%o_init) {block_q = 64 : i64, block_kv = 64 : i64}
      : (tensor<?x?x4x320xbf16>, tensor<?x?x4x320xbf16>, tensor<?x?x4x320xbf16>) -> tensor<?x?x4x320xbf16>
  return %o : tensor<?x?x4x320xbf16>
}

// -----

func.func @f16_asked_bf16(%q: tensor<?x?x4x64xf16>, %k: tensor<?x?x4x64xf16>) -> tensor<?x?x4x64xf16> {
  %o_c0 = arith.constant 0 : index
  %o_d0 = tensor.dim %q, %o_c0 : tensor<?x?x4x64xf16>
  %o_c1 = arith.constant 1 : index
  %o_d1 = tensor.dim %q, %o_c1 : tensor<?x?x4x64xf16>
  %o_init = tensor.empty(%o_d0, %o_d1) : tensor<?x?x4x64xf16>
  // expected-error @+1 {{has 'f16' tensors but the sm_90a kernels were asked for elem-type=bf16}}
  %o = attn.flash_attention %q, %k outs(%o_init) {block_q = 64 : i64, block_kv = 64 : i64}
      : (tensor<?x?x4x64xf16>, tensor<?x?x4x64xf16>, tensor<?x?x4x64xf16>) -> tensor<?x?x4x64xf16>
  return %o : tensor<?x?x4x64xf16>
}

// -----

func.func @logit_bias(%q: tensor<?x?x4x64xbf16>, %k: tensor<?x?x4x64xbf16>, %b: tensor<?x?xbf16>) -> tensor<?x?x4x64xbf16> {
  %o_c0 = arith.constant 0 : index
  %o_d0 = tensor.dim %q, %o_c0 : tensor<?x?x4x64xbf16>
  %o_c1 = arith.constant 1 : index
  %o_d1 = tensor.dim %q, %o_c1 : tensor<?x?x4x64xbf16>
  %o_init = tensor.empty(%o_d0, %o_d1) : tensor<?x?x4x64xbf16>
  // expected-error @+1 {{additive logit bias is not supported by the sm_90a kernel yet}}
  %o = attn.flash_attention %q, %k bias(%b) outs(%o_init) {block_q = 64 : i64, block_kv = 64 : i64}
      : (tensor<?x?x4x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?xbf16>, tensor<?x?x4x64xbf16>) -> tensor<?x?x4x64xbf16>
  return %o : tensor<?x?x4x64xbf16>
}

// -----

func.func @rope_not_chunked(%q: tensor<?x?x4x64xbf16>, %k: tensor<?x?x4x64xbf16>) -> tensor<?x?x4x64xbf16> {
  %o_c0 = arith.constant 0 : index
  %o_d0 = tensor.dim %q, %o_c0 : tensor<?x?x4x64xbf16>
  %o_c1 = arith.constant 1 : index
  %o_d1 = tensor.dim %q, %o_c1 : tensor<?x?x4x64xbf16>
  %o_init = tensor.empty(%o_d0, %o_d1) : tensor<?x?x4x64xbf16>
  // expected-error @+1 {{RoPE must rotate a multiple of 16 dims (got 8)}}
  %o = attn.flash_attention %q, %k
      outs(%o_init) {block_q = 64 : i64, block_kv = 64 : i64,
       key_rope = #attn.rope<theta = 10000.0, fraction = 0.125>}
      : (tensor<?x?x4x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64xbf16>) -> tensor<?x?x4x64xbf16>
  return %o : tensor<?x?x4x64xbf16>
}

// -----

func.func @odd_features(%x: tensor<?x?x100xbf16>, %w: tensor<64x100xbf16>) -> tensor<?x?x64xbf16> {
  // expected-error @+1 {{needs in and out features that are multiples of 8 (16-byte TMA strides), got 100 and 64}}
  %y = attn.project %x, %w : (tensor<?x?x100xbf16>, tensor<64x100xbf16>) -> tensor<?x?x64xbf16>
  return %y : tensor<?x?x64xbf16>
}

// -----

// The kernel's tiles are the op's block_q / block_kv (what attn-fuse chose).
func.func @block_q_96(%q: tensor<?x?x8x128xbf16>, %k: tensor<?x?x8x128xbf16>) -> tensor<?x?x8x128xbf16> {
  %o_c0 = arith.constant 0 : index
  %o_d0 = tensor.dim %q, %o_c0 : tensor<?x?x8x128xbf16>
  %o_c1 = arith.constant 1 : index
  %o_d1 = tensor.dim %q, %o_c1 : tensor<?x?x8x128xbf16>
  %o_init = tensor.empty(%o_d0, %o_d1) : tensor<?x?x8x128xbf16>
  // expected-error @+1 {{block_q 96 is not supported on sm_90a (64, 128, 192: one consumer warpgroup per 64 rows; attn-fuse's block-q sets it)}}
  %o = attn.flash_attention %q, %k outs(%o_init) {block_q = 96 : i64, block_kv = 64 : i64}
      : (tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>) -> tensor<?x?x8x128xbf16>
  return %o : tensor<?x?x8x128xbf16>
}

// -----

func.func @block_kv_256(%q: tensor<?x?x8x128xbf16>, %k: tensor<?x?x8x128xbf16>) -> tensor<?x?x8x128xbf16> {
  %o_c0 = arith.constant 0 : index
  %o_d0 = tensor.dim %q, %o_c0 : tensor<?x?x8x128xbf16>
  %o_c1 = arith.constant 1 : index
  %o_d1 = tensor.dim %q, %o_c1 : tensor<?x?x8x128xbf16>
  %o_init = tensor.empty(%o_d0, %o_d1) : tensor<?x?x8x128xbf16>
  // expected-error @+1 {{block_kv 256 is not supported on sm_90a (64, 128; attn-fuse's block-kv sets it)}}
  %o = attn.flash_attention %q, %k outs(%o_init) {block_q = 128 : i64, block_kv = 256 : i64}
      : (tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>) -> tensor<?x?x8x128xbf16>
  return %o : tensor<?x?x8x128xbf16>
}

// -----

func.func @block_q_192_d128(%q: tensor<?x?x8x128xbf16>, %k: tensor<?x?x8x128xbf16>) -> tensor<?x?x8x128xbf16> {
  %o_c0 = arith.constant 0 : index
  %o_d0 = tensor.dim %q, %o_c0 : tensor<?x?x8x128xbf16>
  %o_c1 = arith.constant 1 : index
  %o_d1 = tensor.dim %q, %o_c1 : tensor<?x?x8x128xbf16>
  %o_init = tensor.empty(%o_d0, %o_d1) : tensor<?x?x8x128xbf16>
  // expected-error @+1 {{block_q 192 with head_dim 128 does not fit the consumer register budget (160); use block_q 128}}
  %o = attn.flash_attention %q, %k outs(%o_init) {block_q = 192 : i64, block_kv = 64 : i64}
      : (tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>) -> tensor<?x?x8x128xbf16>
  return %o : tensor<?x?x8x128xbf16>
}

// -----

// The kernels read i32 or i64 masks.
func.func @flash_key_mask_i8(%q: tensor<?x?x4x64xbf16>, %k: tensor<?x?x4x64xbf16>, %m: tensor<?x?xi8>) -> tensor<?x?x4x64xbf16> {
  %o_c0 = arith.constant 0 : index
  %o_d0 = tensor.dim %q, %o_c0 : tensor<?x?x4x64xbf16>
  %o_c1 = arith.constant 1 : index
  %o_d1 = tensor.dim %q, %o_c1 : tensor<?x?x4x64xbf16>
  %o_init = tensor.empty(%o_d0, %o_d1) : tensor<?x?x4x64xbf16>
  // expected-error @+1 {{the sm_90a kernels read a key_mask of i32 or i64, got 'i8'}}
  %o = attn.flash_attention %q, %k key_mask(%m) outs(%o_init) {block_q = 64 : i64, block_kv = 64 : i64, causal}
      : (tensor<?x?x4x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?xi8>, tensor<?x?x4x64xbf16>) -> tensor<?x?x4x64xbf16>
  return %o : tensor<?x?x4x64xbf16>
}

// -----

func.func @cca_prologue_padding_mask_i1(%x: tensor<?x?x128xbf16>, %wq: tensor<256x128xbf16>, %wk: tensor<128x128xbf16>, %wv: tensor<64x128xbf16>, %wvp: tensor<64x128xbf16>, %dw: tensor<384x1x2xbf16>, %dwb: tensor<384xbf16>, %gw: tensor<384x64x2xbf16>, %gwb: tensor<384xbf16>, %temp: tensor<2xbf16>, %m: tensor<?x?xi1>) {
  %cp_c0 = arith.constant 0 : index
  %cp_c1 = arith.constant 1 : index
  %cp_batch = tensor.dim %x, %cp_c0 : tensor<?x?x128xbf16>
  %cp_seq = tensor.dim %x, %cp_c1 : tensor<?x?x128xbf16>
  %cp_init0 = tensor.empty(%cp_batch, %cp_seq) : tensor<?x?x4x64xbf16>
  %cp_init1 = tensor.empty(%cp_batch, %cp_seq) : tensor<?x?x2x64xbf16>
  %cp_init2 = tensor.empty(%cp_batch, %cp_seq) : tensor<?x?x2x64xbf16>
  // expected-error @+1 {{the sm_90a kernels read a padding_mask of i32 or i64, got 'i1'}}
  %q, %k, %v = attn.cca_prologue %x wq(%wq) wk(%wk) wv(%wv) wv_prev(%wvp) conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) padding_mask(%m)
      outs(%cp_init0, %cp_init1, %cp_init2) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 64 : i64, conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift, block_s = 64 : i64}
      : (tensor<?x?x128xbf16>, tensor<256x128xbf16>, tensor<128x128xbf16>, tensor<64x128xbf16>, tensor<64x128xbf16>, tensor<384x1x2xbf16>, tensor<384xbf16>, tensor<384x64x2xbf16>, tensor<384xbf16>, tensor<2xbf16>, tensor<?x?xi1>, tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>) -> (tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>)
  return
}

// -----

// The element-wise kernel names at most three dynamic sizes (B, S, T).
func.func @add_four_dynamic(%x: tensor<?x?x256xbf16>, %w: tensor<256x256xbf16>,
                            %a: tensor<?x?x?x?xbf16>) -> (tensor<?x?x256xbf16>, tensor<?x?x?x?xbf16>) {
  %y = attn.project %x, %w : (tensor<?x?x256xbf16>, tensor<256x256xbf16>) -> tensor<?x?x256xbf16>
  // expected-error @+1 {{has no sm_90a kernel for 'tensor<?x?x?x?xbf16>': at most 3 dynamic dimensions (B, S, T)}}
  %s = arith.addf %a, %a : tensor<?x?x?x?xbf16>
  return %y, %s : tensor<?x?x256xbf16>, tensor<?x?x?x?xbf16>
}

// -----

func.func @sdpa_i8_key_mask(%q: tensor<?x?x4x64xbf16>, %k: tensor<?x?x4x64xbf16>, %pos: tensor<?xi32>, %m: tensor<?x?xi8>) -> tensor<?x?x4x64xbf16> {
  // expected-error @+1 {{the sm_90a kernels read a key_mask of i32 or i64, got 'i8'}}
  %o = attn.sdpa %q, %k, %k positions(%pos) key_mask(%m) {causal}
      : (tensor<?x?x4x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?xi32>, tensor<?x?xi8>) -> tensor<?x?x4x64xbf16>
  return %o : tensor<?x?x4x64xbf16>
}

// -----

func.func @add_f64(%x: tensor<?x?x256xbf16>, %w: tensor<256x256xbf16>,
                   %a: tensor<4xf64>) -> (tensor<?x?x256xbf16>, tensor<4xf64>) {
  %y = attn.project %x, %w : (tensor<?x?x256xbf16>, tensor<256x256xbf16>) -> tensor<?x?x256xbf16>
  // expected-error @+1 {{has no sm_90a kernel for element type 'f64' (bf16, f16 or f32)}}
  %s = arith.addf %a, %a : tensor<4xf64>
  return %y, %s : tensor<?x?x256xbf16>, tensor<4xf64>
}

// -----

func.func @cache_update_f64(%c: tensor<?x?x2x64xf64>, %k: tensor<?x?x2x64xf64>, %pos: tensor<?xi32>) -> tensor<?x?x2x64xf64> {
  // expected-error @+1 {{element type 'f64' is not supported on sm_90a (bf16, f16, or f32 converted by the host)}}
  %r = attn.cache_update %c, %k positions(%pos)
      : (tensor<?x?x2x64xf64>, tensor<?x?x2x64xf64>, tensor<?xi32>) -> tensor<?x?x2x64xf64>
  return %r : tensor<?x?x2x64xf64>
}

// -----

func.func @cache_gather_f16_asked_bf16(%c: tensor<8x16x2x64xf16>, %bt: tensor<?x?xi64>) -> tensor<?x?x2x64xf16> {
  // expected-error @+1 {{has 'f16' tensors but the sm_90a kernels were asked for elem-type=bf16}}
  %v = attn.cache_gather %c block_table(%bt) : (tensor<8x16x2x64xf16>, tensor<?x?xi64>) -> tensor<?x?x2x64xf16>
  return %v : tensor<?x?x2x64xf16>
}

// -----

func.func @rope_f64(%x: tensor<?x?x2x64xf64>, %pos: tensor<?xi64>) -> tensor<?x?x2x64xf64> {
  // expected-error @+1 {{element type 'f64' is not supported on sm_90a (bf16, f16, or f32 converted by the host)}}
  %r = attn.rope %x positions(%pos : tensor<?xi64>) {rope = #attn.rope<theta = 10000.0>} : tensor<?x?x2x64xf64>
  return %r : tensor<?x?x2x64xf64>
}

// -----

func.func @query_rows(%q: tensor<1x?x4x64xbf16>, %k: tensor<1x?x1x64xbf16>,
                      %init: tensor<1x?x4x64xbf16>, %offset: index, %count: index)
    -> tensor<1x?x4x64xbf16> {
  // expected-error @+1 {{a tile of query rows ('query_rows') is not supported by the sm_90a kernel, which tiles the whole attention itself}}
  %o = attn.flash_attention %q, %k query_rows(%offset, %count) outs(%init)
      {block_q = 64 : i64, block_kv = 64 : i64}
      : (tensor<1x?x4x64xbf16>, tensor<1x?x1x64xbf16>, index, index, tensor<1x?x4x64xbf16>)
      -> tensor<1x?x4x64xbf16>
  return %o : tensor<1x?x4x64xbf16>
}

// -----

func.func @token_offset(%x: tensor<1x?x1024xbf16>, %w: tensor<1024x1024xbf16>,
                        %init: tensor<1x?x16x64xbf16>, %offset: index)
    -> tensor<1x?x16x64xbf16> {
  // expected-error @+1 {{a tile of tokens ('token_offset') is not supported by the sm_90a kernel, which tiles the whole projection itself}}
  %y = attn.fused_projection %x, %w token_offset(%offset) outs(%init)
      {head_dim = 64 : i64, block_s = 64 : i64, block_n = 64 : i64, block_k = 64 : i64}
      : (tensor<1x?x1024xbf16>, tensor<1024x1024xbf16>, index, tensor<1x?x16x64xbf16>)
      -> tensor<1x?x16x64xbf16>
  return %y : tensor<1x?x16x64xbf16>
}

// -----

func.func @cca_prologue_token_offset(%x: tensor<1x?x128xbf16>, %wq: tensor<256x128xbf16>, %wk: tensor<128x128xbf16>, %wv: tensor<64x128xbf16>, %wvp: tensor<64x128xbf16>, %dw: tensor<384x1x2xbf16>, %dwb: tensor<384xbf16>, %gw: tensor<384x64x2xbf16>, %gwb: tensor<384xbf16>, %temp: tensor<2xbf16>, %t: index, %qi: tensor<1x?x4x64xbf16>, %ki: tensor<1x?x2x64xbf16>) {
  // expected-error @+1 {{a tile of tokens ('token_offset') is not supported by the sm_90a prologue kernel, which tiles the whole sequence itself}}
  %q, %k, %v = attn.cca_prologue %x wq(%wq) wk(%wk) wv(%wv) wv_prev(%wvp) conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) token_offset(%t)
      outs(%qi, %ki, %ki) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 64 : i64, conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift, block_s = 64 : i64}
      : (tensor<1x?x128xbf16>, tensor<256x128xbf16>, tensor<128x128xbf16>, tensor<64x128xbf16>, tensor<64x128xbf16>, tensor<384x1x2xbf16>, tensor<384xbf16>, tensor<384x64x2xbf16>, tensor<384xbf16>, tensor<2xbf16>, index, tensor<1x?x4x64xbf16>, tensor<1x?x2x64xbf16>, tensor<1x?x2x64xbf16>) -> (tensor<1x?x4x64xbf16>, tensor<1x?x2x64xbf16>, tensor<1x?x2x64xbf16>)
  return
}

// -----

func.func @flash_attention_grad(%q: tensor<?x?x4x64xbf16>, %k: tensor<?x?x2x64xbf16>, %dq0: tensor<?x?x4x64xbf16>, %dk0: tensor<?x?x2x64xbf16>) -> tensor<?x?x4x64xbf16> {
  // expected-error @+1 {{'attn.flash_attention_grad' op needs the forward's log-sum-exp ('lse(...)') on sm_90a}}
  %dq, %dk, %dv = attn.flash_attention_grad %q, %k, %k, %q, %q outs(%dq0, %dk0, %dk0) {causal, block_q = 64 : i64, block_kv = 64 : i64} : (tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>) -> (tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>)
  return %dq : tensor<?x?x4x64xbf16>
}

// -----

func.func @flash_attention_grad_head_dim_192(%q: tensor<?x?x4x192xbf16>, %k: tensor<?x?x2x192xbf16>, %l: tensor<?x?x4xf32>, %dq0: tensor<?x?x4x192xbf16>, %dk0: tensor<?x?x2x192xbf16>) -> tensor<?x?x4x192xbf16> {
  // expected-error @+1 {{'attn.flash_attention_grad' op head_dim 192 is not supported by the sm_90a backward kernels (a multiple of 16 up to 128)}}
  %dq, %dkv = attn.flash_attention_grad %q, %k, %q, %q lse(%l) outs(%dq0, %dk0) {block_q = 64 : i64, block_kv = 64 : i64} : (tensor<?x?x4x192xbf16>, tensor<?x?x2x192xbf16>, tensor<?x?x4x192xbf16>, tensor<?x?x4x192xbf16>, tensor<?x?x4xf32>, tensor<?x?x4x192xbf16>, tensor<?x?x2x192xbf16>) -> (tensor<?x?x4x192xbf16>, tensor<?x?x2x192xbf16>)
  return %dq : tensor<?x?x4x192xbf16>
}

// -----

func.func @flash_attention_grad_bias(%q: tensor<?x?x4x64xbf16>, %k: tensor<?x?x2x64xbf16>, %b: tensor<4x?x?xbf16>, %l: tensor<?x?x4xf32>, %dq0: tensor<?x?x4x64xbf16>, %dk0: tensor<?x?x2x64xbf16>) -> tensor<?x?x4x64xbf16> {
  // expected-error @+1 {{'attn.flash_attention_grad' op additive logit bias is not supported by the sm_90a kernel yet}}
  %dq, %dkv = attn.flash_attention_grad %q, %k, %q, %q bias(%b) lse(%l) outs(%dq0, %dk0) {block_q = 64 : i64, block_kv = 64 : i64} : (tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64xbf16>, tensor<4x?x?xbf16>, tensor<?x?x4xf32>, tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>) -> (tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>)
  return %dq : tensor<?x?x4x64xbf16>
}

// -----

func.func @fused_weight_grad_features(%x: tensor<?x12xbf16>, %dy: tensor<?x32xbf16>, %init: tensor<32x12xbf16>) -> tensor<32x12xbf16> {
  // expected-error @+1 {{'attn.fused_weight_grad' op the sm_90a weight-gradient GEMM needs in and out features that are multiples of 8 (16-byte TMA strides), got 12 and 32 (one input feature, a bias gradient, has its own kernel)}}
  %dw = attn.fused_weight_grad %x, %dy outs(%init) {block_m = 64 : i64, block_n = 64 : i64, block_k = 64 : i64} : (tensor<?x12xbf16>, tensor<?x32xbf16>, tensor<32x12xbf16>) -> tensor<32x12xbf16>
  return %dw : tensor<32x12xbf16>
}
