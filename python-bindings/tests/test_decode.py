"""Decode over a KV cache from Python: attnfuse.qkv_decode / attnfuse.cca_decode
build `prefill` and `step` functions; prompts of different lengths are
prefilled, then decoded token by token, each call taking the caches and states
the previous one returned. Every position must equal the whole-sequence layer
of the float64 reference (integration_test/reference.py)."""

import numpy as np
import pytest

import attnfuse
import reference as R

E = 32
PROMPTS = (5, 2)
STEPS = 3


def weights_for(function, rng):
    """Random weights for the non-state arguments named l0_*."""
    out = {}
    for name, (_, shape) in zip(function.argument_names, function.arguments):
        if not name.startswith("l0_") or name.endswith(("_cache", "_state")):
            continue
        if name.endswith("temp"):
            out[name] = rng.uniform(-0.5, 2.0, shape).astype(np.float32)
        elif name.endswith(("_b", "dw_b", "g_b")):
            out[name] = (0.1 * rng.standard_normal(shape)).astype(np.float32)
        else:
            fan_in = int(np.prod(shape[1:]))
            out[name] = (rng.standard_normal(shape) * fan_in ** -0.5).astype(np.float32)
    return out


def run_decode(module, states, block_table=None, seed=7):
    """Prefill + STEPS steps; returns (outputs per sequence, x, weights)."""
    prefill = attnfuse.compile(module, entry="prefill")
    step = attnfuse.compile(module, entry="step")
    rng = np.random.default_rng(seed)
    batch = len(PROMPTS)
    weights = weights_for(prefill, rng)
    x_full = rng.standard_normal((batch, max(PROMPTS) + STEPS, E)).astype(np.float32)

    def call(function, x, positions, lengths=None):
        values = dict(weights, x=x, positions=positions)
        values.update(states)
        if lengths is not None:
            values["lengths"] = lengths
        if block_table is not None:
            values["block_table"] = block_table
        results = function(*[values[name] for name in function.argument_names])
        names = [n for n in function.argument_names if n.endswith(("_cache", "_state"))]
        states.update(zip(names, results[1:]))
        return results[0]

    x0 = np.zeros((batch, max(PROMPTS), E), np.float32)
    for b, p in enumerate(PROMPTS):
        x0[b, :p] = x_full[b, :p]
    y0 = call(prefill, x0, np.zeros(batch, np.int32), np.array(PROMPTS, np.int32))
    outputs = [[y0[b, t] for t in range(p)] for b, p in enumerate(PROMPTS)]
    for s in range(STEPS):
        pos = np.array([p + s for p in PROMPTS], np.int32)
        xs = np.stack([x_full[b, pos[b]] for b in range(batch)])[:, None, :]
        y = call(step, xs, pos)
        for b in range(batch):
            outputs[b].append(y[b, 0])
    return outputs, x_full, weights


def check(outputs, x_full, reference):
    for b, p in enumerate(PROMPTS):
        ref = reference(x_full[b : b + 1, : p + STEPS])[0]
        got = np.stack(outputs[b])
        err = np.max(np.abs(got - ref)) / np.max(np.abs(ref))
        assert err <= 1e-5, f"sequence {b}: rel_err {err:.3e}"


def test_kv_gqa_paged_decode_matches_the_whole_sequence():
    hq, hk, d, page, pages = 4, 2, 8, 4, 3
    batch = len(PROMPTS)
    pool = batch * pages + 1  # one page nobody uses
    module = attnfuse.qkv_decode(sharing="kv", embed_dim=E, num_heads=hq,
                                 num_kv_heads=hk, head_dim=d, rope_theta=1e4,
                                 page_size=page, num_pages=pool)
    rng = np.random.default_rng(3)
    table = rng.permutation(pool)[: batch * pages].reshape(batch, pages).astype(np.int32)
    states = {"l0_kv_cache": np.zeros((pool, page, hk, d), np.float32)}
    outputs, x_full, w = run_decode(module, states, block_table=table)
    check(outputs, x_full, lambda x: R.qkv_attention(
        x, "kv", w["l0_wk"], w["l0_wo"], wq=w["l0_wq"], num_heads=hq,
        num_kv_heads=hk, head_dim=d, causal=True, rope_theta=1e4))


@pytest.mark.parametrize("norm", [None, "clamp_eps"],
                         ids=["sqrt_eps", "clamp_eps"])
def test_ccgqa_decode_matches_the_whole_sequence(norm):
    hq, hk, d, capacity = 4, 2, 8, 16
    batch = len(PROMPTS)
    eps = 2.0 ** -23 if norm else None  # transformers' f32 norm eps
    module = attnfuse.cca_decode(embed_dim=E, num_heads=hq, num_kv_heads=hk,
                                 head_dim=d, rope_theta=1e4, rope_fraction=0.5,
                                 capacity=capacity, norm=norm, eps=eps)
    c = (hq + hk) * d
    states = {"l0_k_cache": np.zeros((batch, capacity, hk, d), np.float32),
              "l0_v_cache": np.zeros((batch, capacity, hk, d), np.float32),
              "l0_conv_state": np.zeros((batch, 2, c), np.float32),
              "l0_shift_state": np.zeros((batch, 1, hk * d // 2), np.float32)}
    outputs, x_full, w = run_decode(module, states)
    check(outputs, x_full, lambda x: R.cca(
        x, w["l0_wq"], w["l0_wk"], w["l0_wv"], w["l0_conv_dw_w"], w["l0_conv_dw_b"],
        w["l0_conv_g_w"], w["l0_conv_g_b"], w["l0_temp"], w["l0_wo"], hq, hk, d,
        (2, 2), wv_prev=w["l0_wv_prev"], qk_mean=True, value_shift=True,
        temperature="raw", causal=True, rope_theta=1e4, rope_fraction=0.5,
        norm=norm or "sqrt_eps", eps=eps or 1e-12))


def test_decode_cost_counts_the_state():
    module = attnfuse.cca_decode(embed_dim=2048, num_heads=8, num_kv_heads=2,
                                 head_dim=128, rope_theta=1e4, rope_fraction=0.5,
                                 capacity=4096, dtype="bf16", batch=8)
    report = attnfuse.cost(module)
    layer = report["layers"][0]
    assert layer["op"] == "cca_decode" and layer["decode_step"] is True
    assert layer["cached_tokens_per_sequence"] == 4096
    # P C + Lk / 2 = 2 * 1280 + 128 values of 2 bytes.
    assert layer["state_bytes_per_sequence"] == 2 * (2 * 1280 + 128)


@pytest.mark.parametrize("config, message", [
    (dict(capacity=None), "capacity must be a positive integer"),
    (dict(capacity=8, page_size=4, num_pages=2), "capacity is for contiguous caches"),
    (dict(capacity=None, num_pages=2), "num_pages is given without page_size"),
    (dict(capacity=8, sharing="qk", num_kv_heads=2), "num_heads (4) must equal num_kv_heads"),
])
def test_decode_builder_errors_name_the_parameter(config, message):
    base = dict(embed_dim=E, num_heads=4, head_dim=8)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        attnfuse.qkv_decode(**dict(base, **config))


def test_position_past_capacity_raises():
    module = attnfuse.qkv_decode(sharing="kv", embed_dim=E, num_heads=4,
                                 num_kv_heads=2, head_dim=8, capacity=4)
    step = attnfuse.compile(module, entry="step")
    args = {name: np.zeros(shape, np.float32) for name, (_, shape)
            in zip(step.argument_names,
                   [(t, [1 if d is None else d for d in s]) for t, s in step.arguments])}
    args["positions"] = np.array([4], np.int32)
    with pytest.raises(RuntimeError, match="cache position or block table entry out of range"):
        step(*[args[name] for name in step.argument_names])


def test_lengths_are_clamped_to_the_new_tokens():
    """lengths past T write (and roll) the T real rows, never past them."""
    module = attnfuse.cca_decode(embed_dim=E, num_heads=4, num_kv_heads=2, head_dim=8,
                                 capacity=16, rope_theta=1e4, rope_fraction=0.5)
    prefill = attnfuse.compile(module, entry="prefill")
    rng = np.random.default_rng(5)
    values = weights_for(prefill, rng)
    values.update(x=rng.standard_normal((2, 3, E)).astype(np.float32),
                  positions=np.zeros(2, np.int32),
                  l0_k_cache=np.zeros((2, 16, 2, 8), np.float32),
                  l0_v_cache=np.zeros((2, 16, 2, 8), np.float32),
                  l0_conv_state=np.zeros((2, 2, 48), np.float32),
                  l0_shift_state=np.zeros((2, 1, 8), np.float32))
    # Fresh caches per call: each call writes its caches in place.
    def fresh(lengths):
        return [np.copy(dict(values, lengths=lengths)[n])
                for n in prefill.argument_names]
    exact = prefill(*fresh(np.array([3, 3], np.int32)))
    clamped = prefill(*fresh(np.array([7, 3], np.int32)))
    for a, b in zip(exact, clamped):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("num_layers", [1, 2])
@pytest.mark.parametrize("paged", [False, True], ids=["contiguous", "paged"])
def test_step_updates_the_caches_in_place(num_layers, paged):
    """A step writes its new rows into the caller's caches: each cache result
    IS the argument (same object, same memory), the rows of other positions
    are untouched, and the written rows equal those of a step compiled with
    in_place_caches=False (which returns new arrays and writes nothing)."""
    hq, hk, d = 4, 2, 8
    layout = dict(page_size=4, num_pages=5) if paged else dict(capacity=16)
    module = attnfuse.qkv_decode(sharing="kv", embed_dim=E, num_heads=hq,
                                 num_kv_heads=hk, head_dim=d, rope_theta=1e4,
                                 num_layers=num_layers, **layout)
    step = attnfuse.compile(module, entry="step")
    copying = attnfuse.compile(module, entry="step", in_place_caches=False)
    rng = np.random.default_rng(11)
    values = weights_for(step, rng)
    for name, (_, shape) in zip(step.argument_names, step.arguments):
        if name.startswith("l1_") and not name.endswith("_cache"):
            values[name] = values["l0_" + name[3:]]
        if name.endswith("_cache"):
            values[name] = rng.standard_normal(
                [2 if dim is None else dim for dim in shape]).astype(np.float32)
    values["x"] = rng.standard_normal((2, 1, E)).astype(np.float32)
    values["positions"] = np.array([5, 2], np.int32)
    if paged:
        values["block_table"] = np.array([[4, 0], [1, 3]], np.int32)
    cache_names = [n for n in step.argument_names if n.endswith("_cache")]
    before = {n: values[n].copy() for n in cache_names}

    want = copying(*[values[n] for n in step.argument_names])
    for n in cache_names:  # the copying step leaves its arguments alone
        np.testing.assert_array_equal(values[n], before[n])
    got = step(*[values[n] for n in step.argument_names])

    for n in cache_names:
        index = step.argument_names.index(n)
        result = step.result_arguments.index(index)
        assert got[result] is values[n]
        assert np.shares_memory(got[result], values[n])
        assert not np.shares_memory(want[result], values[n])
        np.testing.assert_array_equal(got[result], want[result])
        # Only the new tokens' rows changed.
        changed = np.argwhere(np.any(values[n] != before[n], axis=(2, 3)))
        assert 0 < len(changed) <= 2, changed
    np.testing.assert_array_equal(got[0], want[0])
    assert copying.written_arguments == [] and set(copying.result_arguments) == {-1}


def test_cache_updated_in_place_must_be_a_writable_contiguous_array():
    module = attnfuse.qkv_decode(sharing="kv", embed_dim=E, num_heads=4,
                                 num_kv_heads=2, head_dim=8, capacity=8)
    step = attnfuse.compile(module, entry="step")
    args = {name: np.zeros([1 if d is None else d for d in s], np.float32)
            for name, (_, s) in zip(step.argument_names, step.arguments)}
    args["positions"] = np.zeros(1, np.int32)
    strided = np.zeros((1, 16, 2, 8), np.float32)[:, ::2]
    read_only = np.zeros((1, 8, 2, 8), np.float32)
    read_only.setflags(write=False)
    for bad, message in ((strided, "C-contiguous"), (read_only, "writable")):
        with pytest.raises(ValueError, match=message):
            step(*[dict(args, l0_kv_cache=bad)[n] for n in step.argument_names])
    # A cache sharing memory with another argument would change under it.
    shared = dict(args, l0_kv_cache=np.zeros((1, 8, 2, 8), np.float32))
    shared["x"] = shared["l0_kv_cache"].reshape(-1)[:E].reshape(1, 1, E)
    with pytest.raises(RuntimeError, match="updated in place and shares memory"):
        step(*[shared[n] for n in step.argument_names])
