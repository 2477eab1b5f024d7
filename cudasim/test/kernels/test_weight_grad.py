"""The weight-gradient GEMM kernel (attn.fused_weight_grad: dW = init + dY^T X over the tokens,
both operands read MN-major by TMA + wgmma) run on the emulator through the runtime, against a
float64 product written here; and the column-sum kernel of the same op with one input feature (a
bias gradient: X a fill of ones, not read, or a column it reads).

Tolerance: the inputs are bf16 (exact in float64); the kernel sums T products in f32 (error at
most about T 2^-24 sum_t |dY[t, o] X[t, i]|, bounded here with room by 2^-16 of that sum) and
rounds once to bf16 (2^-9 relative), after adding the bf16 init.
"""
import numpy as np
import pytest

import emulator
import reference

SEED = int(__import__("os").environ.get("CUDASIM_SEED", "0"))


def model(inputs, outputs, with_init):
    init_arg = f", %init: tensor<{outputs}x{inputs}xbf16>" if with_init else ""
    init = "%init" if with_init else "%zero"
    zero = "" if with_init else f"""
  %c0f = arith.constant 0.0 : bf16
  %empty = tensor.empty() : tensor<{outputs}x{inputs}xbf16>
  %zero = linalg.fill ins(%c0f : bf16) outs(%empty : tensor<{outputs}x{inputs}xbf16>)
      -> tensor<{outputs}x{inputs}xbf16>"""
    return f"""
func.func @wgrad(%x: tensor<?x{inputs}xbf16>, %dy: tensor<?x{outputs}xbf16>{init_arg})
    -> tensor<{outputs}x{inputs}xbf16> {{{zero}
  %dw = attn.fused_weight_grad %x, %dy outs({init})
      {{block_m = 64 : i64, block_n = 64 : i64, block_k = 64 : i64}}
      : (tensor<?x{inputs}xbf16>, tensor<?x{outputs}xbf16>, tensor<{outputs}x{inputs}xbf16>)
      -> tensor<{outputs}x{inputs}xbf16>
  return %dw : tensor<{outputs}x{inputs}xbf16>
}}
"""


def run_weight_grad(inputs, outputs, tokens, with_init, seed=0, splits=1):
    """`splits`: how many CTAs per dW tile the plan must choose (1: one kernel; more: the
    split GEMM, then the combine kernel that adds the partials and the init)."""
    art = emulator.compile_model(model(inputs, outputs, with_init),
                                 f"wgrad_in{inputs}_out{outputs}")
    gemm = [k for k in art.kernels if "_combine_" not in k]
    combine = [k for k in art.kernels if "_combine_" in k]
    assert len(gemm) == 1 and len(combine) == (splits > 1), art.kernels
    name = gemm[0]
    assert ("_split" in name) == (splits > 1), name
    if splits > 1:
        assert name.endswith(f"_split{splits}") and combine[0].endswith("_acc") == with_init
        name = (name, combine[0])
    else:
        assert name.endswith("_acc") == with_init, name
    rng = np.random.default_rng(seed)
    xb, x = emulator.bf16(rng.standard_normal((tokens, inputs)))
    dyb, dy = emulator.bf16(rng.standard_normal((tokens, outputs)))
    initb, init = emulator.bf16(rng.standard_normal((outputs, inputs)) * 4)
    uploads = {"input": xb, "result_grad": dyb}
    if with_init:
        uploads["init"] = initb
    return launch(art, name, uploads, x, dy, init if with_init else None, tokens)


def launch(art, name, uploads, x, dy, init, tokens):
    """Runs kernel `name` (or a split kernel and its combine kernel, a pair of names) on
    `uploads` ({tensor: bf16 bits}); returns the weight gradient, its float64 reference
    dY^T X (+ init) and the bound sum_t |dY| |X| of its f32 rounding."""
    dev = emulator.Device()
    tensors = {n: dev.upload(bits, "bf16") for n, bits in uploads.items()}
    tensors["weight_grad"] = dev.empty((dy.shape[1], x.shape[1]), "bf16")
    for kernel in (name if isinstance(name, tuple) else (name,)):
        spec = next(k for k in art.manifest["kernels"] if k["name"] == kernel)
        for t in spec["tensors"]:
            if t["name"] == "partials" and "partials" not in tensors:
                # Filled with NaN: a partial the split kernel leaves unwritten shows.
                tensors["partials"] = dev.upload(
                    np.full(t["shape"], np.nan, np.float32), "f32")
        names = {t["name"] for t in spec["tensors"]}
        art.launch(kernel, {n: t for n, t in tensors.items() if n in names}, B=1, S=1,
                   T=tokens)
    got = reference.from_bf16_bits(dev.download(tensors["weight_grad"])).astype(np.float64)
    ref = dy.T @ x + (init if init is not None else 0.0)
    bound = np.abs(dy).T @ np.abs(x)
    return got, ref, bound


def check(got, ref, bound):
    assert np.all(np.isfinite(got)), "the kernel left outputs unwritten or produced NaN/inf"
    tol = 2.0 ** -8 * np.abs(ref) + 2.0 ** -16 * bound + 1e-30
    err = np.abs(got - ref)
    bad = err > tol
    assert not bad.any(), (f"{bad.sum()} of {bad.size} outputs off; worst |err| {err.max():.4g} "
                           f"at {np.unravel_index(err.argmax(), err.shape)}")


# Fewer dW tiles than half the 132 SMs split over the tokens: min(8, 132 // tiles) CTAs per
# tile, each over ceil(k steps / splits) of the 64-token k steps.
@pytest.mark.parametrize("inputs,outputs,tokens,splits", [
    (128, 128, 64, 8),    # one tile, one k step: 7 splits past the tokens store zeros
    (192, 64, 130, 8),    # a partial k step; the second consumer's rows all past the features
    (64, 256, 1, 8),      # one token
    (256, 384, 200, 8),   # a grid of 3 x 2 tiles x 8 splits
    (1024, 256, 1100, 8), # a GQA K/V weight's shape: 2 x 8 tiles, 18 k steps in shares of 3
    (1152, 512, 300, 3),  # 4 x 9 = 36 tiles: 3 splits, shares of 2 k steps
    (1152, 1024, 70, 1),  # 8 x 9 = 72 tiles: one kernel, no split
])
def test_weight_grad_from_zero(inputs, outputs, tokens, splits):
    check(*run_weight_grad(inputs, outputs, tokens, with_init=False, seed=SEED,
                           splits=splits))


@pytest.mark.parametrize("inputs,outputs,tokens,splits", [
    (128, 192, 96, 8), (320, 136, 257, 8), (1152, 1024, 130, 1)])
def test_weight_grad_accumulates_into_init(inputs, outputs, tokens, splits):
    check(*run_weight_grad(inputs, outputs, tokens, with_init=True, seed=SEED + 1,
                           splits=splits))


def bias_model(outputs, fill, with_init):
    """attn.fused_weight_grad of one input feature: X a `linalg.fill` of `fill` (attn-fuse's
    bias gradient uses 1.0) or, with fill None, an argument."""
    t = f"tensor<{outputs}x1xbf16>"
    x_arg = "" if fill is not None else ", %x: tensor<?x1xbf16>"
    init_arg = f", %init: {t}" if with_init else ""
    body = []
    if fill is not None:
        body += ["%c0 = arith.constant 0 : index",
                 "%tokens = tensor.dim %dy, %c0 : tensor<?x%OUTxbf16>".replace("%OUT", str(outputs)),
                 f"%xfill = arith.constant {fill} : bf16",
                 "%xempty = tensor.empty(%tokens) : tensor<?x1xbf16>",
                 "%x = linalg.fill ins(%xfill : bf16) outs(%xempty : tensor<?x1xbf16>)"
                 " -> tensor<?x1xbf16>"]
    if not with_init:
        body += ["%c0f = arith.constant 0.0 : bf16",
                 f"%empty = tensor.empty() : {t}",
                 f"%init = linalg.fill ins(%c0f : bf16) outs(%empty : {t}) -> {t}"]
    lines = "\n  ".join(body)
    return f"""
func.func @bgrad(%dy: tensor<?x{outputs}xbf16>{x_arg}{init_arg}) -> {t} {{
  {lines}
  %dw = attn.fused_weight_grad %x, %dy outs(%init)
      {{block_m = 64 : i64, block_n = 64 : i64, block_k = 64 : i64}}
      : (tensor<?x1xbf16>, tensor<?x{outputs}xbf16>, {t}) -> {t}
  return %dw : {t}
}}
"""


def run_bias_grad(outputs, tokens, fill, with_init, seed=0):
    art = emulator.compile_model(bias_model(outputs, fill, with_init), f"bgrad_out{outputs}")
    assert len(art.kernels) == 1, art.kernels
    name = art.kernels[0]
    assert name.startswith("attn_wgrad_colsum_"), name
    assert name.endswith("_acc") == with_init and ("_x" in name) == (fill is None), name
    rng = np.random.default_rng(seed)
    xb, x = emulator.bf16(rng.standard_normal((tokens, 1)))
    if fill is not None:
        x = np.full((tokens, 1), fill, np.float64)
    dyb, dy = emulator.bf16(rng.standard_normal((tokens, outputs)))
    initb, init = emulator.bf16(rng.standard_normal((outputs, 1)) * 4)
    uploads = {"result_grad": dyb}
    if fill is None:
        uploads["input"] = xb
    if with_init:
        uploads["init"] = initb
    return launch(art, name, uploads, x, dy, init if with_init else None, tokens)


@pytest.mark.parametrize("outputs,tokens,fill,with_init", [
    (256, 200, 1.0, False),   # attn-fuse's bias gradient: 16-byte rows, one CTA
    (1024, 1, 1.0, False),    # one token; four CTAs
    (264, 77, 0.5, True),     # a second CTA with 8 columns; a scale; into an init
    (130, 45, 1.0, False),    # 4-byte chunks (out even, not a multiple of 8)
    (37, 130, None, True),    # one column per thread; X read per token
    (512, 300, None, False),  # X read, rows in flight past the tokens
])
def test_bias_grad_column_sum(outputs, tokens, fill, with_init):
    check(*run_bias_grad(outputs, tokens, fill, with_init, seed=SEED + outputs))
