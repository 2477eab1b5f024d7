"""attnfuse.torch training: the backward of the compiled layers (the
gradient op `attnfuse::<name>_vjp` built from attnfuse.grad) through
opcheck, QKVAttention's gradients against the autograd of a plain float64
PyTorch implementation written here, CCAAttention's against transformers'
ZayaAttention (float64), and whole training steps under
torch.compile(fullgraph=True). Each layer and its gradient function are
JIT-compiled once: the configurations repeat and the shapes stay tiny."""

import copy

import pytest

import attnfuse

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch._dynamo.backends.common import aot_autograd  # noqa: E402
from functorch.compile import make_boxed_func  # noqa: E402

import attnfuse.torch as at  # noqa: E402

E, H, D = 32, 4, 8
TOLERANCE = 1e-5  # f32 gradients, relative to the reference's largest value


def relative_error(got, expected):
    """max |got - expected| / max |expected| (the max-norm relative error)."""
    expected = expected.double()
    return ((got.double() - expected).abs().max()
            / expected.abs().max()).item()


def assert_gradients(got, expected):
    """got, expected: {name: gradient}; the same names, every gradient
    within TOLERANCE."""
    assert sorted(got) == sorted(expected)
    errors = {name: relative_error(got[name], expected[name])
              for name in expected}
    assert all(expected[name].abs().max() > 0 for name in expected), \
        "a reference gradient is zero: the comparison would be empty"
    worst = max(errors, key=errors.get)
    assert errors[worst] <= TOLERANCE, \
        f"{worst}: relative error {errors[worst]:.2e} (all: " + ", ".join(
            f"{n} {e:.1e}" for n, e in sorted(errors.items())) + ")"


def gradients(module, x):
    grads = {name: p.grad for name, p in module.named_parameters()}
    missing = [name for name, g in grads.items() if g is None]
    assert not missing, f"no gradient reached {missing}"
    return dict(grads, input=x.grad)


# ---------------------------------------------------------------------------
# The custom ops: opcheck, the gradient op and its errors
# ---------------------------------------------------------------------------


CE = 48  # the width of the CCA layers (the ZAYA config below)


@pytest.fixture(scope="module")
def cca_layer():
    """A CCGQA layer with a padding mask (an integer argument: no
    gradient), partial RoPE and a window, in f32: the sliding-window layer
    of the ZAYA config below with a 2-D attention mask (the same op)."""
    return at.compile_layer(attnfuse.cca(
        embed_dim=CE, num_heads=H, num_kv_heads=2, head_dim=D,
        rope_theta=1e4, rope_fraction=0.5, window=4, norm="clamp_eps",
        eps=attnfuse.builders.MACHINE_EPS["f32"], padding_mask=True,
        dtype="f32"))


def cca_arguments(seq=5, seed=2, requires_grad=True):
    generator = torch.Generator().manual_seed(seed)
    channels = (H + 2) * D
    shapes = [(H * D, CE), (2 * D, CE), (D, CE), (D, CE), (channels, 1, 2),
              (channels,), (channels, D, 2), (channels,), (2,), (CE, H * D)]
    weights = [torch.randn(s, generator=generator) * 0.3 for s in shapes]
    weights[8] = weights[8].abs() + 0.5  # the key temperature
    x = torch.randn(2, seq, CE, generator=generator)
    mask = torch.ones(2, seq, dtype=torch.int64)
    mask[1, :2] = 0  # left padding
    floats = [t.requires_grad_(requires_grad) for t in [x] + weights]
    return [floats[0], mask] + floats[1:]


OPCHECKS = ("test_schema", "test_autograd_registration", "test_faketensor",
            "test_aot_dispatch_dynamic")


def test_opcheck_with_autograd(cca_layer):
    """opcheck's schema, autograd registration, fake tensor and AOT
    dispatch (dynamic shapes; with inputs that require grad it compares
    AOTAutograd's backward with eager's) tests, on the forward op and on
    the gradient op."""
    for arguments in (cca_arguments(), cca_arguments(seq=7, seed=3)):
        results = torch.library.opcheck(cca_layer.op, tuple(arguments),
                                        test_utils=OPCHECKS)
        assert results == dict.fromkeys(OPCHECKS, "SUCCESS")
    gradient = cca_layer.gradient_layer()
    arguments = cca_arguments(requires_grad=False)
    results = torch.library.opcheck(
        gradient.op, (*arguments, torch.randn(2, 5, CE)), test_utils=OPCHECKS)
    assert results == dict.fromkeys(OPCHECKS, "SUCCESS")


def test_backward_calls_the_gradient_op(cca_layer):
    gradient = cca_layer.gradient_layer()
    assert gradient.qualname == cca_layer.qualname + "_vjp"
    assert gradient.forward is cca_layer and gradient.entry == "model_vjp"
    names = cca_layer.argument_names
    assert gradient.argument_names == names + ["d_out"]
    # One gradient per floating-point argument (not the mask).
    assert len(gradient.results) == len(names) - 1
    arguments = cca_arguments()
    y = cca_layer(*arguments)
    cotangent = torch.randn(y.shape, generator=torch.Generator()
                            .manual_seed(5))
    y.backward(cotangent)
    detached = [t.detach() for t in arguments]
    expected = gradient(*detached, cotangent)
    floats = [t for t in arguments if t.is_floating_point()]
    for got, want in zip(floats, expected):
        assert torch.equal(got.grad, want)
    assert not arguments[1].requires_grad and arguments[1].grad is None
    # The gradient op is compiled once (the same op for the same layer).
    assert cca_layer.gradient_layer() is gradient


def test_non_contiguous_and_zero_cotangents(cca_layer):
    """A cotangent that autograd hands over non-contiguous is made
    contiguous; a cotangent of zeros gives zero gradients."""
    arguments = cca_arguments()
    y = cca_layer(*arguments)
    cotangent = torch.randn(2, CE, 5).transpose(1, 2)
    assert not cotangent.is_contiguous()
    y.backward(cotangent)
    detached = [t.detach() for t in arguments]
    expected = cca_layer.gradient_layer()(*detached, cotangent.contiguous())
    assert torch.equal(arguments[0].grad, expected[0])
    zero = cca_arguments()
    (cca_layer(*zero) * 0).sum().backward()
    assert all(t.grad.abs().max() == 0 for t in zero if t.is_floating_point())


def test_wrong_cotangents_are_refused(cca_layer):
    gradient = cca_layer.gradient_layer()
    arguments = cca_arguments(requires_grad=False)
    with pytest.raises(ValueError, match=r"argument #12 \('d_out'\) of "
                       r"'model_vjp' needs shape \[\?, \?, 48\], got "
                       r"\[2, 5, 16\]"):
        gradient(*arguments, torch.randn(2, 5, 16))
    with pytest.raises(ValueError, match=r"argument #12 \('d_out'\) of "
                       r"'model_vjp' is the cotangent of result #0 of "
                       r"'model', which has shape \[2, 5, 48\] for these "
                       r"arguments: got \[2, 4, 48\]"):
        gradient(*arguments, torch.randn(2, 4, CE))
    with pytest.raises(ValueError, match=r"argument #12 \('d_out'\) of "
                       r"'model_vjp' is f32: expected a f32 tensor, got "
                       r"f64"):
        gradient(*arguments, torch.randn(2, 5, CE, dtype=torch.float64))
    # The fake implementation checks the same (torch.compile sees it).
    with torch._subclasses.fake_tensor.FakeTensorMode():
        fake = [torch.empty(t.shape, dtype=t.dtype) for t in arguments]
        with pytest.raises(ValueError, match="is the cotangent of result "
                           "#0 of 'model'"):
            gradient(*fake, torch.empty(2, 6, CE))


def test_double_backward_is_refused(cca_layer):
    arguments = cca_arguments()
    y = cca_layer(*arguments)
    (dx,) = torch.autograd.grad(y.square().sum(), arguments[0],
                                create_graph=True)
    with pytest.raises(NotImplementedError, match=r"double backward through "
                       r"attnfuse::model_\w+ is not supported: its gradient "
                       r"op attnfuse::model_\w+_vjp has no backward"):
        dx.sum().backward()


def test_backward_on_cuda_tensors_says_why_not(cca_layer):
    """The CCA backward has no sm_90a kernels: the default GPU compiler
    refuses the gradient function and says why (checked without a GPU: the
    gradient layer's GPU callable is what CUDA tensors would run)."""
    gradient = cca_layer.gradient_layer()
    with pytest.raises(NotImplementedError, match=r"attnfuse::model_\w+_vjp "
                       r"\(the backward of attnfuse::model_\w+\) cannot run "
                       r"on CUDA tensors yet: .*sm_90a"):
        gradient.gpu_function()
    # A GPU compiler that compiles the gradient function is used.
    seen = []

    def compiler(module, entry):
        seen.append(entry)
        return lambda *tensors: tensors[0]

    previous = at.set_gpu_compiler(compiler)
    try:
        assert callable(gradient.gpu_function())
        assert seen == ["model_vjp"]
    finally:
        at.set_gpu_compiler(previous)
        gradient._gpu = None


def test_backward_of_a_layer_without_rope_compiles_for_cuda_tensors():
    """A bf16 layer without RoPE has sm_90a kernels for its whole backward:
    the default GPU compiler returns its device program (compiled here; the
    emulator tests run it), for the plain gradient and the training pair."""
    layer = at.compile_layer(attnfuse.qkv_attention(
        sharing="kv", embed_dim=128, num_heads=2, num_kv_heads=1, head_dim=64,
        causal=True, dtype="bf16"))
    for backward in (layer.gradient_layer(),
                     layer.training_layer().gradient_layer()):
        program = backward.gpu_function()
        assert callable(program)
        assert backward.entry in program.functions


def test_training_forward_keeps_the_attention_output(cca_layer):
    """The training forward (`<op>_fwd`, which the modules call when
    autograd records) returns the layer's result and the attention output;
    its backward, `<op>_bwd`, reads that instead of recomputing the
    attention and gives the gradients of the layer's own backward."""
    training = cca_layer.training_layer()
    assert training.qualname == cca_layer.qualname + "_fwd"
    assert training.training_of is cca_layer
    assert training.entry == "model_fwd"
    assert training.argument_names == cca_layer.argument_names
    backward = training._training_backward
    assert backward.qualname == cca_layer.qualname + "_bwd"
    assert backward.argument_names == (
        cca_layer.argument_names
        + [f"residual{i}" for i in range(5)] + ["d_out"])
    # The attention's query [B, S, Hq, d], key and value [B, S, Hk, d],
    # output [B, S, Hq, d] and its rows' log-sum-exp [B, S, Hq] (f32).
    assert training.results == cca_layer.results + [
        ("f32", (None, None, H, D)), ("f32", (None, None, 2, D)),
        ("f32", (None, None, 2, D)), ("f32", (None, None, H, D)),
        ("f32", (None, None, H))]
    for arguments in (cca_arguments(), cca_arguments(seq=7, seed=3)):
        results = torch.library.opcheck(training.op, tuple(arguments),
                                        test_utils=OPCHECKS)
        assert results == dict.fromkeys(OPCHECKS, "SUCCESS")
    arguments = cca_arguments()
    y, *residuals = training(*arguments)
    assert [tuple(r.shape) for r in residuals] == [
        (2, 5, H, D), (2, 5, 2, D), (2, 5, 2, D), (2, 5, H, D), (2, 5, H)]
    assert residuals[-1].dtype == torch.float32
    assert torch.equal(y, cca_layer(*arguments))
    results = torch.library.opcheck(
        backward.op, tuple(t.detach() for t in arguments)
        + tuple(r.detach() for r in residuals) + (torch.randn(2, 5, CE),),
        test_utils=OPCHECKS)
    assert results == dict.fromkeys(OPCHECKS, "SUCCESS")
    # call_for_training goes through it and gives the op's gradients.
    cotangent = torch.randn(2, 5, CE, generator=torch.Generator()
                            .manual_seed(5))
    cca_layer.call_for_training(*arguments).backward(cotangent)
    through_residuals = [t.grad for t in arguments if t.is_floating_point()]
    recomputed = cca_arguments()
    cca_layer(*recomputed).backward(cotangent)
    for got, want in zip(through_residuals,
                         [t.grad for t in recomputed if t.is_floating_point()]):
        assert relative_error(got, want) <= TOLERANCE
    # Without autograd, the layer's op (no residual is kept).
    with torch.no_grad():
        assert torch.equal(cca_layer.call_for_training(*arguments), y)


def test_training_backward_checks_residuals_and_cotangents(cca_layer):
    backward = cca_layer.training_layer()._training_backward
    arguments = cca_arguments(requires_grad=False)
    residuals = [torch.randn(2, 5, H, D), torch.randn(2, 5, 2, D),
                 torch.randn(2, 5, 2, D), torch.randn(2, 5, H, D),
                 torch.randn(2, 5, H)]
    with pytest.raises(ValueError, match=r"argument #12 \('residual0'\) of "
                       r"'model_bwd' is residual #0 of 'model_fwd' \(its "
                       r"result #1\), which has shape \[2, 5, 4, 8\] for "
                       r"these arguments: got \[2, 6, 4, 8\]"):
        backward(*arguments, torch.randn(2, 6, H, D), *residuals[1:],
                 torch.randn(2, 5, CE))
    with pytest.raises(ValueError, match=r"argument #16 \('residual4'\) of "
                       r"'model_bwd' is residual #4 of 'model_fwd' \(its "
                       r"result #5\), which has shape \[2, 5, 4\] for "
                       r"these arguments: got \[2, 6, 4\]"):
        backward(*arguments, *residuals[:4], torch.randn(2, 6, H),
                 torch.randn(2, 5, CE))
    with pytest.raises(ValueError, match=r"argument #17 \('d_out'\) of "
                       r"'model_bwd' is the cotangent of result #0 of "
                       r"'model', which has shape \[2, 5, 48\]"):
        backward(*arguments, *residuals, torch.randn(2, 4, CE))
    # Double backward through the training forward is refused too.
    arguments = cca_arguments()
    y = cca_layer.call_for_training(*arguments)
    (dx,) = torch.autograd.grad(y.square().sum(), arguments[0],
                                create_graph=True)
    with pytest.raises(NotImplementedError, match=r"double backward through "
                       r"attnfuse::model_\w+_fwd is not supported: its "
                       r"gradient op attnfuse::model_\w+_bwd has no backward"):
        dx.sum().backward()


def test_a_function_without_gradient_fails_at_its_backward():
    """A decode step (a KV cache) has no gradient function: its forward
    still records autograd, and the backward raises the pass's diagnostic
    (checked on fake tensors: nothing is compiled)."""
    layer = at.compile_layer(attnfuse.qkv_decode(
        embed_dim=E, num_heads=H, num_kv_heads=2, sharing="kv", capacity=8),
        entry="step")
    with pytest.raises(attnfuse.MLIRError, match="'attn.qkv_decode' op "
                       "cannot be differentiated"):
        layer.gradient_layer()
    with torch._subclasses.fake_tensor.FakeTensorMode():
        arguments = [torch.empty([2 if size is None else size
                                  for size in shape],
                                 dtype=at.TORCH_DTYPES[dtype])
                     for dtype, shape in layer.arguments]
        y, _cache = layer(arguments[0].requires_grad_(), *arguments[1:])
        with pytest.raises(NotImplementedError,
                           match=r"(?s)attnfuse::step_\w+ has no backward: "
                           r"differentiating 'step' failed: .*cannot be "
                           r"differentiated") as error:
            y.sum().backward()
    assert isinstance(error.value.__cause__, attnfuse.MLIRError)


TWO_RESULTS = """func.func @model(%x: tensor<?x?x32xf32>,
    %wq: tensor<32x32xf32>, %wk: tensor<16x32xf32>, %wo: tensor<32x32xf32>)
    -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
  %a = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo) {causal,
      head_dim = 8 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64}
      : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<16x32xf32>,
         tensor<32x32xf32>) -> tensor<?x?x32xf32>
  %h = arith.addf %x, %a : tensor<?x?x32xf32>
  return %a, %h : tensor<?x?x32xf32>, tensor<?x?x32xf32>
}"""


def test_several_results_and_an_unused_one():
    """A parsed function with two results (the attention and the residual
    sum): one cotangent each (numbered: the parsed text has no argument
    names), and a result the loss does not use contributes nothing."""
    layer = at.compile_layer(attnfuse.parse(TWO_RESULTS))
    generator = torch.Generator().manual_seed(10)
    shapes = [(2, 6, E), (H * D, E), (2 * D, E), (E, H * D)]
    tensors = [(torch.randn(s, generator=generator) * 0.3).requires_grad_()
               for s in shapes]
    _attention, h = layer(*tensors)
    cotangent = torch.randn(2, 6, E, generator=generator)
    h.backward(cotangent)
    assert layer.gradient_layer().argument_names == [
        "arg0", "arg1", "arg2", "arg3", "d_out0", "d_out1"]
    params = {"q_proj.weight": tensors[1], "k_proj.weight": tensors[2],
              "o_proj.weight": tensors[3]}
    params = {k: v.detach().double().requires_grad_()
              for k, v in params.items()}
    x = tensors[0].detach().double().requires_grad_()
    expected_h = x + plain_qkv_attention(x, params, "kv", H, 2)
    expected_h.backward(cotangent.double())
    assert_gradients(
        {"input": tensors[0].grad, "q_proj.weight": tensors[1].grad,
         "k_proj.weight": tensors[2].grad, "o_proj.weight": tensors[3].grad},
        dict({k: v.grad for k, v in params.items()}, input=x.grad))


# ---------------------------------------------------------------------------
# QKVAttention against a plain float64 implementation
# ---------------------------------------------------------------------------


def rope(t, theta, fraction):
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


def plain_qkv_attention(x, params, sharing, num_heads, num_kv_heads,
                        window=None, rope_theta=None, rope_fraction=1.0,
                        logit_bias=None):
    """Causal self-attention with projection sharing, from the parameters
    {name: tensor} of QKVAttention's state_dict: the projections the sharing
    keeps (K=V: the key projection is also the value, un-rotated), RoPE on
    queries and keys, KV heads repeated for their groups, a softmax over the
    allowed keys (causal, window), o_proj."""
    b, s, _ = x.shape

    def project(name):
        return F.linear(x, params[f"{name}_proj.weight"],
                        params.get(f"{name}_proj.bias"))

    def heads(t):
        return t.view(b, s, -1, D).transpose(1, 2)

    k = heads(project("k"))
    q = heads(project("q")) if sharing in ("none", "kv") else k
    v = heads(project("v")) if sharing in ("none", "qk") else k
    if rope_theta is not None:
        q = rope(q, rope_theta, rope_fraction)
        k = rope(k, rope_theta, rope_fraction)
    group = num_heads // num_kv_heads
    k = k.repeat_interleave(group, dim=1)
    v = v.repeat_interleave(group, dim=1)
    i = torch.arange(s)
    allowed = i[None, :] <= i[:, None]
    if window is not None:
        allowed &= (i[:, None] - i[None, :]) < window
    scores = (q @ k.transpose(-1, -2)) / D ** 0.5
    if logit_bias is not None:  # [S, S] or [H, S, S], after the scale
        scores = scores + logit_bias
    scores = scores.masked_fill(~allowed, float("-inf"))
    o = scores.softmax(-1) @ v
    return F.linear(o.transpose(1, 2).reshape(b, s, -1),
                    params["o_proj.weight"], params.get("o_proj.bias"))


QKV_CASES = {
    "none-gqa-partial-rope-window-bias": dict(
        sharing="none", num_kv_heads=2, rope_theta=1e4, rope_fraction=0.5,
        window=3, bias=True),
    "kv-mqa-rope": dict(sharing="kv", num_kv_heads=1, rope_theta=500.0),
    "qk-rope": dict(sharing="qk", num_kv_heads=H, rope_theta=1e4),
    "qkv-window-bias": dict(sharing="qkv", num_kv_heads=H, window=4,
                            bias=True),
}


def qkv_module(case, seed=3):
    case = dict(case)
    torch.manual_seed(seed)
    return at.QKVAttention(E, H, case.pop("num_kv_heads"), **case)


def plain_qkv_reference(module, case, x, cotangent):
    """The reference's output and gradients, in float64."""
    params = {name: p.detach().double().requires_grad_()
              for name, p in module.named_parameters()}
    x = x.detach().double().requires_grad_()
    kwargs = {k: v for k, v in case.items() if k != "bias"}
    y = plain_qkv_attention(x, params, num_heads=H, **kwargs)
    y.backward(cotangent.double())
    return y, dict({name: p.grad for name, p in params.items()},
                   input=x.grad)


@pytest.mark.parametrize("name", list(QKV_CASES))
def test_qkv_attention_gradients_match_float64_autograd(name):
    case = QKV_CASES[name]
    module = qkv_module(case)
    generator = torch.Generator().manual_seed(4)
    x = torch.randn(2, 7, E, generator=generator).requires_grad_()
    cotangent = torch.randn(2, 7, E, generator=generator)
    y = module(x)
    y.backward(cotangent)
    expected_y, expected = plain_qkv_reference(module, case, x, cotangent)
    assert relative_error(y, expected_y) <= TOLERANCE
    assert_gradients(gradients(module, x), expected)


@pytest.mark.parametrize("name,bias_shape", [
    ("kv-mqa-rope", (7, 7)), ("none-gqa-partial-rope-window-bias", (H, 7, 7)),
    ("qkv-window-bias", (7, 7))])
def test_logit_bias_gradients_match_float64_autograd(name, bias_shape):
    """An additive logit bias (shared or per head) is an input of the layer:
    its gradient, x's and the parameters' match the float64 reference."""
    case = QKV_CASES[name]
    module = qkv_module(case)
    generator = torch.Generator().manual_seed(5)
    x = torch.randn(2, 7, E, generator=generator).requires_grad_()
    bias = torch.randn(bias_shape, generator=generator).requires_grad_()
    cotangent = torch.randn(2, 7, E, generator=generator)
    y = module(x, logit_bias=bias)
    y.backward(cotangent)
    params = {n: p.detach().double().requires_grad_()
              for n, p in module.named_parameters()}
    x64 = x.detach().double().requires_grad_()
    bias64 = bias.detach().double().requires_grad_()
    kwargs = {k: v for k, v in case.items() if k != "bias"}
    expected_y = plain_qkv_attention(x64, params, num_heads=H,
                                     logit_bias=bias64, **kwargs)
    expected_y.backward(cotangent.double())
    assert relative_error(y, expected_y) <= TOLERANCE
    expected = dict({n: p.grad for n, p in params.items()}, input=x64.grad,
                    logit_bias=bias64.grad)
    assert_gradients(dict(gradients(module, x), logit_bias=bias.grad),
                     expected)
    # Without a bias the layer is the unbiased one (another compiled op).
    unbiased = plain_qkv_attention(x64, params, num_heads=H, **kwargs)
    assert relative_error(module(x), unbiased) <= TOLERANCE


def test_logit_bias_of_a_wrong_shape_is_refused():
    module = qkv_module(QKV_CASES["kv-mqa-rope"])
    x = torch.randn(1, 5, E)
    for bad, text in ((torch.zeros(5, 6), r"\[S, S\].*got \[5, 6\]"),
                      (torch.zeros(H + 1, 5, 5), r"\[num_heads, S, S\]"),
                      (torch.zeros(1, H, 5, 5), r"got \[1, 4, 5, 5\]"),
                      (torch.zeros(5, 5, dtype=torch.int64),
                       "floating-point"), ([[0.0]], "torch tensor")):
        with pytest.raises((ValueError, TypeError), match=text):
            module(x, logit_bias=bad)


def test_parameters_of_another_dtype_receive_gradients():
    """f64 parameters run the f32 layer (cast for the call): the casts are
    differentiated too, and the gradients come back in f64."""
    case = QKV_CASES["kv-mqa-rope"]
    module = qkv_module(case).double()
    x = torch.randn(1, 5, E).requires_grad_()
    module(x).sum().backward()
    assert all(p.grad is not None and p.grad.dtype == torch.float64
               for p in module.parameters())
    assert x.grad is not None and x.grad.dtype == torch.float32


# ---------------------------------------------------------------------------
# CCAAttention against transformers' ZayaAttention
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def zaya():
    """A tiny random ZAYA (a global and a sliding-window layer, random key
    temperatures and convolution biases) and what each attention received
    (all keyword arguments) for a full and a left-padded batch."""
    transformers = pytest.importorskip("transformers")
    if not hasattr(transformers, "ZayaConfig"):
        pytest.skip("this transformers has no ZAYA model (5.23 and later do)")
    config = transformers.ZayaConfig(
        hidden_size=CE, num_attention_heads=H, num_key_value_heads=2,
        head_dim=D, num_hidden_layers=2,
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
            seen[index] = dict(kwargs)
        return record

    handles = [block.self_attn.register_forward_hook(hook(i), with_kwargs=True)
               for i, block in enumerate(model.model.layers)]
    ids = torch.randint(0, 32, (2, 10), generator=torch.Generator()
                        .manual_seed(1))
    mask = torch.ones(2, 10, dtype=torch.long)
    mask[1, :3] = 0
    runs = {}
    with torch.no_grad():
        model(ids)
        runs["full"] = dict(seen)
        model(ids, attention_mask=mask)
        runs["padded"] = dict(seen)
    for handle in handles:
        handle.remove()
    return model, config, mask, runs


def float64(value):
    if isinstance(value, torch.Tensor):
        return value.double() if value.is_floating_point() else value
    if isinstance(value, (tuple, list)):
        return type(value)(float64(v) for v in value)
    if isinstance(value, dict):
        return {k: float64(v) for k, v in value.items()}
    return value


@pytest.mark.parametrize("batch", ["full", "padded"])
@pytest.mark.parametrize("layer", [0, 1], ids=["global", "sliding"])
def test_cca_attention_gradients_match_zaya_attention(zaya, layer, batch):
    """Gradients of hidden_states and of every parameter (projections,
    both value projections, the convolutions' weights and biases, the key
    temperature, o_proj) against ZayaAttention's autograd in float64, for a
    random cotangent (zero at the padded tokens, whose outputs are not
    compared in the forward either)."""
    model, config, mask, runs = zaya
    kwargs = runs[batch][layer]
    reference = copy.deepcopy(model.model.layers[layer].self_attn).double()
    module = at.CCAAttention.from_hf_config(config, layer)
    module.load_state_dict(model.model.layers[layer].self_attn.state_dict())
    assert module.qk_norm.temp.abs().min() > 0.2
    x = kwargs["hidden_states"].detach().clone().requires_grad_()
    generator = torch.Generator().manual_seed(6)
    cotangent = torch.randn(x.shape, generator=generator)
    if batch == "padded":
        cotangent *= mask[..., None]
    y, _ = module(**dict(kwargs, hidden_states=x))
    y.backward(cotangent)
    x64 = x.detach().double().requires_grad_()
    y64, _ = reference(**float64(dict(kwargs, hidden_states=x64)))
    y64.backward(cotangent.double())
    real = mask.bool() if batch == "padded" else torch.ones_like(mask).bool()
    assert relative_error(y[real], y64[real]) <= TOLERANCE
    expected = dict({name: p.grad for name, p in reference.named_parameters()},
                    input=x64.grad)
    assert_gradients(gradients(module, x), expected)


# ---------------------------------------------------------------------------
# Training steps under torch.compile
# ---------------------------------------------------------------------------


class Recorder:
    """An AOTAutograd backend that runs the graphs as traced and keeps
    them: ("forward" | "backward", graph), plus Dynamo's graphs."""

    def __init__(self):
        self.graphs = []

        def keep(kind):
            def compiler(graph, example_inputs):
                self.graphs.append((kind, graph))
                return make_boxed_func(graph.forward)
            return compiler

        self._aot = aot_autograd(fw_compiler=keep("forward"),
                                 bw_compiler=keep("backward"))

    def __call__(self, graph, example_inputs):
        self.graphs.append(("dynamo", graph))
        return self._aot(graph, example_inputs)

    def attnfuse_ops(self, kind):
        return [str(node.target) for k, graph in self.graphs if k == kind
                for node in graph.graph.nodes
                if node.op == "call_function"
                and str(node.target).startswith("attnfuse.")]


class TinyModel(torch.nn.Module):
    def __init__(self, attention, width):
        super().__init__()
        self.embed = torch.nn.Linear(6, width)
        self.attention = attention
        self.head = torch.nn.Linear(width, 3)

    def forward(self, tokens, **kwargs):
        h = self.embed(tokens)
        out = self.attention(h, **kwargs)
        out = out[0] if isinstance(out, tuple) else out
        return self.head(h + out)


def tiny_models():
    """[(name, model)]: one with QKVAttention and one with CCAAttention
    (configurations the gradient tests compiled already)."""
    qkv = qkv_module(QKV_CASES["none-gqa-partial-rope-window-bias"])
    torch.manual_seed(7)
    cca = at.CCAAttention(CE, H, 2, D, rope_theta=1e4, rope_fraction=0.5,
                          window=4)
    with torch.no_grad():
        cca.qk_norm.temp.uniform_(0.5, 2.0)
    torch.manual_seed(8)
    return [("qkv", TinyModel(qkv, E)), ("cca", TinyModel(cca, CE))]


def sgd_step(model, tokens, target, lr=0.1):
    """Forward, loss, backward and a plain SGD update of every parameter."""
    loss = F.mse_loss(model(tokens), target)
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            p.sub_(lr * p.grad)
            p.grad = None
    return loss.detach()


def batch(width_in=6, seed=9):
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 6, width_in, generator=generator),
            torch.randn(2, 6, 3, generator=generator))


def assert_same_parameters(model, other):
    for (name, p), q in zip(model.named_parameters(), other.parameters()):
        error = relative_error(p.detach(), q.detach())
        assert error <= TOLERANCE, f"{name}: relative error {error:.2e}"


@pytest.mark.parametrize("name", ["qkv", "cca"])
def test_whole_training_step_compiles_to_one_graph(name):
    """torch.compile(fullgraph=True) of forward, loss, loss.backward() and
    the parameter update (Dynamo traces the backward with
    trace_autograd_ops): one graph (a break would raise) holding the
    attnfuse op and its gradient op; after two steps the parameters are
    those of eager steps."""
    model = dict((n, m) for n, m in tiny_models())[name]
    eager = copy.deepcopy(model)
    tokens, target = batch()
    recorder = Recorder()
    torch._dynamo.reset()
    with torch._dynamo.config.patch(trace_autograd_ops=True):
        step = torch.compile(sgd_step, fullgraph=True, backend=recorder)
        losses = [step(model, tokens, target) for _ in range(2)]
    expected = [sgd_step(eager, tokens, target) for _ in range(2)]
    torch.testing.assert_close(torch.stack(losses), torch.stack(expected),
                               rtol=1e-5, atol=1e-6)
    assert_same_parameters(model, eager)
    assert sum(kind == "dynamo" for kind, _ in recorder.graphs) == 1
    # The module's training forward (which keeps the attention outputs) and
    # its backward.
    ops = recorder.attnfuse_ops("forward")
    assert len(ops) == 2 and ops[0].endswith("_fwd.default") and \
        ops[1] == ops[0].replace("_fwd.default", "_bwd.default"), ops


def test_compiled_forward_with_torch_optimizer():
    """Without trace_autograd_ops: the forward and the loss compile with
    fullgraph=True, AOTAutograd's backward graph holds the gradient op, and
    loss.backward() and a torch.optim step run it."""
    models = dict(tiny_models())
    model = models["qkv"]
    eager = copy.deepcopy(model)
    tokens, target = batch()
    recorder = Recorder()
    torch._dynamo.reset()

    def loss_of(m):
        return F.mse_loss(m(tokens), target)

    compiled = torch.compile(loss_of, fullgraph=True, backend=recorder)
    for m, forward in ((model, compiled), (eager, loss_of)):
        optimizer = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        for _ in range(2):
            forward(m).backward()
            optimizer.step()
            optimizer.zero_grad()
    assert_same_parameters(model, eager)
    forward_ops = recorder.attnfuse_ops("forward")
    backward_ops = recorder.attnfuse_ops("backward")
    assert len(forward_ops) == 1 and forward_ops[0].endswith("_fwd.default")
    assert backward_ops == [forward_ops[0].replace("_fwd.default",
                                                   "_bwd.default")]
