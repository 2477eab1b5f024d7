//===- AttnKernelOps.td - fused attn kernel operations -----*- tablegen -*-===//
//
// The fused kernel ops that `attn-fuse` forms from primitives. Each one is a
// unit every target lowers to one kernel, and carries the tiling decisions
// that all targets share. Their semantics are those of the primitives they
// replace; the tile sizes never change the result.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNFUSE_DIALECT_ATTN_IR_ATTNKERNELOPS_TD
#define ATTNFUSE_DIALECT_ATTN_IR_ATTNKERNELOPS_TD

def Attn_FusedProjectionOp : Attn_Op<"fused_projection",
    [Pure, AttrSizedOperandSegments, DestinationStyleOpInterface,
     DeclareOpInterfaceMethods<TilingInterface,
         ["getIterationDomain", "getLoopIteratorTypes",
          "getTiledImplementation", "getResultTilePosition"]>]> {
  let summary = "projection GEMM with bias, head split and RoPE epilogue";
  let description = [{
    `result[b, s, h, :] = rope((input[b, s] W^T + bias)[h * d : (h + 1) * d])`:
    one `attn.project` of `[batch, seq, E]` by `weight [H * d, E]`, split into
    `H` heads of `head_dim` dims and, with `rope`, rotated at position `s`.
    The kernel computes `block_s x block_n` output tiles over a reduction in
    steps of `block_k`, and applies bias and rotation to each tile before it
    is stored (a rotation pair `(i, i + r/2)` lies in one head, so `block_n`
    is a multiple of `head_dim`).

    With `token_offset(%t)` the rows are tokens `t .. t + seq - 1` of their
    sequences: row `s` is rotated at position `t + s` (tiling produces it;
    without it `t = 0`).

    With `transposed_weight` the weight operand is `W^T`, `[E, H * d]`, as
    stored: the input gradient `dx = dy W` of a projection is this op on
    `dy` with the projection's own `W` (attn-fuse forms it so), and no
    transposed copy of `W` is written first where the target reads either
    layout (sm_90a); the CPU lowering transposes it in blocks.

    The op is destination-style (`outs` is the result's initial value,
    fully overwritten) and implements `TilingInterface` over
    `(batch, seq, heads, head_dim)`, all parallel (the reduction over `E`
    stays in the op): a tile is an `attn.fused_projection` of its tokens by
    the weight rows of its features. A tile takes whole heads, or a part of
    one head without `rope`.

    ```mlir
    %q = attn.fused_projection %x, %wq outs(%init)
        {head_dim = 64 : i64, rope = #attn.rope<theta = 10000.0>,
         block_s = 64 : i64, block_n = 64 : i64, block_k = 64 : i64}
        : (tensor<?x?x1024xf32>, tensor<1024x1024xf32>, tensor<?x?x16x64xf32>)
        -> tensor<?x?x16x64xf32>
    ```

    Semantics: docs/semantics.md#attnfused_projection
  }];
  let arguments = (ins Attn_FloatTensor:$input, Attn_FloatTensor:$weight,
                       Optional<Attn_FloatTensor>:$bias,
                       Optional<Index>:$token_offset,
                       Attn_FloatTensor:$init,
                       Attn_PositiveI64Attr:$head_dim,
                       OptionalAttr<Attn_RopeAttr>:$rope,
                       Attn_PositiveI64Attr:$block_s,
                       Attn_PositiveI64Attr:$block_n,
                       Attn_PositiveI64Attr:$block_k,
                       UnitAttr:$transposed_weight);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)?
    (`token_offset` `(` $token_offset^ `)`)? `outs` `(` $init `)` attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      return getInitMutable();
    }
  }];
}

def Attn_FusedWeightGradOp : Attn_Op<"fused_weight_grad",
    [Pure, DestinationStyleOpInterface,
     DeclareOpInterfaceMethods<TilingInterface,
         ["getIterationDomain", "getLoopIteratorTypes",
          "getTiledImplementation", "getResultTilePosition"]>]> {
  let summary = "tiled weight-gradient GEMM: init + dy^T x over the tokens";
  let description = [{
    `result[o, i] = init[o, i] + sum_t result_grad[t, o] input[t, i]`: the
    weight gradient `dW = dy^T x` of a projection `y = x W^T` whose input
    `[tokens, in]` and cotangent `[tokens, out]` have their batch and
    sequence dimensions collapsed into one token dimension. The sum starts
    from `init`, so the gradients of a weight shared by several projections
    accumulate into one result (a zero `init` for a single one).

    The kernel computes `block_m x block_n` result tiles (output features by
    input features); each sums the products of `block_k` tokens at a time in
    an f32 accumulator (for 16-bit inputs too) and adds it to its `init`
    tile once, at the end.

    The op is destination-style and implements `TilingInterface` over
    `(out, in)`, both parallel (the reduction over tokens stays in the op):
    a tile is an `attn.fused_weight_grad` of the cotangent's columns of its
    output features and the input's columns of its input features.

    ```mlir
    %dw = attn.fused_weight_grad %x, %dy outs(%zero)
        {block_m = 64 : i64, block_n = 64 : i64, block_k = 64 : i64}
        : (tensor<?x1024xf32>, tensor<?x256xf32>, tensor<256x1024xf32>)
        -> tensor<256x1024xf32>
    ```

    Semantics: docs/semantics.md#attnfused_weight_grad
  }];
  let arguments = (ins Attn_FloatTensor:$input, Attn_FloatTensor:$result_grad,
                       Attn_FloatTensor:$init,
                       Attn_PositiveI64Attr:$block_m,
                       Attn_PositiveI64Attr:$block_n,
                       Attn_PositiveI64Attr:$block_k);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $result_grad `outs` `(` $init `)` attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      return getInitMutable();
    }
  }];
}

def Attn_CCAPrologueOp : Attn_Op<"cca_prologue",
    [Pure, AttrSizedOperandSegments, DestinationStyleOpInterface,
     DeclareOpInterfaceMethods<TilingInterface,
         ["getIterationDomain", "getLoopIteratorTypes",
          "getTiledImplementation", "getResultTilePosition"]>]> {
  let summary = "fused CCA prologue: projections, convolutions, norm, RoPE";
  let description = [{
    Steps 1 to 6 of `attn.cca` in one kernel: the down-projections, both
    causal convolutions, the QK-mean residual, the L2 norm (`norm`, `eps`
    as in `attn.cca`) with temperature, the value shift and RoPE, writing
    the attention inputs once:
    `query [batch, seq, num_heads, head_dim]`, `key` and `value`
    `[batch, seq, num_kv_heads, head_dim]`.

    The kernel walks the sequence in blocks of `block_s` tokens. A block
    recomputes the projections of the `P = (k0 - 1) + (k1 - 1)` tokens before
    it (the convolution halo) and of the one token before it (the value
    shift), so blocks are independent; the first block sees zero padding
    instead.

    With `padding_mask [batch, seq]` (integers), tokens whose mask is zero
    count as zero rows of `x`: their projections, their convolution inputs
    and their delayed values are zero, as `attn.cca` with the mask defines.

    With `token_offset(%t)` the results are tokens `t .. t + R - 1` of their
    sequences (`R` result tokens) and the input (and mask) rows are tokens
    `t - H .. t + R - 1`: the `H = seq - R` rows before the results are their
    history. Row `i` is rotated at position `t + i`; tokens the convolutions
    or the value shift reach before the history count as zero rows, which
    is exact when `H` covers the halo or `t - H = 0` (a tile of the sequence
    start). Tiling produces it; without it `t = 0` and `R = seq`.

    * `key_rope` rotates the key tiles on load (the scores read
      `rope(key)` at positions `0 .. T - 1`) and returns the gradient of
      the un-rotated key, `rope^T` applied to each dK tile before it is
      stored.
    * Without `value` (K=V), the key tensor is also the value: one tile is
      loaded for both roles (rotated for the scores under `key_rope`) and
      the op has two results, `(dq, dkv)`, where each key tile's gradient
      `dkv_j = rope^T(dk_j) + dv_j` is summed in the kernel from both roles
      and stored once. Its `outs` are the two inits.
    * `bias(%b)` (`[S, T]` or `[Hq, S, T]`, as `attn.sdpa`'s) is added to
      the scaled scores. With `accumulate(%db)` (`[Hq, S, T]`, f32, or f64
      for f64 operands; after `outs`) the op has one more result, `%db + dS` summed over the
      batch: each visited tile pair adds its `dS` into `%db`, so the
      bias gradient is the only `S x T` tensor (an `[S, T]` bias's gradient
      is its sum over the heads). That init is read, not overwritten, and
      the batch becomes a reduction dimension of the iteration space.

    The op is destination-style (`outs` are the initial values of the
    results, fully overwritten) and implements `TilingInterface` over
    `(batch, seq)`, both parallel: a tile is an `attn.cca_prologue` of its
    tokens and their halo of `max(P, 1)` earlier input rows (fewer at the
    start of the sequence).

    ```mlir
    %q, %k, %v = attn.cca_prologue %x wq(%wq) wk(%wk) wv(%wvc) wv_prev(%wvp)
        conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp)
        outs(%q_init, %k_init, %v_init)
        {num_heads = 8 : i64, num_kv_heads = 2 : i64, head_dim = 128 : i64,
         conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift,
         temperature = #attn.temperature<clamped>,
         rope = #attn.rope<theta = 10000.0, fraction = 0.5>, block_s = 64 : i64}
        : (..., tensor<?x?x8x128xf32>, tensor<?x?x2x128xf32>,
           tensor<?x?x2x128xf32>)
        -> (tensor<?x?x8x128xf32>, tensor<?x?x2x128xf32>,
            tensor<?x?x2x128xf32>)
    ```

    Semantics: docs/semantics.md#attncca_prologue
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
    Optional<Attn_MaskTensor>:$padding_mask,
    Optional<Index>:$token_offset,
    Variadic<Attn_FloatTensor>:$inits,
    Attn_PositiveI64Attr:$num_heads,
    Attn_PositiveI64Attr:$num_kv_heads,
    Attn_PositiveI64Attr:$head_dim,
    DenseI64ArrayAttr:$conv_kernel_sizes,
    UnitAttr:$qk_mean,
    UnitAttr:$value_shift,
    DefaultValuedAttr<Attn_TemperatureModeAttr,
                      "TemperatureMode::raw">:$temperature,
    DefaultValuedAttr<F64Attr, "1e-12">:$eps,
    DefaultValuedAttr<Attn_NormModeAttr, "NormMode::sqrt_eps">:$norm,
    OptionalAttr<Attn_RopeAttr>:$rope,
    Attn_PositiveI64Attr:$block_s
  );
  let results = (outs Attn_FloatTensor:$query, Attn_FloatTensor:$key,
                      Attn_FloatTensor:$value);
  let assemblyFormat = [{
    $input `wq` `(` $wq `)` `wk` `(` $wk `)` `wv` `(` $wv `)`
    (`wv_prev` `(` $wv_prev^ `)`)?
    `conv_dw` `(` $conv_dw_weight `,` $conv_dw_bias `)`
    `conv_g` `(` $conv_g_weight `,` $conv_g_bias `)`
    `temp` `(` $temp `)`
    (`padding_mask` `(` $padding_mask^ `)`)?
    (`token_offset` `(` $token_offset^ `)`)? `outs` `(` $inits `)`
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
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
    /// The earlier input rows a token's results read: the convolutions'
    /// `P`, at least 1 with the value shift.
    int64_t getHalo() {
      return std::max<int64_t>(getConvPadding(), getValueShift() ? 1 : 0);
    }
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      return getInitsMutable();
    }
  }];
}

def Attn_FlashAttentionOp : Attn_Op<"flash_attention",
    [Pure, AttrSizedOperandSegments, DestinationStyleOpInterface,
     DeclareOpInterfaceMethods<TilingInterface,
         ["getIterationDomain", "getLoopIteratorTypes",
          "getTiledImplementation", "getResultTilePosition"]>]> {
  let summary = "tiled attention with online softmax";
  let description = [{
    The result of `attn.sdpa` over `query [batch, S, Hq, d]`,
    `key [batch, T, Hk, d]` and `value [batch, T, Hk, dv]`, computed
    FlashAttention-style: each `block_q` query rows of one head keep an f32
    running maximum, sum and output while `block_kv` keys at a time stream
    by, so the `S x T` score matrix never exists.

    * Without `value`, the key tensor is also the value (K=V): one tile is
      loaded for both `Q K^T` and `P V`.
    * `key_rope` rotates key tiles on load for the scores only (values stay
      un-rotated, the K=V cache with RoPE); `query_rope` rotates the query
      tile on load.
    * Causal: key tiles entirely after a query tile are skipped, and only
      tiles crossing the diagonal are masked; `window = w` likewise skips
      key tiles entirely outside the window.
    * GQA: the `Hq / Hk` query heads of a group are served from one key and
      value tile.
    * `key_mask [batch, T]` (integers): keys whose mask is zero are masked,
      as in `attn.sdpa` (the padding of a batch).
    * `query_rows(%offset, %count)`: the op computes query rows
      `offset .. offset + S - 1` of an attention with `count` query rows
      (the positions and the query rotation are those of the whole
      attention). Tiling produces it; without it the op is the whole
      attention (`offset = 0`, `count = S`).

    With a second init `[batch, S, Hq]` f32, the op also returns the
    log-sum-exp of each query row's scores (`-inf` for a row without a
    visible key): the second result of `attn.sdpa`, which the backward reads.

    The op is destination-style (`outs` are the results' initial values,
    fully overwritten) and implements `TilingInterface` over
    `(batch, kv_heads, S)`, all parallel: a tile of `g` KV heads and `n`
    query rows is an `attn.flash_attention` on the matching `[.., n,
    g * G, ..]` slices with `query_rows` set, reading every key of its
    batch and heads.

    ```mlir
    // K=V with GQA-4 and RoPE on load.
    %o = attn.flash_attention %q, %kv outs(%init)
        {block_q = 64 : i64, block_kv = 64 : i64, causal,
         key_rope = #attn.rope<theta = 10000.0>}
        : (tensor<?x?x16x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x16x64xf32>)
        -> tensor<?x?x16x64xf32>
    ```

    Semantics: docs/semantics.md#attnflash_attention
  }];
  let arguments = (ins Attn_FloatTensor:$query, Attn_FloatTensor:$key,
                       Optional<Attn_FloatTensor>:$value,
                       Optional<Attn_FloatTensor>:$bias,
                       Optional<Attn_MaskTensor>:$key_mask,
                       Optional<Index>:$query_row_offset,
                       Optional<Index>:$query_row_count,
                       Attn_FloatTensor:$init,
                       Optional<RankedTensorOf<[F32]>>:$lse_init,
                       UnitAttr:$causal,
                       OptionalAttr<I64Attr>:$window,
                       OptionalAttr<F64Attr>:$scale,
                       OptionalAttr<Attn_RopeAttr>:$query_rope,
                       OptionalAttr<Attn_RopeAttr>:$key_rope,
                       Attn_PositiveI64Attr:$block_q,
                       Attn_PositiveI64Attr:$block_kv);
  let results = (outs Attn_FloatTensor:$result, Optional<RankedTensorOf<[F32]>>:$lse);
  let assemblyFormat = [{
    $query `,` $key (`,` $value^)? (`bias` `(` $bias^ `)`)?
    (`key_mask` `(` $key_mask^ `)`)?
    (`query_rows` `(` $query_row_offset^ `,` $query_row_count `)`)?
    `outs` `(` $init (`,` $lse_init^)? `)` attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The tensor read for `P V`: the value, or the key for K=V.
    ::mlir::Value getValueOrKey() {
      return getValue() ? getValue() : getKey();
    }
    /// The inits are consecutive operands: the output's, then the
    /// log-sum-exp's when present.
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      unsigned first = getODSOperandIndexAndLength(7).first;
      return ::mlir::MutableOperandRange(getOperation(), first,
                                         getLseInit() ? 2 : 1);
    }
  }];
}

def Attn_FlashAttentionGradOp : Attn_Op<"flash_attention_grad",
    [Pure, AttrSizedOperandSegments, DestinationStyleOpInterface,
     DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>,
     DeclareOpInterfaceMethods<TilingInterface,
         ["getIterationDomain", "getLoopIteratorTypes",
          "getTiledImplementation", "getResultTilePosition"]>]> {
  let summary = "tiled attention backward (FlashAttention-2) without S x T";
  let description = [{
    The results of `attn.sdpa_grad`: the gradients
    `(dq, dk, dv)` of `o = attn.sdpa q, k, v` (same masks, bias and scale `s`)
    for the cotangent `do` of `o`, over `query [batch, S, Hq, d]`,
    `key [batch, T, Hk, d]`, `value [batch, T, Hk, dv]`, the forward's
    `output` and `output_grad` (both `[batch, S, Hq, dv]`), computed
    FlashAttention-2-style so that no `S x T` tensor exists:

    1. per `block_q` query rows: `D_i = sum_c do_ic o_ic` and the
       log-sum-exp `L_i` of the row's scores (an online maximum and sum
       over `block_kv` keys at a time);
    2. per `block_kv` keys, over the query tiles that see them, with
       `P_ij = exp(s_ij - L_i)`, `dP_ij = do_i . v_j` and
       `dS_ij = P_ij (dP_ij - D_i)` computed once per tile pair:
       `dk_j = s sum_i dS_ij q_i` and `dv_j = sum_i P_ij do_i`, summed over
       the `G = Hq / Hk` query heads of each KV head, and
       `dq_i += s dS_ij k_j` into f32 query tiles.

    With `lse(%l)` (`[batch, S, Hq]` f32, the forward's log-sum-exp) step
    1 reads `L` instead of computing it.

    `L`, `D` and the `dq` tiles take `O(S)` memory per KV head; arithmetic
    is in f32 for 16-bit inputs, rounded once when stored. A fully masked
    row gets zero gradients. `causal`, `window` and `key_mask [batch, T]` (integers) mask
    as in `attn.sdpa`.

    * `key_rope` rotates the key tiles on load (the scores read
      `rope(key)` at positions `0 .. T - 1`) and returns the gradient of
      the un-rotated key, `rope^T` applied to each dK tile before it is
      stored.
    * Without `value` (K=V), the key tensor is also the value: one tile is
      loaded for both roles (rotated for the scores under `key_rope`) and
      the op has two results, `(dq, dkv)`, where each key tile's gradient
      `dkv_j = rope^T(dk_j) + dv_j` is summed in the kernel from both roles
      and stored once. Its `outs` are the two inits.
    * `bias(%b)` (`[S, T]` or `[Hq, S, T]`, as `attn.sdpa`'s) is added to
      the scaled scores. With `accumulate(%db)` (`[Hq, S, T]`, f32, or f64
      for f64 operands; after `outs`) the op has one more result, `%db + dS` summed over the
      batch: each visited tile pair adds its `dS` into `%db`, so the
      bias gradient is the only `S x T` tensor (an `[S, T]` bias's gradient
      is its sum over the heads). That init is read, not overwritten, and
      the batch becomes a reduction dimension of the iteration space.

    The op is destination-style (`outs` are the initial values of the
    results, fully overwritten) and implements `TilingInterface` over
    `(batch, kv_heads)`, both parallel (the batch a reduction with
    `accumulate`): a tile of `g` KV heads is an
    `attn.flash_attention_grad` on the `[.., g * G, ..]` query-side slices
    and the `[.., g, ..]` key-side slices of its batch entries, over every
    query row and key.

    ```mlir
    %dq, %dk, %dv = attn.flash_attention_grad %q, %k, %v, %o, %do
        outs(%dq_init, %dk_init, %dv_init)
        {block_q = 64 : i64, block_kv = 64 : i64, causal}
        : (tensor<?x?x16x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>,
           tensor<?x?x16x64xf32>, tensor<?x?x16x64xf32>,
           tensor<?x?x16x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>)
        -> (tensor<?x?x16x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>)

    // K=V with RoPE on the keys: one gradient for the shared tensor.
    %dq, %dkv = attn.flash_attention_grad %q, %kv, %o, %do lse(%lse)
        outs(%dq_init, %dkv_init)
        {block_q = 64 : i64, block_kv = 64 : i64, causal,
         key_rope = #attn.rope<theta = 10000.0>}
        : (tensor<?x?x16x64xf32>, tensor<?x?x4x64xf32>,
           tensor<?x?x16x64xf32>, tensor<?x?x16x64xf32>, tensor<?x?x16xf32>,
           tensor<?x?x16x64xf32>, tensor<?x?x4x64xf32>)
        -> (tensor<?x?x16x64xf32>, tensor<?x?x4x64xf32>)

    // A per-head logit bias and its gradient, accumulated in f32.
    %dq, %dk, %dv, %db = attn.flash_attention_grad %q, %k, %v, %o, %do
        bias(%b) lse(%lse) outs(%dq_init, %dk_init, %dv_init)
        accumulate(%db_init) {block_q = 64 : i64, block_kv = 64 : i64}
        : (tensor<?x?x16x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>,
           tensor<?x?x16x64xf32>, tensor<?x?x16x64xf32>, tensor<16x?x?xf32>,
           tensor<?x?x16xf32>, tensor<?x?x16x64xf32>, tensor<?x?x4x64xf32>,
           tensor<?x?x4x64xf32>, tensor<16x?x?xf32>)
        -> (tensor<?x?x16x64xf32>, tensor<?x?x4x64xf32>,
            tensor<?x?x4x64xf32>, tensor<16x?x?xf32>)
    ```

    Semantics: docs/semantics.md#attnflash_attention_grad
  }];
  // The inits are consecutive operands.
  let arguments = (ins Attn_FloatTensor:$query, Attn_FloatTensor:$key,
                       Optional<Attn_FloatTensor>:$value,
                       Attn_FloatTensor:$output,
                       Attn_FloatTensor:$output_grad,
                       Optional<Attn_FloatTensor>:$bias,
                       Optional<Attn_MaskTensor>:$key_mask,
                       Optional<RankedTensorOf<[F32]>>:$lse,
                       Attn_FloatTensor:$query_grad_init,
                       Attn_FloatTensor:$key_grad_init,
                       Optional<Attn_FloatTensor>:$value_grad_init,
                       Optional<RankedTensorOf<[F32, F64]>>:$bias_grad_init,
                       UnitAttr:$causal,
                       OptionalAttr<I64Attr>:$window,
                       OptionalAttr<F64Attr>:$scale,
                       OptionalAttr<Attn_RopeAttr>:$key_rope,
                       Attn_PositiveI64Attr:$block_q,
                       Attn_PositiveI64Attr:$block_kv);
  // One result per init, in their order (dq, dk, [dv], [dbias]); the
  // verifier checks their types against the inits'.
  let results = (outs Variadic<AnyRankedTensor>:$results);
  // Four or five leading operands: without the value, K=V.
  let assemblyFormat = [{
    custom<AttentionGradOperands>($query, $key, $value, $output, $output_grad)
    (`bias` `(` $bias^ `)`)? (`key_mask` `(` $key_mask^ `)`)?
    (`lse` `(` $lse^ `)`)?
    `outs` `(` $query_grad_init `,` $key_grad_init (`,` $value_grad_init^)? `)`
    (`accumulate` `(` $bias_grad_init^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// K=V: the key is also the value, and its gradient is one result.
    bool isSharedKeyValue() { return !getValue(); }
    ::mlir::Value getQueryGrad() { return getResult(0); }
    ::mlir::Value getKeyGrad() { return getResult(1); }
    /// Null for K=V.
    ::mlir::Value getValueGrad() {
      return getValue() ? getResult(2) : ::mlir::Value();
    }
    /// Null without `accumulate`.
    ::mlir::Value getBiasGrad() {
      return getBiasGradInit() ? getResults().back() : ::mlir::Value();
    }
    ::mlir::Value getValueOrKey() {
      return getValue() ? getValue() : getKey();
    }
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      unsigned first = getODSOperandIndexAndLength(8).first;
      return ::mlir::MutableOperandRange(
          getOperation(), first,
          (getValue() ? 3 : 2) + (getBiasGradInit() ? 1 : 0));
    }
  }];
}

def Attn_FlashDecodeOp : Attn_Op<"flash_decode",
    [Pure, AttrSizedOperandSegments, DestinationStyleOpInterface,
     DeclareOpInterfaceMethods<TilingInterface,
         ["getIterationDomain", "getLoopIteratorTypes",
          "getTiledImplementation", "getResultTilePosition"]>]> {
  let summary = "one decode step: cache write and split-KV attention";
  let description = [{
    One generated token per sequence against a KV cache. For every batch
    entry `b` with `p = positions[b]` (the number of tokens already cached),
    the new key `key_new[b, 0]` (and `value_new[b, 0]`) is first written at
    cache position `p`; then query head `h` (KV head `h / G`, `G = Hq / Hk`)
    attends to the cached keys `j` in `[lo, p]`, `lo = 0`, or
    `max(0, p - window + 1)` with a window:

    `o[b, 0, h] = sum_j softmax_j(scale * rope(q, p) . rope(K_j, j)) V_j`.

    * Without `value_new` / `value_cache`, the key cache is also the value
      cache (K=V): the values are the un-rotated cached keys.
    * `query_rope` rotates the query at position `p`, `key_rope` the keys at
      their positions `j` as they are loaded (scores only).
    * Contiguous caches are `[B, S, Hk, d]` (capacity `S`). With
      `block_table [B, M]` they are paged, `[num_pages, page_size, Hk, d]`:
      token `j` of sequence `b` lives at
      `cache[block_table[b, j / page_size], j % page_size]` and the capacity
      is `M * page_size`.
    * The kernels stream the keys in tiles of `block_kv` rows, all `G` query
      heads of a group served by one read of each tile, split over
      `num_splits` independent ranges of the keys whose partial results a
      combine step merges (flash-decoding); `num_splits = 0` lets the
      lowering choose. Neither changes the result.

    Results: the output `[B, 1, Hq, dv]` and the updated cache(s).

    The op is destination-style: `outs(%init)` is the output's initial
    value (its contents are not read) and the caches are the initial values
    of the updated caches, so a cache is updated in place. It implements
    `TilingInterface` over `(batch, kv heads)`, both parallel: a tile is an
    `attn.flash_decode` of its sequences and KV heads on their query heads
    and cache slices. The sequences of a paged cache share its pages, so a
    tile of a paged cache takes the whole batch.

    ```mlir
    // K=V cache with GQA-4 and RoPE on load.
    %o, %kc = attn.flash_decode %q, %k outs(%init) cache(%kcache)
        positions(%pos)
        {block_kv = 64 : i64, query_rope = #attn.rope<theta = 10000.0>,
         key_rope = #attn.rope<theta = 10000.0>}
        : (tensor<?x1x16x64xbf16>, tensor<?x1x4x64xbf16>,
           tensor<?x1x16x64xbf16>, tensor<?x4096x4x64xbf16>, tensor<?xi32>)
          -> (tensor<?x1x16x64xbf16>, tensor<?x4096x4x64xbf16>)
    // Separate K and V in a paged cache.
    %o2, %kc2, %vc2 = attn.flash_decode %q, %k, %v outs(%init)
        cache(%kp, %vp) positions(%pos) block_table(%bt) {block_kv = 64 : i64}
        : (tensor<?x1x16x64xbf16>, tensor<?x1x4x64xbf16>,
           tensor<?x1x4x64xbf16>, tensor<?x1x16x64xbf16>,
           tensor<?x64x4x64xbf16>, tensor<?x64x4x64xbf16>, tensor<?xi32>,
           tensor<?x?xi32>)
          -> (tensor<?x1x16x64xbf16>, tensor<?x64x4x64xbf16>,
              tensor<?x64x4x64xbf16>)
    ```

    Semantics: docs/semantics.md#attnflash_decode
  }];
  // The inits (the output's, then the caches) are consecutive operands.
  let arguments = (ins Attn_FloatTensor:$query, Attn_FloatTensor:$key_new,
                       Optional<Attn_FloatTensor>:$value_new,
                       Attn_FloatTensor:$init,
                       Attn_FloatTensor:$key_cache,
                       Optional<Attn_FloatTensor>:$value_cache,
                       RankedTensorOf<[AnySignlessInteger]>:$positions,
                       Optional<RankedTensorOf<[AnySignlessInteger]>>:$block_table,
                       OptionalAttr<I64Attr>:$window,
                       OptionalAttr<F64Attr>:$scale,
                       OptionalAttr<Attn_RopeAttr>:$query_rope,
                       OptionalAttr<Attn_RopeAttr>:$key_rope,
                       Attn_PositiveI64Attr:$block_kv,
                       DefaultValuedAttr<ConfinedAttr<I64Attr, [IntNonNegative]>,
                                         "0">:$num_splits);
  let results = (outs Attn_FloatTensor:$result,
                      Attn_FloatTensor:$key_cache_out,
                      Optional<Attn_FloatTensor>:$value_cache_out);
  let assemblyFormat = [{
    $query `,` $key_new (`,` $value_new^)? `outs` `(` $init `)`
    `cache` `(` $key_cache (`,` $value_cache^)? `)`
    `positions` `(` $positions `)`
    (`block_table` `(` $block_table^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Whether one cache holds keys and values (K=V).
    bool isKeyValue() { return !getValueCache(); }
    /// The cache read for the values: the value cache, or the key cache.
    ::mlir::Value getValueOrKeyCache() {
      return getValueCache() ? getValueCache() : getKeyCache();
    }
    /// Whether the caches are paged through `block_table`.
    bool isPaged() { return static_cast<bool>(getBlockTable()); }
    /// The output's init, then the cache(s) the op updates in place.
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      unsigned first = getODSOperandIndexAndLength(3).first;
      return ::mlir::MutableOperandRange(getOperation(), first,
                                         isKeyValue() ? 2 : 3);
    }
  }];
}

def Attn_CCADecodePrologueOp : Attn_Op<"cca_decode_prologue",
    [Pure, AttrSizedOperandSegments, DestinationStyleOpInterface,
     DeclareOpInterfaceMethods<TilingInterface,
         ["getIterationDomain", "getLoopIteratorTypes",
          "getTiledImplementation", "getResultTilePosition"]>]> {
  let summary = "one CCA decode step: convolutions from the state, norm, RoPE";
  let description = [{
    Steps 2 to 6 of `attn.cca` for one new token per sequence, from the
    token's down-projections and the per-sequence decode state, returning
    the attention inputs and the updated state. For sequence `b` at absolute
    position `p = positions[b]` (used only by RoPE):

    * `u = concat(qr[b, 0], kr[b, 0])` (`C = Lq + Lk` channels, query heads
      then key heads) and the window `W = [conv_state[b] | u]` of `P + 1`
      rows, oldest first, `P = (k0 - 1) + (k1 - 1)`;
    * the depthwise convolution gives the `k1` rows the grouped convolution
      needs, `m_s = b_dw + sum_i w_dw[:, 0, i] * W[s - (k0 - 1) + i]` for
      `s = k0 - 1 .. P`, and the grouped convolution (one `d x d` mix per
      head and tap, tap 0 on the oldest row) plus `b_g` gives `c`;
    * with `qk_mean` the residual from `qr` and `kr`, then the L2 norm to
      `sqrt(head_dim)` with `eps` and `norm` as in `attn.cca`, the key
      temperature and RoPE at `p`;
    * `value = concat(v_cur[b, 0], shift_state[b, 0])` with `value_shift`,
      else `v_cur[b, 0]`, viewed as `[num_kv_heads, head_dim]`;
    * `conv_state_out[b]` is the last `P` rows of `W` (the oldest row
      dropped, `u` appended) and `shift_state_out[b] = v_prev[b, 0]`.

    A fresh sequence starts from zero states: that is the zero padding of the
    prefill, so a decode step at position `t` reproduces what
    `attn.cca_prologue` computes for token `t`. Shapes (`Lq = num_heads *
    head_dim`, `Lk = num_kv_heads * head_dim`, `Lv = Lk / 2` with
    `value_shift`, else `Lk`): `qr [B, 1, Lq]`, `kr [B, 1, Lk]`, `v_cur [B,
    1, Lv]`, `v_prev` and `shift_state [B, 1, Lk / 2]` (only with
    `value_shift`), `conv_state [B, P, C]`, `positions [B]` (integers).

    The op is destination-style: `outs(%q_init, %k_init, %v_init)` are the
    initial values of `query`, `key` and `value` (contents not read) and
    the states are the initial values of the updated states, so a state is
    updated in place. It implements `TilingInterface` over the batch
    (parallel): a tile is an `attn.cca_decode_prologue` of its sequences.

    ```mlir
    %q, %k, %v, %cs_out, %ss_out = attn.cca_decode_prologue %qr, %kr, %vc, %vp
        conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp)
        outs(%q_init, %k_init, %v_init) conv_state(%cs)
        shift_state(%ss) positions(%pos)
        {num_heads = 8 : i64, num_kv_heads = 2 : i64, head_dim = 128 : i64,
         conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift,
         temperature = #attn.temperature<clamped>,
         rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
        : (tensor<?x1x1024xbf16>, tensor<?x1x256xbf16>, tensor<?x1x128xbf16>,
           tensor<?x1x128xbf16>, tensor<1280x1x2xbf16>, tensor<1280xbf16>,
           tensor<1280x128x2xbf16>, tensor<1280xbf16>, tensor<2xbf16>,
           tensor<?x1x8x128xbf16>, tensor<?x1x2x128xbf16>,
           tensor<?x1x2x128xbf16>, tensor<?x2x1280xbf16>,
           tensor<?x1x128xbf16>, tensor<?xi32>)
        -> (tensor<?x1x8x128xbf16>, tensor<?x1x2x128xbf16>,
            tensor<?x1x2x128xbf16>, tensor<?x2x1280xbf16>,
            tensor<?x1x128xbf16>)
    ```

    Semantics: docs/semantics.md#attncca_decode_prologue
  }];
  let arguments = (ins
    Attn_FloatTensor:$qr,
    Attn_FloatTensor:$kr,
    Attn_FloatTensor:$v_cur,
    Optional<Attn_FloatTensor>:$v_prev,
    Attn_FloatTensor:$conv_dw_weight,
    Attn_FloatTensor:$conv_dw_bias,
    Attn_FloatTensor:$conv_g_weight,
    Attn_FloatTensor:$conv_g_bias,
    Attn_FloatTensor:$temp,
    // The inits (the three outputs', then the states) are consecutive.
    Attn_FloatTensor:$query_init,
    Attn_FloatTensor:$key_init,
    Attn_FloatTensor:$value_init,
    Attn_FloatTensor:$conv_state,
    Optional<Attn_FloatTensor>:$shift_state,
    RankedTensorOf<[AnySignlessInteger]>:$positions,
    Attn_PositiveI64Attr:$num_heads,
    Attn_PositiveI64Attr:$num_kv_heads,
    Attn_PositiveI64Attr:$head_dim,
    DenseI64ArrayAttr:$conv_kernel_sizes,
    UnitAttr:$qk_mean,
    UnitAttr:$value_shift,
    DefaultValuedAttr<Attn_TemperatureModeAttr,
                      "TemperatureMode::raw">:$temperature,
    DefaultValuedAttr<F64Attr, "1e-12">:$eps,
    DefaultValuedAttr<Attn_NormModeAttr, "NormMode::sqrt_eps">:$norm,
    OptionalAttr<Attn_RopeAttr>:$rope
  );
  // One optional result (the shift state), so its count follows from the
  // number of result types: no result segment sizes are needed.
  let results = (outs Attn_FloatTensor:$query, Attn_FloatTensor:$key,
                      Attn_FloatTensor:$value,
                      Attn_FloatTensor:$conv_state_out,
                      Optional<Attn_FloatTensor>:$shift_state_out);
  let assemblyFormat = [{
    $qr `,` $kr `,` $v_cur (`,` $v_prev^)?
    `conv_dw` `(` $conv_dw_weight `,` $conv_dw_bias `)`
    `conv_g` `(` $conv_g_weight `,` $conv_g_bias `)`
    `temp` `(` $temp `)`
    `outs` `(` $query_init `,` $key_init `,` $value_init `)`
    `conv_state` `(` $conv_state `)`
    (`shift_state` `(` $shift_state^ `)`)?
    `positions` `(` $positions `)`
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getGroupSize() { return getNumHeads() / getNumKvHeads(); }
    int64_t getQueryLatentDim() { return getNumHeads() * getHeadDim(); }
    int64_t getKeyLatentDim() { return getNumKvHeads() * getHeadDim(); }
    int64_t getConvChannels() {
      return getQueryLatentDim() + getKeyLatentDim();
    }
    /// P: the rows of the convolution state.
    int64_t getConvPadding() {
      return getConvKernelSizes()[0] - 1 + getConvKernelSizes()[1] - 1;
    }
    /// The outputs' inits, then the state(s) the op updates in place.
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      unsigned first = getODSOperandIndexAndLength(9).first;
      return ::mlir::MutableOperandRange(getOperation(), first,
                                         getShiftState() ? 5 : 4);
    }
  }];
}

#endif // ATTNFUSE_DIALECT_ATTN_IR_ATTNKERNELOPS_TD
