//===- AttnDecodeOps.td - KV cache and decode-step ops -----*- tablegen -*-===//
//
// The KV cache and the per-sequence decode state as values: layer ops that
// take them as operands and return the updated ones, and the primitives the
// layer ops decompose into. Caches are plain tensors:
//
//  * contiguous: `[batch, capacity, kv_heads, head_dim]`, token `j` of
//    sequence `b` at row `[b, j]`;
//  * paged: `[num_pages, page_size, kv_heads, head_dim]` with a block table
//    `[batch, pages_per_sequence]` (i32 or i64): token `j` of sequence `b` at
//    row `[block_table[b, j / page_size], j % page_size]`; the capacity of a
//    sequence is `pages_per_sequence * page_size`.
//
// `positions [batch]` counts the tokens each sequence already cached: the new
// tokens of sequence `b` sit at positions `positions[b] + t`. Optional
// `lengths [batch]` says how many of the `T` new tokens are real (prompts of
// different lengths padded to `T`); the others are neither cached nor folded
// into a state, and their outputs are unspecified.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNFUSE_DIALECT_ATTN_IR_ATTNDECODEOPS_TD
#define ATTNFUSE_DIALECT_ATTN_IR_ATTNDECODEOPS_TD

//===----------------------------------------------------------------------===//
// Decode-step layer ops
//===----------------------------------------------------------------------===//

def Attn_QKVDecodeOp : Attn_Op<"qkv_decode",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "projection-sharing attention layer over a KV cache";
  let description = [{
    `attn.qkv_attention` (causal) for `T` new tokens per sequence that attend
    to everything their sequence cached before, with the cache as an operand
    and the updated cache as a result. `T = 1` is a decode step; a prompt
    with `positions = 0` is the prefill that fills the cache; anything else
    is a chunked prefill. The new tokens' outputs equal the rows of
    `attn.qkv_attention` over the whole sequence.

    What the cache holds per token and KV head:

    | mode          | `cache(...)`                 | content               |
    |---------------|------------------------------|-----------------------|
    | `none`, `qk`  | `cache(%k, %v)`              | key and value         |
    | `kv`, `qkv`   | `cache(%kv)`: ONE tensor     | the shared projection |

    Keys are cached UN-rotated; with `rope`, the scores rotate the cached
    keys by their positions when they are read, so for `kv` one tensor
    serves as the RoPE key and the un-rotated value (half the cache of
    `none`).

    `positions`, `lengths` and `block_table` follow the conventions of the
    decode ops (see `AttnDecodeOps.td`): contiguous caches are
    `[batch, capacity, num_kv_heads, head_dim]`, paged ones
    `[num_pages, page_size, num_kv_heads, head_dim]` with a block table.
    Writing past a sequence's capacity is a runtime error.

    Example (one K=V decode step with GQA-4 and RoPE, paged cache):

    ```mlir
    %y, %kv2 = attn.qkv_decode <kv> %x wq(%wq) wk(%wk) wo(%wo)
        cache(%kv) positions(%pos) block_table(%bt)
        {num_heads = 16 : i64, num_kv_heads = 4 : i64, head_dim = 64 : i64,
         rope = #attn.rope<theta = 10000.0>}
        : (tensor<8x1x1024xbf16>, tensor<1024x1024xbf16>,
           tensor<256x1024xbf16>, tensor<1024x1024xbf16>,
           tensor<2048x16x4x64xbf16>, tensor<8xi32>, tensor<8x256xi32>)
        -> (tensor<8x1x1024xbf16>, tensor<2048x16x4x64xbf16>)
    ```

    Semantics: docs/semantics.md#attnqkv_decode
  }];

  let arguments = (ins
    Attn_SharingModeAttr:$sharing,
    Attn_FloatTensor:$input,
    Optional<Attn_FloatTensor>:$wq,
    Attn_FloatTensor:$wk,
    Optional<Attn_FloatTensor>:$wv,
    Attn_FloatTensor:$wo,
    Optional<Attn_FloatTensor>:$bq,
    Optional<Attn_FloatTensor>:$bk,
    Optional<Attn_FloatTensor>:$bv,
    Optional<Attn_FloatTensor>:$bo,
    Attn_FloatTensor:$key_cache,
    Optional<Attn_FloatTensor>:$value_cache,
    Attn_IntTensor:$positions,
    Optional<Attn_IntTensor>:$lengths,
    Optional<Attn_IntTensor>:$block_table,
    Attn_PositiveI64Attr:$num_heads,
    Attn_PositiveI64Attr:$num_kv_heads,
    Attn_PositiveI64Attr:$head_dim,
    OptionalAttr<I64Attr>:$window,
    OptionalAttr<Attn_RopeAttr>:$rope,
    OptionalAttr<F64Attr>:$scale
  );
  let results = (outs Attn_FloatTensor:$result,
                      Attn_FloatTensor:$key_cache_out,
                      Optional<Attn_FloatTensor>:$value_cache_out);

  let assemblyFormat = [{
    $sharing $input
    (`wq` `(` $wq^ `)`)? `wk` `(` $wk `)` (`wv` `(` $wv^ `)`)? `wo` `(` $wo `)`
    (`bq` `(` $bq^ `)`)? (`bk` `(` $bk^ `)`)? (`bv` `(` $bv^ `)`)?
    (`bo` `(` $bo^ `)`)?
    `cache` `(` $key_cache (`,` $value_cache^)? `)`
    `positions` `(` $positions `)` (`lengths` `(` $lengths^ `)`)?
    (`block_table` `(` $block_table^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];

  let hasVerifier = 1;
  let hasCanonicalizer = 1;

  let extraClassDeclaration = [{
    int64_t getGroupSize() { return getNumHeads() / getNumKvHeads(); }
    bool sharesKeyValue() {
      return getSharing() == SharingMode::kv ||
             getSharing() == SharingMode::qkv;
    }
    bool sharesQueryKey() {
      return getSharing() == SharingMode::qk ||
             getSharing() == SharingMode::qkv;
    }
  }];
}

def Attn_CCADecodeOp : Attn_Op<"cca_decode",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "compressed convolutional attention layer over a KV cache";
  let description = [{
    `attn.cca` (causal) for `T` new tokens per sequence, with the decode
    state as operands and the updated state as results:

    * `cache(%k, %v)`: the final post-RoPE keys and the value-shifted values,
      `[..., num_kv_heads, head_dim]` each (contiguous or paged, see
      `AttnDecodeOps.td`);
    * `conv_state [batch, P, C]`: the last `P = (k0 - 1) + (k1 - 1)`
      pre-convolution vectors `u = concat(qr, kr)`, oldest first (zeros
      before the first token: the prefill's padding); the new tokens are
      convolved over `[conv_state | u]`, and the state keeps the last `P`;
    * `shift_state [batch, 1, num_kv_heads * head_dim / 2]` (exactly with
      `value_shift`): `x_{t-1} Wv_prev^T` of the last cached token (zeros
      before the first).

    `T = 1` is a decode step; a prompt with `positions = 0` and zero states
    is the prefill that fills cache and states. The new tokens' outputs
    equal the rows of `attn.cca` over the whole sequence.

    Example (one ZAYA1-shaped CCGQA decode step):

    ```mlir
    %y, %k2, %v2, %c2, %s2 = attn.cca_decode %x wq(%wq) wk(%wk) wv(%wvc)
        wv_prev(%wvp) conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp)
        wo(%wo) cache(%k, %v) conv_state(%c) shift_state(%s) positions(%pos)
        {num_heads = 8 : i64, num_kv_heads = 2 : i64, head_dim = 128 : i64,
         conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift,
         temperature = #attn.temperature<clamped>,
         rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
        : (tensor<4x1x2048xbf16>, tensor<1024x2048xbf16>,
           tensor<256x2048xbf16>, tensor<128x2048xbf16>,
           tensor<128x2048xbf16>, tensor<1280x1x2xbf16>, tensor<1280xbf16>,
           tensor<1280x128x2xbf16>, tensor<1280xbf16>, tensor<2xbf16>,
           tensor<2048x1024xbf16>, tensor<4x8192x2x128xbf16>,
           tensor<4x8192x2x128xbf16>, tensor<4x2x1280xbf16>,
           tensor<4x1x128xbf16>, tensor<4xi32>)
        -> (tensor<4x1x2048xbf16>, tensor<4x8192x2x128xbf16>,
            tensor<4x8192x2x128xbf16>, tensor<4x2x1280xbf16>,
            tensor<4x1x128xbf16>)
    ```

    Semantics: docs/semantics.md#attncca_decode
  }];

  let arguments = (ins
    Attn_FloatTensor:$input,
    Attn_FloatTensor:$wq,
    Attn_FloatTensor:$wk,
    Attn_FloatTensor:$wv,
    Optional<Attn_FloatTensor>:$wv_prev,
    Attn_FloatTensor:$conv_dw_weight,
    Attn_FloatTensor:$conv_dw_bias,
    Attn_FloatTensor:$conv_g_weight,
    Attn_FloatTensor:$conv_g_bias,
    Attn_FloatTensor:$temp,
    Attn_FloatTensor:$wo,
    Attn_FloatTensor:$key_cache,
    Attn_FloatTensor:$value_cache,
    Attn_FloatTensor:$conv_state,
    Optional<Attn_FloatTensor>:$shift_state,
    Attn_IntTensor:$positions,
    Optional<Attn_IntTensor>:$lengths,
    Optional<Attn_IntTensor>:$block_table,
    Attn_PositiveI64Attr:$num_heads,
    Attn_PositiveI64Attr:$num_kv_heads,
    Attn_PositiveI64Attr:$head_dim,
    DenseI64ArrayAttr:$conv_kernel_sizes,
    UnitAttr:$qk_mean,
    UnitAttr:$value_shift,
    DefaultValuedAttr<Attn_TemperatureModeAttr,
                      "TemperatureMode::raw">:$temperature,
    DefaultValuedAttr<F64Attr, "1e-12">:$eps,
    OptionalAttr<I64Attr>:$window,
    OptionalAttr<Attn_RopeAttr>:$rope
  );
  let results = (outs Attn_FloatTensor:$result,
                      Attn_FloatTensor:$key_cache_out,
                      Attn_FloatTensor:$value_cache_out,
                      Attn_FloatTensor:$conv_state_out,
                      Optional<Attn_FloatTensor>:$shift_state_out);

  let assemblyFormat = [{
    $input `wq` `(` $wq `)` `wk` `(` $wk `)` `wv` `(` $wv `)`
    (`wv_prev` `(` $wv_prev^ `)`)?
    `conv_dw` `(` $conv_dw_weight `,` $conv_dw_bias `)`
    `conv_g` `(` $conv_g_weight `,` $conv_g_bias `)`
    `temp` `(` $temp `)` `wo` `(` $wo `)`
    `cache` `(` $key_cache `,` $value_cache `)`
    `conv_state` `(` $conv_state `)` (`shift_state` `(` $shift_state^ `)`)?
    `positions` `(` $positions `)` (`lengths` `(` $lengths^ `)`)?
    (`block_table` `(` $block_table^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];

  let hasVerifier = 1;
  let hasCanonicalizer = 1;

  let extraClassDeclaration = [{
    int64_t getGroupSize() { return getNumHeads() / getNumKvHeads(); }
    int64_t getQueryLatentDim() { return getNumHeads() * getHeadDim(); }
    int64_t getKeyLatentDim() { return getNumKvHeads() * getHeadDim(); }
    int64_t getConvChannels() {
      return getQueryLatentDim() + getKeyLatentDim();
    }
    int64_t getConvPadding() {
      return getConvKernelSizes()[0] - 1 + getConvKernelSizes()[1] - 1;
    }
  }];
}

//===----------------------------------------------------------------------===//
// Cache and state primitives
//===----------------------------------------------------------------------===//

def Attn_CacheUpdateOp : Attn_Op<"cache_update",
    [Pure, AttrSizedOperandSegments, AllTypesMatch<["cache", "result"]>]> {
  let summary = "write new tokens' rows into a KV cache";
  let description = [{
    Returns `cache` with row `new[b, t]` (`[batch, T, kv_heads, head_dim]`)
    written at position `positions[b] + t` of sequence `b`, for
    `t < lengths[b]` (all `T` without `lengths`; lengths are clamped to
    `[0, T]`). The cache is contiguous,
    or paged with a `block_table` (see `AttnDecodeOps.td`). Writing past a
    sequence's capacity is a runtime error.

    ```mlir
    %c2 = attn.cache_update %c, %k positions(%pos) block_table(%bt)
        : (tensor<512x16x4x64xf32>, tensor<8x1x4x64xf32>, tensor<8xi32>,
           tensor<8x64xi32>) -> tensor<512x16x4x64xf32>
    ```

    Semantics: docs/semantics.md#attncache_update
  }];
  let arguments = (ins Attn_FloatTensor:$cache, Attn_FloatTensor:$new_rows,
                       Attn_IntTensor:$positions,
                       Optional<Attn_IntTensor>:$lengths,
                       Optional<Attn_IntTensor>:$block_table);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $cache `,` $new_rows `positions` `(` $positions `)`
    (`lengths` `(` $lengths^ `)`)? (`block_table` `(` $block_table^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Attn_CacheGatherOp : Attn_Op<"cache_gather", [Pure]> {
  let summary = "the per-sequence view of a paged KV cache";
  let description = [{
    `result[b, j] = cache[block_table[b, j / page_size], j % page_size]`:
    the `[batch, pages_per_sequence * page_size, kv_heads, head_dim]`
    contiguous view of a paged cache, row `j` holding position `j`.

    ```mlir
    %view = attn.cache_gather %c block_table(%bt)
        : (tensor<512x16x4x64xf32>, tensor<8x64xi32>) -> tensor<8x1024x4x64xf32>
    ```

    Semantics: docs/semantics.md#attncache_gather
  }];
  let arguments = (ins Attn_FloatTensor:$cache,
                       Attn_IntTensor:$block_table);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $cache `block_table` `(` $block_table `)` attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Attn_StateUpdateOp : Attn_Op<"state_update",
    [Pure, AllTypesMatch<["state", "result"]>]> {
  let summary = "keep the last rows of a per-sequence state";
  let description = [{
    `result[b]` is the last `P` rows of `concat(state[b], new[b, 0 :
    lengths[b]])` (all `T` rows of `new` without `lengths`; lengths are
    clamped to `[0, T]`), with `state
    [batch, P, C]` and `new [batch, T, C]`: the rolling window of a causal
    convolution's inputs, or (`P = 1`) the previous token.

    ```mlir
    %s2 = attn.state_update %s, %u lengths(%len)
        : (tensor<4x2x1280xf32>, tensor<4x?x1280xf32>, tensor<4xi32>)
        -> tensor<4x2x1280xf32>
    ```

    Semantics: docs/semantics.md#attnstate_update
  }];
  let arguments = (ins Attn_FloatTensor:$state, Attn_FloatTensor:$new_rows,
                       Optional<Attn_IntTensor>:$lengths);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $state `,` $new_rows (`lengths` `(` $lengths^ `)`)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // ATTNFUSE_DIALECT_ATTN_IR_ATTNDECODEOPS_TD
