"""Builders: text round trip, checked configurations, examples."""

import subprocess
import sys

import pytest

import attnfuse
from attnfuse import builders

CONFIGS = [
    ("qkv", dict(sharing="none", embed_dim=64, num_heads=4)),
    ("qkv", dict(sharing="kv", embed_dim=64, num_heads=8, num_kv_heads=2,
                 rope_theta=1e4, rope_fraction=0.5, biases=True,
                 dtype="bf16")),
    ("qkv", dict(sharing="qk", embed_dim=64, num_heads=4, window=16,
                 causal=False, scale=0.25, dtype="f16", batch=2, seq=9)),
    ("qkv", dict(sharing="qkv", embed_dim=32, num_heads=2, num_layers=3)),
    ("qkv", dict(sharing="qk", embed_dim=32, num_heads=2, seq=7,
                 logit_bias="shared")),
    ("qkv", dict(sharing="kv", embed_dim=32, num_heads=4, num_kv_heads=2,
                 num_layers=2, logit_bias="per_head", biases=True)),
    ("cca", dict(embed_dim=128, num_heads=4, num_kv_heads=2, head_dim=16,
                 rope_theta=1e4, rope_fraction=0.5)),
    ("cca", dict(embed_dim=64, num_heads=2, head_dim=16, qk_mean=False,
                 value_shift=False, temperature="raw",
                 conv_kernel_sizes=(3, 2), num_layers=2, dtype="bf16")),
    ("cca", dict(embed_dim=64, num_heads=2, head_dim=16, num_layers=2,
                 padding_mask="i32", batch=3, seq=5)),
]


def build(kind, config):
    return (attnfuse.qkv_attention if kind == "qkv" else attnfuse.cca)(**config)


@pytest.mark.parametrize("kind,config", CONFIGS)
def test_round_trip(kind, config):
    module = build(kind, config)
    text = str(module)
    again = attnfuse.parse(text)
    assert str(again) == text
    again.verify()
    assert module.functions() == ["model"]


def test_layers_and_residuals():
    text, names = builders.qkv_attention_text(embed_dim=32, num_heads=2,
                                              num_layers=3)
    assert text.count("attn.qkv_attention <none>") == 3
    assert text.count("arith.addf") == 3  # stacks add each layer's input
    assert names[:3] == ["x", "l0_wq", "l0_wk"] and "l2_wo" in names
    single, _ = builders.qkv_attention_text(embed_dim=32, num_heads=2)
    assert "arith.addf" not in single


def test_cca_toggles_change_the_operands():
    shifted, names = builders.cca_text(embed_dim=64, num_heads=2, head_dim=16)
    assert "wv_prev(" in shifted and "l0_wv_prev" in names
    plain, names = builders.cca_text(embed_dim=64, num_heads=2, head_dim=16,
                                     value_shift=False, qk_mean=False)
    assert "wv_prev" not in plain and "qk_mean" not in plain
    assert "tensor<32x64xf32>" in plain  # wv is [Lk, E] without the shift


def test_logit_bias_is_an_argument_of_each_layer():
    text, names = builders.qkv_attention_text(
        embed_dim=32, num_heads=4, sharing="qk", seq=7, logit_bias="shared")
    assert names[-1] == "l0_logit_bias"
    assert "%l0_logit_bias: tensor<7x7xf32>" in text
    assert "logit_bias(%l0_logit_bias)" in text
    text, names = builders.qkv_attention_text(
        embed_dim=32, num_heads=4, num_layers=2, biases=True,
        logit_bias="per_head")
    assert "%l1_logit_bias: tensor<4x?x?xf32>" in text
    # After the projection biases, in the op's operand order.
    assert "bo(%l1_bo) logit_bias(%l1_logit_bias)" in text


def test_padding_mask_is_one_argument_every_layer_reads():
    text, names = builders.cca_text(embed_dim=64, num_heads=2, head_dim=16,
                                    num_layers=2, padding_mask=True)
    assert names[:3] == ["x", "mask", "l0_wq"]
    assert "%mask: tensor<?x?xi64>" in text
    assert text.count("padding_mask(%mask)") == 2
    plain, names = builders.cca_text(embed_dim=64, num_heads=2, head_dim=16)
    assert "mask" not in plain and "mask" not in names


@pytest.mark.parametrize("kwargs,field", [
    (dict(sharing="kv", embed_dim=64, num_heads=6, num_kv_heads=4), "num_kv_heads"),
    (dict(sharing="qk", embed_dim=64, num_heads=4, num_kv_heads=2), "num_heads"),
    (dict(sharing="qkv", embed_dim=64, num_heads=4, num_kv_heads=1), "num_heads"),
    (dict(sharing="shared", embed_dim=64, num_heads=4), "sharing"),
    (dict(embed_dim=60, num_heads=8), "head_dim"),
    (dict(embed_dim=64, num_heads=0), "num_heads"),
    (dict(embed_dim=64, num_heads=4, dtype="f64"), "dtype"),
    (dict(embed_dim=64, num_heads=4, rope_theta=1e4, rope_fraction=1.5), "rope_fraction"),
    (dict(embed_dim=64, num_heads=4, rope_theta=1e4, rope_fraction=0.3), "rope_fraction"),
    (dict(embed_dim=64, num_heads=4, rope_theta=-1.0), "rope_theta"),
    (dict(embed_dim=64, num_heads=4, window=0), "window"),
    (dict(embed_dim=64, num_heads=4, num_layers=0), "num_layers"),
    (dict(embed_dim=64, num_heads=4, seq=-3), "seq"),
    (dict(embed_dim=64, num_heads=4, scale=0), "scale"),
    (dict(embed_dim=64, num_heads=4, logit_bias="alibi"), "logit_bias"),
])
def test_invalid_qkv_configs_raise(kwargs, field):
    with pytest.raises(ValueError, match=field):
        attnfuse.qkv_attention(**kwargs)


@pytest.mark.parametrize("kwargs,field", [
    (dict(embed_dim=64, num_heads=4, num_kv_heads=3, head_dim=8), "num_kv_heads"),
    (dict(embed_dim=64, num_heads=2, head_dim=8, conv_kernel_sizes=(2,)), "conv_kernel_sizes"),
    (dict(embed_dim=64, num_heads=2, head_dim=8, conv_kernel_sizes=(0, 2)), "conv_kernel_sizes"),
    (dict(embed_dim=64, num_heads=2, head_dim=8, temperature="hot"), "temperature"),
    (dict(embed_dim=64, num_heads=1, head_dim=3), "value_shift"),
    (dict(embed_dim=64, num_heads=2, head_dim=8, padding_mask="f32"), "padding_mask"),
])
def test_invalid_cca_configs_raise(kwargs, field):
    with pytest.raises(ValueError, match=field):
        attnfuse.cca(**kwargs)


def test_examples_are_generated_by_the_builders(root):
    # examples/generate.py writes the example models with attnfuse.builders.
    proc = subprocess.run([sys.executable, f"{root}/examples/generate.py",
                           "--check"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
