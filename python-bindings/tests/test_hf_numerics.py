"""attn.cca imported from a Hugging Face ZAYA checkpoint against
transformers' own ZayaAttention, in f32: a global layer (theta 5e6) and a
sliding-window layer (theta 1e4), through both CPU lowerings, for full
batches and for left- and right-padded ones with a 2-D attention_mask
(attn.cca's padding_mask). Runs when
torch and transformers (with the `zaya` model, 5.23 and later) import;
scripts/setup.sh installs them."""

import numpy as np
import pytest

import attnfuse

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
if not hasattr(transformers, "ZayaConfig"):
    pytest.skip("this transformers has no ZAYA model (5.23 and later do)",
                allow_module_level=True)

TOLERANCE = 1e-5  # f32, relative to the output's largest value


def relative_error(got, expected, rows=None):
    """max |got - expected| / max |expected|, over `rows` (the real tokens of
    a padded batch) when given."""
    if rows is not None:
        got, expected = got[rows], expected[rows]
    return np.abs(got - expected).max() / np.abs(expected).max()
WINDOW = 8
TOKENS = 24  # three windows
REAL = 13  # real tokens of the padded sequence


def _zaya_checkpoint(folder, tiny_qk=False):
    """A tiny random ZAYA saved by transformers into `folder`, and what each
    layer's attention received and returned (forward hooks), for a full
    batch and for a right- and a left-padded one ({side: (mask, seen)}).
    tiny_qk scales the query and key paths down so that every head's norm
    is far below the f32 epsilon."""
    config = transformers.ZayaConfig(
        hidden_size=96, num_attention_heads=4, num_key_value_heads=2,
        head_dim=16, num_hidden_layers=2,
        layer_types=["hybrid", "hybrid_sliding"], sliding_window=WINDOW,
        num_experts=2, moe_intermediate_size=32, router_hidden_size=16,
        vocab_size=64)
    torch.manual_seed(0)
    model = transformers.ZayaForCausalLM(config).eval()
    with torch.no_grad():
        for block in model.model.layers:
            attention = block.self_attn
            attention.qk_norm.temp.uniform_(0.25, 3.0)
            projection = attention.qkv_proj
            for conv in (projection.conv_qk_depthwise,
                         projection.conv_qk_grouped):
                conv.bias.normal_(0.0, 0.2)
            if tiny_qk:
                for weight in (projection.q_proj.weight,
                               projection.k_proj.weight,
                               projection.conv_qk_depthwise.bias,
                               projection.conv_qk_grouped.bias):
                    weight.mul_(1e-8)
    model.save_pretrained(folder)

    seen = {}

    def hook(index):
        def record(module, args, kwargs, output):
            seen[index] = (kwargs["hidden_states"].numpy().copy(),
                           output[0].numpy().copy())
        return record

    for index, block in enumerate(model.model.layers):
        block.self_attn.register_forward_hook(hook(index), with_kwargs=True)
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 64, (2, TOKENS), generator=generator)
    with torch.no_grad():
        model(ids)
    full = dict(seen)
    # Sequence 1 has 13 real tokens, padded on the right or on the left
    # (sequence 0 is full). transformers zeroes the padded tokens before
    # the projections and masks them as keys.
    padded = {}
    for side in ("right", "left"):
        mask = torch.ones(2, TOKENS, dtype=torch.long)
        if side == "right":
            mask[1, REAL:] = 0
        else:
            mask[1, :TOKENS - REAL] = 0
        with torch.no_grad():
            model(ids, attention_mask=mask)
        padded[side] = (mask.numpy(), dict(seen))
    return folder, config, full, padded


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return _zaya_checkpoint(tmp_path_factory.mktemp("zaya"))


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory):
    return _zaya_checkpoint(tmp_path_factory.mktemp("zaya_tiny"),
                            tiny_qk=True)


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "reference"])
@pytest.mark.parametrize("layer", [0, 1], ids=["global", "sliding"])
def test_cca_matches_transformers_zaya_attention(checkpoint, layer, fused):
    folder, config, full, _ = checkpoint
    module = attnfuse.from_hf_config(folder / "config.json", layers=[layer],
                                     residual=False, dtype="f32")
    text = str(module)
    if layer == 1:
        assert f"window = {WINDOW} : i64" in text and "theta = 10000.0" in text
    else:
        assert "window" not in text and "theta = 5000000.0" in text
    run = attnfuse.compile(module, target="cpu", fused=fused)
    weights = attnfuse.load_hf_weights(run, folder)
    x, expected = full[layer]
    y = run(x, *weights.values())
    error = relative_error(y, expected)
    assert error <= TOLERANCE, f"relative error {error:.2e}"
    # The clamped temperature is a different function of the same weights.
    clamped = attnfuse.compile(attnfuse.from_hf_config(
        folder / "config.json", layers=[layer], residual=False, dtype="f32",
        temperature="clamped"), target="cpu", fused=fused)
    off = clamped(x, *weights.values())
    assert relative_error(off, expected) > 1e-2


@pytest.mark.parametrize("layer", [0, 1], ids=["global", "sliding"])
def test_right_padded_batch_matches_at_the_real_tokens(checkpoint, layer):
    """Causal CCA never reads later tokens, so right padding changes
    nothing at the real ones even without a mask: their outputs match
    transformers' masked run."""
    folder, _config, _full, padded = checkpoint
    run = attnfuse.compile(attnfuse.from_hf_config(
        folder / "config.json", layers=[layer], residual=False, dtype="f32"),
        target="cpu")
    mask, seen = padded["right"]
    x, expected = seen[layer]
    y = run(x, *attnfuse.load_hf_weights(run, folder).values())
    real = mask.astype(bool)
    error = relative_error(y, expected, real)
    assert error <= TOLERANCE, f"relative error {error:.2e}"


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "reference"])
@pytest.mark.parametrize("layer", [0, 1], ids=["global", "sliding"])
@pytest.mark.parametrize("side", ["left", "right"])
def test_padded_batch_with_the_mask_matches_at_the_real_tokens(
        checkpoint, side, layer, fused):
    """With padding_mask, transformers' 2-D attention_mask itself: the
    padded tokens are zeroed before the projections and masked as keys, so
    the real tokens match on either side. Without the mask, left padding
    does not (the padded tokens reach the convolution and the attention)."""
    folder, _config, _full, padded = checkpoint
    mask, seen = padded[side]
    x, expected = seen[layer]
    real = mask.astype(bool)
    module = attnfuse.from_hf_config(folder / "config.json", layers=[layer],
                                     residual=False, dtype="f32",
                                     padding_mask=True)
    assert "padding_mask(%arg1)" in str(module)
    run = attnfuse.compile(module, target="cpu", fused=fused)
    assert run.argument_names[:2] == ["x", "mask"]
    weights = attnfuse.load_hf_weights(run, folder)
    y = run(x, mask, *weights.values())
    error = relative_error(y, expected, real)
    assert error <= TOLERANCE, f"relative error {error:.2e}"
    # An int32 mask is the same mask.
    run32 = attnfuse.compile(attnfuse.from_hf_config(
        folder / "config.json", layers=[layer], residual=False, dtype="f32",
        padding_mask="i32"), target="cpu", fused=fused)
    y32 = run32(x, mask.astype(np.int32), *weights.values())
    assert np.array_equal(y32[real], y[real])
    if side == "left":
        unmasked = attnfuse.compile(attnfuse.from_hf_config(
            folder / "config.json", layers=[layer], residual=False,
            dtype="f32"), target="cpu", fused=fused)
        off = unmasked(x, *weights.values())
        assert relative_error(off, expected, real) > 1e-2


def test_a_mask_of_other_sizes_is_refused(checkpoint):
    folder, _config, _full, padded = checkpoint
    run = attnfuse.compile(attnfuse.from_hf_config(
        folder / "config.json", layers=[0], residual=False, dtype="f32",
        padding_mask=True), target="cpu")
    mask, seen = padded["left"]
    weights = attnfuse.load_hf_weights(run, folder).values()
    with pytest.raises(RuntimeError, match=r"argument #1 \('mask'\) "
                       r"dimension 1 is 23 but argument #0 \('x'\) "
                       r"dimension 1 is 24; attn.mask_tokens at .* needs "
                       r"'mask' seq == 'input' seq"):
        run(seen[0][0], mask[:, 1:], *weights)


def test_stack_of_imported_layers_runs_every_layer(checkpoint):
    """The whole imported stack (with residuals) is the composition of its
    layers: layer i of the stack reads block i's weights."""
    folder, _config, full, _ = checkpoint
    stack = attnfuse.from_hf_config(folder / "config.json", dtype="f32")
    run = attnfuse.compile(stack, target="cpu")
    weights = attnfuse.load_hf_weights(run, folder)
    x = full[0][0]
    y = run(x, *weights.values())
    h = x
    for layer in range(2):
        single = attnfuse.compile(attnfuse.from_hf_config(
            folder / "config.json", layers=[layer], residual=False,
            dtype="f32"), target="cpu")
        h = h + single(h, *attnfuse.load_hf_weights(single, folder).values())
    assert np.abs(y - h).max() <= 1e-5 * np.abs(h).max()


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "reference"])
@pytest.mark.parametrize("layer", [0, 1], ids=["global", "sliding"])
def test_small_head_norms_follow_transformers(tiny_checkpoint, layer, fused):
    """Heads of norm ~1e-8: transformers divides by max(|x|, eps); the
    importer's norm = clamp_eps matches it, the IR's default
    sqrt(|x|^2 + 1e-12) would not."""
    folder, _config, full, _ = tiny_checkpoint
    module = attnfuse.from_hf_config(folder / "config.json", layers=[layer],
                                     residual=False, dtype="f32")
    assert "norm = #attn.norm<clamp_eps>" in str(module)
    run = attnfuse.compile(module, target="cpu", fused=fused)
    weights = attnfuse.load_hf_weights(run, folder)
    x, expected = full[layer]
    y = run(x, *weights.values())
    error = relative_error(y, expected)
    assert error <= TOLERANCE, f"relative error {error:.2e}"
    default_norm = attnfuse.compile(attnfuse.cca(
        embed_dim=96, num_heads=4, num_kv_heads=2, head_dim=16,
        window=WINDOW if layer else None,
        rope_theta=1e4 if layer else 5e6, rope_fraction=0.5, dtype="f32"),
        target="cpu", fused=fused)
    off = default_norm(x, *weights.values())
    # Far outside the tolerance (the softmax is nearly flat on such small
    # logits, so the forms differ by ~1e-3 to 1e-2, not more).
    assert relative_error(off, expected) > 100 * TOLERANCE
