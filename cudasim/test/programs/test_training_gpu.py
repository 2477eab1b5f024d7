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


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_layer_backward_on_device(layer, tmp_path):
    module = attnfuse.grad(attnfuse.qkv_attention(embed_dim=256, dtype="bf16", causal=True,
                                                  **LAYERS[layer]))
    gpu = attnfuse.compile(module, target="sm_90a", output_dir=tmp_path, cubin=False,
                           entry="model_vjp")
    cpu = attnfuse.compile(module, entry="model_vjp")
    function = gpu.function("model_vjp")
    kinds = {kernel["name"]: kernel["kind"] for kernel in gpu.manifest["kernels"]}
    launched = {kinds[launch["kernel"]] for launch in gpu.manifest["launches"]
                if launch["function"] == "model_vjp"}
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


@pytest.mark.parametrize("layer,message", [
    (attnfuse.cca(embed_dim=128, num_heads=4, num_kv_heads=2, head_dim=64, dtype="bf16"),
     "sm_90a"),
])
def test_backward_without_kernels_is_refused_with_the_op_named(layer, message, tmp_path):
    module = attnfuse.grad(layer)
    with pytest.raises(attnfuse.MLIRError) as error:
        attnfuse.compile(module, target="sm_90a", output_dir=tmp_path, cubin=False,
                         entry="model_vjp")
    assert message in str(error.value)
    assert "'attn." in str(error.value)  # the op without a kernel is named
