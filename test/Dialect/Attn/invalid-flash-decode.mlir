// RUN: attnfuse-opt %s -split-input-file -verify-diagnostics

// Every diagnostic of the attn.flash_decode verifier and its ODS
// constraints, one case per split. Shapes: batch 2, 4 query heads, 2 KV
// heads, head_dim 8, capacity 16 (contiguous) or 8 pages of 4 (paged).

func.func @value_without_cache(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x2x8xf32>, %v: tensor<2x1x2x8xf32>, %kc: tensor<2x16x2x8xf32>, %pos: tensor<2xi32>) {
  %di5_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{'value_new' is given without 'value_cache'}}
  %r0, %r1, %r2 = attn.flash_decode %q, %k, %v outs(%di5_init) cache(%kc) positions(%pos) {block_kv = 4 : i64}
      : (tensor<2x1x4x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2xi32>) -> (tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x8xf32>)
  return
}

// -----

func.func @cache_without_value(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x2x8xf32>, %kc: tensor<2x16x2x8xf32>, %vc: tensor<2x16x2x8xf32>, %pos: tensor<2xi32>) {
  %di6_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{'value_cache' is given without 'value_new'}}
  %r0, %r1, %r2 = attn.flash_decode %q, %k outs(%di6_init) cache(%kc, %vc) positions(%pos) {block_kv = 4 : i64}
      : (tensor<2x1x4x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x8xf32>, tensor<2xi32>) -> (tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x8xf32>)
  return
}

// -----

func.func @missing_value_result(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x2x8xf32>, %v: tensor<2x1x2x8xf32>, %kc: tensor<2x16x2x8xf32>, %vc: tensor<2x16x2x8xf32>, %pos: tensor<2xi32>) {
  %di7_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{has 2 results; expected 3}}
  %r0, %r1 = attn.flash_decode %q, %k, %v outs(%di7_init) cache(%kc, %vc) positions(%pos) {block_kv = 4 : i64}
      : (tensor<2x1x4x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x8xf32>, tensor<2xi32>) -> (tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>)
  return
}

// -----

func.func @query_rank(%q: tensor<2x4x8xf32>, %k: tensor<2x1x2x8xf32>, %kc: tensor<2x16x2x8xf32>, %pos: tensor<2xi32>) {
  %di8_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{'query' must be a rank-4 tensor [batch, 1, heads, head_dim], got rank 3}}
  %r0, %r1 = attn.flash_decode %q, %k outs(%di8_init) cache(%kc) positions(%pos) {block_kv = 4 : i64}
      : (tensor<2x4x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2xi32>) -> (tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>)
  return
}

// -----

func.func @key_new_rank(%q: tensor<2x1x4x8xf32>, %k: tensor<2x2x8xf32>, %kc: tensor<2x16x2x8xf32>, %pos: tensor<2xi32>) {
  %di9_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{'key_new' must be a rank-4 tensor [batch, 1, heads, head_dim], got rank 3}}
  %r0, %r1 = attn.flash_decode %q, %k outs(%di9_init) cache(%kc) positions(%pos) {block_kv = 4 : i64}
      : (tensor<2x1x4x8xf32>, tensor<2x2x8xf32>, tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2xi32>) -> (tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>)
  return
}

// -----

func.func @query_dynamic_heads(%q: tensor<2x1x?x8xf32>, %k: tensor<2x1x2x8xf32>, %kc: tensor<2x16x2x8xf32>, %pos: tensor<2xi32>) {
  %di10_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{'query' must have a static head count (dimension 2)}}
  %r0, %r1 = attn.flash_decode %q, %k outs(%di10_init) cache(%kc) positions(%pos) {block_kv = 4 : i64}
      : (tensor<2x1x?x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2xi32>) -> (tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>)
  return
}

// -----

func.func @query_dynamic_dim(%q: tensor<2x1x4x?xf32>, %k: tensor<2x1x2x8xf32>, %kc: tensor<2x16x2x8xf32>, %pos: tensor<2xi32>) {
  %di11_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{'query' must have a static head dim (dimension 3)}}
  %r0, %r1 = attn.flash_decode %q, %k outs(%di11_init) cache(%kc) positions(%pos) {block_kv = 4 : i64}
      : (tensor<2x1x4x?xf32>, tensor<2x1x2x8xf32>, tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2xi32>) -> (tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>)
  return
}

// -----

func.func @key_dynamic_heads(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x?x8xf32>, %kc: tensor<2x16x2x8xf32>, %pos: tensor<2xi32>) {
  %di12_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{'key_new' must have a static head count (dimension 2)}}
  %r0, %r1 = attn.flash_decode %q, %k outs(%di12_init) cache(%kc) positions(%pos) {block_kv = 4 : i64}
      : (tensor<2x1x4x8xf32>, tensor<2x1x?x8xf32>, tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2xi32>) -> (tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>)
  return
}

// -----

func.func @heads_multiple(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x3x8xf32>, %kc: tensor<2x16x3x8xf32>, %pos: tensor<2xi32>) {
  %di13_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{the 4 heads of 'query' must be a multiple of the 3 heads of 'key_new'}}
  %r0, %r1 = attn.flash_decode %q, %k outs(%di13_init) cache(%kc) positions(%pos) {block_kv = 4 : i64}
      : (tensor<2x1x4x8xf32>, tensor<2x1x3x8xf32>, tensor<2x1x4x8xf32>, tensor<2x16x3x8xf32>, tensor<2xi32>) -> (tensor<2x1x4x8xf32>, tensor<2x16x3x8xf32>)
  return
}

// -----

func.func @query_two_tokens(%q: tensor<2x2x4x8xf32>, %k: tensor<2x1x2x8xf32>, %kc: tensor<2x16x2x8xf32>, %pos: tensor<2xi32>) {
  %di14_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{'query' must have shape [batch, 1, heads, head_dim] = [2, 1, 4, 8], got [2, 2, 4, 8]}}
  %r0, %r1 = attn.flash_decode %q, %k outs(%di14_init) cache(%kc) positions(%pos) {block_kv = 4 : i64}
      : (tensor<2x2x4x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2xi32>) -> (tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>)
  return
}

// -----

func.func @key_new_batch(%q: tensor<2x1x4x8xf32>, %k: tensor<3x1x2x8xf32>, %kc: tensor<2x16x2x8xf32>, %pos: tensor<2xi32>) {
  %di15_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{'key_new' must have shape [batch, 1, kv_heads, head_dim] = [2, 1, 2, 8], got [3, 1, 2, 8]}}
  %r0, %r1 = attn.flash_decode %q, %k outs(%di15_init) cache(%kc) positions(%pos) {block_kv = 4 : i64}
      : (tensor<2x1x4x8xf32>, tensor<3x1x2x8xf32>, tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2xi32>) -> (tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>)
  return
}

// -----

func.func @key_new_dim(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x2x4xf32>, %kc: tensor<2x16x2x8xf32>, %pos: tensor<2xi32>) {
  %di16_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{'key_new' must have shape [batch, 1, kv_heads, head_dim] = [2, 1, 2, 8], got [2, 1, 2, 4]}}
  %r0, %r1 = attn.flash_decode %q, %k outs(%di16_init) cache(%kc) positions(%pos) {block_kv = 4 : i64}
      : (tensor<2x1x4x8xf32>, tensor<2x1x2x4xf32>, tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2xi32>) -> (tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>)
  return
}

// -----

func.func @value_new_rank(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x2x8xf32>, %v: tensor<2x2x8xf32>, %kc: tensor<2x16x2x8xf32>, %vc: tensor<2x16x2x8xf32>, %pos: tensor<2xi32>) {
  %di17_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{'value_new' must be a rank-4 tensor [batch, 1, kv_heads, value_dim], got rank 3}}
  %r0, %r1, %r2 = attn.flash_decode %q, %k, %v outs(%di17_init) cache(%kc, %vc) positions(%pos) {block_kv = 4 : i64}
      : (tensor<2x1x4x8xf32>, tensor<2x1x2x8xf32>, tensor<2x2x8xf32>, tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x8xf32>, tensor<2xi32>) -> (tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x8xf32>)
  return
}

// -----

func.func @value_new_dynamic_dim(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x2x8xf32>, %v: tensor<2x1x2x?xf32>, %kc: tensor<2x16x2x8xf32>, %vc: tensor<2x16x2x?xf32>, %pos: tensor<2xi32>) {
  %di18_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{'value_new' must have a static value dim (dimension 3)}}
  %r0, %r1, %r2 = attn.flash_decode %q, %k, %v outs(%di18_init) cache(%kc, %vc) positions(%pos) {block_kv = 4 : i64}
      : (tensor<2x1x4x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x2x?xf32>, tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x?xf32>, tensor<2xi32>) -> (tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x?xf32>)
  return
}

// -----

func.func @value_new_heads(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x2x8xf32>, %v: tensor<2x1x1x8xf32>, %kc: tensor<2x16x2x8xf32>, %vc: tensor<2x16x2x8xf32>, %pos: tensor<2xi32>) {
  %di19_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{'value_new' must have shape [batch, 1, kv_heads, value_dim] = [2, 1, 2, 8], got [2, 1, 1, 8]}}
  %r0, %r1, %r2 = attn.flash_decode %q, %k, %v outs(%di19_init) cache(%kc, %vc) positions(%pos) {block_kv = 4 : i64}
      : (tensor<2x1x4x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x1x8xf32>, tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x8xf32>, tensor<2xi32>) -> (tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x8xf32>)
  return
}

// -----

func.func @positions_rank(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x2x8xf32>, %kc: tensor<2x16x2x8xf32>, %pos: tensor<2x1xi32>) {
  %di20_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{'positions' must be a rank-1 tensor [batch], got rank 2}}
  %r0, %r1 = attn.flash_decode %q, %k outs(%di20_init) cache(%kc) positions(%pos) {block_kv = 4 : i64}
      : (tensor<2x1x4x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x1xi32>) -> (tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>)
  return
}

// -----

func.func @positions_i64(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x2x8xf32>, %kc: tensor<2x16x2x8xf32>, %pos: tensor<2xi64>) {
  %di21_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{'positions' must have i32 elements, got 'i64'}}
  %r0, %r1 = attn.flash_decode %q, %k outs(%di21_init) cache(%kc) positions(%pos) {block_kv = 4 : i64}
      : (tensor<2x1x4x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2xi64>) -> (tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>)
  return
}

// -----

func.func @positions_batch(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x2x8xf32>, %kc: tensor<2x16x2x8xf32>, %pos: tensor<3xi32>) {
  %di22_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{'positions' must have shape [batch] = [2], got [3]}}
  %r0, %r1 = attn.flash_decode %q, %k outs(%di22_init) cache(%kc) positions(%pos) {block_kv = 4 : i64}
      : (tensor<2x1x4x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<3xi32>) -> (tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>)
  return
}

// -----

func.func @key_cache_rank(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x2x8xf32>, %kc: tensor<2x16x16xf32>, %pos: tensor<2xi32>) {
  %di23_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{'key_cache' must be a rank-4 tensor [batch, capacity, kv_heads, dim], got rank 3}}
  %r0, %r1 = attn.flash_decode %q, %k outs(%di23_init) cache(%kc) positions(%pos) {block_kv = 4 : i64}
      : (tensor<2x1x4x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x4x8xf32>, tensor<2x16x16xf32>, tensor<2xi32>) -> (tensor<2x1x4x8xf32>, tensor<2x16x16xf32>)
  return
}

// -----

func.func @value_cache_rank(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x2x8xf32>, %v: tensor<2x1x2x8xf32>, %kc: tensor<2x16x2x8xf32>, %vc: tensor<2x16x16xf32>, %pos: tensor<2xi32>) {
  %di24_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{'value_cache' must be a rank-4 tensor [batch, capacity, kv_heads, dim], got rank 3}}
  %r0, %r1, %r2 = attn.flash_decode %q, %k, %v outs(%di24_init) cache(%kc, %vc) positions(%pos) {block_kv = 4 : i64}
      : (tensor<2x1x4x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x16xf32>, tensor<2xi32>) -> (tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x16xf32>)
  return
}

// -----

func.func @paged_cache_rank(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x2x8xf32>, %kc: tensor<8x4x16xf32>, %pos: tensor<2xi32>, %bt: tensor<2x4xi32>) {
  %di25_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{'key_cache' must be a rank-4 tensor [num_pages, page_size, kv_heads, dim], got rank 3}}
  %r0, %r1 = attn.flash_decode %q, %k outs(%di25_init) cache(%kc) positions(%pos) block_table(%bt) {block_kv = 4 : i64}
      : (tensor<2x1x4x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x4x8xf32>, tensor<8x4x16xf32>, tensor<2xi32>, tensor<2x4xi32>) -> (tensor<2x1x4x8xf32>, tensor<8x4x16xf32>)
  return
}

// -----

func.func @key_cache_batch(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x2x8xf32>, %kc: tensor<3x16x2x8xf32>, %pos: tensor<2xi32>) {
  %di26_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{'key_cache' must have shape [batch, capacity, kv_heads, head_dim] = [2, 16, 2, 8], got [3, 16, 2, 8]}}
  %r0, %r1 = attn.flash_decode %q, %k outs(%di26_init) cache(%kc) positions(%pos) {block_kv = 4 : i64}
      : (tensor<2x1x4x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x4x8xf32>, tensor<3x16x2x8xf32>, tensor<2xi32>) -> (tensor<2x1x4x8xf32>, tensor<3x16x2x8xf32>)
  return
}

// -----

func.func @key_cache_heads(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x2x8xf32>, %kc: tensor<2x16x4x8xf32>, %pos: tensor<2xi32>) {
  %di27_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{'key_cache' must have shape [batch, capacity, kv_heads, head_dim] = [2, 16, 2, 8], got [2, 16, 4, 8]}}
  %r0, %r1 = attn.flash_decode %q, %k outs(%di27_init) cache(%kc) positions(%pos) {block_kv = 4 : i64}
      : (tensor<2x1x4x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2xi32>) -> (tensor<2x1x4x8xf32>, tensor<2x16x4x8xf32>)
  return
}

// -----

func.func @value_cache_capacity(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x2x8xf32>, %v: tensor<2x1x2x8xf32>, %kc: tensor<2x16x2x8xf32>, %vc: tensor<2x8x2x8xf32>, %pos: tensor<2xi32>) {
  %di28_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{'value_cache' must have shape [batch, capacity, kv_heads, value_dim] = [2, 16, 2, 8], got [2, 8, 2, 8]}}
  %r0, %r1, %r2 = attn.flash_decode %q, %k, %v outs(%di28_init) cache(%kc, %vc) positions(%pos) {block_kv = 4 : i64}
      : (tensor<2x1x4x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2xi32>) -> (tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x8x2x8xf32>)
  return
}

// -----

func.func @value_cache_dim(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x2x8xf32>, %v: tensor<2x1x2x8xf32>, %kc: tensor<2x16x2x8xf32>, %vc: tensor<2x16x2x4xf32>, %pos: tensor<2xi32>) {
  %di29_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{'value_cache' must have shape [batch, capacity, kv_heads, value_dim] = [2, 16, 2, 8], got [2, 16, 2, 4]}}
  %r0, %r1, %r2 = attn.flash_decode %q, %k, %v outs(%di29_init) cache(%kc, %vc) positions(%pos) {block_kv = 4 : i64}
      : (tensor<2x1x4x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x4xf32>, tensor<2xi32>) -> (tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x4xf32>)
  return
}

// -----

func.func @paged_value_pages(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x2x8xf32>, %v: tensor<2x1x2x8xf32>, %kc: tensor<8x4x2x8xf32>, %vc: tensor<8x8x2x8xf32>, %pos: tensor<2xi32>, %bt: tensor<2x4xi32>) {
  %di30_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{'value_cache' must have shape [num_pages, page_size, kv_heads, value_dim] = [8, 4, 2, 8], got [8, 8, 2, 8]}}
  %r0, %r1, %r2 = attn.flash_decode %q, %k, %v outs(%di30_init) cache(%kc, %vc) positions(%pos) block_table(%bt) {block_kv = 4 : i64}
      : (tensor<2x1x4x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x4x8xf32>, tensor<8x4x2x8xf32>, tensor<8x8x2x8xf32>, tensor<2xi32>, tensor<2x4xi32>) -> (tensor<2x1x4x8xf32>, tensor<8x4x2x8xf32>, tensor<8x8x2x8xf32>)
  return
}

// -----

func.func @block_table_rank(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x2x8xf32>, %kc: tensor<8x4x2x8xf32>, %pos: tensor<2xi32>, %bt: tensor<2xi32>) {
  %di31_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{'block_table' must be a rank-2 tensor [batch, max_pages_per_sequence], got rank 1}}
  %r0, %r1 = attn.flash_decode %q, %k outs(%di31_init) cache(%kc) positions(%pos) block_table(%bt) {block_kv = 4 : i64}
      : (tensor<2x1x4x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x4x8xf32>, tensor<8x4x2x8xf32>, tensor<2xi32>, tensor<2xi32>) -> (tensor<2x1x4x8xf32>, tensor<8x4x2x8xf32>)
  return
}

// -----

func.func @block_table_i64(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x2x8xf32>, %kc: tensor<8x4x2x8xf32>, %pos: tensor<2xi32>, %bt: tensor<2x4xi64>) {
  %di32_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{'block_table' must have i32 elements, got 'i64'}}
  %r0, %r1 = attn.flash_decode %q, %k outs(%di32_init) cache(%kc) positions(%pos) block_table(%bt) {block_kv = 4 : i64}
      : (tensor<2x1x4x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x4x8xf32>, tensor<8x4x2x8xf32>, tensor<2xi32>, tensor<2x4xi64>) -> (tensor<2x1x4x8xf32>, tensor<8x4x2x8xf32>)
  return
}

// -----

func.func @block_table_batch(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x2x8xf32>, %kc: tensor<8x4x2x8xf32>, %pos: tensor<2xi32>, %bt: tensor<3x4xi32>) {
  %di33_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{'block_table' must have shape [batch, pages] = [2, ?], got [3, 4]}}
  %r0, %r1 = attn.flash_decode %q, %k outs(%di33_init) cache(%kc) positions(%pos) block_table(%bt) {block_kv = 4 : i64}
      : (tensor<2x1x4x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x4x8xf32>, tensor<8x4x2x8xf32>, tensor<2xi32>, tensor<3x4xi32>) -> (tensor<2x1x4x8xf32>, tensor<8x4x2x8xf32>)
  return
}

// -----

func.func @result_shape(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x2x8xf32>, %kc: tensor<2x16x2x8xf32>, %pos: tensor<2xi32>) {
  %di34_init = tensor.empty() : tensor<2x1x2x8xf32>
  // expected-error @+1 {{'result' must have shape [batch, 1, heads, value_dim] = [2, 1, 4, 8], got [2, 1, 2, 8]}}
  %r0, %r1 = attn.flash_decode %q, %k outs(%di34_init) cache(%kc) positions(%pos) {block_kv = 4 : i64}
      : (tensor<2x1x4x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x2x8xf32>, tensor<2x16x2x8xf32>, tensor<2xi32>) -> (tensor<2x1x2x8xf32>, tensor<2x16x2x8xf32>)
  return
}

// -----

func.func @key_cache_out_type(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x2x8xf32>, %kc: tensor<2x16x2x8xf32>, %pos: tensor<2xi32>) {
  %di35_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{result 'key_cache_out' has type 'tensor<2x?x2x8xf32>', expected the type of 'key_cache' 'tensor<2x16x2x8xf32>'}}
  %r0, %r1 = attn.flash_decode %q, %k outs(%di35_init) cache(%kc) positions(%pos) {block_kv = 4 : i64}
      : (tensor<2x1x4x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2xi32>) -> (tensor<2x1x4x8xf32>, tensor<2x?x2x8xf32>)
  return
}

// -----

func.func @value_cache_out_type(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x2x8xf32>, %v: tensor<2x1x2x8xf32>, %kc: tensor<2x16x2x8xf32>, %vc: tensor<2x16x2x8xf32>, %pos: tensor<2xi32>) {
  %di36_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{result 'value_cache_out' has type 'tensor<2x16x2x8xbf16>', expected the type of 'value_cache' 'tensor<2x16x2x8xf32>'}}
  %r0, %r1, %r2 = attn.flash_decode %q, %k, %v outs(%di36_init) cache(%kc, %vc) positions(%pos) {block_kv = 4 : i64}
      : (tensor<2x1x4x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x8xf32>, tensor<2xi32>) -> (tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x8xbf16>)
  return
}

// -----

func.func @key_new_element(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x2x8xbf16>, %kc: tensor<2x16x2x8xf32>, %pos: tensor<2xi32>) {
  %di37_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{'key_new' has element type 'bf16', expected 'f32' (the element type of 'query')}}
  %r0, %r1 = attn.flash_decode %q, %k outs(%di37_init) cache(%kc) positions(%pos) {block_kv = 4 : i64}
      : (tensor<2x1x4x8xf32>, tensor<2x1x2x8xbf16>, tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2xi32>) -> (tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>)
  return
}

// -----

func.func @value_cache_element(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x2x8xf32>, %v: tensor<2x1x2x8xf16>, %kc: tensor<2x16x2x8xf32>, %vc: tensor<2x16x2x8xf16>, %pos: tensor<2xi32>) {
  %di38_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{'value_new' has element type 'f16', expected 'f32' (the element type of 'query')}}
  %r0, %r1, %r2 = attn.flash_decode %q, %k, %v outs(%di38_init) cache(%kc, %vc) positions(%pos) {block_kv = 4 : i64}
      : (tensor<2x1x4x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x2x8xf16>, tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x8xf16>, tensor<2xi32>) -> (tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x8xf16>)
  return
}

// -----

func.func @window(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x2x8xf32>, %kc: tensor<2x16x2x8xf32>, %pos: tensor<2xi32>) {
  %di39_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{window must be a positive number of keys, got 0}}
  %r0, %r1 = attn.flash_decode %q, %k outs(%di39_init) cache(%kc) positions(%pos) {block_kv = 4 : i64, window = 0 : i64}
      : (tensor<2x1x4x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2xi32>) -> (tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>)
  return
}

// -----

func.func @scale(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x2x8xf32>, %kc: tensor<2x16x2x8xf32>, %pos: tensor<2xi32>) {
  %di40_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{scale must be a positive finite number, got -1}}
  %r0, %r1 = attn.flash_decode %q, %k outs(%di40_init) cache(%kc) positions(%pos) {block_kv = 4 : i64, scale = -1.0 : f64}
      : (tensor<2x1x4x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2xi32>) -> (tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>)
  return
}

// -----

func.func @query_rope_fraction(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x2x8xf32>, %kc: tensor<2x16x2x8xf32>, %pos: tensor<2xi32>) {
  %di41_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{query_rope fraction 3.000000e-01 of head_dim 8 is not a whole number of dimensions}}
  %r0, %r1 = attn.flash_decode %q, %k outs(%di41_init) cache(%kc) positions(%pos) {block_kv = 4 : i64, query_rope = #attn.rope<theta = 10000.0, fraction = 0.3>}
      : (tensor<2x1x4x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2xi32>) -> (tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>)
  return
}

// -----

func.func @key_rope_odd(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x2x8xf32>, %kc: tensor<2x16x2x8xf32>, %pos: tensor<2xi32>) {
  %di42_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{key_rope rotates 1 dimensions of each head; the rotated width must be even}}
  %r0, %r1 = attn.flash_decode %q, %k outs(%di42_init) cache(%kc) positions(%pos) {block_kv = 4 : i64, key_rope = #attn.rope<theta = 10000.0, fraction = 0.125>}
      : (tensor<2x1x4x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2xi32>) -> (tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>)
  return
}

// -----

func.func @block_kv(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x2x8xf32>, %kc: tensor<2x16x2x8xf32>, %pos: tensor<2xi32>) {
  %di43_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{attribute 'block_kv' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %r0, %r1 = attn.flash_decode %q, %k outs(%di43_init) cache(%kc) positions(%pos) {block_kv = 0 : i64}
      : (tensor<2x1x4x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2xi32>) -> (tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>)
  return
}

// -----

func.func @num_splits(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x2x8xf32>, %kc: tensor<2x16x2x8xf32>, %pos: tensor<2xi32>) {
  %di44_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{attribute 'num_splits' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %r0, %r1 = attn.flash_decode %q, %k outs(%di44_init) cache(%kc) positions(%pos) {block_kv = 4 : i64, num_splits = -1 : i64}
      : (tensor<2x1x4x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2xi32>) -> (tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>)
  return
}

// -----

func.func @positions_float(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x2x8xf32>, %kc: tensor<2x16x2x8xf32>, %pos: tensor<2xf32>) {
  %di45_init = tensor.empty() : tensor<2x1x4x8xf32>
  // expected-error @+1 {{operand #4 must be ranked tensor of signless integer values, but got 'tensor<2xf32>'}}
  %r0, %r1 = attn.flash_decode %q, %k outs(%di45_init) cache(%kc) positions(%pos) {block_kv = 4 : i64}
      : (tensor<2x1x4x8xf32>, tensor<2x1x2x8xf32>, tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2xf32>) -> (tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>)
  return
}

// -----

func.func @init_type(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x2x8xf32>, %kc: tensor<2x16x2x8xf32>, %pos: tensor<2xi32>, %init: tensor<?x1x4x8xf32>) {
  // expected-error @+1 {{'init' must have the result type 'tensor<2x1x4x8xf32>', got 'tensor<?x1x4x8xf32>'}}
  %r0, %r1 = attn.flash_decode %q, %k outs(%init) cache(%kc) positions(%pos) {block_kv = 4 : i64}
      : (tensor<2x1x4x8xf32>, tensor<2x1x2x8xf32>, tensor<?x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2xi32>) -> (tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>)
  return
}
