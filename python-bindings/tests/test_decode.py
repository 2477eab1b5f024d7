"""Decode over a KV cache from Python: a K=V GQA layer with RoPE over a paged
cache, prefill then decode steps, each call taking the cache the previous one
returned; every position must equal the whole-sequence layer of the float64
reference (integration_test/reference.py)."""

import numpy as np
import pytest

import attnfuse
import reference as R

E, HQ, HK, D = 32, 4, 2, 8
PAGE, PAGES = 4, 3  # rows per page, pages per sequence
PROMPTS = (5, 2)
STEPS = 3


def layer(name, seq, lengths):
    x = f"tensor<?x{seq}x{E}xf32>"
    cache = f"tensor<?x{PAGE}x{HK}x{D}xf32>"
    params = (f"%x: {x}, %wq: tensor<{HQ * D}x{E}xf32>, %wk: tensor<{HK * D}x{E}xf32>, "
              f"%wo: tensor<{E}x{HQ * D}xf32>, %kv: {cache}, %pos: tensor<?xi32>"
              + (", %len: tensor<?xi32>" if lengths else "") + ", %bt: tensor<?x?xi32>")
    types = ", ".join(p.split(": ")[1] for p in params.split(", "))
    return (f"func.func @{name}({params}) -> ({x}, {cache}) {{\n"
            f"  %y, %kv2 = attn.qkv_decode <kv> %x wq(%wq) wk(%wk) wo(%wo) cache(%kv)"
            f" positions(%pos){' lengths(%len)' if lengths else ''} block_table(%bt)\n"
            f"      {{num_heads = {HQ} : i64, num_kv_heads = {HK} : i64, head_dim = {D} : i64,"
            f" rope = #attn.rope<theta = 10000.0>}}\n"
            f"      : ({types}) -> ({x}, {cache})\n"
            f"  return %y, %kv2 : {x}, {cache}\n}}\n")


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "reference"])
def test_prefill_then_decode_matches_the_whole_sequence(fused):
    module = attnfuse.parse(layer("prefill", "?", True) + layer("step", 1, False))
    prefill = attnfuse.compile(module, entry="prefill", fused=fused)
    step = attnfuse.compile(module, entry="step", fused=fused)

    rng = np.random.default_rng(7)
    batch = len(PROMPTS)
    x_full = rng.standard_normal((batch, max(PROMPTS) + STEPS, E)).astype(np.float32)
    wq = (rng.standard_normal((HQ * D, E)) * E ** -0.5).astype(np.float32)
    wk = (rng.standard_normal((HK * D, E)) * E ** -0.5).astype(np.float32)
    wo = (rng.standard_normal((E, HQ * D)) * (HQ * D) ** -0.5).astype(np.float32)
    # Pages of both sequences shuffled into one pool, plus an unused one.
    pool = batch * PAGES + 1
    block_table = rng.permutation(pool)[: batch * PAGES].reshape(batch, PAGES)
    block_table = block_table.astype(np.int32)
    kv = np.zeros((pool, PAGE, HK, D), np.float32)

    x0 = np.zeros((batch, max(PROMPTS), E), np.float32)
    for b, p in enumerate(PROMPTS):
        x0[b, :p] = x_full[b, :p]
    y0, kv = prefill(x0, wq, wk, wo, kv, np.zeros(batch, np.int32),
                     np.array(PROMPTS, np.int32), block_table)
    outputs = [[y0[b, t] for t in range(p)] for b, p in enumerate(PROMPTS)]
    for s in range(STEPS):
        pos = np.array([p + s for p in PROMPTS], np.int32)
        xs = np.stack([x_full[b, pos[b]] for b in range(batch)])[:, None, :]
        y, kv = step(xs, wq, wk, wo, kv, pos, block_table)
        for b in range(batch):
            outputs[b].append(y[b, 0])

    for b, p in enumerate(PROMPTS):
        ref = R.qkv_attention(x_full[b : b + 1, : p + STEPS], "kv", wk, wo, wq=wq,
                              num_heads=HQ, num_kv_heads=HK, head_dim=D, causal=True,
                              rope_theta=10000.0)[0]
        got = np.stack(outputs[b])
        err = np.max(np.abs(got - ref)) / np.max(np.abs(ref))
        assert err <= 1e-5, f"sequence {b}: rel_err {err:.3e}"


def test_position_past_capacity_raises():
    module = attnfuse.parse(layer("step", 1, False))
    step = attnfuse.compile(module)
    kv = np.zeros((PAGES, PAGE, HK, D), np.float32)
    args = (np.zeros((1, 1, E), np.float32), np.zeros((HQ * D, E), np.float32),
            np.zeros((HK * D, E), np.float32), np.zeros((E, HQ * D), np.float32), kv,
            np.array([PAGE * PAGES], np.int32), np.arange(PAGES, dtype=np.int32)[None])
    with pytest.raises(RuntimeError, match="cache position or block table entry out of range"):
        step(*args)
