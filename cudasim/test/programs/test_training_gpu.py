"""A layer's whole backward (`attnfuse.grad`'s `_vjp` function) through its sm_90a device
program on the emulator: the projections' input gradients (attn.fused_projection reading W as
stored, `transposed_weight`), the weight gradients (attn.fused_weight_grad), the attention
backward (attn.flash_attention_grad's dQ and dK/dV kernels) and the sums of shared gradients,
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
    "gqa2": dict(sharing="none", num_heads=4, num_kv_heads=2, head_dim=64),
    "kv_gqa2": dict(sharing="kv", num_heads=4, num_kv_heads=2, head_dim=64),
    "kv_mqa_d128": dict(sharing="kv", num_heads=2, num_kv_heads=1, head_dim=128),
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
    for seq in (70, 129):
        args = random_arguments(function, 2, seq, seed=seq)
        got, want = gpu(*args), cpu(*args)
        assert len(got) == len(want) == len(args) - 1  # one gradient per input but dy
        for g, w in zip(got, want):
            check_close(g, w)


@pytest.mark.parametrize("sharing,message", [
    ("kv", "'attn.flash_attention_grad' op key_rope is not supported by the sm_90a backward "
           "kernels yet"),
    ("none", "cannot execute 'attn.rope_grad'"),
])
def test_rotary_backward_is_refused_with_the_op_named(sharing, message, tmp_path):
    module = attnfuse.grad(attnfuse.qkv_attention(
        embed_dim=256, dtype="bf16", causal=True, sharing=sharing, num_heads=4,
        num_kv_heads=2, head_dim=64, rope_theta=1e4))
    with pytest.raises(attnfuse.MLIRError) as error:
        attnfuse.compile(module, target="sm_90a", output_dir=tmp_path, cubin=False,
                         entry="model_vjp")
    assert message in str(error.value)
