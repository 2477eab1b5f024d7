"""attnfuse.torch: torch tensors through the CPU JIT, compiled layers as
torch custom ops (opcheck, torch.compile with fullgraph=True, torch.export),
and the drop-in modules against references written here (K=V GQA against
F.scaled_dot_product_attention) and against transformers' ZayaAttention.
Shapes stay tiny: torch.compile is the slow part."""

import copy
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import attnfuse

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import attnfuse.torch as at  # noqa: E402

E, H, HK, D = 32, 4, 2, 8
TORCH_DTYPES = {"f32": torch.float32, "f16": torch.float16,
                "bf16": torch.bfloat16}


def kv_module(dtype):
    return attnfuse.qkv_attention(embed_dim=E, num_heads=H, num_kv_heads=HK,
                                  sharing="kv", dtype=dtype, rope_theta=1e4)


def kv_weights(dtype=torch.float32, seed=0):
    generator = torch.Generator().manual_seed(seed)
    shapes = [(H * D, E), (HK * D, E), (E, H * D)]
    return [(torch.randn(s, generator=generator) * 0.2).to(dtype)
            for s in shapes]


def inputs(batch=2, seq=5, dtype=torch.float32, seed=1):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(batch, seq, E, generator=generator).to(dtype)


# ---------------------------------------------------------------------------
# CpuFunction with torch tensors
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
def test_cpu_function_takes_and_returns_torch_tensors(dtype):
    run = attnfuse.compile(attnfuse.qkv_attention(
        embed_dim=E, num_heads=H, num_kv_heads=HK, sharing="kv",
        dtype=dtype), target="cpu")
    tdtype = TORCH_DTYPES[dtype]
    x, weights = inputs(dtype=tdtype), kv_weights(tdtype)
    y = run(x, *weights)
    assert isinstance(y, torch.Tensor) and y.dtype == tdtype
    assert y.shape == x.shape
    # The same numbers as through numpy (bf16 as uint16 bit patterns).
    if dtype == "bf16":
        bits = [attnfuse.to_bf16(t.float().numpy()) for t in (x, *weights)]
        expected = attnfuse.from_bf16(run(*bits))
    else:
        expected = run(x.numpy(), *[w.numpy() for w in weights])
    np.testing.assert_array_equal(y.float().numpy(),
                                  np.asarray(expected, np.float32))
    # Parameters (requires_grad) and non-contiguous tensors are read too.
    leaf = [w.clone().requires_grad_() for w in weights]
    wide = torch.stack([x, torch.zeros_like(x)], dim=-1)[..., 0]  # == x
    assert not wide.is_contiguous()
    np.testing.assert_array_equal(run(wide, *leaf).float().numpy(),
                                  y.float().numpy())


def test_torch_argument_errors_read_as_numpy_ones():
    run = attnfuse.compile(attnfuse.qkv_attention(
        embed_dim=E, num_heads=H, num_kv_heads=HK, sharing="kv"),
        target="cpu")
    x, weights = inputs(), kv_weights()
    messages = []
    for convert in (lambda t: t.numpy(), lambda t: t):
        with pytest.raises(ValueError) as error:
            run(convert(x), convert(weights[0][:, :16].contiguous()),
                *map(convert, weights[1:]))
        messages.append(str(error.value))
    assert messages[0] == messages[1] == (
        "argument #1 ('l0_wq') of 'model' needs shape [32, 32], got [32, 16]")
    with pytest.raises(ValueError, match=r"argument #2 \('l0_wk'\) of "
                       r"'model' is f32: expected a f32 tensor, got bf16"):
        run(x, weights[0], weights[1].bfloat16(), weights[2])
    with pytest.raises(ValueError, match="'model' takes 4 arguments, got 3"):
        run(x, *weights[:2])


# ---------------------------------------------------------------------------
# Compiled layers as custom ops
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kv_layer():
    return at.compile_layer(kv_module("f32"))


@pytest.fixture(scope="module")
def cca_layer():
    return at.compile_layer({
        "kind": "cca", "embed_dim": E, "num_heads": H, "num_kv_heads": HK,
        "head_dim": D, "rope_theta": 1e4, "rope_fraction": 0.5, "window": 4,
        "padding_mask": True, "dtype": "bf16"})


def cca_arguments(dtype=torch.bfloat16, seed=2):
    generator = torch.Generator().manual_seed(seed)
    channels = (H + HK) * D
    shapes = [(H * D, E), (HK * D, E), (HK * D // 2, E), (HK * D // 2, E),
              (channels, 1, 2), (channels,), (channels, D, 2), (channels,),
              (HK,), (E, H * D)]
    weights = [(torch.randn(s, generator=generator) * 0.3).to(dtype)
               for s in shapes]
    mask = torch.ones(2, 6, dtype=torch.int64)
    mask[1, :2] = 0  # left padding
    return [inputs(2, 6, dtype), mask] + weights


def test_compiled_layer_is_a_custom_op(kv_layer):
    assert kv_layer.qualname.startswith("attnfuse::model_")
    assert kv_layer.schema == ("(Tensor x, Tensor l0_wq, Tensor l0_wk, "
                               "Tensor l0_wo) -> Tensor")
    x, weights = inputs(), kv_weights()
    y = kv_layer.op(x, *weights)
    np.testing.assert_array_equal(
        y.numpy(), kv_layer.cpu_function()(x.numpy(),
                                           *[w.numpy() for w in weights]))
    # The same module text is the same op; the op name is a function of it.
    assert at.compile_layer(kv_module("f32")) is kv_layer
    assert at.compile_layer(kv_module("bf16")).qualname != kv_layer.qualname
    # Parsed text has no argument names: the schema numbers them.
    parsed = at.compile_layer(attnfuse.parse(str(kv_module("f16"))))
    assert parsed.schema == ("(Tensor arg0, Tensor arg1, Tensor arg2, "
                             "Tensor arg3) -> Tensor")


def test_opcheck_kv_layer(kv_layer):
    x, weights = inputs(), kv_weights()
    torch.library.opcheck(kv_layer.op, (x, *weights))
    torch.library.opcheck(kv_layer.op, (inputs(1, 3), *weights))


def test_opcheck_cca_layer_with_padding_mask(cca_layer):
    assert cca_layer.argument_names[:2] == ["x", "mask"]
    torch.library.opcheck(cca_layer.op, tuple(cca_arguments()))


def test_op_checks_arguments_like_the_cpu_path(kv_layer):
    x, weights = inputs(), kv_weights()
    with pytest.raises(ValueError, match=r"argument #1 \('l0_wq'\) of "
                       r"'model' needs shape \[32, 32\], got \[32, 16\]"):
        kv_layer(x, weights[0][:, :16], *weights[1:])
    with pytest.raises(ValueError, match=r"argument #0 \('x'\) of 'model' "
                       r"is f32: expected a f32 tensor, got f16"):
        kv_layer(x.half(), *weights)
    # The fake implementation checks the same (torch.compile sees it).
    with torch._subclasses.fake_tensor.FakeTensorMode():
        with pytest.raises(ValueError, match=r"argument #3 \('l0_wo'\) of "
                           r"'model' needs shape \[32, 32\], got \[32, 8\]"):
            kv_layer(torch.empty(2, 5, E), torch.empty(H * D, E),
                     torch.empty(HK * D, E), torch.empty(E, 8))
        fake = kv_layer(torch.empty(3, 7, E), *[torch.empty(w.shape)
                                                 for w in weights])
        assert fake.shape == (3, 7, E) and fake.dtype == torch.float32


def test_compile_layer_errors():
    with pytest.raises(ValueError, match="'kind' set to 'cca' or "
                       "'qkv_attention', got 'mha'"):
        at.compile_layer({"kind": "mha", "embed_dim": E})
    with pytest.raises(TypeError, match="module must be an attnfuse.Module"):
        at.compile_layer("func.func @f()")
    with pytest.raises(ValueError, match="name must be an identifier"):
        at.compile_layer(kv_module("f16"), name="not a name")
    at.compile_layer(kv_module("f16"), name="kv_f16_named")
    with pytest.raises(ValueError, match=r"name: an op attnfuse::kv_f16_named "
                       r"exists already \(for another layer\)"):
        at.compile_layer(kv_module("f32"), name="kv_f16_named")
    # A result whose dynamic sizes no argument gives needs result_shapes.
    text = """func.func @f(%x: tensor<?x8xf32>) -> tensor<?x8xf16> {
  %y = arith.truncf %x : tensor<?x8xf32> to tensor<?x8xf16>
  return %y : tensor<?x8xf16>
}"""
    with pytest.raises(ValueError, match=r"result #0 of 'f' has dynamic "
                       r"sizes \(\[\?, 8\]\) that no argument of the same type "
                       r"determines: pass result_shapes"):
        at.compile_layer(attnfuse.parse(text))


def test_gpu_hook():
    """CUDA tensors run the callable the GPU compiler returns for the
    module (no GPU here: the hook itself is what is checked)."""
    layer = at.compile_layer(kv_module("bf16"), name="kv_bf16_gpu_hook")
    seen = []

    def compiler(module, entry):
        seen.append((str(module), entry))
        return lambda *tensors: tensors[0]

    previous = at.set_gpu_compiler(compiler)
    try:
        function = layer.gpu_function()
        assert layer.gpu_function() is function  # compiled once
        assert seen == [(str(layer.module), "model")]
    finally:
        assert at.set_gpu_compiler(previous) is compiler
    with pytest.raises(TypeError, match="compiler must be callable"):
        at.set_gpu_compiler(42)
    # The default compiles for sm_90a (a layer its kernels support); until
    # that gives a callable, the layer says why it cannot run on CUDA
    # tensors.
    assert at.gpu_compiler() is previous
    supported = at.compile_layer(attnfuse.qkv_attention(
        embed_dim=128, num_heads=2, num_kv_heads=1, head_dim=64,
        sharing="kv", dtype="bf16"))
    try:
        function = supported.gpu_function()
    except NotImplementedError as error:
        assert "cannot run on CUDA tensors yet" in str(error)
        assert "set_gpu_compiler" in str(error)
    else:
        assert callable(function)


# ---------------------------------------------------------------------------
# Modules, torch.compile, torch.export
# ---------------------------------------------------------------------------


class ToyModel(torch.nn.Module):
    """Embedding, a K=V GQA layer and a CCGQA layer with residuals."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Linear(16, E)
        self.kv = at.QKVAttention(E, H, HK, sharing="kv", rope_theta=1e4,
                                  bias=True)
        self.cca = at.CCAAttention(E, H, HK, D, rope_theta=1e4,
                                   rope_fraction=0.5, window=4)
        self.head = torch.nn.Linear(E, 8)

    def forward(self, tokens):
        h = self.embed(tokens)
        h = h + self.kv(h)
        h = h + self.cca(h)[0]
        return self.head(h)


@pytest.fixture(scope="module")
def toy():
    torch.manual_seed(0)
    model = ToyModel().eval()
    with torch.no_grad():
        model.cca.qk_norm.temp.uniform_(0.5, 2.0)
    return model


def test_torch_compile_fullgraph_matches_eager(toy):
    tokens = torch.randn(2, 6, 16)
    torch._dynamo.reset()
    with torch.no_grad():
        eager = toy(tokens)
        compiled = torch.compile(toy, fullgraph=True)  # a break would raise
        torch.testing.assert_close(compiled(tokens), eager, rtol=1e-5,
                                   atol=1e-5)
        # Another sequence length: the fake implementation under dynamic
        # shapes.
        longer = torch.randn(1, 9, 16)
        torch.testing.assert_close(compiled(longer), toy(longer), rtol=1e-5,
                                   atol=1e-5)


def test_torch_compile_of_a_fresh_module_builds_its_op_while_tracing():
    """The first call of a configuration can be the compiled one."""
    model = at.QKVAttention(E, H, 1, sharing="kv", window=3)  # MQA, new
    x = inputs(1, 4)
    torch._dynamo.reset()
    with torch.no_grad():
        y = torch.compile(model, fullgraph=True)(x)
        torch.testing.assert_close(y, model(x), rtol=0, atol=0)


def test_torch_export(toy):
    tokens = torch.randn(2, 6, 16)
    with torch.no_grad():
        program = torch.export.export(toy, (tokens,))
        targets = [str(node.target) for node in program.graph.nodes
                   if node.op == "call_function"]
        attnfuse_ops = [t for t in targets if t.startswith("attnfuse.")]
        assert len(attnfuse_ops) == 2, targets
        # The attention itself is not decomposed into aten ops.
        assert not any("softmax" in t or "conv" in t for t in targets)
        torch.testing.assert_close(program.module()(tokens), toy(tokens),
                                   rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------
# QKVAttention against an independent reference
# ---------------------------------------------------------------------------


def rope_reference(t, theta, fraction):
    """NeoX rotate-half RoPE on the first fraction * d dims of [B, H, S, d]
    at positions 0..S-1."""
    d = t.shape[-1]
    r = int(d * fraction)
    inv = 1.0 / theta ** (torch.arange(0, r, 2, dtype=torch.float64) / r)
    angles = torch.arange(t.shape[2], dtype=torch.float64)[:, None] * inv
    cos = torch.cat([angles.cos()] * 2, -1).to(t.dtype)
    sin = torch.cat([angles.sin()] * 2, -1).to(t.dtype)
    rot, rest = t[..., :r], t[..., r:]
    half = torch.cat([-rot[..., r // 2:], rot[..., :r // 2]], -1)
    return torch.cat([rot * cos + half * sin, rest], -1)


def sharing_reference(module, x, sharing, theta=None, fraction=1.0,
                      window=None):
    """Projection-sharing attention with torch's SDPA (GQA through
    enable_gqa): the sharing mode picks which projections exist."""
    b, s, _ = x.shape
    k = module.k_proj(x)
    q = module.q_proj(x) if sharing in ("none", "kv") else k
    v = module.v_proj(x) if sharing in ("none", "qk") else k
    heads = lambda t: t.view(b, s, -1, D).transpose(1, 2)  # noqa: E731
    q, k, v = heads(q), heads(k), heads(v)
    if theta is not None:
        q, k = rope_reference(q, theta, fraction), rope_reference(k, theta,
                                                                  fraction)
    i = torch.arange(s)
    allowed = i[None, :] <= i[:, None]
    if window is not None:
        allowed &= (i[:, None] - i[None, :]) < window
    o = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed,
                                       enable_gqa=True)
    return module.o_proj(o.transpose(1, 2).reshape(b, s, -1))


@pytest.mark.parametrize("case", [
    dict(sharing="kv", num_kv_heads=2, rope_theta=1e4, bias=True),
    dict(sharing="kv", num_kv_heads=1, rope_theta=500.0, rope_fraction=0.5,
         window=3),
    dict(sharing="none", num_kv_heads=2),
    dict(sharing="qk", num_kv_heads=4, rope_theta=1e4),
    dict(sharing="qkv", num_kv_heads=4, bias=True),
], ids=["kv-gqa-rope-bias", "kv-mqa-partial-rope-window", "none-gqa", "qk",
        "qkv-bias"])
def test_qkv_module_matches_sdpa_reference(case):
    case = dict(case)
    sharing, kv_heads = case.pop("sharing"), case.pop("num_kv_heads")
    torch.manual_seed(3)
    module = at.QKVAttention(E, H, kv_heads, sharing=sharing, **case)
    expected_names = {"none": "qkvo", "kv": "qko", "qk": "kvo", "qkv": "ko"}
    assert sorted(module.state_dict()) == sorted(
        f"{p}_proj.{kind}" for p in expected_names[sharing]
        for kind in (("weight", "bias") if case.get("bias") else ("weight",)))
    x = torch.randn(2, 7, E)
    with torch.no_grad():
        y = module(x)
        expected = sharing_reference(module, x, sharing,
                                     case.get("rope_theta"),
                                     case.get("rope_fraction", 1.0),
                                     case.get("window"))
    torch.testing.assert_close(y, expected, rtol=1e-5, atol=1e-5)


def test_qkv_module_in_bf16_is_close_to_f32():
    torch.manual_seed(4)
    module = at.QKVAttention(E, H, HK, sharing="kv", rope_theta=1e4)
    x = torch.randn(2, 5, E)
    with torch.no_grad():
        expected = sharing_reference(module, x, "kv", 1e4)
        y = module.to(torch.bfloat16)(x.bfloat16())
    assert y.dtype == torch.bfloat16
    error = (y.float() - expected).abs().max() / expected.abs().max()
    assert error < 3e-2, f"relative error {error:.2e}"


def test_module_argument_errors():
    with pytest.raises(ValueError, match=r"num_heads \(4\) must equal "
                       r"num_kv_heads \(2\)"):
        at.QKVAttention(E, H, HK, sharing="qk")
    with pytest.raises(ValueError, match="sharing must be one of"):
        at.QKVAttention(E, H, sharing="q")
    module = at.QKVAttention(E, H, HK, sharing="kv")
    with pytest.raises(ValueError, match="x must be float32, float16 or "
                       "bfloat16, got torch.float64"):
        module(inputs().double())
    with pytest.raises(ValueError, match=r"x must have shape \[batch, seq, "
                       r"embed_dim\], got \[5, 32\]"):
        module(torch.randn(5, E))


# ---------------------------------------------------------------------------
# CCAAttention against transformers' ZayaAttention
# ---------------------------------------------------------------------------

TOLERANCE = 1e-5  # f32, relative to the largest value (test_hf_numerics)


def relative_error(got, expected):
    return ((got - expected).abs().max() / expected.abs().max()).item()


@pytest.fixture(scope="module")
def zaya():
    """A tiny random ZAYA (a global and a sliding-window layer) and what
    each attention received (all keyword arguments) and returned, for a
    full and a left-padded batch."""
    transformers = pytest.importorskip("transformers")
    if not hasattr(transformers, "ZayaConfig"):
        pytest.skip("this transformers has no ZAYA model (5.23 and later do)")
    config = transformers.ZayaConfig(
        hidden_size=48, num_attention_heads=4, num_key_value_heads=2,
        head_dim=8, num_hidden_layers=2,
        layer_types=["hybrid", "hybrid_sliding"], sliding_window=4,
        num_experts=2, moe_intermediate_size=16, router_hidden_size=8,
        vocab_size=32, use_cache=False)
    torch.manual_seed(0)
    model = transformers.ZayaForCausalLM(config).eval()
    with torch.no_grad():
        for block in model.model.layers:
            block.self_attn.qk_norm.temp.uniform_(0.25, 3.0)
            for conv in (block.self_attn.qkv_proj.conv_qk_depthwise,
                         block.self_attn.qkv_proj.conv_qk_grouped):
                conv.bias.normal_(0.0, 0.2)
    seen = {}

    def hook(index):
        def record(module, args, kwargs, output):
            seen[index] = (dict(kwargs), output[0].detach().clone())
        return record

    handles = [block.self_attn.register_forward_hook(hook(i), with_kwargs=True)
               for i, block in enumerate(model.model.layers)]
    ids = torch.randint(0, 32, (2, 10), generator=torch.Generator()
                        .manual_seed(1))
    mask = torch.ones(2, 10, dtype=torch.long)
    mask[1, :3] = 0
    runs = {}
    with torch.no_grad():
        runs["full"] = (model(ids).logits, dict(seen))
        runs["padded"] = (model(ids, attention_mask=mask).logits, dict(seen))
    for handle in handles:
        handle.remove()
    return model, config, ids, mask, runs


@pytest.mark.parametrize("batch", ["full", "padded"])
@pytest.mark.parametrize("layer", [0, 1], ids=["global", "sliding"])
def test_cca_module_loads_and_matches_zaya_attention(zaya, layer, batch):
    model, config, _ids, mask, runs = zaya
    reference = model.model.layers[layer].self_attn
    module = at.CCAAttention.from_hf_config(config, layer)
    assert list(module.state_dict()) == list(reference.state_dict())
    module.load_state_dict(reference.state_dict())  # strict
    assert module.window == (4 if layer else None)
    assert module.rope_theta == (1e4 if layer else 5e6)
    kwargs, expected = runs[batch][1][layer]
    assert isinstance(kwargs["attention_mask"], dict)
    with torch.no_grad():
        # Exactly what ZayaDecoderLayer passed to ZayaAttention.
        y, weights = module(**kwargs)
    assert weights is None
    if batch == "padded":
        real = mask.bool()
        y, expected = y[real], expected[real]
    error = relative_error(y, expected)
    assert error <= TOLERANCE, f"relative error {error:.2e}"


def test_zaya_model_with_cca_modules_swapped_in(zaya):
    """Every ZayaAttention of the model replaced by CCAAttention: the
    logits stay those of transformers, full and padded."""
    model, config, ids, mask, runs = zaya
    originals = [block.self_attn for block in model.model.layers]
    try:
        for index, block in enumerate(model.model.layers):
            swapped = at.CCAAttention.from_hf_config(config, index)
            swapped.load_state_dict(block.self_attn.state_dict())
            block.self_attn = swapped
        with torch.no_grad():
            full = model(ids).logits
            padded = model(ids, attention_mask=mask).logits
            # transformers' own cache cannot hold the layers' state.
            with pytest.raises(TypeError, match=r"AttnFuseCache.*got "
                               r"DynamicCache.*or use_cache=False"):
                model(ids, use_cache=True)
    finally:
        for block, attention in zip(model.model.layers, originals):
            block.self_attn = attention
    assert relative_error(full, runs["full"][0]) <= 1e-4
    real = mask.bool()
    assert relative_error(padded[real], runs["padded"][0][real]) <= 1e-4


def test_cca_module_refuses_other_positions(zaya):
    _model, config, _ids, _mask, runs = zaya
    module = at.CCAAttention.from_hf_config(config, 0)
    kwargs = dict(runs["full"][1][0][0])
    cos, sin = kwargs["position_embeddings"]
    kwargs["position_embeddings"] = (cos.roll(1, dims=-2), sin)
    with pytest.raises(ValueError, match=r"position_embeddings: cos is not "
                       r"RoPE at positions 0..9"):
        module(**kwargs)
    with pytest.raises(ValueError, match=r"attention_mask must be None, a "
                       r"\[batch, seq\] padding mask"):
        module(kwargs["hidden_states"], attention_mask=torch.ones(2, 1, 10, 10))
    with pytest.raises(ValueError, match=r"layer_idx must be an attention "
                       r"layer index in \[0, 2\), got 2"):
        at.CCAAttention.from_hf_config(config, 2)


@pytest.mark.parametrize("layer", [0, 1], ids=["global", "sliding"])
def test_cca_module_bf16_follows_zaya_attention_in_bf16(zaya, layer):
    """Both in bf16, the module and transformers' ZayaAttention agree to
    bf16 precision (the norm eps follows the dtype as transformers' does).
    Either is far from the f32 result at theta 5e6 (bf16 positions and
    cos/sin), so the comparison is with transformers in bf16."""
    model, config, _ids, _mask, runs = zaya
    reference = copy.deepcopy(model.model.layers[layer].self_attn)
    module = at.CCAAttention.from_hf_config(config, layer)
    module.load_state_dict(reference.state_dict())
    module.to(torch.bfloat16)
    reference.to(torch.bfloat16)
    kwargs, expected_f32 = runs["full"][1][layer]
    kwargs = dict(kwargs, hidden_states=kwargs["hidden_states"].bfloat16(),
                  position_embeddings=tuple(
                      t.bfloat16() for t in kwargs["position_embeddings"]))
    with torch.no_grad():
        expected, _ = reference(**kwargs)
        y, _ = module(**kwargs)
    assert y.dtype == torch.bfloat16
    error = relative_error(y.float(), expected.float())
    assert error < 2e-2, f"relative error {error:.2e}"


# ---------------------------------------------------------------------------
# The package without torch
# ---------------------------------------------------------------------------


def test_attnfuse_imports_without_torch():
    code = ("import sys; sys.modules['torch'] = None\n"
            "import attnfuse\n"
            "assert attnfuse.cca is not None\n"
            "try:\n"
            "    import attnfuse.torch\n"
            "except ImportError as error:\n"
            "    print(error)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True,
                          text=True, env=dict(os.environ), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "attnfuse.torch needs PyTorch: pip install torch" in proc.stdout


def test_pytorch_guide_example_runs(root):
    """docs/pytorch.md's custom-op and torch.compile example runs as
    written."""
    page = open(os.path.join(root, "docs", "pytorch.md")).read()
    blocks = [b for b in re.findall(r"```python\n(.*?)```", page, re.S)
              if "compile_layer" in b]
    assert len(blocks) == 1
    proc = subprocess.run([sys.executable, "-c", blocks[0]],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert re.match(r"attnfuse::model_[0-9a-f]{12} \(Tensor x, Tensor l0_wq, "
                    r"Tensor l0_wk, Tensor l0_wo\) -> Tensor", lines[0])
    assert lines[1:] == ["torch.Size([2, 16, 64])", "True"]
