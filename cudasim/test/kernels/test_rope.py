"""attn.rope kernels (with and without positions, full and partial rotation, i32 and i64
positions) on the emulator through the runtime, against reference.rope / reference.rope_from
(float64 numpy); attn.rope_grad (the rotation's transpose) against the transpose written out
here.

Tolerance: the kernel rotates bf16 inputs in f32 with the manifest's f32 cos/sin tables and
rounds once to bf16: |got - ref| <= 2^-8 |ref| + 2^-12 max|x| (half a bf16 ulp plus the f32
table and arithmetic error, bounded generously).
"""
import numpy as np
import pytest

import emulator
import reference


def model(h, d, fraction, positions, op="attn.rope"):
    t = f"tensor<?x?x{h}x{d}xbf16>"
    rope = f"#attn.rope<theta = 10000.0, fraction = {fraction}>"
    if positions:
        return f"""
func.func @rope(%x: {t}, %p: tensor<?x{positions}>) -> {t} {{
  %r = {op} %x positions(%p : tensor<?x{positions}>) {{rope = {rope}}} : {t}
  return %r : {t}
}}
"""
    return f"""
func.func @rope(%x: {t}) -> {t} {{
  %r = {op} %x {{rope = {rope}}} : {t}
  return %r : {t}
}}
"""


def rope_transpose(g, starts, theta, fraction):
    """R^T g for the rotation R of attn.rope at positions starts[b] + t: dx1 = g1 cos + g2 sin,
    dx2 = g2 cos - g1 sin on the rotated pairs (i, i + r/2), the rest passed through."""
    d = g.shape[-1]
    r = int(d * fraction) // 2 * 2
    half = r // 2
    pos = np.asarray(starts, np.float64)[:, None] + np.arange(g.shape[1])[None, :]
    angle = pos[..., None] * theta ** (-2.0 * np.arange(half) / r)
    cos, sin = np.cos(angle)[:, :, None, :], np.sin(angle)[:, :, None, :]
    out = g.copy()
    g1, g2 = g[..., :half], g[..., half:r]
    out[..., :half] = g1 * cos + g2 * sin
    out[..., half:r] = g2 * cos - g1 * sin
    return out


def run(batch, tokens, h, d, fraction=1.0, positions=None, idx="i32", table_rows=None, seed=0,
        grad=False):
    op = "attn.rope_grad" if grad else "attn.rope"
    art = emulator.compile_model(model(h, d, fraction, idx if positions is not None else None, op),
                                 f"rope_h{h}_d{d}")
    (kernel,) = art.kernels
    spec = art.manifest["kernels"][0]
    rng = np.random.default_rng(seed)
    xb, x = emulator.bf16(rng.standard_normal((batch, tokens, h, d)))
    dev = emulator.Device()
    t = {"input": dev.upload(xb, "bf16"), "output": dev.empty((batch, tokens, h, d), "bf16")}
    rows = tokens
    if positions is not None:
        t["positions"] = dev.upload(np.asarray(positions, np.int32 if idx == "i32" else np.int64),
                                    idx)
        rows = table_rows
    (cos_t, sin_t) = spec["rope_tables"]
    cos, sin = emulator.rope_tables(rows, cos_t["rotated_dims"], cos_t["theta"])
    t[cos_t["param"]] = dev.upload(cos, "f32")
    t[sin_t["param"]] = dev.upload(sin, "f32")
    art.launch(kernel, t, B=batch, S=tokens, T=rows)
    got = reference.from_bf16_bits(dev.download(t["output"])).astype(np.float64)
    if grad:
        starts = [0] * batch if positions is None else positions
        ref = rope_transpose(x, starts, 10000.0, fraction)
    elif positions is None:
        ref = reference.rope(x, 10000.0, fraction)
    else:
        ref = reference.rope_from(x, positions, 10000.0, fraction)
    return got, ref, x


def check(got, ref, x):
    assert np.all(np.isfinite(got))
    err = np.abs(got - ref)
    assert np.all(err <= 2.0 ** -8 * np.abs(ref) + 2.0 ** -12 * np.abs(x).max()), err.max()


def test_rope_full_no_positions_odd_tokens():
    check(*run(batch=2, tokens=13, h=4, d=64))


def test_rope_partial_rotation():
    # fraction 0.5 of 128: 64 rotated dims, 64 copied.
    got, ref, x = run(batch=1, tokens=9, h=2, d=128, fraction=0.5, seed=1)
    check(got, ref, x)
    assert np.array_equal(got[..., 64:], x[..., 64:])


@pytest.mark.parametrize("idx", ["i32", "i64"])
def test_rope_positions_gqa_queries(idx):
    # 16 query heads, 5 tokens per sequence from positions 0, 37 and 250 (tables of 300 rows).
    check(*run(batch=3, tokens=5, h=16, d=64, positions=[0, 37, 250], idx=idx, table_rows=300,
               seed=2))


def test_rope_positions_narrow_pairs():
    # head_dim 24, fraction 0.5: 6 pairs per head, vectors of 2 elements.
    check(*run(batch=2, tokens=3, h=3, d=24, fraction=0.5, positions=[4, 1], table_rows=8,
               seed=3))


@pytest.mark.parametrize("positions", [None, [3, 0]])
def test_rope_grad_is_the_transpose(positions):
    """attn.rope_grad (the backward of a rotation the projection did not fuse): by token index,
    and at positions; partial rotation, so the pass-through dims are checked too."""
    got, ref, x = run(batch=2, tokens=7, h=4, d=64, fraction=0.5, positions=positions,
                      table_rows=None if positions is None else 12, seed=4, grad=True)
    check(got, ref, x)
    assert np.array_equal(got[..., 32:], x[..., 32:])
