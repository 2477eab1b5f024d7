"""CPU runs equal the float64 numpy reference of integration_test/.

Tolerances and error norm as in integration_test/test_numerics.py:
max|y - ref| / max|ref| <= 1e-5 (f32), 3e-3 (f16), 2e-2 (bf16); the
reference sees exactly the values the compiled code received.
"""

import numpy as np
import pytest

import attnfuse
import reference as R

TOLERANCE = {"f32": 1e-5, "f16": 3e-3, "bf16": 2e-2}
B, S = 2, 7


def quantize(a, dtype):
    """-> (array to pass, exact float64 values it holds)."""
    if dtype == "bf16":
        bits = attnfuse.to_bf16(a)
        return bits, attnfuse.from_bf16(bits).astype(np.float64)
    q = np.asarray(a, dtype={"f32": np.float32, "f16": np.float16}[dtype])
    return q, q.astype(np.float64)


def decode(y, dtype):
    if dtype == "bf16":
        assert y.dtype == np.uint16
        return attnfuse.from_bf16(y).astype(np.float64)
    assert y.dtype == {"f32": np.float32, "f16": np.float16}[dtype]
    return y.astype(np.float64)


def random_inputs(function, rng, init):
    """Arguments by name: init(name, shape) gives each one's float values."""
    passed, exact = [], {}
    for name, (dtype, shape) in zip(function.argument_names, function.arguments):
        shape = tuple(B if i == 0 and d is None else S if d is None else d
                      for i, d in enumerate(shape))
        array, values = quantize(init(name.split("_", 1)[-1], shape, rng), dtype)
        passed.append(array)
        exact[name.split("_", 1)[-1] if name != "x" else "x"] = values
    return passed, exact


def linear_init(name, shape, rng):
    if name == "x":
        return rng.standard_normal(shape)
    if name.startswith("b"):
        return rng.standard_normal(shape) * 0.1
    return rng.standard_normal(shape) * shape[-1] ** -0.5


def cca_init(name, shape, rng):
    if name == "conv_dw_w":
        return rng.standard_normal(shape) * shape[2] ** -0.5
    if name == "conv_g_w":
        return rng.standard_normal(shape) * (shape[1] * shape[2]) ** -0.5
    if name in ("conv_dw_b", "conv_g_b"):
        return rng.standard_normal(shape) * 0.1
    if name == "temp":
        return rng.uniform(0.5, 1.5, shape)
    return linear_init(name, shape, rng)


def rel_err(y, ref):
    return np.max(np.abs(y - ref)) / max(np.max(np.abs(ref)), 1e-30)


QKV_VARIANTS = [
    dict(sharing="none", embed_dim=32, num_heads=4),
    dict(sharing="kv", embed_dim=32, num_heads=4, num_kv_heads=2,
         rope_theta=1e4, rope_fraction=0.5, biases=True),
    dict(sharing="kv", embed_dim=32, num_heads=4, num_kv_heads=1, window=3),
    dict(sharing="qk", embed_dim=32, num_heads=4, rope_theta=1e4),
    dict(sharing="qkv", embed_dim=32, num_heads=4, causal=False, biases=True),
]


def qkv_reference(config, exact):
    return R.qkv_attention(
        exact["x"], config["sharing"], exact["wk"], exact["wo"],
        wq=exact.get("wq"), wv=exact.get("wv"), bq=exact.get("bq"),
        bk=exact.get("bk"), bv=exact.get("bv"), bo=exact.get("bo"),
        num_heads=config["num_heads"],
        num_kv_heads=config.get("num_kv_heads", config["num_heads"]),
        head_dim=config["embed_dim"] // config["num_heads"],
        causal=config.get("causal", True), window=config.get("window"),
        rope_theta=config.get("rope_theta"),
        rope_fraction=config.get("rope_fraction", 1.0))


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("config", QKV_VARIANTS,
                         ids=lambda c: f"{c['sharing']}-{c.get('num_kv_heads', c['num_heads'])}")
def test_qkv_attention_matches_reference(config, dtype):
    module = attnfuse.qkv_attention(dtype=dtype, **config)
    function = attnfuse.compile(module, target="cpu")
    rng = np.random.default_rng(1)
    args, exact = random_inputs(function, rng, linear_init)
    y = decode(function(*args), dtype)
    ref = qkv_reference(config, exact)
    assert y.shape == ref.shape
    assert rel_err(y, ref) <= TOLERANCE[dtype]


CCA_VARIANTS = [
    dict(embed_dim=32, num_heads=4, num_kv_heads=2, head_dim=4,
         rope_theta=1e4, rope_fraction=0.5),
    dict(embed_dim=32, num_heads=2, num_kv_heads=2, head_dim=8,
         qk_mean=False, value_shift=False, temperature="clamped",
         conv_kernel_sizes=(3, 2)),
]


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("config", CCA_VARIANTS, ids=["ccgqa", "cca-plain"])
def test_cca_matches_reference(config, dtype):
    module = attnfuse.cca(dtype=dtype, **config)
    function = attnfuse.compile(module, target="cpu")
    rng = np.random.default_rng(2)
    args, exact = random_inputs(function, rng, cca_init)
    y = decode(function(*args), dtype)
    ref = R.cca(exact["x"], exact["wq"], exact["wk"], exact["wv"],
                exact["conv_dw_w"], exact["conv_dw_b"], exact["conv_g_w"],
                exact["conv_g_b"], exact["temp"], exact["wo"],
                config["num_heads"], config["num_kv_heads"],
                config["head_dim"], config.get("conv_kernel_sizes", (2, 2)),
                wv_prev=exact.get("wv_prev"),
                qk_mean=config.get("qk_mean", True),
                value_shift=config.get("value_shift", True),
                temperature=config.get("temperature", "raw"),
                causal=True, rope_theta=config.get("rope_theta"),
                rope_fraction=config.get("rope_fraction", 1.0))
    assert rel_err(y, ref) <= TOLERANCE[dtype]


def tiny_qk_init(name, shape, rng):
    """CCA weights whose query and key heads have norms near 1e-8, far
    below the f32 epsilon (1.2e-7): where max(|x|, eps) and
    sqrt(|x|^2 + eps) part."""
    if name in ("wq", "wk", "conv_dw_b", "conv_g_b"):
        return cca_init(name, shape, rng) * 1e-8
    return cca_init(name, shape, rng)


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "reference"])
def test_cca_clamp_eps_norm_on_small_heads(fused):
    """norm = clamp_eps (transformers' ZAYA) divides each head by
    max(|x|, eps): on heads of norm ~1e-8 it differs from the default
    sqrt(|x|^2 + eps) form, and both lowerings follow the reference."""
    eps = 2.0 ** -23
    config = dict(embed_dim=32, num_heads=4, num_kv_heads=2, head_dim=8,
                  rope_theta=1e4, rope_fraction=0.5, dtype="f32")
    function = attnfuse.compile(attnfuse.cca(norm="clamp_eps", eps=eps,
                                             **config), fused=fused)
    rng = np.random.default_rng(7)
    args, exact = random_inputs(function, rng, tiny_qk_init)
    y = decode(function(*args), "f32")
    common = dict(wv_prev=exact["wv_prev"], qk_mean=True, value_shift=True,
                  causal=True, rope_theta=1e4, rope_fraction=0.5)
    weights = [exact[n] for n in ("x", "wq", "wk", "wv", "conv_dw_w",
                                  "conv_dw_b", "conv_g_w", "conv_g_b",
                                  "temp", "wo")]
    q, _k, _v = R.cca_qkv(*weights[:9], 4, 2, 8, (2, 2), norm="clamp_eps",
                          eps=eps, **{k: v for k, v in common.items()
                                      if k != "causal"})
    norms = np.linalg.norm(q / np.sqrt(8) * eps, axis=-1)
    assert norms.max() < eps  # every query head is below eps: clamped
    ref = R.cca(*weights, 4, 2, 8, (2, 2), norm="clamp_eps", eps=eps,
                **common)
    assert rel_err(y, ref) <= TOLERANCE["f32"]
    other = R.cca(*weights, 4, 2, 8, (2, 2), **common)  # sqrt(|x|^2 + 1e-12)
    assert rel_err(other, ref) > 1e-2


def test_reference_lowering_and_tiles_agree():
    config = dict(sharing="kv", embed_dim=32, num_heads=4, num_kv_heads=2,
                  rope_theta=1e4)
    module = attnfuse.qkv_attention(**config)
    rng = np.random.default_rng(3)
    fused = attnfuse.compile(module, block_q=4, block_kv=4)
    reference_lowering = attnfuse.compile(module, fused=False)
    args, exact = random_inputs(fused, rng, linear_init)
    ref = qkv_reference(config, exact)
    for function in (fused, reference_lowering):
        assert rel_err(function(*args).astype(np.float64), ref) <= 1e-5


def test_nan_token_reaches_its_output_row_and_later_rows():
    """A NaN in one token's input is not hidden by the softmax: its own
    output row (whose every score is NaN) and every later row (which attend
    to its key) are NaN, for the fused tiles and the reference lowering."""
    module = attnfuse.qkv_attention(sharing="kv", embed_dim=32, num_heads=4,
                                    num_kv_heads=2, rope_theta=1e4)
    rng = np.random.default_rng(11)
    for function in (attnfuse.compile(module, block_q=4, block_kv=4),
                     attnfuse.compile(module, fused=False)):
        args, _ = random_inputs(function, rng, linear_init)
        x = args[0].copy()
        x[0, 5, 3] = np.nan
        y = function(x, *args[1:])
        assert np.isnan(y[0, 5:]).all(axis=-1).all()
        assert np.isfinite(y[1]).all()  # the other sequence


def test_stack_with_residuals():
    config = dict(sharing="none", embed_dim=32, num_heads=4)
    module = attnfuse.qkv_attention(num_layers=2, **config)
    function = attnfuse.compile(module)
    rng = np.random.default_rng(4)
    args = []
    for name, (dtype, shape) in zip(function.argument_names, function.arguments):
        shape = tuple(B if i == 0 and d is None else S if d is None else d
                      for i, d in enumerate(shape))
        args.append(linear_init(name.split("_", 1)[-1], shape, rng).astype(np.float32))
    named = dict(zip(function.argument_names, [a.astype(np.float64) for a in args]))
    h = named["x"]
    for layer in range(2):
        layer_args = {k.split("_", 1)[1]: v for k, v in named.items()
                      if k.startswith(f"l{layer}_")}
        h = h + qkv_reference(config, dict(layer_args, x=h))
    assert rel_err(function(*args).astype(np.float64), h) <= 1e-5


def test_ml_dtypes_bfloat16_arrays_are_accepted():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    module = attnfuse.qkv_attention(embed_dim=32, num_heads=4, dtype="bf16")
    function = attnfuse.compile(module)
    rng = np.random.default_rng(5)
    args, _ = random_inputs(function, rng, linear_init)
    as_ml = [attnfuse.from_bf16(a).astype(ml_dtypes.bfloat16) for a in args]
    assert np.array_equal(function(*as_ml), function(*args))


def test_bf16_helpers_round_to_nearest_even():
    values = np.array([1.0, 1.00390625, 1.01171875, -2.5, np.inf, np.nan],
                      dtype=np.float32)
    bits = attnfuse.to_bf16(values)
    assert bits.dtype == np.uint16
    assert list(bits[:5]) == [0x3F80, 0x3F80, 0x3F82, 0xC020, 0x7F80]
    assert np.isnan(attnfuse.from_bf16(bits)[5])
    assert attnfuse.from_bf16(bits)[3] == -2.5
