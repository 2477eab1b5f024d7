"""flash_decode (split kernel + combine kernel over an f32 workspace, the cache updated in place)
on the emulator through the runtime, against reference.flash_decode_reference.

Tolerance: as for FlashAttention (test_flash_attention.py), the split kernel's scores and P.V are
f32 FMAs on bf16 inputs and the output is rounded once to bf16; the combine adds f32 rounding
only: |got - ref| <= 2^-7 max|v| + 2^-8 |ref|. The cache update is exact.
"""
import math

import numpy as np
import pytest

import emulator
import reference


def expr(text, B, S):
    return int(eval(text, {"__builtins__": {}},
                    {"max": max, "min": min, "B": B, "S": S,
                     "ceil_div": lambda a, b: -(-a // b)}))


def model(hq, hk, d, keqv, rope):
    kv = f"tensor<?x1x{hk}x{d}xbf16>"
    cache = f"tensor<?x?x{hk}x{d}xbf16>"
    out = f"tensor<?x1x{hq}x{d}xbf16>"
    attrs = "block_kv = 64 : i64"
    if rope:
        attrs += (", query_rope = #attn.rope<theta = 10000.0>,"
                  " key_rope = #attn.rope<theta = 10000.0>")
    if keqv:
        return f"""
func.func @decode(%q: {out}, %k: {kv}, %cache: {cache}, %pos: tensor<?xi32>) -> ({out}, {cache}) {{
  %c0 = arith.constant 0 : index
  %batch = tensor.dim %q, %c0 : {out}
  %init = tensor.empty(%batch) : {out}
  %o, %c = attn.flash_decode %q, %k outs(%init) cache(%cache) positions(%pos) {{{attrs}}}
      : ({out}, {kv}, {out}, {cache}, tensor<?xi32>) -> ({out}, {cache})
  return %o, %c : {out}, {cache}
}}
"""
    return f"""
func.func @decode(%q: {out}, %k: {kv}, %v: {kv}, %kc: {cache}, %vc: {cache}, %pos: tensor<?xi32>)
    -> ({out}, {cache}, {cache}) {{
  %c0 = arith.constant 0 : index
  %batch = tensor.dim %q, %c0 : {out}
  %init = tensor.empty(%batch) : {out}
  %o, %c, %cv = attn.flash_decode %q, %k, %v outs(%init) cache(%kc, %vc) positions(%pos) {{{attrs}}}
      : ({out}, {kv}, {kv}, {out}, {cache}, {cache}, tensor<?xi32>) -> ({out}, {cache}, {cache})
  return %o, %c, %cv : {out}, {cache}, {cache}
}}
"""


def run_decode(hq, hk, d, capacity, positions, keqv=True, rope=False, seed=0):
    batch = len(positions)
    art = emulator.compile_model(model(hq, hk, d, keqv, rope), f"decode_h{hq}_{hk}")
    split = next(k for k in art.kernels if not k.endswith("_combine"))
    combine = next(k for k in art.kernels if k.endswith("_combine"))
    spec = next(x for x in art.manifest["kernels"] if x["name"] == split)
    splits = expr(spec["config"]["num_splits"], batch, capacity)
    rng = np.random.default_rng(seed)
    qb, q = emulator.bf16(rng.standard_normal((batch, 1, hq, d)))
    kb, k = emulator.bf16(rng.standard_normal((batch, 1, hk, d)))
    cb, c = emulator.bf16(rng.standard_normal((batch, capacity, hk, d)))
    dev = emulator.Device()
    pos = np.asarray(positions, dtype=np.int32)
    t = {"query": dev.upload(qb, "bf16"), "key_new": dev.upload(kb, "bf16"),
         "key_cache": dev.upload(cb, "bf16"), "positions": dev.upload(pos, "i32"),
         "workspace": dev.empty((batch, hq, splits, d + 4), "f32")}
    if not keqv:
        vb, v = emulator.bf16(rng.standard_normal((batch, 1, hk, d)))
        vcb, vc = emulator.bf16(rng.standard_normal((batch, capacity, hk, d)))
        t["value_new"] = dev.upload(vb, "bf16")
        t["value_cache"] = dev.upload(vcb, "bf16")
    for table in spec.get("rope_tables", []):
        rows = {"S": capacity, "T": capacity}.get(table["shape"][0], table["shape"][0])
        cos, sin = emulator.rope_tables(int(rows), table["rotated_dims"], table["theta"])
        t[table["param"]] = dev.upload(cos if "cos" in table["param"] else sin, "f32")
    art.launch(split, t, B=batch, S=capacity)
    out = {"workspace": t["workspace"], "output": dev.empty((batch, 1, hq, d), "bf16")}
    art.launch(combine, out, B=batch, S=capacity)
    got = reference.from_bf16_bits(dev.download(out["output"])).astype(np.float64)
    cache_after = reference.from_bf16_bits(dev.download(t["key_cache"])).astype(np.float64)
    rp = (10000.0, 1.0) if rope else None
    if keqv:
        ref, ref_cache, _ = reference.flash_decode_reference(q, k, c, pos, query_rope=rp,
                                                             key_rope=rp)
        vmax = max(np.abs(c).max(), np.abs(k).max())
    else:
        ref, ref_cache, _ = reference.flash_decode_reference(q, k, c, pos, v_new=v,
                                                             value_cache=vc, query_rope=rp,
                                                             key_rope=rp)
        vmax = max(np.abs(vc).max(), np.abs(v).max())
    return got, ref, vmax, cache_after, ref_cache, splits


@pytest.mark.parametrize("positions", [[0], [5, 270], [299, 63, 64]])
def test_decode_keqv_gqa4(positions):
    got, ref, vmax, cache, ref_cache, splits = run_decode(4, 1, 64, 300, positions)
    assert splits >= 2
    assert np.array_equal(cache, ref_cache), "the cache update differs"
    assert np.all(np.isfinite(got))
    err = np.abs(got - ref)
    assert np.all(err <= 2.0 ** -7 * vmax + 2.0 ** -8 * np.abs(ref)), err.max()


def test_decode_separate_v_mqa_d128():
    got, ref, vmax, cache, ref_cache, _ = run_decode(4, 1, 128, 200, [150, 7], keqv=False, seed=1)
    assert np.array_equal(cache, ref_cache), "the key cache update differs"
    err = np.abs(got - ref)
    assert np.all(err <= 2.0 ** -7 * vmax + 2.0 ** -8 * np.abs(ref)), err.max()


def test_decode_keqv_rope_gqa4():
    got, ref, vmax, cache, ref_cache, _ = run_decode(8, 2, 64, 260, [259, 100], rope=True, seed=2)
    assert np.array_equal(cache, ref_cache), "the cache update differs"
    err = np.abs(got - ref)
    assert np.all(err <= 2.0 ** -7 * vmax + 2.0 ** -8 * np.abs(ref)), err.max()


@pytest.mark.parametrize("d,hq,hk,keqv,rope", [
    (96, 8, 2, True, True),     # Phi-3's head dim: three 32-column quarters per thread pair
    (96, 4, 4, False, False),
    (96, 16, 2, True, False),   # G 8: 10 row parts of 12 chunks, 8 threads idle in P V
    (256, 8, 1, True, False),   # Gemma's: 128 columns per thread of a key row
    (256, 4, 2, False, True),
])
def test_decode_head_dims_96_and_256(d, hq, hk, keqv, rope):
    got, ref, vmax, cache, ref_cache, _ = run_decode(hq, hk, d, 200, [150, 7, 64], keqv=keqv,
                                                     rope=rope, seed=d + hq)
    assert np.array_equal(cache, ref_cache), "the cache update differs"
    assert np.all(np.isfinite(got))
    err = np.abs(got - ref)
    assert np.all(err <= 2.0 ** -7 * vmax + 2.0 ** -8 * np.abs(ref)), err.max()


def test_decode_paged_keqv_gqa4():
    """K=V cache in 64-row pages through a block table (pages out of order), two splits."""
    hq, hk, d, page, width, pages = 4, 1, 64, 64, 4, 9
    kv = f"tensor<?x1x{hk}x{d}xbf16>"
    cache = f"tensor<?x{page}x{hk}x{d}xbf16>"
    out = f"tensor<?x1x{hq}x{d}xbf16>"
    text = f"""
func.func @decode(%q: {out}, %k: {kv}, %kp: {cache}, %pos: tensor<?xi32>, %bt: tensor<?x?xi32>)
    -> ({out}, {cache}) {{
  %c0 = arith.constant 0 : index
  %batch = tensor.dim %q, %c0 : {out}
  %init = tensor.empty(%batch) : {out}
  %o, %c = attn.flash_decode %q, %k outs(%init) cache(%kp) positions(%pos) block_table(%bt)
      {{block_kv = 64 : i64, num_splits = 2 : i64}}
      : ({out}, {kv}, {out}, {cache}, tensor<?xi32>, tensor<?x?xi32>) -> ({out}, {cache})
  return %o, %c : {out}, {cache}
}}
"""
    art = emulator.compile_model(text, "decode_paged")
    split = next(k for k in art.kernels if not k.endswith("_combine"))
    combine = next(k for k in art.kernels if k.endswith("_combine"))
    rng = np.random.default_rng(4)
    batch = 2
    qb, q = emulator.bf16(rng.standard_normal((batch, 1, hq, d)))
    kb, k = emulator.bf16(rng.standard_normal((batch, 1, hk, d)))
    pb, p = emulator.bf16(rng.standard_normal((pages, page, hk, d)))
    table = np.array([[7, 2, 5, 0], [1, 8, 3, 6]], dtype=np.int32)
    pos = np.array([200, 70], dtype=np.int32)
    dev = emulator.Device()
    t = {"query": dev.upload(qb, "bf16"), "key_new": dev.upload(kb, "bf16"),
         "key_cache": dev.upload(pb, "bf16"), "positions": dev.upload(pos, "i32"),
         "block_table": dev.upload(table, "i32"),
         "workspace": dev.empty((batch, hq, 2, d + 4), "f32")}
    # Paged symbols: S = block-table width, T = pages in the cache.
    art.launch(split, t, B=batch, S=width, T=pages)
    o = {"workspace": t["workspace"], "output": dev.empty((batch, 1, hq, d), "bf16")}
    art.launch(combine, o, B=batch, S=width, T=pages)
    got = reference.from_bf16_bits(dev.download(o["output"])).astype(np.float64)
    cache = reference.from_bf16_bits(dev.download(t["key_cache"])).astype(np.float64)
    ref, ref_cache, _ = reference.flash_decode_reference(q, k, p, pos, block_table=table)
    assert np.array_equal(cache, ref_cache), "the paged cache update differs"
    vmax = max(np.abs(p).max(), np.abs(k).max())
    err = np.abs(got - ref)
    assert np.all(err <= 2.0 ** -7 * vmax + 2.0 ** -8 * np.abs(ref)), err.max()
