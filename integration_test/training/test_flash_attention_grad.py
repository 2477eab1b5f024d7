"""The fused attention backward (attn.flash_attention_grad) against the
reference lowering of attn.sdpa_grad.

Each case builds a layer with the Python builders, differentiates it with
`attn-differentiate` (a function `model_vjp(arguments..., d_out) ->
(gradients...)`) and compiles `model_vjp` twice for the CPU: fused (attn-fuse
rewrites the bias-free attn.sdpa_grad into attn.flash_attention_grad, the
tiled backward that never forms an S x T tensor) and unfused (the reference
lowering, itself checked against torch autograd in test_gradients.py). Every
gradient the function returns must agree.

The K=V cases (sharing "kv") must reach the K=V form of the kernel (one
gradient for the shared key/value tensor, its key role rotated on load
under RoPE, rope^T applied to each dK tile in the kernel).

S = 13 with block_q = block_kv = 8 leaves a partial query tile and a partial
key tile; the default tiles (64) are larger than the sequence.

Error norm, per gradient tensor: max|g - ref| / max|ref|.
Tolerances: f32 1e-5 (both accumulate in f32; they differ in the order of
the sums and in P = exp(s - L) against exp(s - m) / l). bf16: 2e-2 against
the f32 reference on the same (bf16-representable) inputs: the bf16
function rounds every gradient op's result to bf16 (u = 2^-9).
"""

import re

import numpy as np
import pytest

from attnfuse_package import import_attnfuse  # noqa: E402

attnfuse = import_attnfuse()

ENTRY = "model_vjp"
F32_TOLERANCE = 1e-5
BF16_TOLERANCE = 2e-2
SMALL_TILES = {"block_q": 8, "block_kv": 8}

CASES = {
    "kv_gqa_causal": (attnfuse.qkv_attention,
                      dict(embed_dim=32, num_heads=4, num_kv_heads=2,
                           sharing="kv", causal=True), SMALL_TILES),
    "kv_gqa_causal_default_tiles": (attnfuse.qkv_attention,
                                    dict(embed_dim=32, num_heads=4,
                                         num_kv_heads=2, sharing="kv",
                                         causal=True), {}),
    "kv_rope_gqa_causal": (attnfuse.qkv_attention,
                           dict(embed_dim=32, num_heads=4, num_kv_heads=2,
                                sharing="kv", causal=True, rope_theta=1e4),
                           SMALL_TILES),
    "kv_partial_rope_mqa_window": (attnfuse.qkv_attention,
                                   dict(embed_dim=32, num_heads=4,
                                        num_kv_heads=1, sharing="kv",
                                        causal=True, window=5,
                                        rope_theta=1e4, rope_fraction=0.5),
                                   SMALL_TILES),
    "kv_rope_non_causal_default_tiles": (attnfuse.qkv_attention,
                                         dict(embed_dim=32, num_heads=4,
                                              num_kv_heads=2, sharing="kv",
                                              causal=False, rope_theta=1e4),
                                         {}),
    "none_window": (attnfuse.qkv_attention,
                    dict(embed_dim=32, num_heads=4, sharing="none",
                         causal=True, window=5), SMALL_TILES),
    "mqa_non_causal": (attnfuse.qkv_attention,
                       dict(embed_dim=32, num_heads=4, num_kv_heads=1,
                            sharing="none", causal=False), SMALL_TILES),
    # The logit bias: its gradient is dS summed over the batch (and over
    # the heads for [S, S]), accumulated in the kernel.
    "qk_logit_bias_causal": (attnfuse.qkv_attention,
                             dict(embed_dim=32, num_heads=4, sharing="qk",
                                  causal=True, logit_bias="shared"),
                             SMALL_TILES),
    "kv_rope_gqa_logit_bias_per_head_window": (
        attnfuse.qkv_attention,
        dict(embed_dim=32, num_heads=4, num_kv_heads=2, sharing="kv",
             causal=True, window=5, rope_theta=1e4, logit_bias="per_head"),
        SMALL_TILES),
    "none_mqa_logit_bias_non_causal_default_tiles": (
        attnfuse.qkv_attention,
        dict(embed_dim=32, num_heads=4, num_kv_heads=1, sharing="none",
             causal=False, logit_bias="shared"), {}),
    "cca_padding_mask": (attnfuse.cca,
                         dict(embed_dim=64, num_heads=4, num_kv_heads=2,
                              padding_mask=True), SMALL_TILES),
}


def padding(batch, seq):
    """Sequence 0 padded on the left (its first queries see no key under the
    causal mask: fully masked rows), sequence 1 on the right."""
    mask = np.ones((batch, seq), np.int64)
    mask[0, :3] = 0
    if batch > 1:
        mask[1, seq - 4:] = 0
    return mask


def make_inputs(gradient, batch=2, seq=13, seed=0):
    """Arguments of `model_vjp`: float32 values of unit scale (weights scaled
    by 1/sqrt(fan in)), the padding mask for integer arguments."""
    rng = np.random.default_rng(seed)
    specs, _ = gradient.signature(ENTRY)
    args = []
    for dtype, shape in specs:
        dims = [batch if i == 0 and d is None else seq if d is None else d
                for i, d in enumerate(shape)]
        if (dtype not in ("i32", "i64") and len(shape) in (2, 3)
                and shape[-2:] == (None, None)):
            # A logit bias, [S, S] or [Hq, S, S].
            dims = [seq if d is None else d for d in shape]
            args.append(0.5 * rng.standard_normal(dims).astype(np.float32))
            continue
        if dtype in ("i32", "i64"):
            args.append(padding(batch, seq).astype(
                np.int32 if dtype == "i32" else np.int64))
            continue
        value = rng.standard_normal(dims)
        if len(dims) >= 2 and dims[0] != batch:  # a weight [out, in, ...]
            value /= np.sqrt(np.prod(dims[1:]))
        args.append(value.astype(np.float32))
    return args


def rel_err(value, ref):
    value = np.asarray(value, np.float64)
    ref = np.asarray(ref, np.float64)
    return np.max(np.abs(value - ref)) / max(np.max(np.abs(ref)), 1e-30)


def differentiate(builder, config):
    gradient = builder(**config).run_pipeline("attn-differentiate")
    # The fused pipeline must see the kernel op, not the reference path.
    fused = str(gradient.run_pipeline(
        "builtin.module(attn-decompose,attn-fuse)"))
    assert "attn.flash_attention_grad" in fused
    assert "attn.sdpa_grad" not in fused
    # K=V: the kernel keeps one gradient for the shared tensor (two
    # results), rotating the key role itself under RoPE.
    # A logit bias's gradient accumulates in the kernel.
    assert ("accumulate(" in fused) == ("logit_bias" in config)
    if config.get("sharing") == "kv":
        assert re.search(r"%query_grad, %key_grad(, %bias_grad)? = "
                         r"attn.flash_attention_grad", fused)
        assert "attn.rope_grad %key_grad" not in fused
        assert ("key_rope" in fused) == ("rope_theta" in config)
    return gradient


@pytest.mark.parametrize("name", sorted(CASES))
def test_fused_matches_reference_f32(name):
    builder, config, tiles = CASES[name]
    gradient = differentiate(builder, config)
    args = make_inputs(gradient)
    reference = attnfuse.compile(gradient, entry=ENTRY, fused=False)(*args)
    fused = attnfuse.compile(gradient, entry=ENTRY, fused=True,
                             **tiles)(*args)
    assert len(fused) == len(reference)
    for index, (value, ref) in enumerate(zip(fused, reference)):
        assert np.all(np.isfinite(value)), f"gradient #{index} not finite"
        err = rel_err(value, ref)
        assert err <= F32_TOLERANCE, f"gradient #{index}: {err:.3g}"


def test_fused_bf16_matches_f32_reference():
    config = dict(embed_dim=32, num_heads=4, num_kv_heads=2, sharing="kv",
                  causal=True)
    gradient = differentiate(attnfuse.qkv_attention, config)
    bf16 = differentiate(attnfuse.qkv_attention, dict(config, dtype="bf16"))
    # Inputs representable in bf16, so both functions see the same values.
    args = [attnfuse.from_bf16(attnfuse.to_bf16(a)) for a in
            make_inputs(gradient)]
    reference = attnfuse.compile(gradient, entry=ENTRY, fused=False)(*args)
    fused = attnfuse.compile(bf16, entry=ENTRY, fused=True, **SMALL_TILES)(
        *[attnfuse.to_bf16(a) for a in args])
    for index, (value, ref) in enumerate(zip(fused, reference)):
        value = attnfuse.from_bf16(np.asarray(value))
        assert np.all(np.isfinite(value)), f"gradient #{index} not finite"
        err = rel_err(value, ref)
        assert err <= BF16_TOLERANCE, f"gradient #{index}: {err:.3g}"
