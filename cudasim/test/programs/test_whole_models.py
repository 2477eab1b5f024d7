"""Whole models through their sm_90a device programs on the emulator.

`attnfuse.compile(module, target="sm_90a")` returns a callable that runs every kernel of the
function in order (the residual adds included) over device memory. Here the driver is the
emulator (ATTNFUSE_CUDA_DRIVER), so the callable takes host arrays and copies them through
device memory; its results must match the CPU path (`target="cpu"`, checked against
independent references by the integration tests) to bf16 accuracy.

Tolerance: both paths keep activations in bf16 between kernels but round at different points
(the CPU kernels keep some intermediates in f32), so they differ by a few bf16 ulps per layer:
we accept max|gpu - cpu| <= 2^-5 max|cpu| (about 8 bf16 ulps at the largest output).
"""
import os
import re

import numpy as np
import pytest

import attnfuse

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def argument_names(text, function):
    """The argument names of `function` in the module text (a parsed module keeps none)."""
    start = text.index(f"func.func @{function}(")
    signature = text[start:text.index("{", start)]
    return [m[1:] for m in re.findall(r"(%[\w]+):", signature)]


def random_arguments(function, batch, seq, seed=0, names=None):
    """Activations N(0, 1); weights N(0, 1/fan_in), the output projections 4x smaller and
    biases N(0, 0.02^2), so that the residual stream stays O(1) through a deep stack (as
    scripts/check_examples.py draws them: a growing stream makes the softmax ever more
    sensitive to the bf16 rounding both paths do)."""
    rng = np.random.default_rng(seed)
    args = []
    for i, (dtype, shape) in enumerate(function.arguments):
        dims = [batch if d is None and j == 0 else (seq if d is None else d)
                for j, d in enumerate(shape)]
        name = names[i] if names else ""
        if i == 0:
            scale = 1.0
        elif len(dims) == 1:
            scale = 0.02
        else:
            scale = (0.25 if name.endswith("_wo") else 1.0) / np.sqrt(dims[-1])
        args.append(attnfuse.to_bf16(rng.standard_normal(dims).astype(np.float32) * scale))
    return args


def check_close(got, ref):
    got = attnfuse.from_bf16(got).astype(np.float64)
    ref = attnfuse.from_bf16(ref).astype(np.float64)
    assert got.shape == ref.shape
    assert np.all(np.isfinite(got)), "the device program left outputs unwritten or non-finite"
    err = np.abs(got - ref).max() / np.abs(ref).max()
    assert err <= 2.0 ** -5, f"max |gpu - cpu| / max |cpu| = {err:.3g}"
    return err


def test_zaya_style_stack_at_several_lengths(tmp_path):
    """Two CCGQA layers (the ZAYA1 toggles: QK-mean, value shift, clamp-eps norm, partial
    RoPE) with their residual adds, batch 2, at lengths that end inside, exactly at and past
    a 64-token block; the arena is allocated once per new high-water size only."""
    module = attnfuse.cca(embed_dim=128, num_heads=4, num_kv_heads=2, head_dim=64,
                          dtype="bf16", rope_theta=1e4, rope_fraction=0.5, num_layers=2)
    gpu = attnfuse.compile(module, target="sm_90a", output_dir=tmp_path, cubin=False)
    cpu = attnfuse.compile(module)
    function = gpu.function("model")
    assert function.launches == 8  # per layer: prologue, attention, output GEMM, add
    for seq in (1, 64, 70):
        args = random_arguments(function, 2, seq, seed=seq)
        check_close(gpu(*args), cpu(*args))
    stats = function.stats()
    assert stats["calls"] == 3 and stats["launches_per_call"] == 8
    allocations = stats["device_allocations"]
    args = random_arguments(function, 2, 64, seed=1)
    check_close(gpu(*args), cpu(*args))
    assert function.stats()["device_allocations"] == allocations  # steady state


def test_kv_gqa_stack_with_torch_cpu_tensors(tmp_path):
    """K=V sharing with GQA (4 query heads over 2 shared key/value heads), RoPE, biases, two
    layers; torch CPU tensors in (bf16), torch tensors out."""
    torch = pytest.importorskip("torch")
    module = attnfuse.qkv_attention(sharing="kv", embed_dim=256, num_heads=4,
                                    num_kv_heads=2, head_dim=64, dtype="bf16",
                                    num_layers=2, rope_theta=1e4, biases=True)
    gpu = attnfuse.compile(module, target="sm_90a", output_dir=tmp_path, cubin=False)
    cpu = attnfuse.compile(module)
    args = random_arguments(gpu.function("model"), 2, 33)
    tensors = [torch.from_numpy(a.view(np.int16)).view(torch.bfloat16) for a in args]
    out = gpu(*tensors)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.bfloat16
    assert tuple(out.shape) == (2, 33, 256)
    check_close(out.view(torch.int16).numpy().view(np.uint16), cpu(*args))


@pytest.mark.parametrize("sharing,head_dim,num_heads,num_kv_heads", [
    ("none", 96, 4, 2),   # Phi-3's head dim
    ("kv", 96, 4, 1),
    ("none", 256, 2, 1),  # Gemma's head dim
    ("kv", 256, 2, 2),
])
def test_layers_with_head_dims_96_and_256(sharing, head_dim, num_heads, num_kv_heads, tmp_path):
    """Head dims that are not 64 or 128, with RoPE: the flash kernel on zero-filled 64-column
    slabs (96) or 64-key tiles (256), and the query rotation (and the keys', for separate K
    and V) as attn.rope kernels after the projection GEMM, whose 128-column tiles do not hold
    whole heads of either size."""
    module = attnfuse.qkv_attention(sharing=sharing, embed_dim=256, num_heads=num_heads,
                                    num_kv_heads=num_kv_heads, head_dim=head_dim,
                                    dtype="bf16", causal=True, rope_theta=1e4)
    gpu = attnfuse.compile(module, target="sm_90a", output_dir=tmp_path, cubin=False)
    cpu = attnfuse.compile(module)
    kinds = {kernel["name"]: kernel["kind"] for kernel in gpu.manifest["kernels"]}
    launched = [kinds[launch["kernel"]] for launch in gpu.manifest["launches"]
                if launch["function"] == "model"]
    assert launched.count("rope") == (2 if sharing == "none" else 1), launched
    function = gpu.function("model")
    for seq in (1, 70, 129):
        args = random_arguments(function, 2, seq, seed=seq)
        check_close(gpu(*args), cpu(*args))


@pytest.mark.parametrize("example", ["gpt300m_kv_gqa4"])
def test_shipped_example_end_to_end(example, tmp_path):
    """A shipped example model, all its layers, batch 2: one call of its device program."""
    with open(os.path.join(REPO, "examples", example + ".mlir")) as f:
        text = f.read()
    module = attnfuse.parse(text)
    gpu = attnfuse.compile(module, target="sm_90a", output_dir=tmp_path, cubin=False)
    assert not gpu.warnings
    cpu = attnfuse.compile(module)
    args = random_arguments(gpu.function("model"), 2, 8,
                            names=argument_names(text, "model"))
    check_close(gpu(*args), cpu(*args))


def test_argument_errors_match_the_cpu_path(tmp_path):
    module = attnfuse.qkv_attention(sharing="kv", embed_dim=256, num_heads=4,
                                    num_kv_heads=2, head_dim=64, dtype="bf16")
    gpu = attnfuse.compile(module, target="sm_90a", output_dir=tmp_path, cubin=False)
    cpu = attnfuse.compile(module)
    args = random_arguments(gpu.function("model"), 1, 4)
    cases = [
        args[:-1],                                                   # one argument short
        [args[0].astype(np.float32)] + args[1:],                     # wrong dtype
        [args[0]] + [np.zeros((255, 256), np.uint16)] + args[2:],    # wrong static size
    ]
    for bad in cases:
        with pytest.raises(ValueError) as on_cpu:
            cpu(*bad)
        with pytest.raises(ValueError) as on_gpu:
            gpu(*bad)
        assert str(on_gpu.value) == str(on_cpu.value)


def test_shipped_decode_example_prefill_and_step(tmp_path):
    """examples/gpt300m_kv_gqa4_decode.mlir (20 K=V GQA-4 layers over a paged cache): the
    prefill of two prompts, then one step, through the device programs of @prefill and @step
    (cache writes, gathers, RoPE, attention over the cache, the split-KV decode kernels), each
    call's caches updated in place, against the same calls on the CPU path."""
    with open(os.path.join(REPO, "examples", "gpt300m_kv_gqa4_decode.mlir")) as f:
        text = f.read()
    module = attnfuse.parse(text)
    gpu = attnfuse.compile(module, target="sm_90a", output_dir=tmp_path, cubin=False)
    assert not gpu.warnings
    rng = np.random.default_rng(5)
    prefill = gpu.function("prefill")
    names = {f: argument_names(text, f) for f in ("prefill", "step")}
    weights, caches = {}, {}
    for name, (dtype, shape) in zip(names["prefill"], prefill.arguments):
        if name.endswith("_cache"):
            caches[name] = np.zeros(shape, np.uint16)
        elif re.match(r"l\d+_", name):
            scale = (0.25 if name.endswith("_wo") else 1.0) / np.sqrt(shape[-1])
            weights[name] = attnfuse.to_bf16(
                rng.standard_normal(shape).astype(np.float32) * scale)
    cpu_caches = {n: c.copy() for n, c in caches.items()}
    pages = next(iter(caches.values())).shape[0]
    table = rng.permutation(pages)[:8].reshape(2, 4).astype(np.int32)
    lengths = np.array([9, 4], np.int32)

    def call(function, cache, **values):
        args = dict(weights, **cache, **values, block_table=table)
        out, *updated = function(*[args[n] for n in names[function.name]])
        assert all(u is c for u, c in zip(updated, cache.values()))  # in place
        return out

    cpu = {f: attnfuse.compile(module, entry=f) for f in ("prefill", "step")}
    x = attnfuse.to_bf16(rng.standard_normal((2, 9, 1024)).astype(np.float32))
    start = np.zeros(2, np.int32)
    got = call(prefill, caches, x=x, positions=start, lengths=lengths)
    ref = call(cpu["prefill"], cpu_caches, x=x, positions=start, lengths=lengths)
    for b, n in enumerate(lengths):  # the padding rows of a prompt carry no meaning
        check_close(got[b, :n], ref[b, :n])
    for name in caches:
        check_close(caches[name], cpu_caches[name])
    token = attnfuse.to_bf16(rng.standard_normal((2, 1, 1024)).astype(np.float32))
    got = call(gpu.function("step"), caches, x=token, positions=lengths)
    ref = call(cpu["step"], cpu_caches, x=token, positions=lengths)
    check_close(got, ref)
