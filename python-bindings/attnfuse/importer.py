"""Hugging Face config.json -> the model's attention stack as attn IR.

Two kinds of config (a dict or the path of a config.json):

GPT-2 style (model_type "gpt2", or n_embd present): the paper's
projection-sharing models.
  n_embd, n_head, n_layer           width, query heads, layers
  attn_sharing (or sharing_mode)    none | kv | qk | qkv (default none)
  num_key_value_heads (or n_kv_head) KV heads (default n_head)
  rope_theta, partial_rotary_factor optional RoPE (default: none; the
                                    paper's models use learned absolute
                                    position embeddings outside attention)
  -> attn.qkv_attention <sharing> per layer, causal, with biases.

ZAYA style (model_type "zaya", or cca_time0 present): CCA / CCGQA.
  hidden_size, num_attention_heads, num_key_value_heads, head_dim,
  cca_time0, cca_time1 (convolution kernel sizes), partial_rotary_factor,
  rope_theta, num_hidden_layers
  -> attn.cca per layer: qk_mean, value_shift, clamped temperature,
  causal, RoPE.

Every layer adds its input (residual). Keys that do not change the
attention layers (vocabulary, MLP/MoE, norms, dropout, token ids, ...) are
in an explicit ignore list; any other key raises ValueError naming it, as do
missing and inconsistent fields.

CLI: attnfuse-import config.json -o out.mlir (or python3 -m
attnfuse.importer ...).
"""

import argparse
import json
import os
import sys

from . import builders

_COMMON_IGNORED = {
    "architectures", "auto_map", "model_type", "torch_dtype", "dtype",
    "transformers_version", "vocab_size", "bos_token_id", "eos_token_id",
    "pad_token_id", "tie_word_embeddings", "use_cache", "initializer_range",
    "_name_or_path", "task_specific_params", "is_encoder_decoder",
    "output_attentions", "output_hidden_states", "return_dict",
}
GPT2_IGNORED = _COMMON_IGNORED | {
    "n_positions", "n_ctx", "n_inner", "activation_function", "resid_pdrop",
    "embd_pdrop", "attn_pdrop", "layer_norm_epsilon", "summary_type",
    "summary_use_proj", "summary_activation", "summary_proj_to_labels",
    "summary_first_dropout", "scale_attn_weights", "reorder_and_upcast_attn",
    "scale_attn_by_inverse_layer_idx", "add_cross_attention",
}
GPT2_USED = {"n_embd", "n_head", "n_layer", "attn_sharing", "sharing_mode",
             "num_key_value_heads", "n_kv_head", "rope_theta",
             "partial_rotary_factor"}
ZAYA_IGNORED = _COMMON_IGNORED | {
    "max_position_embeddings", "intermediate_size", "hidden_act",
    "rms_norm_eps", "norm_epsilon", "attention_dropout", "hidden_dropout",
    "num_experts", "num_experts_per_tok", "moe_intermediate_size",
    "router_aux_loss_coef", "output_router_logits", "residual_scale",
    "mlp_bias", "sliding_window",
}
ZAYA_USED = {"hidden_size", "num_attention_heads", "num_key_value_heads",
             "head_dim", "cca_time0", "cca_time1", "partial_rotary_factor",
             "rope_theta", "num_hidden_layers", "rope_scaling",
             "attention_bias"}

_TORCH_DTYPES = {"bfloat16": "bf16", "float16": "f16", "float32": "f32"}


def _load(config):
    if isinstance(config, dict):
        return dict(config), "<dict>"
    path = os.fspath(config)
    with open(path, encoding="utf-8") as f:
        try:
            data = json.load(f)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}: not valid JSON: {error}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return data, path


def _check_keys(data, used, ignored, kind):
    for key in data:
        if key not in used and key not in ignored:
            raise ValueError(f"unknown field {key!r} in a {kind} config "
                             f"(known: {', '.join(sorted(used))})")


def _int(data, key, default=None, minimum=1):
    if key not in data or data[key] is None:
        if default is None:
            raise ValueError(f"missing field {key!r}")
        return default
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"field {key!r} must be an integer >= {minimum}, got "
                         f"{value!r}")
    return value


def _number(data, key, default=None):
    value = data.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"field {key!r} must be a number, got {value!r}")
    return value


def _dtype(data, dtype):
    if dtype is not None:
        return dtype
    name = data.get("torch_dtype") or data.get("dtype") or "bfloat16"
    return _TORCH_DTYPES.get(name, "bf16")


def config_from_hf(config, dtype=None, num_layers=None):
    """-> (kind, keyword arguments of builders.qkv_attention_text or
    builders.cca_text, source). kind is "qkv_attention" or "cca"."""
    data, source = _load(config)
    is_zaya = data.get("model_type") == "zaya" or "cca_time0" in data
    is_gpt2 = data.get("model_type") == "gpt2" or "n_embd" in data
    if not (is_zaya or is_gpt2):
        raise ValueError(f"{source}: not a GPT-2-style (n_embd) or ZAYA-style "
                         f"(cca_time0) config (model_type "
                         f"{data.get('model_type')!r})")
    try:
        if is_zaya:
            return "cca", _zaya(data, dtype, num_layers), source
        return "qkv_attention", _gpt2(data, dtype, num_layers), source
    except ValueError as error:
        raise ValueError(f"{source}: {error}") from None


def _gpt2(data, dtype, num_layers):
    _check_keys(data, GPT2_USED, GPT2_IGNORED, "GPT-2-style")
    width, heads = _int(data, "n_embd"), _int(data, "n_head")
    layers = _int(data, "n_layer")
    if width % heads:
        raise ValueError(f"field 'n_embd' ({width}) is not a multiple of "
                         f"'n_head' ({heads})")
    if "attn_sharing" in data and "sharing_mode" in data:
        raise ValueError("fields 'attn_sharing' and 'sharing_mode' both given")
    sharing_key = "sharing_mode" if "sharing_mode" in data else "attn_sharing"
    sharing = data.get(sharing_key, "none")
    if sharing not in builders.SHARING_MODES:
        raise ValueError(f"field {sharing_key!r} must be one of "
                         f"{', '.join(builders.SHARING_MODES)}, got {sharing!r}")
    if "num_key_value_heads" in data and "n_kv_head" in data:
        raise ValueError("fields 'num_key_value_heads' and 'n_kv_head' both "
                         "given")
    kv_key = "n_kv_head" if "n_kv_head" in data else "num_key_value_heads"
    kv_heads = _int(data, kv_key, default=heads)
    if heads % kv_heads:
        raise ValueError(f"field 'n_head' ({heads}) is not a multiple of "
                         f"{kv_key!r} ({kv_heads})")
    if sharing in ("qk", "qkv") and kv_heads != heads:
        raise ValueError(f"field {sharing_key!r} is {sharing!r}, which needs "
                         f"{kv_key!r} ({kv_heads}) == 'n_head' ({heads})")
    config = dict(embed_dim=width, num_heads=heads, num_kv_heads=kv_heads,
                  sharing=sharing, biases=True, causal=True,
                  dtype=_dtype(data, dtype),
                  num_layers=num_layers or layers, residual=True)
    _rope(data, config, width // heads)
    return config


def _rope(data, config, head_dim):
    theta = _number(data, "rope_theta")
    fraction = _number(data, "partial_rotary_factor", 1.0)
    if theta is None:
        if "partial_rotary_factor" in data:
            raise ValueError("field 'partial_rotary_factor' given without "
                             "'rope_theta'")
        return
    if theta <= 0:
        raise ValueError(f"field 'rope_theta' must be positive, got {theta!r}")
    if not 0 < fraction <= 1:
        raise ValueError(f"field 'partial_rotary_factor' must be in (0, 1], "
                         f"got {fraction!r}")
    rotated = fraction * head_dim
    if rotated != int(rotated) or int(rotated) % 2:
        raise ValueError(f"field 'partial_rotary_factor' ({fraction}) times "
                         f"head_dim ({head_dim}) must be an even integer")
    config["rope_theta"], config["rope_fraction"] = theta, fraction


def _zaya(data, dtype, num_layers):
    _check_keys(data, ZAYA_USED, ZAYA_IGNORED, "ZAYA-style")
    width = _int(data, "hidden_size")
    heads = _int(data, "num_attention_heads")
    kv_heads = _int(data, "num_key_value_heads", default=heads)
    if heads % kv_heads:
        raise ValueError(f"field 'num_attention_heads' ({heads}) is not a "
                         f"multiple of 'num_key_value_heads' ({kv_heads})")
    if "head_dim" in data:
        head_dim = _int(data, "head_dim")
    elif width % heads:
        raise ValueError(f"field 'head_dim' is missing and 'hidden_size' "
                         f"({width}) is not a multiple of "
                         f"'num_attention_heads' ({heads})")
    else:
        head_dim = width // heads
    if heads * head_dim > width:
        raise ValueError(f"fields 'num_attention_heads' * 'head_dim' = "
                         f"{heads * head_dim} exceed 'hidden_size' ({width}): "
                         f"CCA attends in a compressed latent space")
    if (kv_heads * head_dim) % 2:
        raise ValueError(f"fields 'num_key_value_heads' * 'head_dim' = "
                         f"{kv_heads * head_dim} must be even (value shift)")
    kernels = (_int(data, "cca_time0"), _int(data, "cca_time1"))
    if data.get("rope_scaling") is not None:
        raise ValueError(f"field 'rope_scaling' is not supported (got "
                         f"{data['rope_scaling']!r})")
    if data.get("attention_bias"):
        raise ValueError("field 'attention_bias' is true; attn.cca "
                         "projections have no biases")
    config = dict(embed_dim=width, num_heads=heads, num_kv_heads=kv_heads,
                  head_dim=head_dim, conv_kernel_sizes=kernels, qk_mean=True,
                  value_shift=True, temperature="clamped", causal=True,
                  dtype=_dtype(data, dtype),
                  num_layers=num_layers or _int(data, "num_hidden_layers"),
                  residual=True)
    if "rope_theta" not in data:
        raise ValueError("missing field 'rope_theta'")
    _rope(data, config, head_dim)
    return config


def hf_config_text(config, dtype=None, num_layers=None):
    """The attn IR text of the config's attention stack (pure Python)."""
    kind, kwargs, source = config_from_hf(config, dtype, num_layers)
    header = [f"Attention stack imported from {os.path.basename(source)} by "
              f"attnfuse-import ({kind}, {kwargs['num_layers']} layers)."]
    build = builders.cca_text if kind == "cca" else builders.qkv_attention_text
    text, _names = build(header=header, **kwargs)
    return text


def from_hf_config(config, dtype=None, num_layers=None):
    """The config's attention stack as an attnfuse.Module (function
    `model`). dtype defaults to the config's torch_dtype (else bf16);
    num_layers overrides the config's layer count."""
    from . import _api
    kind, kwargs, _source = config_from_hf(config, dtype, num_layers)
    build = _api.cca if kind == "cca" else _api.qkv_attention
    return build(**kwargs)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="attnfuse-import",
        description="Write the attention stack of a Hugging Face config.json "
                    "(GPT-2 style with a sharing mode, or ZAYA-style CCA) as "
                    "attn IR.")
    parser.add_argument("config", help="config.json")
    parser.add_argument("-o", "--output", default="-",
                        help="output .mlir (default: standard output)")
    parser.add_argument("--dtype", choices=builders.DTYPES,
                        help="element type (default: the config's "
                             "torch_dtype, else bf16)")
    parser.add_argument("--num-layers", type=int,
                        help="override the number of layers")
    args = parser.parse_args(argv)
    try:
        text = hf_config_text(args.config, args.dtype, args.num_layers)
    except (ValueError, OSError) as error:
        print(f"attnfuse-import: error: {error}", file=sys.stderr)
        return 1
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
