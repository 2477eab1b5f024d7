"""attn.rope kernels (with and without positions, full and partial rotation, i32 and i64
positions) on the emulator through the runtime, against reference.rope / reference.rope_from
(float64 numpy).

Tolerance: the kernel rotates bf16 inputs in f32 with the manifest's f32 cos/sin tables and
rounds once to bf16: |got - ref| <= 2^-8 |ref| + 2^-12 max|x| (half a bf16 ulp plus the f32
table and arithmetic error, bounded generously).
"""
import numpy as np
import pytest

import emulator
import reference


def model(hd, h, d, fraction, positions):
    t = f"tensor<?x?x{h}x{d}xbf16>"
    rope = f"#attn.rope<theta = 10000.0, fraction = {fraction}>"
    if positions:
        return f"""
func.func @rope(%x: {t}, %p: tensor<?x{positions}>) -> {t} {{
  %r = attn.rope %x positions(%p : tensor<?x{positions}>) {{rope = {rope}}} : {t}
  return %r : {t}
}}
"""
    return f"""
func.func @rope(%x: {t}) -> {t} {{
  %r = attn.rope %x {{rope = {rope}}} : {t}
  return %r : {t}
}}
"""


def run(batch, tokens, h, d, fraction=1.0, positions=None, idx="i32", table_rows=None, seed=0):
    art = emulator.compile_model(model(0, h, d, fraction, idx if positions is not None else None),
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
    if positions is None:
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
