"""attn.cache_update (contiguous and paged, in place) and attn.cache_gather kernels on the emulator
through the runtime, against reference.cache_update / reference.cache_gather (numpy loops).

Both kernels only move bf16 rows, so the results must be bit-exact. The caches start with random
values (not zeros) so that a missed or misplaced row is visible.
"""
import numpy as np
import pytest

import emulator
import reference


def bits(rng, shape):
    return emulator.bf16(rng.standard_normal(shape))[0]


def update_model(cache, idx, lengths, paged, hk, d):
    new = f"tensor<?x?x{hk}x{d}xbf16>"
    types = [cache, new, f"tensor<?x{idx}>"]
    args = ["%c: " + cache, "%n: " + new, "%p: " + types[2]]
    ops = "positions(%p)"
    if lengths:
        types.append(f"tensor<?x{idx}>")
        args.append("%l: " + types[-1])
        ops += " lengths(%l)"
    if paged:
        types.append(f"tensor<?x?x{idx}>")
        args.append("%bt: " + types[-1])
        ops += " block_table(%bt)"
    return f"""
func.func @update({", ".join(args)}) -> {cache} {{
  %r = attn.cache_update %c, %n {ops} : ({", ".join(types)}) -> {cache}
  return %r : {cache}
}}
"""


def run_update(hk, d, batch, tokens, positions, lengths=None, table=None, pages=None,
               page=None, capacity=None, idx="i32", seed=0, ref_lengths=None):
    paged = table is not None
    npidx = np.int32 if idx == "i32" else np.int64
    cache = (f"tensor<{pages}x{page}x{hk}x{d}xbf16>" if paged
             else f"tensor<?x?x{hk}x{d}xbf16>")
    art = emulator.compile_model(update_model(cache, idx, lengths is not None, paged, hk, d),
                                 f"cache_update_{'paged' if paged else 'contig'}_{idx}")
    (kernel,) = art.kernels
    spec = art.manifest["kernels"][0]
    assert spec["aliases"] == [{"result": "cache_out", "tensor": "cache"}]
    rng = np.random.default_rng(seed)
    cache_bits = bits(rng, (pages, page, hk, d) if paged else (batch, capacity, hk, d))
    new_bits = bits(rng, (batch, tokens, hk, d))
    dev = emulator.Device()
    t = {"cache": dev.upload(cache_bits, "bf16"), "new_rows": dev.upload(new_bits, "bf16"),
         "positions": dev.upload(np.asarray(positions, npidx), idx)}
    if lengths is not None:
        t["lengths"] = dev.upload(np.asarray(lengths, npidx), idx)
    if paged:
        t["block_table"] = dev.upload(np.asarray(table, npidx), idx)
        art.launch(kernel, t, B=batch, S=tokens, T=np.asarray(table).shape[1])
    else:
        art.launch(kernel, t, B=batch, S=tokens, T=capacity)
    got = dev.download(t["cache"])
    ref = reference.cache_update(cache_bits, new_bits, positions,
                                 lengths=lengths if ref_lengths is None else ref_lengths,
                                 block_table=None if table is None else np.asarray(table))
    return got, ref, cache_bits


def test_update_contiguous_prefill_odd_lengths():
    got, ref, before = run_update(hk=2, d=64, batch=3, tokens=7, positions=[0, 5, 11],
                                  lengths=[7, 3, 0], capacity=21)
    assert not np.array_equal(ref, before)
    assert np.array_equal(got, ref)


def test_update_contiguous_i64_no_lengths():
    got, ref, _ = run_update(hk=1, d=40, batch=2, tokens=5, positions=[3, 0], capacity=9,
                             idx="i64", seed=1)
    assert np.array_equal(got, ref)


@pytest.mark.parametrize("idx", ["i32", "i64"])
def test_update_paged_out_of_order_pages(idx):
    # Page size 16, 4 pages per sequence out of 9; prompts of 19 tokens at 13 and 30
    # (crossing page boundaries), the second padded to 11 real tokens; lengths beyond T clamp.
    table = [[7, 2, 5, 0], [1, 8, 3, 6]]
    got, ref, before = run_update(hk=4, d=64, batch=2, tokens=19, positions=[13, 30],
                                  lengths=[40, 11], table=table, pages=9, page=16, idx=idx,
                                  seed=2)
    assert not np.array_equal(ref, before)
    assert np.array_equal(got, ref)


def test_update_out_of_capacity_writes_nothing():
    # Position 8 + t passes capacity 10 at t = 2: rows 0 and 1 are written, the others dropped
    # (the CPU path reports them as errors; the kernel must not write out of bounds), which is
    # the update of the first two tokens only.
    got, ref, before = run_update(hk=1, d=64, batch=1, tokens=4, positions=[8], capacity=10,
                                  seed=3, ref_lengths=[2])
    assert not np.array_equal(ref, before)
    assert np.array_equal(got, ref)


def gather_model(pages, page, hk, d, idx):
    cache = f"tensor<{pages}x{page}x{hk}x{d}xbf16>"
    out = f"tensor<?x?x{hk}x{d}xbf16>"
    return f"""
func.func @gather(%c: {cache}, %bt: tensor<?x?x{idx}>) -> {out} {{
  %r = attn.cache_gather %c block_table(%bt) : ({cache}, tensor<?x?x{idx}>) -> {out}
  return %r : {out}
}}
"""


@pytest.mark.parametrize("idx", ["i32", "i64"])
def test_gather_out_of_order_and_unused_entries(idx):
    pages, page, hk, d = 6, 16, 4, 64
    npidx = np.int32 if idx == "i32" else np.int64
    art = emulator.compile_model(gather_model(pages, page, hk, d, idx), f"cache_gather_{idx}")
    (kernel,) = art.kernels
    rng = np.random.default_rng(5)
    cache = bits(rng, (pages, page, hk, d))
    # -1 and 99 are padding entries: zero rows.
    table = np.array([[5, 0, -1], [2, 99, 3]], npidx)
    dev = emulator.Device()
    t = {"cache": dev.upload(cache, "bf16"), "block_table": dev.upload(table, idx),
         "output": dev.empty((2, 3 * page, hk, d), "bf16")}
    art.launch(kernel, t, B=2, S=3)
    got = dev.download(t["output"])
    ref = reference.cache_gather(cache, table)
    assert np.array_equal(got, ref)


def test_gather_odd_page_shape():
    # page 5 x 1 head x 24 dims: 120 elements per page, vectors of 8.
    pages, page, hk, d = 4, 5, 1, 24
    art = emulator.compile_model(gather_model(pages, page, hk, d, "i32"), "cache_gather_odd")
    (kernel,) = art.kernels
    rng = np.random.default_rng(6)
    cache = bits(rng, (pages, page, hk, d))
    table = np.array([[3, 1], [0, 2], [2, 2]], np.int32)
    dev = emulator.Device()
    t = {"cache": dev.upload(cache, "bf16"), "block_table": dev.upload(table, "i32"),
         "output": dev.empty((3, 2 * page, hk, d), "bf16")}
    art.launch(kernel, t, B=3, S=2)
    assert np.array_equal(dev.download(t["output"]), reference.cache_gather(cache, table))
