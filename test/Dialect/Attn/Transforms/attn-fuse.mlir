// RUN: attnfuse-opt %s --attn-decompose --attn-fuse --canonicalize --cse -split-input-file | FileCheck %s
// RUN: attnfuse-opt %s --attn-decompose --attn-fuse="block-q=128 block-kv=32 block-s=16 block-n=48 block-k=8" -split-input-file | FileCheck %s --check-prefix=TILES
// RUN: attnfuse-opt %s --attn-decompose --attn-fuse="grouped-conv-gemms=false" -split-input-file | FileCheck %s --check-prefix=WHOLE
// RUN: not attnfuse-opt %s --attn-fuse="block-q=0" -split-input-file 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: attn-fuse: block-q must be positive, got 0

// Separate Q, K, V with RoPE: every projection becomes one fused projection
// (query and key with the RoPE epilogue), attention a flash kernel that
// reads three tensors.
// CHECK-LABEL: func.func @none_rope
// CHECK-DAG: %[[K:.*]] = attn.fused_projection %{{.*}}, %arg2, %arg5 outs(%{{.*}}) {{{.*}}rope = #attn.rope<theta = 10000.0>}
// CHECK-DAG: %[[V:.*]] = attn.fused_projection %{{.*}}, %arg3 outs(%{{.*}}) {{{.*}}head_dim = 16 : i64}
// CHECK-DAG: %[[Q:.*]] = attn.fused_projection %{{.*}}, %arg1 outs(%{{.*}}) {{{.*}}rope = #attn.rope<theta = 10000.0>}
// CHECK: %[[O:.*]] = attn.flash_attention %[[Q]], %[[K]], %[[V]] outs(%{{.*}}) {block_kv = 64 : i64, block_q = 64 : i64, causal}
// CHECK-NOT: attn.sdpa
// CHECK-NOT: attn.rope
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[O]]
// The up-projection is a one-head fused projection (a tiled GEMM).
// CHECK: %[[UP:.*]] = attn.fused_projection %[[FLAT]], %arg4 outs(%{{.*}}) {block_k = 64 : i64, block_n = 64 : i64, block_s = 64 : i64, head_dim = 64 : i64} : (tensor<?x?x64xf32>, tensor<64x64xf32>, tensor<?x?x1x64xf32>) -> tensor<?x?x1x64xf32>
// CHECK: tensor.collapse_shape %[[UP]] {{\[\[}}0], [1], [2, 3]] : tensor<?x?x1x64xf32> into tensor<?x?x64xf32>
// CHECK-NOT: attn.project
// TILES-LABEL: func.func @none_rope
// TILES: attn.fused_projection {{.*}}block_k = 8 : i64, block_n = 48 : i64, block_s = 16 : i64
// TILES: attn.flash_attention {{.*}}block_kv = 32 : i64, block_q = 128 : i64
func.func @none_rope(%x: tensor<?x?x64xf32>, %wq: tensor<64x64xf32>,
                     %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>,
                     %wo: tensor<64x64xf32>, %bk: tensor<64xf32>)
    -> tensor<?x?x64xf32> {
  %y = attn.qkv_attention <none> %x wq(%wq) wk(%wk) wv(%wv) wo(%wo) bk(%bk)
      {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64,
       causal, rope = #attn.rope<theta = 10000.0>}
      : (tensor<?x?x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>,
         tensor<64x64xf32>, tensor<64x64xf32>, tensor<64xf32>)
      -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// K=V with GQA and RoPE: the shared tensor is projected once, un-rotated,
// and the flash kernel reads it for both roles, rotating the key role on
// load. With RoPE fused into its epilogue, the query tile holds whole heads.
// CHECK-LABEL: func.func @kv_gqa_rope
// CHECK-DAG: %[[KV:.*]] = attn.fused_projection %arg0, %arg2 outs(%{{.*}}) {block_k = 64 : i64, block_n = 64 : i64, block_s = 64 : i64, head_dim = 16 : i64} : {{.*}} -> tensor<?x?x1x16xf32>
// CHECK-DAG: %[[Q:.*]] = attn.fused_projection %arg0, %arg1 outs(%{{.*}}) {{{.*}}rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
// CHECK: attn.flash_attention %[[Q]], %[[KV]] outs(%{{.*}}) {block_kv = 64 : i64, block_q = 64 : i64, causal, key_rope = #attn.rope<theta = 10000.0, fraction = 0.5>, window = 8 : i64} : (tensor<?x?x4x16xf32>, tensor<?x?x1x16xf32>, tensor<?x?x4x16xf32>) -> tensor<?x?x4x16xf32>
// TILES-LABEL: func.func @kv_gqa_rope
// TILES: attn.fused_projection %arg0, %arg1 outs(%{{.*}}) {block_k = 8 : i64, block_n = 48 : i64
func.func @kv_gqa_rope(%x: tensor<?x?x64xf32>, %wq: tensor<64x64xf32>,
                       %wk: tensor<16x64xf32>, %wo: tensor<64x64xf32>)
    -> tensor<?x?x64xf32> {
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64,
       causal, window = 8 : i64,
       rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
      : (tensor<?x?x64xf32>, tensor<64x64xf32>, tensor<16x64xf32>,
         tensor<64x64xf32>) -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// K=V without RoPE: one tensor for key and value, no rotation.
// CHECK-LABEL: func.func @kv_plain
// CHECK: %[[KV:.*]] = attn.fused_projection %arg0, %arg2
// CHECK: attn.flash_attention %{{.*}}, %[[KV]] outs(%{{.*}}) {block_kv = 64 : i64, block_q = 64 : i64} : (tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>)
func.func @kv_plain(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>,
                    %wk: tensor<16x16xf32>, %wo: tensor<16x16xf32>)
    -> tensor<2x8x16xf32> {
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 8 : i64}
      : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>,
         tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// Q=K-V with RoPE and a logit bias: the shared query/key projection is
// rotated once in its epilogue and read as both operands.
// CHECK-LABEL: func.func @qk_rope_bias
// CHECK-DAG: %[[QK:.*]] = attn.fused_projection %arg0, %arg1 outs(%{{.*}}) {{{.*}}rope = #attn.rope<theta = 500.0>}
// CHECK-DAG: %[[V:.*]] = attn.fused_projection %arg0, %arg2
// CHECK: attn.flash_attention %[[QK]], %[[QK]], %[[V]] bias(%arg4) outs(%{{.*}}) {block_kv = 64 : i64, block_q = 64 : i64, causal}
func.func @qk_rope_bias(%x: tensor<?x?x32xf32>, %wk: tensor<32x32xf32>,
                        %wv: tensor<32x32xf32>, %wo: tensor<32x32xf32>,
                        %bias: tensor<?x?xf32>) -> tensor<?x?x32xf32> {
  %y = attn.qkv_attention <qk> %x wk(%wk) wv(%wv) wo(%wo) logit_bias(%bias)
      {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 8 : i64,
       causal, rope = #attn.rope<theta = 500.0>}
      : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>,
         tensor<32x32xf32>, tensor<?x?xf32>) -> tensor<?x?x32xf32>
  return %y : tensor<?x?x32xf32>
}

// -----

// Q=K=V with RoPE: one un-rotated tensor serves all three roles; the flash
// kernel rotates the query and key roles on load.
// CHECK-LABEL: func.func @qkv_rope
// CHECK: %[[T:.*]] = attn.fused_projection %arg0, %arg1 outs(%{{.*}}) {block_k = 64 : i64, block_n = 64 : i64, block_s = 64 : i64, head_dim = 8 : i64}
// CHECK: attn.flash_attention %[[T]], %[[T]] outs(%{{.*}}) {block_kv = 64 : i64, block_q = 64 : i64, causal, key_rope = #attn.rope<theta = 10000.0>, query_rope = #attn.rope<theta = 10000.0>}
// CHECK-NOT: attn.rope
func.func @qkv_rope(%x: tensor<?x?x32xbf16>, %wk: tensor<32x32xbf16>,
                    %wo: tensor<32x32xbf16>) -> tensor<?x?x32xbf16> {
  %y = attn.qkv_attention <qkv> %x wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 8 : i64,
       causal, rope = #attn.rope<theta = 10000.0>}
      : (tensor<?x?x32xbf16>, tensor<32x32xbf16>, tensor<32x32xbf16>)
      -> tensor<?x?x32xbf16>
  return %y : tensor<?x?x32xbf16>
}

// -----

// ZAYA1-shaped CCGQA: the whole chain from the down-projections to RoPE is
// one prologue kernel writing Q, K and V once; the norm form and eps carry
// over.
// CHECK-LABEL: func.func @ccgqa
// CHECK: %[[Q:.*]], %[[K:.*]], %[[V:.*]] = attn.cca_prologue %arg0 wq(%arg1) wk(%arg2) wv(%arg3) wv_prev(%arg4) conv_dw(%arg5, %arg6) conv_g(%arg7, %arg8) temp(%arg9) outs({{.*}}) {block_s = 64 : i64, conv_kernel_sizes = array<i64: 2, 2>, eps = 1.1920928955078125E-7 : f64, head_dim = 16 : i64, norm = #attn.norm<clamp_eps>, num_heads = 4 : i64, num_kv_heads = 2 : i64, qk_mean, rope = #attn.rope<theta = 10000.0, fraction = 0.5>, temperature = #attn.temperature<clamped>, value_shift}
// CHECK: attn.flash_attention %[[Q]], %[[K]], %[[V]] outs(%{{.*}}) {block_kv = 64 : i64, block_q = 64 : i64, causal}
// CHECK-NOT: attn.causal_conv1d
// CHECK-NOT: attn.qk_norm
func.func @ccgqa(%x: tensor<?x?x64xf32>, %wq: tensor<64x64xf32>,
                 %wk: tensor<32x64xf32>, %wv: tensor<16x64xf32>,
                 %wvp: tensor<16x64xf32>, %dw: tensor<96x1x2xf32>,
                 %dwb: tensor<96xf32>, %gw: tensor<96x16x2xf32>,
                 %gwb: tensor<96xf32>, %temp: tensor<2xf32>,
                 %wo: tensor<64x64xf32>) -> tensor<?x?x64xf32> {
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv) wv_prev(%wvp)
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift,
       temperature = #attn.temperature<clamped>, causal,
       norm = #attn.norm<clamp_eps>, eps = 1.1920928955078125e-07 : f64,
       rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
      : (tensor<?x?x64xf32>, tensor<64x64xf32>, tensor<32x64xf32>,
         tensor<16x64xf32>, tensor<16x64xf32>, tensor<96x1x2xf32>,
         tensor<96xf32>, tensor<96x16x2xf32>, tensor<96xf32>, tensor<2xf32>,
         tensor<64x64xf32>) -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// CCA without QK-mean, value shift or RoPE (raw temperature, k = 3).
// CHECK-LABEL: func.func @cca_plain
// CHECK: attn.cca_prologue %arg0 wq(%arg1) wk(%arg2) wv(%arg3) conv_dw(%arg4, %arg5) conv_g(%arg6, %arg7) temp(%arg8) outs({{.*}}) {block_s = 64 : i64, conv_kernel_sizes = array<i64: 3, 3>, head_dim = 8 : i64, num_heads = 2 : i64, num_kv_heads = 2 : i64}
func.func @cca_plain(%x: tensor<1x9x16xf32>, %wq: tensor<16x16xf32>,
                     %wk: tensor<16x16xf32>, %wv: tensor<16x16xf32>,
                     %dw: tensor<32x1x3xf32>, %dwb: tensor<32xf32>,
                     %gw: tensor<32x8x3xf32>, %gwb: tensor<32xf32>,
                     %temp: tensor<2xf32>, %wo: tensor<16x16xf32>)
    -> tensor<1x9x16xf32> {
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) wo(%wo)
      {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 8 : i64,
       conv_kernel_sizes = array<i64: 3, 3>}
      : (tensor<1x9x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>,
         tensor<16x16xf32>, tensor<32x1x3xf32>, tensor<32xf32>,
         tensor<32x8x3xf32>, tensor<32xf32>, tensor<2xf32>,
         tensor<16x16xf32>) -> tensor<1x9x16xf32>
  return %y : tensor<1x9x16xf32>
}

// -----

// The decomposed chain of @cca_plain whose pre-norm key is also read by
// another op (as a gradient function's backward reads it): the chain is
// computed whole either way, so no prologue repeats it; the attention is
// still fused.
// CHECK-LABEL: func.func @cca_chain_read_by_backward
// CHECK-NOT: attn.cca_prologue
// CHECK: attn.causal_conv1d
// CHECK: attn.qk_norm
// CHECK: attn.flash_attention
func.func @cca_chain_read_by_backward(
    %x: tensor<1x9x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<16x16xf32>,
    %wv: tensor<16x16xf32>, %dw: tensor<32x1x3xf32>, %dwb: tensor<32xf32>,
    %gw: tensor<32x8x3xf32>, %gwb: tensor<32xf32>, %temp: tensor<2xf32>)
    -> (tensor<1x9x2x8xf32>, tensor<1x9x2x8xf32>) {
  %q = attn.project %x, %wq : (tensor<1x9x16xf32>, tensor<16x16xf32>) -> tensor<1x9x16xf32>
  %k = attn.project %x, %wk : (tensor<1x9x16xf32>, tensor<16x16xf32>) -> tensor<1x9x16xf32>
  %u = tensor.concat dim(2) %q, %k : (tensor<1x9x16xf32>, tensor<1x9x16xf32>) -> tensor<1x9x32xf32>
  %m = attn.causal_conv1d %u, %dw, %dwb {groups = 32 : i64, padding = 4 : i64} : (tensor<1x9x32xf32>, tensor<32x1x3xf32>, tensor<32xf32>) -> tensor<1x11x32xf32>
  %c = attn.causal_conv1d %m, %gw, %gwb {groups = 4 : i64, padding = 0 : i64} : (tensor<1x11x32xf32>, tensor<32x8x3xf32>, tensor<32xf32>) -> tensor<1x9x32xf32>
  %cq = tensor.extract_slice %c[0, 0, 0] [1, 9, 16] [1, 1, 1] : tensor<1x9x32xf32> to tensor<1x9x16xf32>
  %qh = tensor.expand_shape %cq [[0], [1], [2, 3]] output_shape [1, 9, 2, 8] : tensor<1x9x16xf32> into tensor<1x9x2x8xf32>
  %ck = tensor.extract_slice %c[0, 0, 16] [1, 9, 16] [1, 1, 1] : tensor<1x9x32xf32> to tensor<1x9x16xf32>
  %kh = tensor.expand_shape %ck [[0], [1], [2, 3]] output_shape [1, 9, 2, 8] : tensor<1x9x16xf32> into tensor<1x9x2x8xf32>
  %qn, %kn = attn.qk_norm %qh, %kh, %temp : tensor<1x9x2x8xf32>, tensor<1x9x2x8xf32>, tensor<2xf32>
  %v = attn.project %x, %wv : (tensor<1x9x16xf32>, tensor<16x16xf32>) -> tensor<1x9x16xf32>
  %vh = tensor.expand_shape %v [[0], [1], [2, 3]] output_shape [1, 9, 2, 8] : tensor<1x9x16xf32> into tensor<1x9x2x8xf32>
  %o = attn.sdpa %qn, %kn, %vh : (tensor<1x9x2x8xf32>, tensor<1x9x2x8xf32>, tensor<1x9x2x8xf32>) -> tensor<1x9x2x8xf32>
  return %o, %kh : tensor<1x9x2x8xf32>, tensor<1x9x2x8xf32>
}

// -----

// Primitives that are not a layer's chain: an sdpa over function arguments
// still becomes a flash kernel, a conv without the CCA context stays.
// CHECK-LABEL: func.func @loose_primitives
// CHECK: attn.causal_conv1d
// CHECK: attn.flash_attention %arg0, %arg1, %arg2 outs(%{{.*}}) {block_kv = 64 : i64, block_q = 64 : i64, scale = 2.500000e-01 : f64}
func.func @loose_primitives(%q: tensor<1x4x2x8xf32>, %k: tensor<1x4x1x8xf32>,
                            %v: tensor<1x4x1x8xf32>, %u: tensor<1x4x8xf32>,
                            %w: tensor<8x1x2xf32>)
    -> (tensor<1x4x2x8xf32>, tensor<1x4x8xf32>) {
  %c = attn.causal_conv1d %u, %w {groups = 8 : i64, padding = 1 : i64}
      : (tensor<1x4x8xf32>, tensor<8x1x2xf32>) -> tensor<1x4x8xf32>
  %o = attn.sdpa %q, %k, %v {scale = 0.25 : f64}
      : (tensor<1x4x2x8xf32>, tensor<1x4x1x8xf32>, tensor<1x4x1x8xf32>)
      -> tensor<1x4x2x8xf32>
  return %o, %c : tensor<1x4x2x8xf32>, tensor<1x4x8xf32>
}

// -----

// A K=V decode step with RoPE over a paged cache: one attn.flash_decode
// writes the un-rotated shared key through the block table and attends with
// RoPE on load (query at its position, cached keys at theirs); the layer's
// updated cache is the kernel's.
// The projections of one token per sequence run as one sequence of B tokens
// ([1, B, E]), so that the GEMM reads the weights once.
// CHECK-LABEL: func.func @kv_decode_step
// CHECK: %[[FLAT:.+]] = tensor.collapse_shape %arg0 {{\[}}[0, 1], [2]] : tensor<?x1x16xf32> into tensor<?x16xf32>
// CHECK: %[[SEQ:.+]] = tensor.expand_shape %[[FLAT]] {{\[}}[0, 1], [2]] output_shape [1, %{{.+}}, 16] : tensor<?x16xf32> into tensor<1x?x16xf32>
// CHECK: attn.fused_projection %[[SEQ]], %arg2 outs(%{{.*}}) {{.+}} -> tensor<1x?x2x4xf32>
// CHECK: %[[K:.+]] = tensor.expand_shape %{{.+}} output_shape [%{{.+}}, 1, 2, 4] : tensor<?x2x4xf32> into tensor<?x1x2x4xf32>
// CHECK: attn.fused_projection %[[SEQ]], %arg1 outs(%{{.*}}) {{.+}} -> tensor<1x?x4x4xf32>
// CHECK: %[[Q:.+]] = tensor.expand_shape %{{.+}} output_shape [%{{.+}}, 1, 4, 4] : tensor<?x4x4xf32> into tensor<?x1x4x4xf32>
// CHECK: %[[O:.+]], %[[KV:.+]] = attn.flash_decode %[[Q]], %[[K]] outs(%{{[a-z0-9_]+}}) cache(%arg4) positions(%arg5) block_table(%arg6) {block_kv = 64 : i64, key_rope = #attn.rope<theta = 10000.0>, query_rope = #attn.rope<theta = 10000.0>}
// CHECK-NOT: attn.cache_update
// CHECK-NOT: attn.cache_gather
// CHECK-NOT: attn.sdpa
// CHECK: return %{{.+}}, %[[KV]]
// TILES-LABEL: func.func @kv_decode_step
// TILES: attn.flash_decode {{.+}} {block_kv = 64 : i64
func.func @kv_decode_step(%x: tensor<?x1x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>, %kv: tensor<9x4x2x4xf32>,
    %pos: tensor<?xi32>, %bt: tensor<?x4xi32>)
    -> (tensor<?x1x16xf32>, tensor<9x4x2x4xf32>) {
  %y, %kv2 = attn.qkv_decode <kv> %x wq(%wq) wk(%wk) wo(%wo) cache(%kv)
      positions(%pos) block_table(%bt)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       rope = #attn.rope<theta = 10000.0>}
      : (tensor<?x1x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>, tensor<9x4x2x4xf32>, tensor<?xi32>,
         tensor<?x4xi32>) -> (tensor<?x1x16xf32>, tensor<9x4x2x4xf32>)
  return %y, %kv2 : tensor<?x1x16xf32>, tensor<9x4x2x4xf32>
}

// -----

// The same step with i64 positions and page numbers: the decode kernels read
// 32-bit ones, so the cache writes and the attention stay on the primitives
// (lowered by the reference path on the CPU) instead of being narrowed.
// CHECK-LABEL: func.func @kv_decode_step_i64
// CHECK-NOT: attn.flash_decode
// CHECK: attn.cache_update
// CHECK: attn.sdpa {{.+}} positions(%arg5)
// CHECK-NOT: attn.flash_decode
// CHECK: return
func.func @kv_decode_step_i64(%x: tensor<?x1x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>, %kv: tensor<9x4x2x4xf32>,
    %pos: tensor<?xi64>, %bt: tensor<?x4xi64>)
    -> (tensor<?x1x16xf32>, tensor<9x4x2x4xf32>) {
  %y, %kv2 = attn.qkv_decode <kv> %x wq(%wq) wk(%wk) wo(%wo) cache(%kv)
      positions(%pos) block_table(%bt)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       rope = #attn.rope<theta = 10000.0>}
      : (tensor<?x1x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x16xf32>, tensor<9x4x2x4xf32>, tensor<?xi64>,
         tensor<?x4xi64>) -> (tensor<?x1x16xf32>, tensor<9x4x2x4xf32>)
  return %y, %kv2 : tensor<?x1x16xf32>, tensor<9x4x2x4xf32>
}

// -----

// Separate K and V caches (mode none), a window: both caches are written by
// the kernel. With lengths (a prefill chunk) nothing fuses: the decode
// kernels serve one token per sequence.
// CHECK-LABEL: func.func @none_decode_step
// CHECK: %[[O:.+]], %[[KC:.+]], %[[VC:.+]] = attn.flash_decode %{{.+}}, %{{.+}}, %{{.+}} cache(%arg5, %arg6) positions(%arg7) {block_kv = 64 : i64, window = 8 : i64}
// CHECK: return %{{.+}}, %[[KC]], %[[VC]]
// CHECK-LABEL: func.func @none_prefill_chunk
// CHECK-NOT: attn.flash_decode
// CHECK: attn.cache_update
// CHECK: attn.cache_update
// CHECK: attn.sdpa {{.+}} positions(%arg7) {causal}
func.func @none_decode_step(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>, %wo: tensor<16x16xf32>,
    %kc: tensor<2x32x2x4xf32>, %vc: tensor<2x32x2x4xf32>, %pos: tensor<2xi32>)
    -> (tensor<2x1x16xf32>, tensor<2x32x2x4xf32>, tensor<2x32x2x4xf32>) {
  %y, %k2, %v2 = attn.qkv_decode <none> %x wq(%wq) wk(%wk) wv(%wv) wo(%wo)
      cache(%kc, %vc) positions(%pos)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64,
       window = 8 : i64}
      : (tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<16x16xf32>, tensor<2x32x2x4xf32>,
         tensor<2x32x2x4xf32>, tensor<2xi32>)
      -> (tensor<2x1x16xf32>, tensor<2x32x2x4xf32>, tensor<2x32x2x4xf32>)
  return %y, %k2, %v2
      : tensor<2x1x16xf32>, tensor<2x32x2x4xf32>, tensor<2x32x2x4xf32>
}
func.func @none_prefill_chunk(%x: tensor<2x?x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>, %wo: tensor<16x16xf32>,
    %kc: tensor<2x32x2x4xf32>, %vc: tensor<2x32x2x4xf32>, %pos: tensor<2xi32>,
    %len: tensor<2xi32>)
    -> (tensor<2x?x16xf32>, tensor<2x32x2x4xf32>, tensor<2x32x2x4xf32>) {
  %y, %k2, %v2 = attn.qkv_decode <none> %x wq(%wq) wk(%wk) wv(%wv) wo(%wo)
      cache(%kc, %vc) positions(%pos) lengths(%len)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64}
      : (tensor<2x?x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<8x16xf32>, tensor<16x16xf32>, tensor<2x32x2x4xf32>,
         tensor<2x32x2x4xf32>, tensor<2xi32>, tensor<2xi32>)
      -> (tensor<2x?x16xf32>, tensor<2x32x2x4xf32>, tensor<2x32x2x4xf32>)
  return %y, %k2, %v2
      : tensor<2x?x16xf32>, tensor<2x32x2x4xf32>, tensor<2x32x2x4xf32>
}

// -----

// A CCGQA decode step: the chain over the conv and shift states becomes one
// attn.cca_decode_prologue (rolling both states), the attention over the
// post-RoPE key cache and the value cache one attn.flash_decode.
// CHECK-LABEL: func.func @cca_decode_step
// CHECK: %[[Q:.+]], %[[K:.+]], %[[V:.+]], %[[CS:.+]], %[[SS:.+]] = attn.cca_decode_prologue %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} conv_dw(%arg5, %arg6) conv_g(%arg7, %arg8) temp(%arg9) outs(%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) conv_state(%arg13) shift_state(%arg14) positions(%arg15) {conv_kernel_sizes = array<i64: 2, 2>, head_dim = 4 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, qk_mean, rope = #attn.rope<theta = 10000.0, fraction = 0.5>, value_shift}
// CHECK: %[[O:.+]], %[[KC:.+]], %[[VC:.+]] = attn.flash_decode %[[Q]], %[[K]], %[[V]] outs(%{{[a-z0-9_]+}}) cache(%arg11, %arg12) positions(%arg15) {block_kv = 64 : i64}
// CHECK-NOT: attn.causal_conv1d
// CHECK-NOT: attn.state_update
// CHECK: return %{{.+}}, %[[KC]], %[[VC]], %[[CS]], %[[SS]]
func.func @cca_decode_step(%x: tensor<2x1x16xf32>, %wq: tensor<8x16xf32>,
    %wk: tensor<4x16xf32>, %wv: tensor<2x16xf32>, %wvp: tensor<2x16xf32>,
    %dw: tensor<12x1x2xf32>, %dwb: tensor<12xf32>, %gw: tensor<12x4x2xf32>,
    %gwb: tensor<12xf32>, %temp: tensor<1xf32>, %wo: tensor<16x8xf32>,
    %kc: tensor<2x64x1x4xf32>, %vc: tensor<2x64x1x4xf32>,
    %cs: tensor<2x2x12xf32>, %ss: tensor<2x1x2xf32>, %pos: tensor<2xi32>)
    -> (tensor<2x1x16xf32>, tensor<2x64x1x4xf32>, tensor<2x64x1x4xf32>,
        tensor<2x2x12xf32>, tensor<2x1x2xf32>) {
  %y, %k2, %v2, %c2, %s2 = attn.cca_decode %x wq(%wq) wk(%wk) wv(%wv)
      wv_prev(%wvp) conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) wo(%wo)
      cache(%kc, %vc) conv_state(%cs) shift_state(%ss) positions(%pos)
      {num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift,
       rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
      : (tensor<2x1x16xf32>, tensor<8x16xf32>, tensor<4x16xf32>,
         tensor<2x16xf32>, tensor<2x16xf32>, tensor<12x1x2xf32>,
         tensor<12xf32>, tensor<12x4x2xf32>, tensor<12xf32>, tensor<1xf32>,
         tensor<16x8xf32>, tensor<2x64x1x4xf32>, tensor<2x64x1x4xf32>,
         tensor<2x2x12xf32>, tensor<2x1x2xf32>, tensor<2xi32>)
      -> (tensor<2x1x16xf32>, tensor<2x64x1x4xf32>, tensor<2x64x1x4xf32>,
          tensor<2x2x12xf32>, tensor<2x1x2xf32>)
  return %y, %k2, %v2, %c2, %s2
      : tensor<2x1x16xf32>, tensor<2x64x1x4xf32>, tensor<2x64x1x4xf32>,
        tensor<2x2x12xf32>, tensor<2x1x2xf32>
}

// -----

// A padded batch: the prologue reads x itself and zeroes the padded tokens
// (the mask_tokens of the decomposition is folded into it), the flash
// kernel masks them as keys.
// CHECK-LABEL: func.func @ccgqa_padding_mask
// CHECK: %[[Q:.*]], %[[K:.*]], %[[V:.*]] = attn.cca_prologue %arg0 wq(%arg1) wk(%arg2) wv(%arg3) wv_prev(%arg4) conv_dw(%arg5, %arg6) conv_g(%arg7, %arg8) temp(%arg9) padding_mask(%arg11) outs({{.*}}) {block_s = 64 : i64
// CHECK: attn.flash_attention %[[Q]], %[[K]], %[[V]] key_mask(%arg11) outs(%{{.*}}) {block_kv = 64 : i64, block_q = 64 : i64, causal, window = 8 : i64}
// CHECK-NOT: attn.mask_tokens
// CHECK-NOT: attn.sdpa
func.func @ccgqa_padding_mask(%x: tensor<?x?x64xf32>, %wq: tensor<64x64xf32>,
                              %wk: tensor<32x64xf32>, %wv: tensor<16x64xf32>,
                              %wvp: tensor<16x64xf32>, %dw: tensor<96x1x2xf32>,
                              %dwb: tensor<96xf32>, %gw: tensor<96x16x2xf32>,
                              %gwb: tensor<96xf32>, %temp: tensor<2xf32>,
                              %wo: tensor<64x64xf32>, %m: tensor<?x?xi32>)
    -> tensor<?x?x64xf32> {
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv) wv_prev(%wvp)
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) wo(%wo)
      padding_mask(%m)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift, causal,
       window = 8 : i64, rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
      : (tensor<?x?x64xf32>, tensor<64x64xf32>, tensor<32x64xf32>,
         tensor<16x64xf32>, tensor<16x64xf32>, tensor<96x1x2xf32>,
         tensor<96xf32>, tensor<96x16x2xf32>, tensor<96xf32>, tensor<2xf32>,
         tensor<64x64xf32>, tensor<?x?xi32>) -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// The gradients of an attention: the memory-O(S) backward, with empty
// inits shaped like the values they differentiate. A bias whose gradient is
// unused is only read.
// CHECK-LABEL: func.func @sdpa_grad
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[B:.*]] = tensor.dim %arg0, %[[C0]]
// CHECK-DAG: %[[S:.*]] = tensor.dim %arg0, %[[C1]]
// CHECK-DAG: %[[KB:.*]] = tensor.dim %arg1, %[[C0]]
// CHECK-DAG: %[[T:.*]] = tensor.dim %arg1, %[[C1]]
// CHECK-DAG: %[[DQ0:.*]] = tensor.empty(%[[B]], %[[S]]) : tensor<?x?x4x8xf32>
// CHECK-DAG: %[[DK0:.*]] = tensor.empty(%[[KB]], %[[T]]) : tensor<?x?x2x8xf32>
// CHECK: %{{.*}}, %{{.*}}, %{{.*}} = attn.flash_attention_grad %arg0, %arg1, %arg1, %arg2, %arg3 key_mask(%arg4) outs(%[[DQ0]], %[[DK0]], %[[DK0]]) {block_kv = 64 : i64, block_q = 64 : i64, causal, window = 16 : i64}
// CHECK: %{{.*}}, %{{.*}}, %{{.*}} = attn.flash_attention_grad %arg0, %arg1, %arg1, %arg2, %arg3 bias(%arg5) outs(%[[DQ0]], %[[DK0]], %[[DK0]]) {block_kv = 64 : i64, block_q = 64 : i64}
// CHECK-NOT: attn.sdpa_grad
// TILES-LABEL: func.func @sdpa_grad
// TILES: attn.flash_attention_grad {{.*}}{block_kv = 32 : i64, block_q = 128 : i64, causal, window = 16 : i64}
func.func @sdpa_grad(%q: tensor<?x?x4x8xf32>, %k: tensor<?x?x2x8xf32>,
                     %o: tensor<?x?x4x8xf32>, %do: tensor<?x?x4x8xf32>,
                     %mask: tensor<?x?xi64>, %bias: tensor<?x?xf32>)
    -> (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>,
        tensor<?x?x4x8xf32>) {
  %dq, %dk, %dv = attn.sdpa_grad %q, %k, %k, %o, %do key_mask(%mask)
      {causal, window = 16 : i64}
      : (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>,
         tensor<?x?x4x8xf32>, tensor<?x?x4x8xf32>, tensor<?x?xi64>)
      -> (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>)
  %bq, %bk, %bv, %bb = attn.sdpa_grad %q, %k, %k, %o, %do bias(%bias)
      : (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>,
         tensor<?x?x4x8xf32>, tensor<?x?x4x8xf32>, tensor<?x?xf32>)
      -> (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>,
          tensor<?x?xf32>)
  return %dq, %dk, %dv, %bq : tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>,
      tensor<?x?x2x8xf32>, tensor<?x?x4x8xf32>
}

// -----

// A used bias gradient: dS summed over the batch accumulates into an f32
// [Hq, S, T] init from zero; an [S, T] bias's gradient is its sum over the
// heads (in f32), a 16-bit bias's is rounded once.
// CHECK-LABEL: func.func @sdpa_grad_bias
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[DB0:.*]] = tensor.empty(%{{.*}}, %{{.*}}) : tensor<4x?x?xf32>
// CHECK: %[[DB:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[DB0]] : tensor<4x?x?xf32>)
// CHECK: %{{.*}}, %{{.*}}, %[[SUM:.*]] = attn.flash_attention_grad %arg0, %arg1, %arg2, %arg3 bias(%arg4) outs(%{{.*}}, %{{.*}}) accumulate(%[[DB]])
// CHECK-SAME: -> (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<4x?x?xf32>)
// CHECK: %[[HEADS0:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<?x?xf32>)
// CHECK: %[[HEADS:.*]] = linalg.generic {{.*}}iterator_types = ["reduction", "parallel", "parallel"]} ins(%[[SUM]] : tensor<4x?x?xf32>) outs(%[[HEADS0]] : tensor<?x?xf32>)
// CHECK: arith.addf
// CHECK: return %{{.*}}, %{{.*}}, %[[HEADS]]
func.func @sdpa_grad_bias(%q: tensor<?x?x4x8xf32>, %k: tensor<?x?x2x8xf32>,
                          %o: tensor<?x?x4x8xf32>, %do: tensor<?x?x4x8xf32>,
                          %bias: tensor<?x?xf32>)
    -> (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?xf32>) {
  %dq, %dk, %dv, %db = attn.sdpa_grad %q, %k, %k, %o, %do bias(%bias)
      : (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>,
         tensor<?x?x4x8xf32>, tensor<?x?x4x8xf32>, tensor<?x?xf32>)
      -> (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>,
          tensor<?x?xf32>)
  %dkv = arith.addf %dk, %dv : tensor<?x?x2x8xf32>
  return %dq, %dkv, %db
      : tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?xf32>
}

// CHECK-LABEL: func.func @sdpa_grad_head_bias_bf16
// CHECK: %{{.*}}, %{{.*}}, %{{.*}}, %[[SUM:.*]] = attn.flash_attention_grad %arg0, %arg1, %arg2, %arg3, %arg4 bias(%arg5) outs(%{{.*}}, %{{.*}}, %{{.*}}) accumulate(%{{.*}}) {block_kv = 64 : i64, block_q = 64 : i64, causal}
// CHECK: %[[DB:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[SUM]] : tensor<4x?x?xf32>) outs(%{{.*}} : tensor<4x?x?xbf16>)
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: return %[[DB]]
func.func @sdpa_grad_head_bias_bf16(%q: tensor<?x?x4x8xbf16>,
                                    %k: tensor<?x?x2x8xbf16>,
                                    %v: tensor<?x?x2x8xbf16>,
                                    %o: tensor<?x?x4x8xbf16>,
                                    %do: tensor<?x?x4x8xbf16>,
                                    %bias: tensor<4x?x?xbf16>)
    -> tensor<4x?x?xbf16> {
  %dq, %dk, %dv, %db = attn.sdpa_grad %q, %k, %v, %o, %do bias(%bias)
      {causal}
      : (tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>,
         tensor<?x?x4x8xbf16>, tensor<?x?x4x8xbf16>, tensor<4x?x?xbf16>)
      -> (tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>,
          tensor<4x?x?xbf16>)
  return %db : tensor<4x?x?xbf16>
}

// -----

// K=V: the key is the value (or its rotation) and the two role gradients
// are only summed (dv + dk, or dv + rope_grad(dk)): the K=V form, one
// gradient for the shared tensor, the rotation of the key role moved into
// the kernel (key_rope). Where dk is read elsewhere the three-gradient form
// stays.
// CHECK-LABEL: func.func @sdpa_grad_shared_kv
// CHECK: %[[K:.*]] = attn.rope %arg1
// CHECK: %[[DQ:.*]], %[[DKV:.*]] = attn.flash_attention_grad %arg0, %arg1, %arg2, %arg3 outs(%{{.*}}, %{{.*}}) {block_kv = 64 : i64, block_q = 64 : i64, causal, key_rope = #attn.rope<theta = 10000.0>}
// CHECK: %[[DQ2:.*]], %[[DKV2:.*]] = attn.flash_attention_grad %arg0, %arg1, %arg2, %arg3 outs(%{{.*}}, %{{.*}}) {block_kv = 64 : i64, block_q = 64 : i64} :
// CHECK: %{{.*}}, %[[DK3:.*]], %[[DV3:.*]] = attn.flash_attention_grad %arg0, %[[K]], %arg1, %arg2, %arg3 outs({{.*}}) {block_kv = 64 : i64, block_q = 64 : i64} :
// CHECK: %[[DK3T:.*]] = attn.rope_grad %[[DK3]]
// CHECK: %[[DKV3:.*]] = arith.addf %[[DV3]], %[[DK3T]]
// CHECK: return %[[DQ]], %[[DKV]], %[[DQ2]], %[[DKV2]], %[[DKV3]], %[[DK3T]]
func.func @sdpa_grad_shared_kv(%q: tensor<?x?x4x8xf32>,
                               %kv: tensor<?x?x2x8xf32>,
                               %o: tensor<?x?x4x8xf32>,
                               %do: tensor<?x?x4x8xf32>)
    -> (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x4x8xf32>,
        tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>) {
  %k = attn.rope %kv {rope = #attn.rope<theta = 10000.0>}
      : tensor<?x?x2x8xf32>
  %dq, %dk, %dv = attn.sdpa_grad %q, %k, %kv, %o, %do {causal}
      : (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>,
         tensor<?x?x4x8xf32>, tensor<?x?x4x8xf32>)
      -> (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>)
  %dk_kv = attn.rope_grad %dk {rope = #attn.rope<theta = 10000.0>}
      : tensor<?x?x2x8xf32>
  %dkv = arith.addf %dv, %dk_kv : tensor<?x?x2x8xf32>
  // Without rotation: the key is the value.
  %dq2, %dk2, %dv2 = attn.sdpa_grad %q, %kv, %kv, %o, %do
      : (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>,
         tensor<?x?x4x8xf32>, tensor<?x?x4x8xf32>)
      -> (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>)
  %dkv2 = arith.addf %dk2, %dv2 : tensor<?x?x2x8xf32>
  // The rotated key's gradient is also returned: not summed in the kernel.
  %dq3, %dk3, %dv3 = attn.sdpa_grad %q, %k, %kv, %o, %do
      : (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>,
         tensor<?x?x4x8xf32>, tensor<?x?x4x8xf32>)
      -> (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>)
  %dk3_kv = attn.rope_grad %dk3 {rope = #attn.rope<theta = 10000.0>}
      : tensor<?x?x2x8xf32>
  %dkv3 = arith.addf %dv3, %dk3_kv : tensor<?x?x2x8xf32>
  return %dq, %dkv, %dq2, %dkv2, %dkv3, %dk3_kv
      : tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x4x8xf32>,
        tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>
}

// -----

// A grouped convolution's gradient (groups at least 16 channels wide) as
// GEMMs per group: dW against the group's taps side by side (the padded
// input shifted by each tap, concatenated), dx as a projection of dy by the
// group's taps (W^T per tap, stacked), summed at the taps' shifts; db the
// weight gradient of a ones column. A depthwise convolution keeps the op.
// With grouped-conv-gemms=false (the sm_90a convolution kernels take the
// whole op) both gradients stay ops.
// CHECK-LABEL: func.func @conv_grad_grouped
// WHOLE-LABEL: func.func @conv_grad_grouped
// WHOLE: attn.causal_conv1d_grad %arg0, %arg1, %arg2 {groups = 2 : i64, padding = 0 : i64}
// WHOLE: attn.causal_conv1d_grad %arg3, %arg4, %arg2 {groups = 32 : i64, padding = 1 : i64}
// WHOLE-NOT: attn.fused_weight_grad
// CHECK: %[[TAPS0:.*]] = tensor.concat dim(2) %{{.*}}, %{{.*}} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x32xf32>
// CHECK: %[[ROWS0:.*]] = tensor.collapse_shape %[[TAPS0]] {{\[}}[0, 1], [2]]
// CHECK: %[[DW0:.*]] = attn.fused_weight_grad %[[ROWS0]], %{{.*}} outs(%{{.*}}) {{.*}} : (tensor<?x32xf32>, tensor<?x16xf32>, tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[BYTAP0:.*]] = tensor.expand_shape %[[DW0]] {{\[}}[0], [1, 2]] output_shape [16, 2, 16]
// CHECK: %[[W0:.*]] = linalg.transpose ins(%[[BYTAP0]] : tensor<16x2x16xf32>) outs(%{{.*}} : tensor<16x16x2xf32>) permutation = [0, 2, 1]
// CHECK: %[[TAPW0:.*]] = linalg.transpose ins(%{{.*}} : tensor<16x16x2xf32>) outs(%{{.*}} : tensor<2x16x16xf32>) permutation = [2, 1, 0]
// CHECK: %[[DXW0:.*]] = tensor.collapse_shape %[[TAPW0]] {{\[}}[0, 1], [2]] : tensor<2x16x16xf32> into tensor<32x16xf32>
// CHECK-NOT: linalg.transpose
// CHECK: attn.fused_projection %{{.*}}, %[[DXW0]] outs(%{{.*}}) {{.*}} : (tensor<?x?x16xf32>, tensor<32x16xf32>, tensor<?x?x1x32xf32>)
// CHECK: tensor.pad %{{.*}} low[0, 1, 0, 0] high[0, 1, 0, 0]
// CHECK: attn.fused_weight_grad
// CHECK: attn.fused_projection
// CHECK: %[[DX:.*]] = tensor.concat dim(2) %{{.*}}, %{{.*}} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x32xf32>
// CHECK: %[[DW:.*]] = tensor.concat dim(0) %[[W0]], %{{.*}} : (tensor<16x16x2xf32>, tensor<16x16x2xf32>) -> tensor<32x16x2xf32>
// CHECK: %[[DB:.*]] = attn.fused_weight_grad %{{.*}}, %{{.*}} outs(%{{.*}}) {{.*}} : (tensor<?x1xf32>, tensor<?x32xf32>, tensor<32x1xf32>) -> tensor<32x1xf32>
// CHECK: %[[DEPTHWISE:.*]], %{{.*}}, %{{.*}} = attn.causal_conv1d_grad %arg3, %arg4, %arg2 {groups = 32 : i64, padding = 1 : i64}
// CHECK: return %[[DX]], %[[DW]], %{{.*}}, %[[DEPTHWISE]]
func.func @conv_grad_grouped(%x: tensor<?x?x32xf32>, %w: tensor<32x16x2xf32>,
                             %dy: tensor<?x?x32xf32>, %xd: tensor<?x?x32xf32>,
                             %wd: tensor<32x1x2xf32>)
    -> (tensor<?x?x32xf32>, tensor<32x16x2xf32>, tensor<32xf32>,
        tensor<?x?x32xf32>) {
  %dx, %dw, %db = attn.causal_conv1d_grad %x, %w, %dy
      {groups = 2 : i64, padding = 0 : i64}
      : (tensor<?x?x32xf32>, tensor<32x16x2xf32>, tensor<?x?x32xf32>)
      -> (tensor<?x?x32xf32>, tensor<32x16x2xf32>, tensor<32xf32>)
  %ddx, %ddw, %ddb = attn.causal_conv1d_grad %xd, %wd, %dy
      {groups = 32 : i64, padding = 1 : i64}
      : (tensor<?x?x32xf32>, tensor<32x1x2xf32>, tensor<?x?x32xf32>)
      -> (tensor<?x?x32xf32>, tensor<32x1x2xf32>, tensor<32xf32>)
  return %dx, %dw, %db, %ddx
      : tensor<?x?x32xf32>, tensor<32x16x2xf32>, tensor<32xf32>,
        tensor<?x?x32xf32>
}

// -----

// A grouped convolution outside a fused prologue: per group, a projection
// of its taps side by side (the padded input shifted by each tap) by its
// weight block as [out, taps * in], with its bias; the groups concatenated.
// CHECK-LABEL: func.func @conv_grouped
// WHOLE-LABEL: func.func @conv_grouped
// WHOLE-NEXT: %[[Y:.*]] = attn.causal_conv1d %arg0, %arg1, %arg2 {groups = 2 : i64, padding = 1 : i64}
// WHOLE-NEXT: return %[[Y]]
// CHECK: %[[PADDED:.*]] = tensor.pad %arg0 low[0, 1, 0] high[0, 0, 0]
// CHECK: %[[B0:.*]] = tensor.extract_slice %arg2[0] [16] [1]
// CHECK: %[[TAP0:.*]] = tensor.extract_slice %[[PADDED]][0, 0, 0] [%{{.*}}, %{{.*}}, 16] [1, 1, 1]
// CHECK: %[[TAP1:.*]] = tensor.extract_slice %[[PADDED]][0, 1, 0] [%{{.*}}, %{{.*}}, 16] [1, 1, 1]
// CHECK: %[[TAPS:.*]] = tensor.concat dim(2) %[[TAP0]], %[[TAP1]]
// CHECK: %[[BLOCK:.*]] = tensor.extract_slice %arg1[0, 0, 0] [16, 16, 2] [1, 1, 1]
// CHECK: %[[BYTAP:.*]] = linalg.transpose ins(%[[BLOCK]] : tensor<16x16x2xf32>) outs(%{{.*}} : tensor<16x2x16xf32>) permutation = [0, 2, 1]
// CHECK: %[[W0:.*]] = tensor.collapse_shape %[[BYTAP]] {{\[}}[0], [1, 2]] : tensor<16x2x16xf32> into tensor<16x32xf32>
// CHECK: attn.fused_projection %[[TAPS]], %[[W0]], %[[B0]] outs
// CHECK: tensor.extract_slice %arg2[16] [16] [1]
// CHECK: attn.fused_projection
// CHECK: %[[Y:.*]] = tensor.concat dim(2) %{{.*}}, %{{.*}} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x32xf32>
// CHECK: return %[[Y]]
// CHECK-NOT: attn.causal_conv1d
func.func @conv_grouped(%x: tensor<?x?x32xf32>, %w: tensor<32x16x2xf32>,
                        %b: tensor<32xf32>) -> tensor<?x?x32xf32> {
  %y = attn.causal_conv1d %x, %w, %b {groups = 2 : i64, padding = 1 : i64}
      : (tensor<?x?x32xf32>, tensor<32x16x2xf32>, tensor<32xf32>)
      -> tensor<?x?x32xf32>
  return %y : tensor<?x?x32xf32>
}

// -----

// The gradients of a projection are tiled GEMMs: dx = dy W is a projection
// of dy by W^T that reads W as stored (transposed_weight; no transposed copy
// here), dW = dy^T x and db = dy^T 1 are fused_weight_grad ops over
// the tokens (batch and sequence collapsed). A weight two projections share
// (the add of their gradients) accumulates into one op.
// CHECK-LABEL: func.func @project_grad
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NOT: linalg.transpose
// CHECK: %[[DXH:.*]] = attn.fused_projection %arg2, %arg1 outs(%{{.*}}) {{.*}}head_dim = 16 : i64, transposed_weight} : (tensor<?x?x8xf32>, tensor<8x16xf32>, tensor<?x?x1x16xf32>) -> tensor<?x?x1x16xf32>
// CHECK: %[[DX:.*]] = tensor.collapse_shape %[[DXH]] {{\[}}[0], [1], [2, 3]]
// CHECK: %[[DY:.*]] = tensor.collapse_shape %arg2 {{\[}}[0, 1], [2]] : tensor<?x?x8xf32> into tensor<?x8xf32>
// CHECK: %[[X:.*]] = tensor.collapse_shape %arg0 {{\[}}[0, 1], [2]] : tensor<?x?x16xf32> into tensor<?x16xf32>
// CHECK: %[[Z:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<8x16xf32>)
// CHECK: %[[DW:.*]] = attn.fused_weight_grad %[[X]], %[[DY]] outs(%[[Z]]) {block_k = 64 : i64, block_m = 64 : i64, block_n = 64 : i64} : (tensor<?x16xf32>, tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
// CHECK: %[[ONES:.*]] = linalg.fill ins(%[[ONE]] : f32) outs(%{{.*}} : tensor<?x1xf32>)
// CHECK: %[[DB1:.*]] = attn.fused_weight_grad %[[ONES]], %[[DY]] outs(%{{.*}}) {{.*}} -> tensor<8x1xf32>
// CHECK: %[[DB:.*]] = tensor.collapse_shape %[[DB1]] {{\[}}[0, 1]] : tensor<8x1xf32> into tensor<8xf32>
// CHECK: %[[DY2:.*]] = tensor.collapse_shape %arg3
// CHECK: %[[SHARED:.*]] = attn.fused_weight_grad %[[X]], %[[DY2]] outs(%[[DW]])
// CHECK-NOT: arith.addf
// CHECK: return %[[DX]], %[[DW]], %[[DB]], %[[SHARED]]
// TILES-LABEL: func.func @project_grad
// TILES: attn.fused_projection {{.*}}{block_k = 8 : i64, block_n = 48 : i64, block_s = 16 : i64, head_dim = 16 : i64, transposed_weight}
// TILES: attn.fused_weight_grad {{.*}}{block_k = 8 : i64, block_m = 16 : i64, block_n = 48 : i64}
func.func @project_grad(%x: tensor<?x?x16xf32>, %w: tensor<8x16xf32>,
                        %dy: tensor<?x?x8xf32>, %dy2: tensor<?x?x8xf32>)
    -> (tensor<?x?x16xf32>, tensor<8x16xf32>, tensor<8xf32>,
        tensor<8x16xf32>) {
  %dx, %dw, %db = attn.project_grad %x, %w, %dy
      : (tensor<?x?x16xf32>, tensor<8x16xf32>, tensor<?x?x8xf32>)
      -> (tensor<?x?x16xf32>, tensor<8x16xf32>, tensor<8xf32>)
  %dx2, %dw2, %db2 = attn.project_grad %x, %w, %dy2
      : (tensor<?x?x16xf32>, tensor<8x16xf32>, tensor<?x?x8xf32>)
      -> (tensor<?x?x16xf32>, tensor<8x16xf32>, tensor<8xf32>)
  %shared = arith.addf %dw, %dw2 : tensor<8x16xf32>
  return %dx, %dw, %db, %shared : tensor<?x?x16xf32>, tensor<8x16xf32>,
      tensor<8xf32>, tensor<8x16xf32>
}

// -----

// A large weight too: its transpose is the CPU lowering's (in 64 x 64
// blocks, convert-attn-kernels-to-scf.mlir), not attn-fuse's.
// CHECK-LABEL: func.func @project_grad_large
// CHECK-NOT:  scf.for
// CHECK:      attn.fused_projection %arg2, %arg1 {{.*}}transposed_weight} : (tensor<?x?x128xf32>, tensor<128x256xf32>
func.func @project_grad_large(%x: tensor<?x?x256xf32>, %w: tensor<128x256xf32>,
                              %dy: tensor<?x?x128xf32>) -> tensor<?x?x256xf32> {
  %dx, %dw, %db = attn.project_grad %x, %w, %dy
      : (tensor<?x?x256xf32>, tensor<128x256xf32>, tensor<?x?x128xf32>)
      -> (tensor<?x?x256xf32>, tensor<128x256xf32>, tensor<128xf32>)
  return %dx : tensor<?x?x256xf32>
}
