//===- AttnOps.td - attn dialect operations ----------------*- tablegen -*-===//

#ifndef ATTNFUSE_DIALECT_ATTN_IR_ATTNOPS_TD
#define ATTNFUSE_DIALECT_ATTN_IR_ATTNOPS_TD

include "attnfuse/Dialect/Attn/IR/AttnBase.td"
include "attnfuse/Dialect/Attn/IR/AttnAttributes.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/Interfaces/DestinationStyleOpInterface.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/TilingInterface.td"

def Attn_FloatTensor : RankedTensorOf<[AnyFloat]>;
def Attn_PositiveI64Attr : ConfinedAttr<I64Attr, [IntPositive]>;
/// Per-sequence token counts and positions, block tables.
def Attn_IntTensor : RankedTensorOf<[I32, I64]>;
/// Token masks `[batch, seq]`: nonzero marks a real token, zero a padded one.
def Attn_MaskTensor : RankedTensorOf<[AnySignlessInteger]>;

//===----------------------------------------------------------------------===//
// Layer ops
//===----------------------------------------------------------------------===//

def Attn_QKVAttentionOp : Attn_Op<"qkv_attention",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "self-attention layer with shared Q/K/V projections";
  let description = [{
    A whole self-attention layer whose projections are tied according to
    `sharing` (paper "Do Transformers Need Three Projections?"):

    | mode   | projections                       | cached per token     |
    |--------|-----------------------------------|----------------------|
    | `none` | `q = x Wq^T, k = x Wk^T, v = x Wv^T` | K and V: `2 Hk d` |
    | `kv`   | `q = x Wq^T, k = v = x Wk^T`      | one tensor: `Hk d`   |
    | `qk`   | `q = k = x Wk^T, v = x Wv^T`      | K and V: `2 Hk d`    |
    | `qkv`  | `q = k = v = x Wk^T`              | one tensor: `Hk d`   |

    `wq` is present exactly for `none` and `kv`, `wv` exactly for `none` and
    `qk`; `wk` (the key or shared projection) and `wo` always. `qk` and `qkv`
    need `num_heads == num_kv_heads` because the query is the key.
    Optional biases `bq`, `bk`, `bv`, `bo` follow their weights.

    With `rope`, scores use the rotated query and key while the values are
    always the un-rotated projection: for `kv` the value is the un-rotated
    shared tensor, which is what a decoder caches.

    `logit_bias` (`[S, T]` or `[num_heads, S, T]`, broadcast over the batch)
    is added to the scaled logits before the mask and the softmax: the
    asymmetric `(Q=K-V)+` / `(Q=K=V)+` variants and ALiBi-style biases.
    `scale` defaults to `1/sqrt(head_dim)`; `causal` masks keys after the
    query; `window = w` further keeps only keys with `i - j < w`.

    Example (K=V with GQA-4 and RoPE, 300M configuration):

    ```mlir
    %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
        {num_heads = 16 : i64, num_kv_heads = 4 : i64, head_dim = 64 : i64,
         causal, rope = #attn.rope<theta = 10000.0>}
        : (tensor<?x?x1024xbf16>, tensor<1024x1024xbf16>,
           tensor<256x1024xbf16>, tensor<1024x1024xbf16>)
        -> tensor<?x?x1024xbf16>
    ```

    Semantics: docs/semantics.md#attnqkv_attention
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
    Optional<Attn_FloatTensor>:$logit_bias,
    Attn_PositiveI64Attr:$num_heads,
    Attn_PositiveI64Attr:$num_kv_heads,
    Attn_PositiveI64Attr:$head_dim,
    UnitAttr:$causal,
    OptionalAttr<I64Attr>:$window,
    OptionalAttr<Attn_RopeAttr>:$rope,
    OptionalAttr<F64Attr>:$scale
  );
  let results = (outs Attn_FloatTensor:$result);

  let assemblyFormat = [{
    $sharing $input
    (`wq` `(` $wq^ `)`)? `wk` `(` $wk `)` (`wv` `(` $wv^ `)`)? `wo` `(` $wo `)`
    (`bq` `(` $bq^ `)`)? (`bk` `(` $bk^ `)`)? (`bv` `(` $bv^ `)`)?
    (`bo` `(` $bo^ `)`)? (`logit_bias` `(` $logit_bias^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];

  let hasVerifier = 1;
  let hasCanonicalizer = 1;

  let extraClassDeclaration = [{
    /// Number of query heads per key/value head.
    int64_t getGroupSize() { return getNumHeads() / getNumKvHeads(); }
    /// Whether the key and value are one tensor (modes `kv` and `qkv`).
    bool sharesKeyValue() {
      return getSharing() == SharingMode::kv ||
             getSharing() == SharingMode::qkv;
    }
    /// Whether the query is the key (modes `qk` and `qkv`).
    bool sharesQueryKey() {
      return getSharing() == SharingMode::qk ||
             getSharing() == SharingMode::qkv;
    }
  }];
}

def Attn_CCAOp : Attn_Op<"cca", [Pure, AttrSizedOperandSegments]> {
  let summary = "compressed convolutional attention layer (CCA / CCGQA)";
  let description = [{
    A whole compressed convolutional attention layer (Zyphra, ZAYA1). With
    `Lq = num_heads * head_dim`, `Lk = num_kv_heads * head_dim` and
    `C = Lq + Lk`, per token `t`:

    1. down-projections `qr = x Wq^T` (`[Lq]`), `kr = x Wk^T` (`[Lk]`),
       packed as `u = concat(qr, kr)`;
    2. the sequence of `u` is left-padded once with
       `P = (k0 - 1) + (k1 - 1)` zero vectors, then a depthwise convolution
       (`conv_dw_weight [C, 1, k0]`, `conv_dw_bias [C]`) and a grouped
       convolution with `num_heads + num_kv_heads` groups of `head_dim`
       channels (`conv_g_weight [C, head_dim, k1]`, `conv_g_bias [C]`) run
       back to back without further padding;
    3. with `qk_mean`, the query heads add `0.5 qr[h] + 0.5 kr[h/G]` and the
       key heads add `0.5 mean(qr over the group) + 0.5 kr[j]`;
    4. each head is L2-normalized to norm `sqrt(head_dim)`: divided by
       `sqrt(|x|^2 + eps)` (`norm = <sqrt_eps>`, the default) or by
       `max(|x|, eps)` (`norm = <clamp_eps>`, as Hugging Face transformers'
       ZAYA with `eps` the machine epsilon of the activations' dtype); keys
       are scaled by `temp` (`temperature = <raw>`, the default, as
       transformers) or `exp(clamp(temp, 1e-7, 2))`
       (`temperature = <clamped>`);
    5. values: without `value_shift`, `v = x Wv^T` with `wv [Lk, E]`; with
       it, `v = concat(x_t Wv^T, x_{t-1} Wv_prev^T)` with `wv` and `wv_prev`
       both `[Lk/2, E]` and `x_{-1} = 0`;
    6. optional RoPE on the normalized query and key;
    7. softmax attention in latent space with scale `1/sqrt(head_dim)`
       (optionally causal and windowed), then `y = o Wo^T` with
       `wo [E, Lq]`.

    With `padding_mask(%m)` (`[B, S]` integers, nonzero for a real token),
    the padded tokens' `x` rows are zeroed before every projection (so they
    feed zeros to the convolutions and the value shift) and they are masked
    as keys: a batch padded on either side gives its real tokens the results
    of the unpadded sequences (as Hugging Face transformers' ZAYA with a 2-D
    `attention_mask`).

    Example (ZAYA1-shaped CCGQA, a sliding-window layer with the norm of
    transformers' ZAYA in bf16):

    ```mlir
    %y = attn.cca %x wq(%wq) wk(%wk) wv(%wvc) wv_prev(%wvp)
        conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) wo(%wo)
        {num_heads = 8 : i64, num_kv_heads = 2 : i64, head_dim = 128 : i64,
         conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift,
         norm = #attn.norm<clamp_eps>, eps = 7.8125e-3 : f64, causal,
         window = 4096 : i64,
         rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
        : (tensor<?x?x2048xbf16>, tensor<1024x2048xbf16>,
           tensor<256x2048xbf16>, tensor<128x2048xbf16>,
           tensor<128x2048xbf16>, tensor<1280x1x2xbf16>, tensor<1280xbf16>,
           tensor<1280x128x2xbf16>, tensor<1280xbf16>, tensor<2xbf16>,
           tensor<2048x1024xbf16>) -> tensor<?x?x2048xbf16>
    ```

    Semantics: docs/semantics.md#attncca
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
    Optional<Attn_MaskTensor>:$padding_mask,
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
    UnitAttr:$causal,
    OptionalAttr<I64Attr>:$window,
    OptionalAttr<Attn_RopeAttr>:$rope
  );
  let results = (outs Attn_FloatTensor:$result);

  let assemblyFormat = [{
    $input `wq` `(` $wq `)` `wk` `(` $wk `)` `wv` `(` $wv `)`
    (`wv_prev` `(` $wv_prev^ `)`)?
    `conv_dw` `(` $conv_dw_weight `,` $conv_dw_bias `)`
    `conv_g` `(` $conv_g_weight `,` $conv_g_bias `)`
    `temp` `(` $temp `)` `wo` `(` $wo `)`
    (`padding_mask` `(` $padding_mask^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];

  let hasVerifier = 1;
  let hasCanonicalizer = 1;

  let extraClassDeclaration = [{
    int64_t getGroupSize() { return getNumHeads() / getNumKvHeads(); }
    int64_t getQueryLatentDim() { return getNumHeads() * getHeadDim(); }
    int64_t getKeyLatentDim() { return getNumKvHeads() * getHeadDim(); }
    /// Channels of the convolved stream `u = concat(qr, kr)`.
    int64_t getConvChannels() {
      return getQueryLatentDim() + getKeyLatentDim();
    }
    /// Zero vectors padded in front of the sequence before both
    /// convolutions: the conv state a decoder keeps per sequence.
    int64_t getConvPadding() {
      return getConvKernelSizes()[0] - 1 + getConvKernelSizes()[1] - 1;
    }
  }];
}

//===----------------------------------------------------------------------===//
// Primitive ops
//===----------------------------------------------------------------------===//

def Attn_ProjectOp : Attn_Op<"project", [Pure]> {
  let summary = "linear projection of the last dimension";
  let description = [{
    `result[..., n] = sum_e input[..., e] * weight[n, e] + bias[n]`: a
    `torch.nn.Linear` over the last dimension of a `[batch, seq, in]` tensor.

    ```mlir
    %q = attn.project %x, %wq : (tensor<?x?x1024xf32>, tensor<256x1024xf32>)
        -> tensor<?x?x256xf32>
    %k = attn.project %x, %wk, %bk : (tensor<2x16x64xf32>,
        tensor<32x64xf32>, tensor<32xf32>) -> tensor<2x16x32xf32>
    ```

    Semantics: docs/semantics.md#attnproject
  }];
  let arguments = (ins Attn_FloatTensor:$input, Attn_FloatTensor:$weight,
                       Optional<Attn_FloatTensor>:$bias);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Attn_CausalConv1DOp : Attn_Op<"causal_conv1d", [Pure]> {
  let summary = "grouped 1-D convolution over time with left zero padding";
  let description = [{
    Pads the sequence of a `[batch, seq, channels]` tensor on the left with
    `padding` zero vectors, then applies an unpadded ("valid") grouped
    convolution over time with `weight [channels, channels / groups, k]` and
    an optional `bias [channels]`. The result has `seq + padding - (k - 1)`
    time steps; `padding = k - 1` keeps the length and makes the
    convolution causal. Tap 0 multiplies the oldest input of the window
    (`torch.nn.Conv1d` order). `groups = channels` is a depthwise
    convolution.

    ```mlir
    // Depthwise, padded for a following k = 2 convolution: S + 1 outputs.
    %m = attn.causal_conv1d %u, %w, %b {groups = 1280 : i64, padding = 2 : i64}
        : (tensor<1x16x1280xf32>, tensor<1280x1x2xf32>, tensor<1280xf32>)
        -> tensor<1x17x1280xf32>
    ```

    Semantics: docs/semantics.md#attncausal_conv1d
  }];
  let arguments = (ins Attn_FloatTensor:$input, Attn_FloatTensor:$weight,
                       Optional<Attn_FloatTensor>:$bias,
                       Attn_PositiveI64Attr:$groups,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$padding);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Attn_QKMeanOp : Attn_Op<"qk_mean", [Pure,
    AllTypesMatch<["q_conv", "q_raw", "q"]>,
    AllTypesMatch<["k_conv", "k_raw", "k"]>]> {
  let summary = "CCA residual from the pre-convolution projections";
  let description = [{
    With `G = Hq / Hk`, for query head `h` and key head `j`:
    `q[h] = q_conv[h] + 0.5 q_raw[h] + 0.5 k_raw[h / G]` and
    `k[j] = k_conv[j] + 0.5 mean_{h / G == j} q_raw[h] + 0.5 k_raw[j]`.
    Queries are `[batch, seq, Hq, d]`, keys `[batch, seq, Hk, d]`.

    ```mlir
    %q, %k = attn.qk_mean %qc, %kc, %qr, %kr
        : tensor<1x16x8x128xf32>, tensor<1x16x2x128xf32>
    ```

    Semantics: docs/semantics.md#attnqk_mean
  }];
  let arguments = (ins Attn_FloatTensor:$q_conv, Attn_FloatTensor:$k_conv,
                       Attn_FloatTensor:$q_raw, Attn_FloatTensor:$k_raw);
  let results = (outs Attn_FloatTensor:$q, Attn_FloatTensor:$k);
  let assemblyFormat = [{
    $q_conv `,` $k_conv `,` $q_raw `,` $k_raw attr-dict
    `:` type($q_conv) `,` type($k_conv)
  }];
  let hasVerifier = 1;
}

def Attn_QKNormOp : Attn_Op<"qk_norm", [Pure,
    AllTypesMatch<["q", "q_out"]>, AllTypesMatch<["k", "k_out"]>]> {
  let summary = "per-head L2 normalization with a learned key temperature";
  let description = [{
    `q[h] = sqrt(d) q[h] / n(q[h])` and `k[j] = sqrt(d) k[j] / n(k[j]) *
    tau[j]`, where `n(x) = sqrt(|x|^2 + eps)` (`norm = <sqrt_eps>`) or
    `max(|x|, eps)` (`norm = <clamp_eps>`), `tau = temp` (`<raw>`) or
    `tau = exp(clamp(temp, 1e-7, 2))` (`<clamped>`), `temp` is `[Hk]`.

    ```mlir
    %qn, %kn = attn.qk_norm %q, %k, %temp
        {temperature = #attn.temperature<clamped>,
         norm = #attn.norm<clamp_eps>, eps = 1.1920929e-07 : f64}
        : tensor<1x16x8x128xf32>, tensor<1x16x2x128xf32>, tensor<2xf32>
    ```

    Semantics: docs/semantics.md#attnqk_norm
  }];
  let arguments = (ins Attn_FloatTensor:$q, Attn_FloatTensor:$k,
                       Attn_FloatTensor:$temp,
                       DefaultValuedAttr<Attn_TemperatureModeAttr,
                                         "TemperatureMode::raw">:$temperature,
                       DefaultValuedAttr<F64Attr, "1e-12">:$eps,
                       DefaultValuedAttr<Attn_NormModeAttr,
                                         "NormMode::sqrt_eps">:$norm);
  let results = (outs Attn_FloatTensor:$q_out, Attn_FloatTensor:$k_out);
  let assemblyFormat = [{
    $q `,` $k `,` $temp attr-dict `:` type($q) `,` type($k) `,` type($temp)
  }];
  let hasVerifier = 1;
}

def Attn_ValueShiftOp : Attn_Op<"value_shift", [Pure]> {
  let summary = "concatenate the current and the previous token's values";
  let description = [{
    `result[b, t] = concat(current[b, t], previous[b, t - 1])`: the first
    half of the channels carry the current token, the second half the
    previous one. `previous[b, -1]` is `state[b, 0]` (`[batch, 1, channels]`,
    the value-shift state of a decoder) when given, else zero.

    ```mlir
    %v = attn.value_shift %cur, %prev
        : (tensor<?x?x128xf32>, tensor<?x?x128xf32>) -> tensor<?x?x256xf32>
    %w = attn.value_shift %cur, %prev state(%s)
        : (tensor<4x1x128xf32>, tensor<4x1x128xf32>, tensor<4x1x128xf32>)
        -> tensor<4x1x256xf32>
    ```

    Semantics: docs/semantics.md#attnvalue_shift
  }];
  let arguments = (ins Attn_FloatTensor:$current, Attn_FloatTensor:$previous,
                       Optional<Attn_FloatTensor>:$state);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $current `,` $previous (`state` `(` $state^ `)`)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Attn_RoPEOp : Attn_Op<"rope", [Pure,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "rotary position embedding of every head";
  let description = [{
    Applies `rope` (see `#attn.rope`) to a `[batch, seq, heads, head_dim]`
    tensor. Token `t` of sequence `b` sits at position `t`, or at
    `positions[b] + t` with a `positions [batch]` operand (the tokens a
    decoder already cached). Dimensions past the rotated width pass through.

    ```mlir
    %qr = attn.rope %q {rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
        : tensor<?x?x8x128xbf16>
    %qd = attn.rope %qt positions(%pos : tensor<4xi32>)
        {rope = #attn.rope<theta = 10000.0>} : tensor<4x1x8x128xbf16>
    ```

    Semantics: docs/semantics.md#attnrope
  }];
  let arguments = (ins Attn_FloatTensor:$input,
                       Optional<Attn_IntTensor>:$positions,
                       Attn_RopeAttr:$rope);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`positions` `(` $positions^ `:` type($positions) `)`)? attr-dict
    `:` type($input)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Attn_MaskTokensOp : Attn_Op<"mask_tokens", [Pure,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "zero the padded tokens of a batch";
  let description = [{
    `result[b, s, :] = input[b, s, :]` where `mask[b, s] != 0`, else zeros:
    the padded tokens of a `[batch, seq, width]` activation, marked by zeros
    in the `[batch, seq]` integer `mask`, become zero vectors.

    ```mlir
    %xm = attn.mask_tokens %x, %mask : tensor<?x?x1024xf32>, tensor<?x?xi64>
    ```

    Semantics: docs/semantics.md#attnmask_tokens
  }];
  let arguments = (ins Attn_FloatTensor:$input, Attn_MaskTensor:$mask);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $mask attr-dict `:` type($input) `,` type($mask)
  }];
  let hasVerifier = 1;
}

def Attn_SDPAOp : Attn_Op<"sdpa", [Pure, AttrSizedOperandSegments]> {
  let summary = "scaled dot-product attention with head sharing";
  let description = [{
    `o[b, i, h] = sum_j softmax_j(scale * q[b, i, h] . k[b, j, h / G]
    + bias[h, i, j]) v[b, j, h / G]` over the unmasked keys `j`.
    `q` is `[batch, S, Hq, d]`, `k` `[batch, T, Hk, d]`, `v`
    `[batch, T, Hk, dv]`, the result `[batch, S, Hq, dv]`, `G = Hq / Hk`.
    Key `j` sits at position `j`; query `i` at position `p_i = i + (T - S)`
    (the queries are the last `S` positions), or `p_i = positions[b] + i`
    with a `positions [batch]` operand (a decoder's queries over its cache,
    which may hold more rows than tokens). `causal` keeps keys `j <= p_i`;
    `window = w` further keeps `p_i - j < w`; with a `key_mask [batch, T]`
    (integers), only keys `j` with `key_mask[b, j] != 0` are visible (the
    padding of a batch). A fully masked row gives zeros.
    `scale` defaults to `1/sqrt(d)`. The optional `bias` is `[S, T]` or
    `[Hq, S, T]`.

    With a second result type, the op also returns the log-sum-exp of each
    row's scores, `lse[b, i, h] = log sum_j exp(scale * q . k + bias)` over
    the visible keys (`-inf` for a row without one), `[batch, S, Hq]` f32:
    what `attn.sdpa_grad` needs to recompute the probabilities without
    another pass over the keys (`attn-differentiate` asks for it).

    ```mlir
    %o = attn.sdpa %q, %k, %v {causal, window = 256 : i64}
        : (tensor<?x?x16x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>)
        -> tensor<?x?x16x64xf32>
    // One new token per sequence over a cache of 4096 rows.
    %d = attn.sdpa %q1, %kc, %vc positions(%pos) {causal}
        : (tensor<8x1x16x64xf32>, tensor<8x4096x4x64xf32>,
           tensor<8x4096x4x64xf32>, tensor<8xi32>) -> tensor<8x1x16x64xf32>
    // A padded batch: keys with mask 0 are never attended to.
    %p = attn.sdpa %q, %k, %v key_mask(%m) {causal}
        : (tensor<?x?x16x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>,
           tensor<?x?xi64>) -> tensor<?x?x16x64xf32>
    // With the log-sum-exp of the rows.
    %o, %lse = attn.sdpa %q, %k, %v {causal}
        : (tensor<?x?x16x64xbf16>, tensor<?x?x4x64xbf16>,
           tensor<?x?x4x64xbf16>) -> (tensor<?x?x16x64xbf16>, tensor<?x?x16xf32>)
    ```

    Semantics: docs/semantics.md#attnsdpa
  }];
  let arguments = (ins Attn_FloatTensor:$query, Attn_FloatTensor:$key,
                       Attn_FloatTensor:$value,
                       Optional<Attn_FloatTensor>:$bias,
                       Optional<Attn_IntTensor>:$positions,
                       Optional<Attn_MaskTensor>:$key_mask,
                       UnitAttr:$causal,
                       OptionalAttr<I64Attr>:$window,
                       OptionalAttr<F64Attr>:$scale);
  let results = (outs Attn_FloatTensor:$result,
                      Optional<RankedTensorOf<[F32]>>:$lse);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`bias` `(` $bias^ `)`)?
    (`positions` `(` $positions^ `)`)? (`key_mask` `(` $key_mask^ `)`)?
    attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

include "attnfuse/Dialect/Attn/IR/AttnDecodeOps.td"
include "attnfuse/Dialect/Attn/IR/AttnKernelOps.td"
include "attnfuse/Dialect/Attn/IR/AttnGradOps.td"

#endif // ATTNFUSE_DIALECT_ATTN_IR_ATTNOPS_TD
