//===- AttnGradOps.td - vector-Jacobian products of the primitives -*- td -*-===//
//
// One op per primitive whose vector-Jacobian product is not itself a
// primitive: given the primal operands and the cotangent of the result, each
// returns the cotangents of the differentiable operands. `attn-differentiate`
// builds gradient functions from them; `convert-attn-to-linalg` lowers them
// like the primitives (arithmetic in f32 for bf16/f16, reductions over the
// batch and the tokens accumulated in f32). Gradients have the type of the
// value they differentiate. `attn.mask_tokens` is its own transpose and has
// no gradient op.
//
// Formulas: docs/semantics.md#gradients.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNFUSE_DIALECT_ATTN_IR_ATTNGRADOPS_TD
#define ATTNFUSE_DIALECT_ATTN_IR_ATTNGRADOPS_TD

def Attn_ProjectGradOp : Attn_Op<"project_grad", [Pure]> {
  let summary = "gradients of attn.project";
  let description = [{
    For `y = x W^T + b` and the cotangent `dy` of `y`:
    `dx = dy W` (`[batch, seq, in]`), `dw = dy^T x` summed over the batch
    and the tokens (`[out, in]`), `db = sum dy` (`[out]`, whether or not
    the projection had a bias; unused, it folds away).

    ```mlir
    %dx, %dw, %db = attn.project_grad %x, %w, %dy
        : (tensor<?x?x64xf32>, tensor<32x64xf32>, tensor<?x?x32xf32>)
        -> (tensor<?x?x64xf32>, tensor<32x64xf32>, tensor<32xf32>)
    ```

    Semantics: docs/semantics.md#attnproject_grad
  }];
  let arguments = (ins Attn_FloatTensor:$input, Attn_FloatTensor:$weight,
                       Attn_FloatTensor:$result_grad);
  let results = (outs Attn_FloatTensor:$input_grad,
                      Attn_FloatTensor:$weight_grad,
                      Attn_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $input `,` $weight `,` $result_grad attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Attn_CausalConv1DGradOp : Attn_Op<"causal_conv1d_grad", [Pure]> {
  let summary = "gradients of attn.causal_conv1d";
  let description = [{
    For `y = attn.causal_conv1d x, w, b {groups, padding}` and the cotangent
    `dy` of `y` (`[batch, seq + padding - (k - 1), channels]`): with `xp` the
    padded input,
    `dxp[b, t', ci] = sum_i sum_{c in group(ci)} w[c, ci mod cpg, i]
    dy[b, t' - i, c]` (the correlation with the flipped kernel: anti-causal),
    `dx[b, s] = dxp[b, s + padding]` (the padding gets no gradient),
    `dw[c, cl, i] = sum_{b, t} dy[b, t, c] xp[b, t + i, group(c) cpg + cl]`,
    `db[c] = sum_{b, t} dy[b, t, c]`; `cpg = channels / groups`.

    ```mlir
    %dx, %dw, %db = attn.causal_conv1d_grad %u, %w, %dm
        {groups = 1280 : i64, padding = 2 : i64}
        : (tensor<1x16x1280xf32>, tensor<1280x1x2xf32>, tensor<1x17x1280xf32>)
        -> (tensor<1x16x1280xf32>, tensor<1280x1x2xf32>, tensor<1280xf32>)
    ```

    Semantics: docs/semantics.md#attncausal_conv1d_grad
  }];
  let arguments = (ins Attn_FloatTensor:$input, Attn_FloatTensor:$weight,
                       Attn_FloatTensor:$result_grad,
                       Attn_PositiveI64Attr:$groups,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$padding);
  let results = (outs Attn_FloatTensor:$input_grad,
                      Attn_FloatTensor:$weight_grad,
                      Attn_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $input `,` $weight `,` $result_grad attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Attn_QKMeanGradOp : Attn_Op<"qk_mean_grad", [Pure,
    AllTypesMatch<["q_grad", "q_raw_grad"]>,
    AllTypesMatch<["k_grad", "k_raw_grad"]>]> {
  let summary = "gradients of attn.qk_mean through the raw projections";
  let description = [{
    `attn.qk_mean` is linear: the convolved inputs receive `dq` and `dk`
    unchanged; with `G = Hq / Hk` the raw projections receive
    `dq_raw[h] = 0.5 dq[h] + 0.5 / G dk[h / G]` and
    `dk_raw[j] = 0.5 sum_{h / G == j} dq[h] + 0.5 dk[j]`.

    ```mlir
    %dqr, %dkr = attn.qk_mean_grad %dq, %dk
        : tensor<1x16x8x128xf32>, tensor<1x16x2x128xf32>
    ```

    Semantics: docs/semantics.md#attnqk_mean_grad
  }];
  let arguments = (ins Attn_FloatTensor:$q_grad, Attn_FloatTensor:$k_grad);
  let results = (outs Attn_FloatTensor:$q_raw_grad,
                      Attn_FloatTensor:$k_raw_grad);
  let assemblyFormat = [{
    $q_grad `,` $k_grad attr-dict `:` type($q_grad) `,` type($k_grad)
  }];
  let hasVerifier = 1;
}

def Attn_QKNormGradOp : Attn_Op<"qk_norm_grad", [Pure,
    AllTypesMatch<["q", "q_out_grad", "q_grad"]>,
    AllTypesMatch<["k", "k_out_grad", "k_grad"]>,
    AllTypesMatch<["temp", "temp_grad"]>]> {
  let summary = "gradients of attn.qk_norm";
  let description = [{
    With `y = sqrt(d) x / n(x)` per head and the cotangent `g` of `y`:
    `n = sqrt(|x|^2 + eps)` (`<sqrt_eps>`) gives
    `dx = sqrt(d) / n (g - x (x . g) / n^2)`; `n = max(|x|, eps)`
    (`<clamp_eps>`) gives the same with `n = |x|` where `|x| >= eps`, and
    `dx = sqrt(d) g / eps` where the clamp holds (the clamped norm is a
    constant). Keys see `g = dk_out * tau[j]`; the temperature receives
    `dtau[j] = sum over batch, tokens and dims of dk_out * sqrt(d) k / n(k)`,
    which is `dtemp` for `<raw>` and `dtemp = dtau * tau` inside
    `[1e-7, 2]` (zero outside) for `<clamped>`.

    ```mlir
    %dq, %dk, %dtemp = attn.qk_norm_grad %q, %k, %temp, %dqn, %dkn
        {norm = #attn.norm<clamp_eps>, eps = 1.1920929e-07 : f64}
        : tensor<1x16x8x128xf32>, tensor<1x16x2x128xf32>, tensor<2xf32>
    ```

    Semantics: docs/semantics.md#attnqk_norm_grad
  }];
  let arguments = (ins Attn_FloatTensor:$q, Attn_FloatTensor:$k,
                       Attn_FloatTensor:$temp, Attn_FloatTensor:$q_out_grad,
                       Attn_FloatTensor:$k_out_grad,
                       DefaultValuedAttr<Attn_TemperatureModeAttr,
                                         "TemperatureMode::raw">:$temperature,
                       DefaultValuedAttr<F64Attr, "1e-12">:$eps,
                       DefaultValuedAttr<Attn_NormModeAttr,
                                         "NormMode::sqrt_eps">:$norm);
  let results = (outs Attn_FloatTensor:$q_grad, Attn_FloatTensor:$k_grad,
                      Attn_FloatTensor:$temp_grad);
  let assemblyFormat = [{
    $q `,` $k `,` $temp `,` $q_out_grad `,` $k_out_grad attr-dict
    `:` type($q) `,` type($k) `,` type($temp)
  }];
  let hasVerifier = 1;
}

def Attn_ValueShiftGradOp : Attn_Op<"value_shift_grad", [Pure,
    AllTypesMatch<["current_grad", "previous_grad"]>]> {
  let summary = "gradients of attn.value_shift (without a state)";
  let description = [{
    For `v[b, t] = concat(current[b, t], previous[b, t - 1])` and its
    cotangent `dv`: `dcurrent[b, t] = dv[b, t, :C]` and
    `dprevious[b, t] = dv[b, t + 1, C:]`, zero for the last token (its
    delayed value has no consumer in the sequence).

    ```mlir
    %dc, %dp = attn.value_shift_grad %dv
        : (tensor<?x?x256xf32>) -> (tensor<?x?x128xf32>, tensor<?x?x128xf32>)
    ```

    Semantics: docs/semantics.md#attnvalue_shift_grad
  }];
  let arguments = (ins Attn_FloatTensor:$result_grad);
  let results = (outs Attn_FloatTensor:$current_grad,
                      Attn_FloatTensor:$previous_grad);
  let assemblyFormat = [{
    $result_grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Attn_RoPEGradOp : Attn_Op<"rope_grad", [Pure,
    AllTypesMatch<["result_grad", "input_grad"]>]> {
  let summary = "gradient of attn.rope: the rotation by minus the angle";
  let description = [{
    A rotation's transpose is the rotation by the opposite angle:
    `dx1 = g1 cos + g2 sin`, `dx2 = g2 cos - g1 sin` on the rotated pairs,
    the dimensions past the rotated width pass through. Positions as for
    `attn.rope`.

    ```mlir
    %dq = attn.rope_grad %dqr {rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
        : tensor<?x?x8x128xf32>
    ```

    Semantics: docs/semantics.md#attnrope_grad
  }];
  let arguments = (ins Attn_FloatTensor:$result_grad,
                       Optional<Attn_IntTensor>:$positions,
                       Attn_RopeAttr:$rope);
  let results = (outs Attn_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $result_grad (`positions` `(` $positions^ `:` type($positions) `)`)?
    attr-dict `:` type($result_grad)
  }];
  let hasVerifier = 1;
}

def Attn_SDPAGradOp : Attn_Op<"sdpa_grad",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "gradients of attn.sdpa (the flash backward)";
  let description = [{
    For `o = attn.sdpa q, k, v` with the same masks, bias and scale `s`, and
    the cotangent `do` of `o`, per batch, query head `h` (KV head
    `h / G`) and query row `i`: `D_i = sum_c do_ic o_ic`, `P_ij` the
    softmax probabilities (0 on masked keys and in fully masked rows),
    `dP_ij = do_i . v_j`, `dS_ij = P_ij (dP_ij - D_i)`;
    `dq_i = s sum_j dS_ij k_j`, `dk_j = s sum_i dS_ij q_i` and
    `dv_j = sum_i P_ij do_i`, the last two summed over the query heads of
    each KV head (GQA/MQA). With a `bias` operand the op has a fourth result,
    `dbias = dS` summed over the batch (and over the heads for an `[S, T]`
    bias). Masks: `causal`, `window`, `key_mask` as `attn.sdpa`. With
    `lse(%l)`, the log-sum-exp of the forward's rows (`[batch, S, Hq]` f32,
    the second result of `attn.sdpa`), the fused backward reads the row
    normalizers instead of recomputing them.

    ```mlir
    %dq, %dk, %dv = attn.sdpa_grad %q, %k, %v, %o, %do {causal}
        : (tensor<?x?x16x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>,
           tensor<?x?x16x64xf32>, tensor<?x?x16x64xf32>)
        -> (tensor<?x?x16x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>)
    ```

    Semantics: docs/semantics.md#attnsdpa_grad
  }];
  let arguments = (ins Attn_FloatTensor:$query, Attn_FloatTensor:$key,
                       Attn_FloatTensor:$value, Attn_FloatTensor:$output,
                       Attn_FloatTensor:$output_grad,
                       Optional<Attn_FloatTensor>:$bias,
                       Optional<Attn_MaskTensor>:$key_mask,
                       Optional<RankedTensorOf<[F32]>>:$lse,
                       UnitAttr:$causal,
                       OptionalAttr<I64Attr>:$window,
                       OptionalAttr<F64Attr>:$scale);
  let results = (outs Attn_FloatTensor:$query_grad,
                      Attn_FloatTensor:$key_grad,
                      Attn_FloatTensor:$value_grad,
                      Optional<Attn_FloatTensor>:$bias_grad);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $output `,` $output_grad
    (`bias` `(` $bias^ `)`)? (`key_mask` `(` $key_mask^ `)`)?
    (`lse` `(` $lse^ `)`)?
    attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // ATTNFUSE_DIALECT_ATTN_IR_ATTNGRADOPS_TD
