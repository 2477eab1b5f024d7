// RUN: attnfuse-opt %s --convert-attn-kernels-to-nvvm -split-input-file -verify-diagnostics

// Shapes and types the sm_90a decode kernel does not take, each reported on
// the op.

func.func @f32(%q: tensor<1x1x4x64xf32>, %k: tensor<1x1x1x64xf32>,
    %cache: tensor<1x128x1x64xf32>, %pos: tensor<1xi32>)
    -> (tensor<1x1x4x64xf32>, tensor<1x128x1x64xf32>) {
  %di51_init = tensor.empty() : tensor<1x1x4x64xf32>
  // expected-error @+1 {{element type 'f32' is not supported by the sm_90a decode kernel (bf16 or f16: the caches are updated in place, so the host cannot convert them)}}
  %o, %c = attn.flash_decode %q, %k outs(%di51_init) cache(%cache) positions(%pos) {block_kv = 64 : i64}
      : (tensor<1x1x4x64xf32>, tensor<1x1x1x64xf32>, tensor<1x1x4x64xf32>, tensor<1x128x1x64xf32>, tensor<1xi32>)
        -> (tensor<1x1x4x64xf32>, tensor<1x128x1x64xf32>)
  return %o, %c : tensor<1x1x4x64xf32>, tensor<1x128x1x64xf32>
}

// -----

func.func @f16(%q: tensor<1x1x4x64xf16>, %k: tensor<1x1x1x64xf16>,
    %cache: tensor<1x128x1x64xf16>, %pos: tensor<1xi32>)
    -> (tensor<1x1x4x64xf16>, tensor<1x128x1x64xf16>) {
  %di52_init = tensor.empty() : tensor<1x1x4x64xf16>
  // expected-error @+1 {{has 'f16' tensors but the sm_90a kernels were asked for elem-type=bf16}}
  %o, %c = attn.flash_decode %q, %k outs(%di52_init) cache(%cache) positions(%pos) {block_kv = 64 : i64}
      : (tensor<1x1x4x64xf16>, tensor<1x1x1x64xf16>, tensor<1x1x4x64xf16>, tensor<1x128x1x64xf16>, tensor<1xi32>)
        -> (tensor<1x1x4x64xf16>, tensor<1x128x1x64xf16>)
  return %o, %c : tensor<1x1x4x64xf16>, tensor<1x128x1x64xf16>
}

// -----

func.func @head_dim(%q: tensor<1x1x4x48xbf16>, %k: tensor<1x1x1x48xbf16>,
    %cache: tensor<1x128x1x48xbf16>, %pos: tensor<1xi32>)
    -> (tensor<1x1x4x48xbf16>, tensor<1x128x1x48xbf16>) {
  %di53_init = tensor.empty() : tensor<1x1x4x48xbf16>
  // expected-error @+1 {{head_dim 48 is not supported by the sm_90a decode kernel (a multiple of 32 up to 256)}}
  %o, %c = attn.flash_decode %q, %k outs(%di53_init) cache(%cache) positions(%pos) {block_kv = 64 : i64}
      : (tensor<1x1x4x48xbf16>, tensor<1x1x1x48xbf16>, tensor<1x1x4x48xbf16>, tensor<1x128x1x48xbf16>, tensor<1xi32>)
        -> (tensor<1x1x4x48xbf16>, tensor<1x128x1x48xbf16>)
  return %o, %c : tensor<1x1x4x48xbf16>, tensor<1x128x1x48xbf16>
}

// -----

func.func @group(%q: tensor<1x1x32x64xbf16>, %k: tensor<1x1x1x64xbf16>,
    %cache: tensor<1x128x1x64xbf16>, %pos: tensor<1xi32>)
    -> (tensor<1x1x32x64xbf16>, tensor<1x128x1x64xbf16>) {
  %di54_init = tensor.empty() : tensor<1x1x32x64xbf16>
  // expected-error @+1 {{query group size 32 (num_heads / num_kv_heads) exceeds the 16 the sm_90a decode kernel serves per KV head}}
  %o, %c = attn.flash_decode %q, %k outs(%di54_init) cache(%cache) positions(%pos) {block_kv = 64 : i64}
      : (tensor<1x1x32x64xbf16>, tensor<1x1x1x64xbf16>, tensor<1x1x32x64xbf16>, tensor<1x128x1x64xbf16>, tensor<1xi32>)
        -> (tensor<1x1x32x64xbf16>, tensor<1x128x1x64xbf16>)
  return %o, %c : tensor<1x1x32x64xbf16>, tensor<1x128x1x64xbf16>
}

// -----

func.func @block_kv(%q: tensor<1x1x4x64xbf16>, %k: tensor<1x1x1x64xbf16>,
    %cache: tensor<1x128x1x64xbf16>, %pos: tensor<1xi32>)
    -> (tensor<1x1x4x64xbf16>, tensor<1x128x1x64xbf16>) {
  %di55_init = tensor.empty() : tensor<1x1x4x64xbf16>
  // expected-error @+1 {{block_kv 32 is not supported by the sm_90a decode kernel (64: one key row per thread pair)}}
  %o, %c = attn.flash_decode %q, %k outs(%di55_init) cache(%cache) positions(%pos) {block_kv = 32 : i64}
      : (tensor<1x1x4x64xbf16>, tensor<1x1x1x64xbf16>, tensor<1x1x4x64xbf16>, tensor<1x128x1x64xbf16>, tensor<1xi32>)
        -> (tensor<1x1x4x64xbf16>, tensor<1x128x1x64xbf16>)
  return %o, %c : tensor<1x1x4x64xbf16>, tensor<1x128x1x64xbf16>
}

// -----

func.func @rope(%q: tensor<1x1x4x64xbf16>, %k: tensor<1x1x1x64xbf16>,
    %cache: tensor<1x128x1x64xbf16>, %pos: tensor<1xi32>)
    -> (tensor<1x1x4x64xbf16>, tensor<1x128x1x64xbf16>) {
  %di56_init = tensor.empty() : tensor<1x1x4x64xbf16>
  // expected-error @+1 {{the sm_90a decode kernel rotates whole 16-byte chunks: RoPE must rotate a multiple of 16 dims (got 8)}}
  %o, %c = attn.flash_decode %q, %k outs(%di56_init) cache(%cache) positions(%pos) {block_kv = 64 : i64, key_rope = #attn.rope<theta = 10000.0, fraction = 0.125>}
      : (tensor<1x1x4x64xbf16>, tensor<1x1x1x64xbf16>, tensor<1x1x4x64xbf16>, tensor<1x128x1x64xbf16>, tensor<1xi32>)
        -> (tensor<1x1x4x64xbf16>, tensor<1x128x1x64xbf16>)
  return %o, %c : tensor<1x1x4x64xbf16>, tensor<1x128x1x64xbf16>
}
