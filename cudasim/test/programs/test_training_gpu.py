"""A layer's whole backward (`attnfuse.grad`'s `_vjp` function) through its sm_90a device
program on the emulator: the projections' input gradients (attn.fused_projection reading W as
stored, `transposed_weight`), the weight gradients (attn.fused_weight_grad), the attention
backward (attn.flash_attention_grad's dQ and dK/dV kernels), the RoPE transposes
(attn.rope_grad) and the sums of shared gradients,
against the same function on the CPU path (whose gradients the training tests check against
float64 autograd).

Tolerance: as test_whole_models.py, max|gpu - cpu| <= 2^-5 max|cpu| per gradient; both paths
keep bf16 between kernels and round at different points.

Lengths of 70 and 129 tokens end inside a 64-token k step of the weight gradients and past a
128-row tile; with one token the attention's weight gradients are zero in exact arithmetic
(one key per softmax), which leaves no scale to compare rounding noise against.
"""
import numpy as np
import pytest

import attnfuse
from test_whole_models import check_close, random_arguments

LAYERS = {
    "mha": dict(sharing="none", num_heads=4, num_kv_heads=4, head_dim=64),
    "kv_gqa2": dict(sharing="kv", num_heads=4, num_kv_heads=2, head_dim=64),
    "kv_mqa_d128": dict(sharing="kv", num_heads=2, num_kv_heads=1, head_dim=128),
    # Head dim 128 with separate dK and dV accumulators (the Llama shape); with K=V and key
    # RoPE the split backward has them too.
    "mha_d128": dict(sharing="none", num_heads=2, num_kv_heads=2, head_dim=128),
    # Head dim 96 (Phi-3): 64-column slabs zero-filled past the tensor's 96 columns, and the
    # query / key rotations as attn.rope kernels (96 does not tile the GEMM's 128 columns).
    "gqa2_d96_rope": dict(sharing="none", num_heads=4, num_kv_heads=2, head_dim=96,
                          rope_theta=1e4),
    "kv_mqa_d128_rope": dict(sharing="kv", num_heads=2, num_kv_heads=1, head_dim=128,
                             rope_theta=1e4),
    # Projection biases (as Qwen2's q/k/v): their gradients are the column sums of the
    # projections' output gradients (the weight-gradient op of one input feature).
    "gqa2_biases": dict(sharing="none", num_heads=4, num_kv_heads=2, head_dim=64,
                        biases=True),
    # RoPE: the query and key rotations' transposes (attn.rope_grad kernels); for K=V the
    # flash backward's key rotation runs as its own kernels around it.
    "gqa2_rope": dict(sharing="none", num_heads=4, num_kv_heads=2, head_dim=64,
                      rope_theta=1e4),
    "kv_gqa2_rope": dict(sharing="kv", num_heads=4, num_kv_heads=2, head_dim=64,
                         rope_theta=1e4),
}


def launched_kinds(program, function="model_vjp"):
    """The kinds of the kernels `function` of the compiled program launches."""
    kinds = {kernel["name"]: kernel["kind"] for kernel in program.manifest["kernels"]}
    return {kinds[launch["kernel"]] for launch in program.manifest["launches"]
            if launch["function"] == function}


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_layer_backward_on_device(layer, tmp_path):
    module = attnfuse.grad(attnfuse.qkv_attention(embed_dim=256, dtype="bf16", causal=True,
                                                  **LAYERS[layer]))
    gpu = attnfuse.compile(module, target="sm_90a", output_dir=tmp_path, cubin=False,
                           entry="model_vjp")
    cpu = attnfuse.compile(module, entry="model_vjp")
    function = gpu.function("model_vjp")
    launched = launched_kinds(gpu)
    assert {"weight_grad_gemm", "projection_gemm", "flash_attention_grad_dq",
            "flash_attention_grad_dkv"} <= launched, launched
    assert ("rope_grad" in launched) == ("rope_theta" in LAYERS[layer]), launched
    assert ("weight_grad_colsum" in launched) == ("biases" in LAYERS[layer]), launched
    # Weights of E 256 are a few 128 x 128 tiles: they split over the tokens.
    assert "weight_grad_combine" in launched, launched
    for seq in (70, 129):
        args = random_arguments(function, 2, seq, seed=seq)
        got, want = gpu(*args), cpu(*args)
        assert len(got) == len(want) == len(args) - 1  # one gradient per input but dy
        gradients = dict(zip(module.argument_names("model"), zip(got, want)))
        for name, (g, w) in gradients.items():
            if name.endswith("_bk"):
                # A key bias adds q.bk to every score of a query: softmax does not see it,
                # so its gradient is 0 in exact arithmetic and both paths give rounding
                # noise. Bound it by the query bias gradient's scale instead.
                scale = np.abs(attnfuse.from_bf16(gradients[name[:-1] + "q"][1])).max()
                assert np.abs(attnfuse.from_bf16(g)).max() <= 2.0 ** -5 * scale, name
                continue
            check_close(g, w)


CCA_LAYERS = {
    # CCGQA with the defaults: QK-mean, value shift, <raw> temperature, sqrt-eps norm, both
    # convolutions of 2 taps.
    "ccgqa": (dict(num_heads=4, num_kv_heads=2, head_dim=64), (70, 129)),
    # The ZAYA1 toggles: <clamped> temperature (one outside its clamp: zero gradient), the
    # clamp-eps norm, RoPE on half of each head, 3-tap convolutions.
    "ccgqa_zaya": (dict(num_heads=4, num_kv_heads=2, head_dim=64, rope_theta=1e4,
                        rope_fraction=0.5, temperature="clamped", norm="clamp_eps",
                        conv_kernel_sizes=(3, 3)), (70,)),
    # CCA without QK-mean or value shift, one query head per key head.
    "cca_mha": (dict(num_heads=2, num_kv_heads=2, head_dim=64, qk_mean=False,
                     value_shift=False), (70,)),
    # A padded batch: the padded tokens' rows zeroed in the forward and the cotangents. One
    # KV head (CCMQA): the value shift's current and previous halves split that head.
    "ccmqa_padded": (dict(num_heads=2, num_kv_heads=1, head_dim=64, padding_mask=True), (70,)),
}


@pytest.mark.parametrize("layer", sorted(CCA_LAYERS))
def test_cca_layer_backward_on_device(layer, tmp_path):
    """A CCA layer's whole backward on the device against the CPU path: the forward
    (projections, convolutions, QK-mean, the norm, flash attention), then the gradients of
    each step, including the convolutions' weights and biases and the key temperature; the
    projections' Q|K join and its split as column copies."""
    config, lengths = CCA_LAYERS[layer]
    module = attnfuse.grad(attnfuse.cca(embed_dim=128, dtype="bf16", **config))
    gpu = attnfuse.compile(module, target="sm_90a", output_dir=tmp_path, cubin=False,
                           entry="model_vjp")
    cpu = attnfuse.compile(module, entry="model_vjp")
    function = gpu.function("model_vjp")
    launched = launched_kinds(gpu)
    # The backward reads every step of the chain up to the norm, so the forward computes it
    # once, step by step (no fused prologue repeating it), then the norm and RoPE.
    expected = {"projection_gemm", "causal_conv1d", "qk_norm", "flash_attention",
                "causal_conv1d_input_grad", "causal_conv1d_weight_grad",
                "causal_conv1d_weight_sum", "qk_norm_grad", "qk_norm_grad_temp", "concat",
                "slice", "flash_attention_grad_dq", "flash_attention_grad_dkv",
                "weight_grad_gemm"}
    assert "cca_prologue" not in launched
    if config.get("qk_mean", True):
        expected |= {"qk_mean", "qk_mean_grad"}
    if config.get("value_shift", True):
        expected |= {"value_shift", "value_shift_grad"}
    if "rope_theta" in config:
        expected |= {"rope", "rope_grad"}
    if config.get("padding_mask"):
        expected.add("mask_tokens")
    assert expected <= launched, expected - launched
    names = module.argument_names("model")
    for seq in lengths:
        args = random_arguments(function, 2, seq, seed=seq, names=names + ["dy"])
        temp = names.index("l0_temp")
        # Temperatures of order one (the 0.02 scale of a bias would flatten the softmax);
        # with <clamped> the second lies past the clamp's upper end.
        temps = [0.8, 2.5 if "temperature" in config else 1.2][:config["num_kv_heads"]]
        args[temp] = attnfuse.to_bf16(np.array(temps, dtype=np.float32))
        if config.get("padding_mask"):
            mask = np.ones((2, seq), dtype=np.int64)
            mask[1, seq - 9:] = 0  # the second sequence ends 9 tokens early
            args[names.index("mask")] = mask
        got, want = gpu(*args), cpu(*args)
        gradients = dict(zip([n for n in names if n != "mask"], zip(got, want)))
        assert len(got) == len(want) == len(gradients)
        for name, (g, w) in gradients.items():
            check_close(g, w)
        if "temperature" in config:
            assert attnfuse.from_bf16(gradients["l0_temp"][0])[1] == 0.0


@pytest.mark.parametrize("layer,message", [
    # Head dim 256: the backward kernels take head dims up to 128 (no column split of dK/dV).
    (attnfuse.qkv_attention(embed_dim=512, num_heads=2, num_kv_heads=2, head_dim=256,
                            dtype="bf16", causal=True), "head_dim 256"),
])
def test_backward_without_kernels_is_refused_with_the_op_named(layer, message, tmp_path):
    module = attnfuse.grad(layer)
    with pytest.raises(attnfuse.MLIRError) as error:
        attnfuse.compile(module, target="sm_90a", output_dir=tmp_path, cubin=False,
                         entry="model_vjp")
    assert message in str(error.value)
    assert "'attn." in str(error.value)  # the op without a kernel is named
