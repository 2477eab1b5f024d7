"""The grouped convolution and its gradient as GEMMs against the reference
lowering.

attn-fuse rewrites a grouped `attn.causal_conv1d` (groups at least 16
channels wide) into one `attn.project` per group of the taps of the padded
input side by side, and its `attn.causal_conv1d_grad` into, per group, one
`attn.fused_weight_grad` (dW against those taps), one `attn.project` (dy by
the group's taps, then summed at their shifts: dx) and, for db, a weight
gradient of a ones column. Each case compiles one op twice for the CPU,
fused and with the reference lowering of the op (the gradient's is itself
checked against float64 torch autograd in test_gradients.py, the forward's
against numpy in python-bindings/tests), and compares the results.

Error norm, per gradient: max|g - ref| / max|ref|. f32: 1e-5 (both sum in
f32, in different orders). bf16: 2e-2 against the f32 reference on
bf16-representable inputs (every gradient rounded to bf16, u = 2^-9; dx
also rounds each tap's projection before the taps are added).
"""

import numpy as np
import pytest

from attnfuse_package import import_attnfuse  # noqa: E402

attnfuse = import_attnfuse()

F32_TOLERANCE = 1e-5
BF16_TOLERANCE = 2e-2

# (groups, group width, taps, padding, S, batch): one tap and several,
# with and without padding (the output shorter or longer than the input),
# a sequence shorter than a token block and one with a partial last block.
CASES = [
    (2, 16, 1, 0, 13, 2),
    (2, 16, 2, 0, 13, 2),
    (2, 16, 3, 2, 13, 2),
    (4, 16, 2, 1, 70, 2),
    (3, 32, 4, 3, 9, 1),
]


def conv_grad_module(groups, width, taps, padding, dtype):
    channels = groups * width
    x = f"tensor<?x?x{channels}x{dtype}>"
    w = f"tensor<{channels}x{width}x{taps}x{dtype}>"
    b = f"tensor<{channels}x{dtype}>"
    return attnfuse.parse(f"""
func.func @conv_grad(%x: {x}, %w: {w}, %dy: {x}) -> ({x}, {w}, {b}) {{
  %dx, %dw, %db = attn.causal_conv1d_grad %x, %w, %dy
      {{groups = {groups} : i64, padding = {padding} : i64}}
      : ({x}, {w}, {x}) -> ({x}, {w}, {b})
  return %dx, %dw, %db : {x}, {w}, {b}
}}""")


def inputs(groups, width, taps, padding, seq, batch, seed=0):
    rng = np.random.default_rng(seed)
    channels = groups * width
    out_seq = seq + padding - taps + 1
    return [rng.standard_normal((batch, seq, channels)).astype(np.float32),
            (rng.standard_normal((channels, width, taps))
             / np.sqrt(width * taps)).astype(np.float32),
            rng.standard_normal((batch, out_seq, channels)).astype(np.float32)]


def rel_err(value, ref):
    value = np.asarray(value, np.float64)
    ref = np.asarray(ref, np.float64)
    return np.max(np.abs(value - ref)) / max(np.max(np.abs(ref)), 1e-30)


def test_grouped_convolution_is_rewritten():
    fused = str(conv_grad_module(2, 16, 2, 0, "f32").run_pipeline(
        "builtin.module(attn-fuse)"))
    assert "attn.causal_conv1d_grad" not in fused
    # dW per group and db; dx per group as a projection.
    assert fused.count("attn.fused_weight_grad") == 3
    assert fused.count("attn.fused_projection") == 2
    # A depthwise convolution (one channel per group) keeps the op.
    depthwise = str(conv_grad_module(32, 1, 2, 0, "f32").run_pipeline(
        "builtin.module(attn-fuse)"))
    assert "attn.causal_conv1d_grad" in depthwise


@pytest.mark.parametrize("case", CASES, ids=lambda c: "g{}w{}k{}p{}s{}b{}".format(*c))
def test_fused_matches_reference_f32(case):
    groups, width, taps, padding, seq, batch = case
    module = conv_grad_module(groups, width, taps, padding, "f32")
    args = inputs(*case)
    reference = attnfuse.compile(module, fused=False)(*args)
    fused = attnfuse.compile(module, fused=True, block_s=8, block_k=8,
                             block_n=16)(*args)
    for name, value, ref in zip(("dx", "dw", "db"), fused, reference):
        assert np.all(np.isfinite(value)), f"{name} not finite"
        err = rel_err(value, ref)
        assert err <= F32_TOLERANCE, f"{name}: {err:.3g}"


def test_fused_bf16_matches_f32_reference():
    case = (2, 16, 3, 2, 13, 2)
    groups, width, taps, padding, seq, batch = case
    args = [attnfuse.from_bf16(attnfuse.to_bf16(a)) for a in inputs(*case)]
    reference = attnfuse.compile(
        conv_grad_module(groups, width, taps, padding, "f32"),
        fused=False)(*args)
    fused = attnfuse.compile(
        conv_grad_module(groups, width, taps, padding, "bf16"),
        fused=True)(*[attnfuse.to_bf16(a) for a in args])
    for name, value, ref in zip(("dx", "dw", "db"), fused, reference):
        value = attnfuse.from_bf16(np.asarray(value))
        assert np.all(np.isfinite(value)), f"{name} not finite"
        err = rel_err(value, ref)
        assert err <= BF16_TOLERANCE, f"{name}: {err:.3g}"


def conv_module(groups, width, taps, padding):
    channels = groups * width
    x = f"tensor<?x?x{channels}xf32>"
    w = f"tensor<{channels}x{width}x{taps}xf32>"
    b = f"tensor<{channels}xf32>"
    return attnfuse.parse(f"""
func.func @conv(%x: {x}, %w: {w}, %b: {b}) -> {x} {{
  %y = attn.causal_conv1d %x, %w, %b
      {{groups = {groups} : i64, padding = {padding} : i64}}
      : ({x}, {w}, {b}) -> {x}
  return %y : {x}
}}""")


@pytest.mark.parametrize("case", CASES, ids=lambda c: "g{}w{}k{}p{}s{}b{}".format(*c))
def test_fused_forward_matches_reference_f32(case):
    groups, width, taps, padding, seq, batch = case
    module = conv_module(groups, width, taps, padding)
    fused_ir = str(module.run_pipeline("builtin.module(attn-fuse)"))
    assert "attn.causal_conv1d " not in fused_ir
    assert fused_ir.count("attn.fused_projection") == groups
    x, w, _ = inputs(*case)
    b = np.random.default_rng(1).standard_normal(
        groups * width).astype(np.float32)
    reference = attnfuse.compile(module, fused=False)(x, w, b)
    fused = attnfuse.compile(module, fused=True, block_s=8, block_k=8,
                             block_n=16)(x, w, b)
    assert np.all(np.isfinite(fused))
    err = rel_err(fused, reference)
    assert err <= F32_TOLERANCE, f"y: {err:.3g}"
