"""Gradients of the layer ops: `attnfuse.grad` against torch autograd.

Each case builds a layer (or a stack of layers) with the Python builders,
differentiates it with `attnfuse.grad` (the `attn-differentiate` pass: a
function `model_vjp(arguments..., d_out) -> (gradients...)`), compiles
`model_vjp` for the CPU and compares every gradient it returns (the input's
and every weight's) with torch's autograd of grad_reference.py, a plain
float64 implementation of the forward written from docs/semantics.md (not
from a lowering), evaluated on exactly the values the compiled function
received. The reference itself is checked against float64 finite differences
on tiny shapes (test_finite_differences), and its forward against the
compiled forward (test_reference_forward), which pins the argument order.

Shapes are odd on purpose (S = 7 and 13, widths and head dims that are not
powers of two), so that no tile divides them; batch and sequence are dynamic
unless a case says otherwise.

Error norm, per gradient tensor: max|g - ref| / max|ref| (the max-norm
relative error of test_numerics.py). A gradient that is zero in exact
arithmetic (the key bias of separate keys and values without RoPE, see
zero_gradients) is measured as max|g| over the scale of its layer's
key-weight gradient instead.

Tolerances:
* f32: 1e-5, the forward's. The backward accumulates in f32 like the
  forward; its longest sums are the weight gradients' reductions over
  B * S tokens (at most 39 here) and the attention rows' over S keys, so
  f32 rounding (u = 6e-8) stays near 1e-6 (measured: at most 2e-6).
* bf16: BF16_TOLERANCE (see its comment): every gradient op returns bf16
  tensors, so the backward rounds at each of its op boundaries (about twice
  as many as the forward's), on top of the bf16 forward recomputed inside.

The runtime is dominated by the JIT compilations (one per case, one to a
few seconds each on two cores): the matrix is a covering set of the
configurations, not their cross product, and compiles without LLVM's
optimizations (OPT_LEVEL).
"""

import math
import zlib
from dataclasses import dataclass, field
from typing import Dict

import numpy as np
import pytest

import torch  # noqa: E402

import grad_reference as G  # noqa: E402

from attnfuse_package import import_attnfuse  # noqa: E402

attnfuse = import_attnfuse()

F32_TOLERANCE = 1e-5
# bf16 (unit roundoff u = 2^-9 = 1.95e-3): the backward rounds to bf16 at
# every op boundary of the recomputed forward and of the gradient ops, some
# 30 roundings on the longest (CCA) paths, so about sqrt(30) u = 1.1e-2 for
# random-sign accumulation and 30 u = 6e-2 in the worst case; 3e-2 sits
# between, as test_numerics.py's forward bound does. Measured with every
# case of the f32 matrix built in bf16: at most 1.2e-2 on the cases of
# test_gradients_bf16 and 2.2e-2 elsewhere, except in three ill-conditioned
# gradients, which is why their cases are not bf16 cases (their f32 errors
# are 1e-6): the temperature of a one-KV-head layer (one sum over B * S * d
# terms whose magnitudes add up to 150 times the result: 0.21), a key bias
# with RoPE (a small sum of cancelling dk rows: 3.6e-2) and a clamped
# temperature of e^2 (logits near 18 amplify each rounding: 3.9e-2).
BF16_TOLERANCE = 3e-2

# The tests compile without LLVM's optimizations: they do not change the
# arithmetic under test (no fast-math), and they take about two thirds of
# the compile time of a vjp function. test_grad_wrt_names_and_indices
# compiles at the default level.
OPT_LEVEL = 0
FLOAT_DTYPES = ("f16", "bf16", "f32", "f64")
ENTRY = "model"


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    # The reference runs thousands of tiny ops (finite differences): torch's
    # intra-op threads only add overhead there, several times over on a
    # loaded machine.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# ---------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------


@dataclass
class Case:
    id: str
    kind: str  # "qkv" or "cca"
    config: Dict = field(default_factory=dict)  # the builder's keywords
    batch: int = 2
    seq: int = 7

    def module(self, dtype="f32"):
        build = attnfuse.qkv_attention if self.kind == "qkv" else attnfuse.cca
        return build(dtype=dtype, **self.config)

    def reference(self, args):
        return G.model(self.kind, args, **self.config)


def qkv(id, batch=2, seq=7, **config):
    return pytest.param(Case(id, "qkv", config, batch, seq), id=id)


def cca(id, batch=2, seq=7, **config):
    return pytest.param(Case(id, "cca", config, batch, seq), id=id)


# attn.qkv_attention: every sharing mode with MHA, GQA and MQA where the mode
# allows it (qk and qkv use the key as the query: Hq == Hk), RoPE none, full
# and partial, causal, causal + window, window alone and neither, biases on
# about half. Head dims 5, 6 and 8; widths 20 and 36.
QKV_CASES = [
    qkv("none-MHA-causal-bias-S7", sharing="none", embed_dim=20, num_heads=3,
        head_dim=6, biases=True),
    qkv("none-GQA-rope-causal-S13", sharing="none", seq=13, embed_dim=36,
        num_heads=4, num_kv_heads=2, head_dim=6, rope_theta=1e4),
    qkv("none-MQA-halfrope-window3-bias-S13", sharing="none", seq=13,
        embed_dim=20, num_heads=4, num_kv_heads=1, head_dim=8,
        rope_theta=100.0, rope_fraction=0.5, window=3, biases=True),
    qkv("none-GQA-d5-noncausal-scale-B3-S7", sharing="none", batch=3,
        embed_dim=20, num_heads=4, num_kv_heads=2, head_dim=5, causal=False,
        scale=0.35),
    qkv("none-MHA-halfrope-window4only-bias-S13", sharing="none", seq=13,
        embed_dim=20, num_heads=2, head_dim=8, rope_theta=100.0,
        rope_fraction=0.5, causal=False, window=4, biases=True),
    qkv("kv-MHA-rope-causal-bias-S7", sharing="kv", embed_dim=20,
        num_heads=3, head_dim=6, rope_theta=100.0, biases=True),
    qkv("kv-GQA-halfrope-window3-S13", sharing="kv", seq=13, embed_dim=36,
        num_heads=4, num_kv_heads=2, head_dim=8, rope_theta=100.0,
        rope_fraction=0.5, window=3),
    qkv("kv-MQA-noncausal-bias-S7", sharing="kv", embed_dim=20, num_heads=4,
        num_kv_heads=1, head_dim=6, causal=False, biases=True),
    qkv("kv-MQA-rope-window5only-S13", sharing="kv", seq=13, embed_dim=20,
        num_heads=2, num_kv_heads=1, head_dim=8, rope_theta=1e4,
        causal=False, window=5),
    qkv("qk-MHA-rope-causal-bias-S7", sharing="qk", embed_dim=20,
        num_heads=3, head_dim=6, rope_theta=100.0, biases=True),
    qkv("qk-MHA-noncausal-S13", sharing="qk", seq=13, embed_dim=36,
        num_heads=4, head_dim=6, causal=False),
    qkv("qk-MHA-halfrope-window3-bias-S13", sharing="qk", seq=13,
        embed_dim=20, num_heads=2, head_dim=8, rope_theta=100.0,
        rope_fraction=0.5, window=3, biases=True),
    qkv("qkv-MHA-rope-causal-bias-S13", sharing="qkv", seq=13, embed_dim=20,
        num_heads=3, head_dim=6, rope_theta=100.0, biases=True),
    qkv("qkv-MHA-halfrope-noncausal-S7", sharing="qkv", embed_dim=36,
        num_heads=4, head_dim=8, rope_theta=100.0, rope_fraction=0.5,
        causal=False),
    qkv("qkv-MHA-window2-bias-B3-S7", sharing="qkv", batch=3, embed_dim=20,
        num_heads=3, head_dim=6, window=2, biases=True),
    # The additive logit bias (the paper's (Q=K-V)+ and ALiBi-style biases),
    # [S, S] and [Hq, S, S]: its gradient is dS summed over the batch (and
    # the heads).
    qkv("qk-MHA-logitbias-rope-causal-S13", sharing="qk", seq=13,
        embed_dim=20, num_heads=2, head_dim=8, rope_theta=100.0,
        logit_bias="shared"),
    qkv("kv-GQA-logitbias-perhead-window3-bias-B3-S7", sharing="kv",
        batch=3, embed_dim=36, num_heads=4, num_kv_heads=2, head_dim=6,
        window=3, biases=True, logit_bias="per_head"),
    qkv("none-MQA-logitbias-noncausal-S13", sharing="none", seq=13,
        embed_dim=20, num_heads=4, num_kv_heads=1, head_dim=5,
        causal=False, logit_bias="shared"),
]

# attn.cca: CCA (Hq == Hk) and CCGQA (GQA and MQA), QK-mean and value shift
# on and off, raw and clamped temperature, both norms, the padding mask,
# causal, windowed and bidirectional attention, RoPE none, full and partial,
# three pairs of convolution kernel sizes.
CCA_CASES = [
    cca("CCA-mean-shift-raw-sqrt-causal-S7", embed_dim=28, num_heads=3,
        head_dim=6),
    cca("CCGQA-mean-shift-clamped-clampeps-halfrope-mask-S13", seq=13,
        embed_dim=36, num_heads=4, num_kv_heads=2, head_dim=8,
        temperature="clamped", norm="clamp_eps", eps=2.0 ** -23,
        rope_theta=100.0, rope_fraction=0.5, padding_mask=True),
    cca("CCGQA-MQA-nomean-noshift-raw-sqrt-rope-window4-S13", seq=13,
        embed_dim=20, num_heads=4, num_kv_heads=1, head_dim=6,
        qk_mean=False, value_shift=False, rope_theta=1e4, window=4),
    cca("CCGQA-mean-noshift-clamped-sqrt-mask-noncausal-B3-S7", batch=3,
        embed_dim=28, num_heads=4, num_kv_heads=2, head_dim=6,
        value_shift=False, temperature="clamped", causal=False,
        padding_mask="i32"),
    cca("CCA-nomean-shift-raw-clampeps-halfrope-mask-window3-k32-S13",
        seq=13, embed_dim=28, num_heads=2, head_dim=8, qk_mean=False,
        norm="clamp_eps", rope_theta=100.0, rope_fraction=0.5, window=3,
        padding_mask=True, conv_kernel_sizes=(3, 2)),
    cca("CCGQA-mean-shift-raw-sqrt-k13-S7", embed_dim=20, num_heads=4,
        num_kv_heads=2, head_dim=6, conv_kernel_sizes=(1, 3)),
    cca("CCA-mean-shift-clamped4-sqrt-rope-mask-window5-S13", seq=13,
        embed_dim=36, num_heads=4, head_dim=6, temperature="clamped",
        rope_theta=1e4, window=5, padding_mask=True),
    cca("CCGQA-MQA-nomean-shift-clamped-clampeps-window3only-S7",
        embed_dim=20, num_heads=2, num_kv_heads=1, head_dim=8,
        qk_mean=False, temperature="clamped", norm="clamp_eps",
        causal=False, window=3),
    # Groups 16 wide: attn-fuse computes the grouped convolution's gradient
    # as GEMMs (a weight gradient and a projection per group).
    cca("CCGQA-wide-groups-k32-halfrope-mask-S13", seq=13, embed_dim=40,
        num_heads=4, num_kv_heads=2, head_dim=16, rope_theta=1e4,
        rope_fraction=0.5, padding_mask=True, conv_kernel_sizes=(3, 2)),
]

# Stacks of two layers: residuals, per-layer RoPE and windows, the padding
# mask read by every layer; one stack without residuals.
STACK_CASES = [
    qkv("stack2-kv-GQA-rope-window-bias-S13", sharing="kv", seq=13,
        embed_dim=36, num_heads=4, num_kv_heads=2, head_dim=6,
        rope_theta=[1e4, None], window=[None, 4], biases=True, num_layers=2),
    cca("stack2-CCGQA-halfrope-mask-window-S13", seq=13, embed_dim=28,
        num_heads=4, num_kv_heads=2, head_dim=8, rope_theta=[100.0, None],
        rope_fraction=0.5, window=[None, 4], padding_mask=True,
        num_layers=2),
    qkv("stack2-qk-MHA-noresidual-S7", sharing="qk", embed_dim=20,
        num_heads=3, head_dim=6, rope_theta=100.0, num_layers=2,
        residual=False),
]

ALL_CASES = QKV_CASES + CCA_CASES + STACK_CASES

# The reference lowering (fused=False) on a covering subset, called with
# torch CPU tensors instead of numpy arrays.
REFERENCE_LOWERING_CASES = [
    QKV_CASES[2], QKV_CASES[6], QKV_CASES[11], QKV_CASES[13], QKV_CASES[16],
    CCA_CASES[1], CCA_CASES[4], STACK_CASES[0],
]


# ---------------------------------------------------------------------------
# Harness
# ---------------------------------------------------------------------------

# Clamped temperatures inside (0.7, 1.3) and outside (-0.2, 2.4) the clamp
# range [1e-7, 2], so both the exp and the zero gradient past the clamp show.
CLAMPED_TEMPS = (0.7, -0.2, 1.3, 2.4)


def padding(batch, seq):
    """[B, S] int64, 1 for real tokens: sequence 0 padded on the left (its
    first queries see no key under a causal mask), sequence 1 on the right,
    sequence 2 on the left and with a hole."""
    mask = np.ones((batch, seq), np.int64)
    mask[0, :2] = 0
    if batch > 1:
        mask[1, seq - 3:] = 0
    if batch > 2:
        mask[2, :1] = 0
        mask[2, seq // 2] = 0
    return mask


def make_inputs(case, module, seed):
    """{name: array} for the arguments of `model` (float32, the mask int),
    weights scaled by 1/sqrt(fan in) so that activations stay O(1)."""
    rng = np.random.default_rng(seed)
    names = module.argument_names(ENTRY)
    specs, _ = module.signature(ENTRY)
    temperature = case.config.get("temperature", "raw")
    values = {}
    for name, (dtype, shape) in zip(names, specs):
        dims = [case.batch if i == 0 and d is None else
                case.seq if d is None else d for i, d in enumerate(shape)]
        base = name.split("_", 1)[1] if name.startswith("l") else name
        if dtype not in FLOAT_DTYPES:
            values[name] = padding(case.batch, case.seq).astype(
                np.int32 if dtype == "i32" else np.int64)
            continue
        if base == "logit_bias":  # [S, S] or [Hq, S, S]
            dims = [case.seq if d is None else d for d in shape]
            value = 0.5 * rng.standard_normal(dims)
        elif base == "temp":
            if temperature == "clamped":
                value = np.resize(CLAMPED_TEMPS, dims)
            else:
                value = rng.uniform(0.5, 1.5, dims)
        elif base == "x":
            value = rng.standard_normal(dims)
        elif base.startswith("b") or base.endswith("_b"):
            value = 0.5 * rng.standard_normal(dims)
        else:  # [out, in] or [out, in / groups, taps]
            fan_in = int(np.prod(dims[1:]))
            value = rng.standard_normal(dims) / math.sqrt(fan_in)
        values[name] = value.astype(np.float32)
    return names, values


def rel_err(g, ref):
    scale = np.max(np.abs(ref))
    return float(np.max(np.abs(g - ref)) / (scale if scale > 0 else 1.0))


def reference_gradients(case, names, values, d_out, wrt):
    """torch float64 autograd of the reference: {name: gradient}."""
    args = {}
    for name in names:
        value = np.asarray(values[name])
        if value.dtype.kind == "f":
            tensor = torch.tensor(value, dtype=torch.float64,
                                  requires_grad=name in wrt)
        else:
            tensor = torch.from_numpy(value)
        args[name] = tensor
    out = case.reference(args)
    out.backward(torch.tensor(np.asarray(d_out), dtype=torch.float64))
    return {name: (args[name].grad if args[name].grad is not None
                   else torch.zeros_like(args[name])).numpy()
            for name in wrt}


def as_f64(array):
    if isinstance(array, torch.Tensor):
        return array.detach().to(torch.float64).numpy()
    return np.asarray(array, dtype=np.float64)


def run_vjp(case, fused=True, use_torch=False, dtype="f32", wrt=None,
            opt_level=OPT_LEVEL, residuals=False):
    """Compiles model_vjp (with residuals: model_fwd and model_bwd) and runs
    it on random inputs. Returns (names of the gradients, compiled gradients
    as float64, the float64 values the function received, d_out)."""
    module = case.module(dtype)
    gradient = attnfuse.grad(module, wrt=wrt, residuals=residuals)
    assert ENTRY in gradient.functions()
    if residuals:
        assert f"{ENTRY}_vjp" not in gradient.functions()
        forward = attnfuse.compile(gradient, target="cpu",
                                   entry=f"{ENTRY}_fwd", fused=fused,
                                   opt_level=opt_level)
        backward = attnfuse.compile(gradient, target="cpu",
                                    entry=f"{ENTRY}_bwd", fused=fused,
                                    opt_level=opt_level)
        plain = attnfuse.compile(module, target="cpu", fused=fused,
                                 opt_level=opt_level)

        def function(*arguments):
            # _bwd(args, residuals, d_out) with the residuals of _fwd(args),
            # whose first result is the function's own.
            outputs = forward(*arguments[:-1])
            y, saved = outputs[0], outputs[1:]
            assert saved, "model_fwd returned no residual"
            expected = plain(*arguments[:-1])
            assert np.array_equal(as_f64(y), as_f64(expected)), (
                "model_fwd's result differs from model's")
            return backward(*arguments[:-1], *saved, arguments[-1])
    else:
        function = attnfuse.compile(gradient, target="cpu",
                                    entry=f"{ENTRY}_vjp", fused=fused,
                                    opt_level=opt_level)
    names, values = make_inputs(case, module, zlib.crc32(case.id.encode()))
    specs, results = module.signature(ENTRY)
    rng = np.random.default_rng(zlib.crc32(case.id.encode()) + 1)
    out_shape = [case.batch if i == 0 and d is None else
                 case.seq if d is None else d
                 for i, d in enumerate(results[0][1])]
    d_out = rng.standard_normal(out_shape).astype(np.float32)
    if wrt is None:
        wrt_names = [n for n, (t, _) in zip(names, specs)
                     if t in FLOAT_DTYPES]
    else:
        wrt_names = [w if isinstance(w, str) else names[w] for w in wrt]

    if dtype == "bf16" or use_torch:
        torch_dtype = torch.bfloat16 if dtype == "bf16" else torch.float32
        inputs = [torch.from_numpy(values[n]) for n in names]
        inputs = [t.to(torch_dtype) if t.is_floating_point() else t
                  for t in inputs]
        cotangent = torch.from_numpy(d_out).to(torch_dtype)
        # The reference sees the values the function received.
        values = {n: as_f64(t) if t.is_floating_point() else t.numpy()
                  for n, t in zip(names, inputs)}
        d_out = as_f64(cotangent)
        outputs = function(*inputs, cotangent)
    else:
        outputs = function(*[values[n] for n in names], d_out)
    if not isinstance(outputs, tuple):
        outputs = (outputs,)
    assert len(outputs) == len(wrt_names), (
        f"{len(outputs)} gradients for {len(wrt_names)} wrt arguments")
    for name, out in zip(wrt_names, outputs):
        if use_torch or dtype == "bf16":
            assert isinstance(out, torch.Tensor), type(out)
        assert tuple(out.shape) == tuple(np.shape(values[name])), (
            f"d{name}: shape {tuple(out.shape)}, argument "
            f"{np.shape(values[name])}")
    grads = {n: as_f64(g) for n, g in zip(wrt_names, outputs)}
    return wrt_names, grads, values, d_out


def zero_gradients(case):
    """{gradient: the gradient whose scale it is checked against} for the
    gradients that are zero in exact arithmetic: with separate keys and
    values (sharing none) and no RoPE, the key bias adds q_i . bk to every
    logit of row i, a shift the softmax ignores. Their reference is float64
    rounding noise, so their error is measured against the scale of the
    same layer's key-weight gradient (which the same dk sums make)."""
    if case.kind != "qkv" or case.config.get("sharing", "none") != "none" \
            or not case.config.get("biases"):
        return {}
    layers = case.config.get("num_layers", 1)
    thetas = case.config.get("rope_theta")
    if not isinstance(thetas, (list, tuple)):
        thetas = [thetas] * layers
    return {f"l{i}_bk": f"l{i}_wk" for i in range(layers)
            if thetas[i] is None}


def check_gradients(case, tolerance, **options):
    """Every gradient of model_vjp against torch autograd; returns the
    errors {name: max-norm relative error}."""
    wrt_names, grads, values, d_out = run_vjp(case, **options)
    names = case.module().argument_names(ENTRY)
    ref = reference_gradients(case, names, values, d_out, wrt_names)
    zeros = zero_gradients(case)
    errors, failures = {}, []
    for name in wrt_names:
        if not np.all(np.isfinite(grads[name])):
            failures.append(f"d{name}: non-finite values")
            continue
        if name in zeros:
            errors[name] = float(np.max(np.abs(grads[name]))
                                 / np.max(np.abs(ref[zeros[name]])))
        else:
            errors[name] = rel_err(grads[name], ref[name])
        if errors[name] > tolerance:
            failures.append(f"d{name}: rel_err {errors[name]:.3e} > "
                            f"{tolerance:.0e}")
    print(f"{case.id} {options}: " + " ".join(
        f"{n}={e:.1e}" for n, e in errors.items()))
    assert not failures, f"{case.id}:\n" + "\n".join(failures)
    return errors


# ---------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", ALL_CASES)
def test_gradients_f32(case):
    check_gradients(case, F32_TOLERANCE)


@pytest.mark.parametrize("case", REFERENCE_LOWERING_CASES)
def test_gradients_reference_lowering_torch(case):
    check_gradients(case, F32_TOLERANCE, fused=False, use_torch=True)


# The forward that keeps the attention outputs and the backward that reads
# them (attnfuse.grad(residuals=True)), both lowerings.
@pytest.mark.parametrize("case", REFERENCE_LOWERING_CASES)
@pytest.mark.parametrize("fused", [True, False], ids=["fused", "reference"])
def test_gradients_from_residuals(case, fused):
    check_gradients(case, F32_TOLERANCE, fused=fused, residuals=True)


@pytest.mark.parametrize("case", [QKV_CASES[6], QKV_CASES[15], CCA_CASES[1],
                                  STACK_CASES[0]])
def test_gradients_bf16(case):
    check_gradients(case, BF16_TOLERANCE, dtype="bf16")


# The reference's forward against the compiled forward: the reference reads
# the builders' arguments in their order (the lowerings' forward numerics are
# test_numerics.py's).
@pytest.mark.parametrize("case", [
    QKV_CASES[0], QKV_CASES[11], QKV_CASES[16], CCA_CASES[1],
    STACK_CASES[1]])
def test_reference_forward(case):
    module = case.module()
    names, values = make_inputs(case, module, zlib.crc32(case.id.encode()))
    ref = case.reference({n: torch.from_numpy(v).to(torch.float64)
                          if v.dtype.kind == "f" else torch.from_numpy(v)
                          for n, v in values.items()}).numpy()
    y = attnfuse.compile(module, opt_level=OPT_LEVEL)(
        *[values[n] for n in names])
    assert rel_err(y, ref) <= F32_TOLERANCE, rel_err(y, ref)


# Tiny shapes, where float64 central differences of the reference are
# cheap: torch.autograd.gradcheck of the reference (its autograd against
# its own finite differences), then the compiled vjp against the finite
# differences directly.
TINY_CASES = [
    qkv("tiny-kv-MQA-rope-window2-bias", sharing="kv", seq=5, embed_dim=6,
        num_heads=2, num_kv_heads=1, head_dim=4, rope_theta=10.0, window=2,
        biases=True),
    qkv("tiny-qkv-MHA-halfrope-noncausal", sharing="qkv", seq=5, embed_dim=6,
        num_heads=2, head_dim=4, rope_theta=10.0, rope_fraction=0.5,
        causal=False, biases=True),
    qkv("tiny-qk-MHA-logitbias-perhead-rope", sharing="qk", seq=5,
        embed_dim=6, num_heads=2, head_dim=4, rope_theta=10.0,
        logit_bias="per_head"),
    cca("tiny-CCGQA-clamped-clampeps-halfrope-mask", seq=5, embed_dim=6,
        num_heads=2, num_kv_heads=1, head_dim=4, rope_theta=10.0,
        rope_fraction=0.5, temperature="clamped", norm="clamp_eps",
        eps=2.0 ** -23, padding_mask=True),
]


def finite_differences(case, names, values, d_out, wrt, step=1e-6):
    """Central differences of sum(model(values) * d_out) in float64."""
    args = {n: torch.tensor(np.asarray(v), dtype=torch.float64)
            if np.asarray(v).dtype.kind == "f" else torch.from_numpy(v)
            for n, v in values.items()}
    cotangent = torch.tensor(np.asarray(d_out), dtype=torch.float64)

    def loss():
        with torch.no_grad():
            return float((case.reference(args) * cotangent).sum())

    grads = {}
    for name in wrt:
        flat = args[name].view(-1)
        g = np.zeros(flat.numel())
        for i in range(flat.numel()):
            saved = float(flat[i])
            flat[i] = saved + step
            up = loss()
            flat[i] = saved - step
            down = loss()
            flat[i] = saved
            g[i] = (up - down) / (2 * step)
        grads[name] = g.reshape(args[name].shape)
    return grads


@pytest.mark.parametrize("case", TINY_CASES)
def test_finite_differences(case):
    wrt_names, grads, values, d_out = run_vjp(case)
    names = case.module().argument_names(ENTRY)
    # 1. The reference's autograd against its finite differences.
    floats = [n for n in names if np.asarray(values[n]).dtype.kind == "f"]

    def forward(*tensors):
        args = dict(zip(floats, tensors))
        args.update({n: torch.from_numpy(values[n]) for n in names
                     if n not in args})
        return case.reference(args)

    tensors = [torch.tensor(values[n], dtype=torch.float64,
                            requires_grad=True) for n in floats]
    assert torch.autograd.gradcheck(forward, tensors)
    # 2. The compiled vjp against the finite differences.
    fd = finite_differences(case, names, values, d_out, wrt_names)
    errors = {n: rel_err(grads[n], fd[n]) for n in wrt_names}
    print(f"{case.id}: " + " ".join(f"{n}={e:.1e}"
                                     for n, e in errors.items()))
    bad = {n: e for n, e in errors.items() if e > F32_TOLERANCE}
    assert not bad, f"{case.id}: vjp vs finite differences {bad}"


# ---------------------------------------------------------------------------
# The API
# ---------------------------------------------------------------------------


def test_grad_wrt_names_and_indices():
    """wrt picks and orders the gradients; names and indices mix."""
    case = QKV_CASES[6].values[0]
    module = case.module()
    names = module.argument_names(ENTRY)
    wrt = ["l0_wo", 0, "l0_wk"]
    gradient = attnfuse.grad(module, wrt=wrt)
    specs, results = module.signature(ENTRY)
    vjp_args, vjp_results = gradient.signature(f"{ENTRY}_vjp")
    assert vjp_args == specs + results
    assert vjp_results == [specs[names.index("l0_wo")], specs[0],
                           specs[names.index("l0_wk")]]
    assert gradient.argument_names(f"{ENTRY}_vjp") == names + ["d_out"]
    # The original function stays, with its names.
    assert gradient.argument_names(ENTRY) == names
    wrt_names, grads, values, d_out = run_vjp(case, wrt=wrt, opt_level=2)
    assert wrt_names == ["l0_wo", "x", "l0_wk"]
    ref = reference_gradients(case, names, values, d_out, wrt_names)
    for name in wrt_names:
        assert rel_err(grads[name], ref[name]) <= F32_TOLERANCE, name


def test_grad_rejects_integer_and_unknown_arguments():
    module = attnfuse.cca(embed_dim=20, num_heads=2, head_dim=6,
                          padding_mask=True)
    with pytest.raises(ValueError, match="'mask'"):
        attnfuse.grad(module, wrt=["mask"])
    with pytest.raises(ValueError, match="'mask'"):
        attnfuse.grad(module, wrt=[1])  # the mask's index
    with pytest.raises(ValueError, match="'l0_nope'"):
        attnfuse.grad(module, wrt=["x", "l0_nope"])
    with pytest.raises(ValueError, match="no argument #99"):
        attnfuse.grad(module, wrt=[99])
    with pytest.raises(ValueError, match="entry"):
        attnfuse.grad(module, entry="missing")
    # A parsed module has no argument names: indices only.
    parsed = attnfuse.parse(str(module))
    with pytest.raises(ValueError, match="no argument names"):
        attnfuse.grad(parsed, wrt=["x"])
    assert attnfuse.grad(parsed, wrt=[0]).argument_names("model_vjp") is None


def test_grad_refuses_decode_functions():
    module = attnfuse.qkv_decode(embed_dim=16, num_heads=2, capacity=8)
    for entry in ("prefill", "step"):
        with pytest.raises(attnfuse.MLIRError,
                           match="qkv_decode.*cannot be differentiated"):
            attnfuse.grad(module, entry=entry)


def _vjp_inputs(function, batch, seq):
    arrays = []
    for dtype, shape in function.arguments:
        dims = [batch if i == 0 and d is None else seq if d is None else d
                for i, d in enumerate(shape)]
        arrays.append(np.ones(dims, np.float32) if dtype == "f32"
                      else np.ones(dims, np.int64))
    return arrays


def test_vjp_checks_the_cotangent_shape():
    """A cotangent that does not fit the result's type is refused before the
    run, naming the argument."""
    static = attnfuse.qkv_attention(embed_dim=20, num_heads=2, head_dim=6,
                                    batch=2, seq=7)
    function = attnfuse.compile(attnfuse.grad(static), entry="model_vjp",
                                opt_level=OPT_LEVEL)
    arrays = _vjp_inputs(function, 2, 7)
    function(*arrays)  # the right shapes run
    arrays[-1] = np.ones((2, 8, 20), np.float32)
    with pytest.raises(ValueError, match=r"'d_out'.*\[2, 7, 20\]"):
        function(*arrays)

    dynamic = attnfuse.cca(embed_dim=20, num_heads=2, head_dim=6,
                           padding_mask=True)
    function = attnfuse.compile(attnfuse.grad(dynamic), entry="model_vjp",
                                opt_level=OPT_LEVEL)
    arrays = _vjp_inputs(function, 2, 7)
    function(*arrays)
    arrays[-1] = np.ones((2, 7, 21), np.float32)  # a static width
    with pytest.raises(ValueError, match=r"'d_out'.*\[\?, \?, 20\]"):
        function(*arrays)


@pytest.mark.parametrize("kind", ["qkv", "cca"])
def test_vjp_checks_dynamic_cotangent_sizes_before_the_call(kind):
    """Dynamic sizes of the cotangent that disagree with the input's (its
    sequence length here) fail the run-time size check before the call, as
    a mask that disagrees with the input does in the forward."""
    build = attnfuse.qkv_attention if kind == "qkv" else attnfuse.cca
    module = build(embed_dim=20, num_heads=2, head_dim=6)
    function = attnfuse.compile(attnfuse.grad(module), entry="model_vjp",
                                opt_level=OPT_LEVEL)
    arrays = _vjp_inputs(function, 2, 7)
    arrays[-1] = np.ones((2, 8, 20), np.float32)
    with pytest.raises(RuntimeError, match=r"before the call.*'d_out'"):
        function(*arrays)
