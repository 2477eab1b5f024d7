// RUN: attnfuse-opt %s -split-input-file --attn-differentiate -verify-diagnostics

// What attn-differentiate refuses, with the op or argument named.

func.func @decode(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>,
                  %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>,
                  %cache: tensor<2x8x2x4xf32>, %pos: tensor<2xi32>)
    -> (tensor<2x1x16xf32>, tensor<2x8x2x4xf32>) {
  // expected-error @+1 {{cannot be differentiated: gradients through decode steps and KV caches are not supported}}
  %y, %c = attn.qkv_decode <kv> %x wq(%wq) wk(%wk) wo(%wo) cache(%cache) positions(%pos)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>, tensor<2x8x2x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x16xf32>, tensor<2x8x2x4xf32>)
  return %y, %c : tensor<2x1x16xf32>, tensor<2x8x2x4xf32>
}

// -----

func.func private @layer(tensor<2x5x16xf32>) -> tensor<2x5x16xf32>

func.func @calls(%x: tensor<2x5x16xf32>) -> tensor<2x5x16xf32> {
  // expected-error @+1 {{cannot be differentiated: inline the callee @layer first (--inline)}}
  %y = func.call @layer(%x) : (tensor<2x5x16xf32>) -> tensor<2x5x16xf32>
  return %y : tensor<2x5x16xf32>
}

// -----

func.func @fused(%q: tensor<2x16x4x8xf32>, %k: tensor<2x16x2x8xf32>, %init: tensor<2x16x4x8xf32>) -> tensor<2x16x4x8xf32> {
  // expected-error @+1 {{is a fused kernel op: run attn-differentiate before attn-fuse}}
  %0 = attn.flash_attention %q, %k outs(%init) {block_q = 64 : i64, block_kv = 64 : i64} : (tensor<2x16x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x4x8xf32>) -> tensor<2x16x4x8xf32>
  return %0 : tensor<2x16x4x8xf32>
}

// -----

// expected-error @+1 {{attn-differentiate: @positions returns 'tensor<2xi32>', but only floating-point tensor results take a cotangent}}
func.func @positions(%p: tensor<2xi32>) -> tensor<2xi32> {
  return %p : tensor<2xi32>
}

// -----

func.func @unknown(%x: tensor<2x5x16xf32>) -> tensor<2x5x16xf32> {
  // expected-error @+1 {{'math.exp' op cannot be differentiated by attn-differentiate}}
  %y = math.exp %x : tensor<2x5x16xf32>
  return %y : tensor<2x5x16xf32>
}
