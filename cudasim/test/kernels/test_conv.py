"""attn.causal_conv1d kernels (depthwise and grouped, with and without bias, output lengths
S + 1, S and S - 1) on the emulator through the runtime, against a float64 convolution written
here from the op's definition: y[b, t, o] = bias[o] + sum_k sum_i w[o, i, k] x[b, t + k - padding,
g Cg + i], x zero outside [0, S).

Grouped convolutions of 16 or more channels per group become GEMMs in attn-fuse, so the grouped
cases here use narrower groups, which reach this kernel as they are.

Tolerance: bf16 inputs (exact in float64), f32 sums of at most k * Cg products (error about
k Cg 2^-24 sum |w x|) and one rounding to bf16: |got - ref| <= 2^-8 |ref| + 2^-16 sum |w x| + tiny.
"""
import numpy as np
import pytest

import emulator
import reference


def model(channels, width, taps, padding, bias, steps="?"):
    out_steps = "?" if steps == "?" else steps + padding - (taps - 1)
    x = f"tensor<?x{steps}x{channels}xbf16>"
    y = f"tensor<?x{out_steps}x{channels}xbf16>"
    w = f"tensor<{channels}x{width}x{taps}xbf16>"
    b_arg = f", %b: tensor<{channels}xbf16>" if bias else ""
    b_use = ", %b" if bias else ""
    b_type = f", tensor<{channels}xbf16>" if bias else ""
    return f"""
func.func @conv(%x: {x}, %w: {w}{b_arg}) -> {y} {{
  %y = attn.causal_conv1d %x, %w{b_use} {{groups = {channels // width} : i64, padding = {padding} : i64}}
      : ({x}, {w}{b_type}) -> {y}
  return %y : {y}
}}
"""


def taps_in_range(steps, out_steps, channels, width, taps, padding):
    """Every (o, first input channel of o's group, tap k, output step t, input step t + k -
    padding) of the convolution whose input step lies in [0, steps): the op's definition."""
    for o in range(channels):
        first = o // width * width
        for k in range(taps):
            for t in range(out_steps):
                src = t + k - padding
                if 0 <= src < steps:
                    yield o, first, k, t, src


def conv_reference(x, w, b, padding):
    """float64 y and sum |w x| per output, from the definition."""
    batch, steps, channels = x.shape
    width, taps = w.shape[1], w.shape[2]
    out_steps = steps + padding - (taps - 1)
    y = np.zeros((batch, out_steps, channels))
    bound = np.zeros_like(y)
    for o, first, k, t, src in taps_in_range(steps, out_steps, channels, width, taps, padding):
        terms = w[o, :, k][None, :] * x[:, src, first:first + width]
        y[:, t, o] += terms.sum(axis=1)
        bound[:, t, o] += np.abs(terms).sum(axis=1)
    if b is not None:
        y += b[None, None, :]
    return y, bound


def run(batch, steps, channels, width, taps, padding, bias, seed=0):
    art = emulator.compile_model(model(channels, width, taps, padding, bias),
                                 f"conv_c{channels}_g{width}_k{taps}_p{padding}")
    (kernel,) = art.kernels
    rng = np.random.default_rng(seed)
    xb, x = emulator.bf16(rng.standard_normal((batch, steps, channels)))
    wb, w = emulator.bf16(rng.standard_normal((channels, width, taps)) / np.sqrt(width * taps))
    bb, b = emulator.bf16(rng.standard_normal(channels))
    out_steps = steps + padding - (taps - 1)
    dev = emulator.Device()
    t = {"input": dev.upload(xb, "bf16"), "weight": dev.upload(wb, "bf16"),
         "output": dev.empty((batch, out_steps, channels), "bf16")}
    if bias:
        t["bias"] = dev.upload(bb, "bf16")
    art.launch(kernel, t, B=batch, S=steps, T=1)
    got = reference.from_bf16_bits(dev.download(t["output"])).astype(np.float64)
    ref, bound = conv_reference(x, w, b if bias else None, padding)
    return got, ref, bound


@pytest.mark.parametrize("batch,steps,channels,width,taps,padding,bias", [
    (2, 37, 384, 1, 2, 2, True),    # CCA's depthwise convolution: S + 1 steps
    (1, 70, 96, 1, 3, 2, False),    # causal depthwise, S steps
    (2, 19, 64, 8, 2, 0, True),     # grouped, S - 1 steps (CCA's second conv)
    (1, 33, 300, 4, 4, 3, True),    # 300 channels: threads past the last channel idle
    (3, 1, 40, 8, 2, 1, False),     # one step
])
def test_causal_conv1d(batch, steps, channels, width, taps, padding, bias):
    got, ref, bound = run(batch, steps, channels, width, taps, padding, bias)
    assert got.shape == ref.shape
    err = np.abs(got - ref)
    tol = 2.0 ** -8 * np.abs(ref) + 2.0 ** -16 * bound + 1e-6
    assert (err <= tol).all(), (err.max(), np.unravel_index(np.argmax(err - tol), err.shape))


def test_static_lengths_and_the_kernel_name():
    """Static sizes give the output length as a number; the name says the shape."""
    art = emulator.compile_model(model(32, 1, 2, 2, True, steps=9), "conv_static")
    (spec,) = art.manifest["kernels"]
    assert spec["name"] == "attn_conv_bf16_c32_g1_k2_p2_bias", spec["name"]
    out = next(t for t in spec["tensors"] if t["name"] == "output")
    assert out["shape"][1:] == [10, 32], out["shape"]


def grad_model(channels, width, taps, padding):
    x = f"tensor<?x?x{channels}xbf16>"
    w = f"tensor<{channels}x{width}x{taps}xbf16>"
    b = f"tensor<{channels}xbf16>"
    return f"""
func.func @conv_grad(%x: {x}, %w: {w}, %dy: {x}) -> ({x}, {w}, {b}) {{
  %dx, %dw, %db = attn.causal_conv1d_grad %x, %w, %dy
      {{groups = {channels // width} : i64, padding = {padding} : i64}}
      : ({x}, {w}, {x}) -> ({x}, {w}, {b})
  return %dx, %dw, %db : {x}, {w}, {b}
}}
"""


def conv_grad_reference(x, w, dy, padding):
    """float64 dx, dw, db of the convolution (the op's definition) and bounds sum |terms|."""
    batch, steps, channels = x.shape
    width, taps = w.shape[1], w.shape[2]
    out_steps = dy.shape[1]
    dx, dx_bound = np.zeros_like(x), np.zeros_like(x)
    dw, dw_bound = np.zeros_like(w), np.zeros_like(w)
    for o, first, k, t, src in taps_in_range(steps, out_steps, channels, width, taps, padding):
        # y[:, t, o] += w[o, :, k] . x[:, src, first:first + width]
        terms = dy[:, t, o][:, None] * w[o, :, k][None, :]
        dx[:, src, first:first + width] += terms
        dx_bound[:, src, first:first + width] += np.abs(terms)
        prods = dy[:, t, o][:, None] * x[:, src, first:first + width]
        dw[o, :, k] += prods.sum(axis=0)
        dw_bound[o, :, k] += np.abs(prods).sum(axis=0)
    db = dy.sum(axis=(0, 1))
    return (dx, dx_bound), (dw, dw_bound), (db, np.abs(dy).sum(axis=(0, 1)))


@pytest.mark.parametrize("batch,steps,channels,width,taps,padding", [
    (2, 37, 384, 1, 2, 2),   # CCA's depthwise convolution (dy has S + 1 steps)
    (2, 19, 64, 8, 2, 0),    # grouped, dy has S - 1 steps
    (1, 45, 96, 4, 3, 2),    # causal grouped
])
def test_causal_conv1d_grad(batch, steps, channels, width, taps, padding):
    art = emulator.compile_model(grad_model(channels, width, taps, padding),
                                 f"conv_grad_c{channels}_g{width}_k{taps}_p{padding}")
    dx_kernel = next(k for k in art.kernels if k.endswith("_dx"))
    dw_kernel = next(k for k in art.kernels if k.endswith("_dw"))
    sum_kernel = next(k for k in art.kernels if k.endswith("_dw_sum"))
    assert len(art.kernels) == 3, art.kernels
    spec = next(x for x in art.manifest["kernels"] if x["name"] == dw_kernel)
    chunks = spec["config"]["token_chunks"]
    items = channels * width * taps + channels
    out_steps = steps + padding - (taps - 1)
    rng = np.random.default_rng(1)
    xb, x = emulator.bf16(rng.standard_normal((batch, steps, channels)))
    wb, w = emulator.bf16(rng.standard_normal((channels, width, taps)) / np.sqrt(width * taps))
    dyb, dy = emulator.bf16(rng.standard_normal((batch, out_steps, channels)))
    dev = emulator.Device()
    t = {"input": dev.upload(xb, "bf16"), "weight": dev.upload(wb, "bf16"),
         "result_grad": dev.upload(dyb, "bf16"),
         "input_grad": dev.empty((batch, steps, channels), "bf16"),
         "weight_grad": dev.empty((channels, width, taps), "bf16"),
         "bias_grad": dev.empty((channels,), "bf16"),
         "partials": dev.empty((batch, chunks, items), "f32")}
    # The input-gradient launch names the cotangent's steps S, the other the input's.
    art.launch(dx_kernel, {n: t[n] for n in ("weight", "result_grad", "input_grad")},
               B=batch, S=out_steps, T=1)
    # The weight and bias gradients: partial sums over chunks of each sequence's output steps
    # (more chunks than steps here: some are empty), then their sum.
    art.launch(dw_kernel, {n: t[n] for n in ("input", "result_grad", "partials")},
               B=batch, S=steps, T=1)
    art.launch(sum_kernel, {n: t[n] for n in ("partials", "weight_grad", "bias_grad")},
               B=batch, S=1, T=1)
    refs = conv_grad_reference(x, w, dy, padding)
    for name, (ref, bound) in zip(("input_grad", "weight_grad", "bias_grad"), refs):
        got = reference.from_bf16_bits(dev.download(t[name])).astype(np.float64)
        assert got.shape == ref.shape, name
        err = np.abs(got - ref)
        tol = 2.0 ** -8 * np.abs(ref) + 2.0 ** -16 * bound + 1e-6
        assert (err <= tol).all(), (name, err.max())
