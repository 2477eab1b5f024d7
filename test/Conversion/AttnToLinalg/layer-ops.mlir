// RUN: attnfuse-opt %s --convert-attn-to-linalg -split-input-file -verify-diagnostics

// Layer ops are decomposed (attn-decompose), not lowered directly.
func.func @layer(%x: tensor<1x4x8xf32>, %wk: tensor<8x8xf32>, %wo: tensor<8x8xf32>) -> tensor<1x4x8xf32> {
  // expected-error @+1 {{'attn.qkv_attention' op is a layer op; run attn-decompose before convert-attn-to-linalg}}
  %y = attn.qkv_attention <qkv> %x wk(%wk) wo(%wo)
      {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, causal}
      : (tensor<1x4x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  return %y : tensor<1x4x8xf32>
}
