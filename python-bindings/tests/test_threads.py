"""The kernels' parallel loops: every thread count gives the same bits.

Each tile's reductions (over keys, the model width, the convolution taps)
run on one thread, so a layer compiled for 1, 2 or 3 threads, or with the
sequential lowering (parallel=False), returns bit-identical arrays. The
inputs are sized so that every kernel has several tiles per loop (small
block sizes, a batch of 3, a sequence that is not a multiple of a tile), and
the result is also checked against the float64 reference, so that a kernel
that wrote nothing, or the same wrong tile everywhere, cannot pass.
"""

import numpy as np
import pytest

import attnfuse
import reference as R
from test_cpu import cca_init, linear_init, rel_err

TILES = dict(block_q=8, block_kv=8, block_s=8, block_n=8, block_k=8)
THREADS = [1, 2, 3]


def random_args(function, rng, init, batch, seq):
    args, exact = [], {}
    for name, (dtype, shape) in zip(function.argument_names, function.arguments):
        assert dtype == "f32"
        shape = tuple(batch if i == 0 and d is None else seq if d is None else d
                      for i, d in enumerate(shape))
        key = name.split("_", 1)[-1] if name != "x" else "x"
        array = np.asarray(init(key, shape, rng), np.float32)
        args.append(array)
        exact[key] = array.astype(np.float64)
    return args, exact


def run_all(module, args, **options):
    """{label: output} for each thread count and the sequential lowering."""
    outputs = {}
    for threads in THREADS:
        function = attnfuse.compile(module, num_threads=threads, **options)
        outputs[f"{threads} threads"] = function(*[a.copy() for a in args])
    sequential = attnfuse.compile(module, parallel=False, **options)
    outputs["sequential"] = sequential(*[a.copy() for a in args])
    # Threads that sleep between loops compute the same, also called after
    # and before a function whose threads spin.
    passive = attnfuse.compile(module, num_threads=2, wait_policy="passive",
                               **options)
    outputs["2 threads, passive"] = passive(*[a.copy() for a in args])
    function(*[a.copy() for a in args])
    outputs["2 threads, passive, again"] = passive(*[a.copy() for a in args])
    return outputs


def assert_bit_identical(outputs):
    first_label, first = next(iter(outputs.items()))
    for label, output in outputs.items():
        assert output.shape == first.shape
        assert output.tobytes() == first.tobytes(), (
            f"{label} differs from {first_label}: max |diff| "
            f"{np.max(np.abs(output - first))}")


def test_kv_gqa_layer_same_bits_for_every_thread_count():
    config = dict(sharing="kv", embed_dim=32, num_heads=4, num_kv_heads=2,
                  rope_theta=1e4, rope_fraction=0.5, biases=True)
    module = attnfuse.qkv_attention(dtype="f32", **config)
    probe = attnfuse.compile(module, runtime_checks=False, opt_level=0)
    args, exact = random_args(probe, np.random.default_rng(11), linear_init,
                              batch=3, seq=29)
    outputs = run_all(module, args, **TILES)
    assert_bit_identical(outputs)
    ref = R.qkv_attention(
        exact["x"], "kv", exact["wk"], exact["wo"], wq=exact["wq"],
        bq=exact["bq"], bk=exact["bk"], bo=exact["bo"], num_heads=4,
        num_kv_heads=2, head_dim=8, causal=True, window=None,
        rope_theta=1e4, rope_fraction=0.5)
    assert rel_err(outputs["2 threads"], ref) <= 1e-5


def test_ccgqa_layer_same_bits_for_every_thread_count():
    config = dict(embed_dim=32, num_heads=4, num_kv_heads=2, head_dim=4,
                  rope_theta=1e4, rope_fraction=0.5)
    module = attnfuse.cca(dtype="f32", **config)
    probe = attnfuse.compile(module, runtime_checks=False, opt_level=0)
    args, exact = random_args(probe, np.random.default_rng(12), cca_init,
                              batch=3, seq=27)
    outputs = run_all(module, args, **TILES)
    assert_bit_identical(outputs)
    ref = R.cca(exact["x"], exact["wq"], exact["wk"], exact["wv"],
                exact["conv_dw_w"], exact["conv_dw_b"], exact["conv_g_w"],
                exact["conv_g_b"], exact["temp"], exact["wo"], 4, 2, 4, (2, 2),
                wv_prev=exact["wv_prev"], qk_mean=True, value_shift=True,
                temperature="raw", causal=True, rope_theta=1e4,
                rope_fraction=0.5)
    assert rel_err(outputs["2 threads"], ref) <= 1e-5


def test_decode_step_same_bits_and_cache_for_every_thread_count():
    """attn.flash_decode: the new rows are written first, then the
    (sequence, KV head) pairs attend in parallel; output and updated cache
    agree bit for bit."""
    module = attnfuse.qkv_decode(sharing="kv", embed_dim=32, num_heads=4,
                                 num_kv_heads=2, head_dim=8, rope_theta=1e4,
                                 capacity=40)
    probe = attnfuse.compile(module, entry="step", runtime_checks=False,
                             opt_level=0)
    names = probe.argument_names
    rng = np.random.default_rng(13)
    args = []
    for name, (_, shape) in zip(names, probe.arguments):
        shape = tuple(3 if d is None else d for d in shape)
        args.append((rng.standard_normal(shape) * 0.3).astype(np.float32))
    args[names.index("positions")] = np.array([5, 39, 17], np.int32)
    cache_index = names.index("l0_kv_cache")
    results = {}
    for label, options in [(f"{t} threads", dict(num_threads=t))
                           for t in THREADS] + [("sequential",
                                                 dict(parallel=False))]:
        step = attnfuse.compile(module, entry="step", block_kv=8, **options)
        call_args = [a.copy() for a in args]
        out = step(*call_args)
        out = out[0] if isinstance(out, tuple) else out
        results[label] = np.concatenate([out.ravel(),
                                         call_args[cache_index].ravel()])
    assert_bit_identical(results)
    assert np.any(results["sequential"][:out.size] != 0)


def test_num_threads_validation():
    module = attnfuse.qkv_attention(dtype="f32", sharing="kv", embed_dim=16,
                                    num_heads=2)
    with pytest.raises(ValueError, match="num_threads must be a positive"):
        attnfuse.compile(module, num_threads=0)
    with pytest.raises(ValueError, match="needs parallel=True"):
        attnfuse.compile(module, num_threads=2, parallel=False)
    with pytest.raises(ValueError, match="wait_policy must be 'active' or "
                       "'passive', got 'idle'"):
        attnfuse.compile(module, wait_policy="idle")
