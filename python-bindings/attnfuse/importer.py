"""Hugging Face config.json -> the model's attention stack as attn IR.

Two kinds of config (a dict or the path of a config.json):

GPT-2 style (model_type "gpt2", or n_embd present): the paper's
projection-sharing models.
  n_embd, n_head, n_layer           width, query heads, layers
  attn_sharing (or sharing_mode)    none | kv | qk | qkv (default none)
  num_key_value_heads, n_kv_head or n_kv_groups
                                    KV heads (default n_head)
  use_bias (or bias)                biases on the projections (default true,
                                    as GPT-2)
  rope_theta, partial_rotary_factor optional RoPE (default: none; the
                                    paper's models use learned absolute
                                    position embeddings outside attention)
  -> attn.qkv_attention <sharing> per layer, causal.

ZAYA (model_type "zaya", or cca_time0 present): CCA / CCGQA, as
transformers' `zaya` model reads it.
  hidden_size, num_attention_heads, num_key_value_heads, head_dim
  cca_time0, cca_time1              conv kernel sizes (default 2 and 2)
  layer_types                       per layer "hybrid" (global attention)
                                    or "hybrid_sliding" (sliding window)
  sliding_window                    the window of the sliding layers
  rope_parameters                   per layer type {rope_type "default",
                                    rope_theta, partial_rotary_factor}
                                    (or one flat dict for every layer);
                                    defaults: 5e6 for "hybrid", 1e4 for
                                    "hybrid_sliding", fraction 0.5
  -> attn.cca per layer with its own window and RoPE theta: qk_mean,
  value_shift, and transformers' numerics: the raw learned key
  temperature, each head divided by max(|x|, eps) with eps the machine
  epsilon of the dtype (norm = clamp_eps), causal.
  The legacy form (no layer_types; rope_theta, rope_scaling: false;
  num_hidden_layers counts the attention and the MoE blocks, which
  alternate, attention first) gives num_hidden_layers / 2 global layers,
  attention layer i being the checkpoint's block 2 i.
  Zyphra's Megatron-style form of it (ZAYA1-base and the -legacy repos:
  "cca": true or zaya_layers present) also reads, per block of the
  checkpoint (attention and MoE blocks counted apart):
    zaya_layers                     "a" for an attention block, an expert
                                    count for a MoE block (default: they
                                    alternate, attention first)
    cca_num_q_heads                 query heads (an integer, or a list per
                                    block with 0 on the MoE blocks); then
                                    num_attention_heads is Megatron's head
                                    count, read only for the head size
                                    hidden_size / num_attention_heads
    num_query_groups(_list)         KV heads (an integer or a list per
                                    block), as num_key_value_heads
    kv_channels                     the head size, as head_dim
    swa_layers                      a sliding window per block, 0 for
                                    global attention; Megatron's window
                                    excludes the query, so window w is
                                    sliding_window w + 1 here
    swa_rotary_base                 RoPE theta of the sliding layers
                                    (default 1e4); rope_theta the global's
    clamp_temp                      true: the clamped key temperature
                                    (transformers ignores the flag)
    add_bias_linear                 must be false (no projection biases)
  and ignores the Megatron keys of the MoE, the router, the norms, the
  residual scaling and of kernel fusion choices (MEGATRON_ZAYA_IGNORED).

Every layer adds its input (residual) unless `residual=False`.

Which keys are read, ignored or refused:
  * the keys listed above are read and checked;
  * keys of the generic Hugging Face config and of the parts of the model
    outside attention (embeddings, vocabulary, MLP / MoE / router, norms,
    dropout, token ids, labels, ...) are ignored: the explicit lists below,
    and any other key whose name mentions none of the ATTENTION_TERMS;
  * any other key whose name mentions an attention term (attn, head, rope,
    window, scale, ...) would change attention in a way this importer does
    not model: ValueError naming it. So do missing and inconsistent
    fields.

CLI: attnfuse-import config.json -o out.mlir (or python3 -m
attnfuse.importer ...).
"""

import argparse
import json
import os
import re
import sys

from . import builders

# Generic keys of transformers' PreTrainedConfig and of model cards.
_COMMON_IGNORED = {
    "architectures", "auto_map", "model_type", "torch_dtype", "dtype",
    "transformers_version", "vocab_size", "bos_token_id", "eos_token_id",
    "pad_token_id", "sep_token_id", "decoder_start_token_id",
    "tie_word_embeddings", "use_cache", "initializer_range", "_name_or_path",
    "task_specific_params", "is_encoder_decoder", "output_attentions",
    "output_hidden_states", "return_dict", "chunk_size_feed_forward",
    "id2label", "label2id", "problem_type", "tokenizer_class", "prefix",
    "finetuning_task", "is_decoder", "add_cross_attention",
    "cross_attention_hidden_size", "tie_encoder_decoder", "pruned_heads",
    "torchscript", "use_return_dict", "max_position_embeddings",
    "num_labels", "keys_to_ignore_at_inference", "base_model_tp_plan",
    "base_model_pp_plan", "base_model_ep_plan",
}
GPT2_IGNORED = _COMMON_IGNORED | {
    "n_positions", "n_ctx", "n_inner", "block_size", "activation_function",
    "resid_pdrop", "embd_pdrop", "attn_pdrop", "dropout",
    "layer_norm_epsilon", "summary_type", "summary_use_proj",
    "summary_activation", "summary_proj_to_labels", "summary_first_dropout",
    # Implementation choices that do not change the attention's value.
    "use_flash_attention", "scale_attn_weights", "reorder_and_upcast_attn",
}
GPT2_USED = {"n_embd", "n_head", "n_layer", "attn_sharing", "sharing_mode",
             "num_key_value_heads", "n_kv_head", "n_kv_groups", "use_bias",
             "bias", "rope_theta", "partial_rotary_factor"}
ZAYA_IGNORED = _COMMON_IGNORED | {
    "intermediate_size", "hidden_act", "rms_norm_eps", "norm_epsilon",
    "attention_dropout", "hidden_dropout", "num_experts",
    "num_experts_per_tok", "moe_intermediate_size", "router_aux_loss_coef",
    "output_router_logits", "residual_scale", "mlp_bias", "lm_head_bias",
    "router_hidden_size",
}
ZAYA_USED = {"hidden_size", "num_attention_heads", "num_key_value_heads",
             "head_dim", "cca_time0", "cca_time1", "partial_rotary_factor",
             "rope_theta", "rope_parameters", "rope_scaling", "layer_types",
             "sliding_window", "num_hidden_layers", "attention_bias"}

# Zyphra's Megatron-style keys (see the module docstring).
MEGATRON_ZAYA_USED = {"cca", "zaya_layers", "cca_num_q_heads",
                      "num_query_groups", "num_query_groups_list",
                      "kv_channels", "swa_layers", "swa_rotary_base",
                      "clamp_temp", "add_bias_linear"}
MEGATRON_ZAYA_IGNORED = {
    # MoE, router, MLP and norms.
    "ffn_hidden_size", "ffn_hidden_size_list", "zaya_mlp_expansion",
    "moe_router_topk", "num_local_experts", "zaya_use_mod", "zaya_mod_per",
    "zaya_use_eda", "zaya_high_prec", "gated_linear_unit",
    "activation_func", "normalization",
    # The learned residual-stream scales and biases around each block.
    "scale_residual_merge",
    # Kernel and precision choices of the training code.
    "fused_add_norm", "apply_rope_fusion", "bias_activation_fusion",
    "activation_func_fp8_input_store", "residual_in_fp32",
    "mamba_cache_dtype",
    # transformers does not read it either: swa_layers sets the windows.
    "sliding_window",
}

# An unknown key whose name contains one of these may change attention.
ATTENTION_TERMS = ("attn", "attention", "head", "kv", "query", "key",
                   "value", "rope", "rotary", "theta", "position", "window",
                   "cca", "conv", "temp", "qk", "softmax", "scale", "causal",
                   "mask", "alibi", "logit", "sharing")
_ATTENTION_KEY = re.compile("|".join(ATTENTION_TERMS), re.IGNORECASE)

# transformers' ZAYA layer types and their default RoPE theta.
ZAYA_LAYER_TYPES = {"hybrid": None, "hybrid_sliding": "sliding"}
ZAYA_DEFAULT_THETA = {"hybrid": 5_000_000.0, "hybrid_sliding": 10_000.0}
ZAYA_DEFAULT_ROPE_FRACTION = 0.5

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
    """Refuses unknown keys that may change attention (see the module
    docstring); every other unknown key is ignored."""
    for key in data:
        if key in used or key in ignored:
            continue
        if _ATTENTION_KEY.search(key):
            raise ValueError(
                f"unsupported field {key!r} in a {kind} config: it may "
                f"change the attention, which this importer does not model "
                f"(attention fields read: {', '.join(sorted(used))})")


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


def _number(data, key, default=None, where=""):
    value = data.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"field {where}{key!r} must be a number, got "
                         f"{value!r}")
    return value


def _bool(data, key, default):
    value = data.get(key, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ValueError(f"field {key!r} must be true or false, got {value!r}")
    return value


def _dtype(data, dtype):
    if dtype is not None:
        return dtype
    name = data.get("torch_dtype") or data.get("dtype") or "bfloat16"
    return _TORCH_DTYPES.get(name, "bf16")


def config_from_hf(config, dtype=None, num_layers=None):
    """-> (kind, keyword arguments of builders.qkv_attention_text or
    builders.cca_text, source). kind is "qkv_attention" or "cca". The
    keyword arguments include `hf_layers`: the checkpoint's block index of
    each attention layer (load_hf_weights reads
    model.layers.{hf_layers[i]}.self_attn.* for layer i); the builders do
    not take it.

    config: a dict or the path of a config.json; dtype: the element type
    (default: the config's torch_dtype, else bf16); num_layers: keep only
    the first layers. ValueError names an unsupported key or value."""
    data, source = _load(config)
    is_zaya = (data.get("model_type") == "zaya" or "cca_time0" in data
               or _is_megatron_zaya(data))
    is_gpt2 = data.get("model_type") == "gpt2" or "n_embd" in data
    if not (is_zaya or is_gpt2):
        raise ValueError(f"{source}: not a GPT-2-style (n_embd) or ZAYA-style "
                         f"(model_type 'zaya') config (model_type "
                         f"{data.get('model_type')!r})")
    try:
        if is_zaya:
            return "cca", _zaya(data, dtype, num_layers), source
        return "qkv_attention", _gpt2(data, dtype, num_layers), source
    except ValueError as error:
        raise ValueError(f"{source}: {error}") from None


def _one_of(data, keys):
    given = [key for key in keys if key in data]
    if len(given) > 1:
        raise ValueError(f"fields {' and '.join(repr(k) for k in given)} "
                         f"both given")
    return given[0] if given else keys[-1]


def _gpt2(data, dtype, num_layers):
    _check_keys(data, GPT2_USED, GPT2_IGNORED, "GPT-2-style")
    width, heads = _int(data, "n_embd"), _int(data, "n_head")
    layers = _int(data, "n_layer")
    if width % heads:
        raise ValueError(f"field 'n_embd' ({width}) is not a multiple of "
                         f"'n_head' ({heads})")
    sharing_key = _one_of(data, ("sharing_mode", "attn_sharing"))
    sharing = data.get(sharing_key, "none")
    if sharing not in builders.SHARING_MODES:
        raise ValueError(f"field {sharing_key!r} must be one of "
                         f"{', '.join(builders.SHARING_MODES)}, got {sharing!r}")
    kv_key = _one_of(data, ("n_kv_head", "n_kv_groups", "num_key_value_heads"))
    kv_heads = _int(data, kv_key, default=heads)
    if heads % kv_heads:
        raise ValueError(f"field 'n_head' ({heads}) is not a multiple of "
                         f"{kv_key!r} ({kv_heads})")
    if sharing in ("qk", "qkv") and kv_heads != heads:
        raise ValueError(f"field {sharing_key!r} is {sharing!r}, which needs "
                         f"{kv_key!r} ({kv_heads}) == 'n_head' ({heads})")
    bias_key = _one_of(data, ("bias", "use_bias"))
    count = num_layers or layers
    config = dict(embed_dim=width, num_heads=heads, num_kv_heads=kv_heads,
                  sharing=sharing, biases=_bool(data, bias_key, True),
                  causal=True, dtype=_dtype(data, dtype), num_layers=count,
                  residual=True, hf_layers=list(range(count)))
    theta, fraction = _rope(data, width // heads, "")
    if theta is not None:
        config["rope_theta"], config["rope_fraction"] = theta, fraction
    return config


def _rope(params, head_dim, where, default_theta=None,
          default_fraction=1.0):
    """(theta, fraction) of a flat RoPE dict (rope_theta,
    partial_rotary_factor, rope_type); (None, None) without RoPE."""
    rope_type = params.get("rope_type", "default")
    if rope_type != "default":
        raise ValueError(f"field {where}'rope_type' is {rope_type!r}; only "
                         f"'default' RoPE is supported")
    theta = _number(params, "rope_theta", default_theta, where)
    fraction = _number(params, "partial_rotary_factor", default_fraction,
                       where)
    if theta is None:
        if "partial_rotary_factor" in params:
            raise ValueError(f"field {where}'partial_rotary_factor' given "
                             f"without 'rope_theta'")
        return None, None
    if theta <= 0:
        raise ValueError(f"field {where}'rope_theta' must be positive, got "
                         f"{theta!r}")
    if not 0 < fraction <= 1:
        raise ValueError(f"field {where}'partial_rotary_factor' must be in "
                         f"(0, 1], got {fraction!r}")
    rotated = fraction * head_dim
    if rotated != int(rotated) or int(rotated) % 2:
        raise ValueError(f"field {where}'partial_rotary_factor' ({fraction}) "
                         f"times head_dim ({head_dim}) must be an even "
                         f"integer")
    for key in params:
        if key not in ("rope_type", "rope_theta", "partial_rotary_factor"):
            raise ValueError(f"unsupported field {where}{key!r} (RoPE "
                             f"scaling is not supported)")
    return theta, fraction


def _is_megatron_zaya(data):
    return "cca" in data or "zaya_layers" in data


def _agreeing(values, what):
    """The one value of the given fields ({key: value}); ValueError when
    they differ."""
    if len(set(values.values())) > 1:
        raise ValueError(f"fields {', '.join(f'{k!r} ({v})' for k, v in values.items())} "
                         f"give different {what}")
    return next(iter(values.values()))


def _per_block(data, key, blocks, attention):
    """An integer field of the Megatron form, given once or as a list with
    one entry per block (0 on the blocks it does not apply to): its one
    value on the attention blocks, None when absent."""
    if key not in data:
        return None
    value = data[key]
    if not isinstance(value, list):
        return _int(data, key)
    if len(value) != blocks:
        raise ValueError(f"field {key!r} has {len(value)} entries, one per "
                         f"block expected ({blocks})")
    for i, entry in enumerate(value):
        if isinstance(entry, bool) or not isinstance(entry, int) or entry < 0:
            raise ValueError(f"field {key!r}[{i}] must be an integer >= 0, "
                             f"got {entry!r}")
    used = {value[b] for b in attention}
    if 0 in used:
        raise ValueError(f"field {key!r} is 0 on attention block "
                         f"{next(b for b in attention if value[b] == 0)}")
    if len(used) > 1:
        raise ValueError(f"field {key!r} differs between attention blocks "
                         f"({sorted(used)}); one value for every layer is "
                         f"supported")
    return used.pop()


def _megatron_blocks(data):
    """(number of blocks, attention block indices) of the Megatron form."""
    layers = data.get("zaya_layers")
    if layers is None:
        blocks = _int(data, "num_hidden_layers")
        if blocks % 2:
            raise ValueError(f"field 'num_hidden_layers' ({blocks}) must be "
                             f"even in a config without 'layer_types' "
                             f"(attention and MoE blocks alternate)")
        return blocks, list(range(0, blocks, 2))
    if not isinstance(layers, list) or not layers:
        raise ValueError(f"field 'zaya_layers' must be a non-empty list, got "
                         f"{layers!r}")
    for i, kind in enumerate(layers):
        if kind != "a" and (isinstance(kind, bool) or not isinstance(kind, int)
                            or kind < 0):
            raise ValueError(f"field 'zaya_layers'[{i}] is {kind!r}: \"a\" "
                             f"(attention) or an expert count expected")
    attention = [i for i, kind in enumerate(layers) if kind == "a"]
    if not attention:
        raise ValueError("field 'zaya_layers' has no attention block (\"a\")")
    return len(layers), attention


def _zaya_heads(data):
    width = _int(data, "hidden_size")
    megatron_heads = _int(data, "num_attention_heads")
    heads, kv_heads = megatron_heads, None
    head_sizes = {k: _int(data, k) for k in ("head_dim", "kv_channels")
                  if data.get(k) is not None}
    if _is_megatron_zaya(data):
        if data.get("cca") is not True:
            raise ValueError(f"field 'cca' is {data.get('cca')!r}: only "
                             f"compressed convolutional attention (true) is "
                             f"modelled")
        if data.get("add_bias_linear"):
            raise ValueError("field 'add_bias_linear' is true; attn.cca "
                             "projections have no biases")
        blocks, attention = _megatron_blocks(data)
        heads = _per_block(data, "cca_num_q_heads", blocks, attention) or heads
        groups = {k: v for k in ("num_query_groups_list", "num_query_groups",
                                 "num_key_value_heads")
                  if (v := _per_block(data, k, blocks, attention)) is not None}
        if groups:
            kv_heads = _agreeing(groups, "KV head counts")
    if kv_heads is None:
        kv_heads = _int(data, "num_key_value_heads", default=heads)
    if heads % kv_heads:
        raise ValueError(f"the query heads ({heads}) are not a multiple of "
                         f"the KV heads ({kv_heads}) ('num_attention_heads', "
                         f"'num_key_value_heads' or their Megatron forms)")
    if head_sizes:
        head_dim = _agreeing(head_sizes, "head sizes")
    elif width % megatron_heads:
        raise ValueError(f"field 'head_dim' is missing and 'hidden_size' "
                         f"({width}) is not a multiple of "
                         f"'num_attention_heads' ({megatron_heads})")
    else:
        head_dim = width // megatron_heads
    if heads * head_dim > width:
        raise ValueError(f"fields 'num_attention_heads' * 'head_dim' = "
                         f"{heads * head_dim} exceed 'hidden_size' ({width}): "
                         f"CCA attends in a compressed latent space")
    if (kv_heads * head_dim) % 2:
        raise ValueError(f"fields 'num_key_value_heads' * 'head_dim' = "
                         f"{kv_heads * head_dim} must be even (value shift)")
    return width, heads, kv_heads, head_dim


def _zaya_layers(data, head_dim):
    """-> (windows, thetas, fractions, hf_layers), one entry per attention
    layer."""
    scaling = data.get("rope_scaling")
    if scaling not in (None, False):
        raise ValueError(f"field 'rope_scaling' is not supported (got "
                         f"{scaling!r})")
    if "layer_types" not in data:
        return _legacy_zaya_layers(data, head_dim)

    layer_types = data["layer_types"]
    if not isinstance(layer_types, list) or not layer_types:
        raise ValueError(f"field 'layer_types' must be a non-empty list, got "
                         f"{layer_types!r}")
    for i, kind in enumerate(layer_types):
        if kind not in ZAYA_LAYER_TYPES:
            raise ValueError(f"field 'layer_types'[{i}] is {kind!r}; known: "
                             f"{', '.join(ZAYA_LAYER_TYPES)}")
    if "num_hidden_layers" in data and _int(data, "num_hidden_layers") != \
            len(layer_types):
        raise ValueError(f"field 'num_hidden_layers' ({data['num_hidden_layers']}"
                         f") differs from the length of 'layer_types' "
                         f"({len(layer_types)})")
    window = None
    if "hybrid_sliding" in layer_types:
        window = _int(data, "sliding_window")
    if "rope_theta" in data:
        raise ValueError("field 'rope_theta' given with 'layer_types': the "
                         "theta of each layer type is in 'rope_parameters'")
    params = data.get("rope_parameters")
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise ValueError(f"field 'rope_parameters' must be an object, got "
                         f"{params!r}")
    nested = any(isinstance(v, dict) for v in params.values())
    per_type = {}
    for kind in sorted(set(layer_types)):
        if nested:
            flat = params.get(kind)
            if flat is None:
                raise ValueError(f"field 'rope_parameters' has no entry for "
                                 f"layer type {kind!r}")
            if not isinstance(flat, dict):
                raise ValueError(f"field 'rope_parameters'[{kind!r}] must be "
                                 f"an object, got {flat!r}")
            where = f"'rope_parameters'[{kind!r}] "
        else:
            flat, where = params, "'rope_parameters' "
        theta, fraction = _rope(flat, head_dim, where,
                                default_theta=ZAYA_DEFAULT_THETA[kind],
                                default_fraction=ZAYA_DEFAULT_ROPE_FRACTION)
        per_type[kind] = (theta, fraction)
    if nested:
        for key, value in params.items():
            if key == "rope_type" and value == "default":
                continue  # ZAYA1-8B's hub config also has a top-level one
            if key not in ZAYA_LAYER_TYPES:
                raise ValueError(f"field 'rope_parameters' has an entry "
                                 f"{key!r}, which is not a layer type "
                                 f"({', '.join(ZAYA_LAYER_TYPES)})")
    windows = [window if ZAYA_LAYER_TYPES[kind] else None
               for kind in layer_types]
    thetas = [per_type[kind][0] for kind in layer_types]
    fractions = [per_type[kind][1] for kind in layer_types]
    return windows, thetas, fractions, list(range(len(layer_types)))


def _legacy_zaya_layers(data, head_dim):
    """_zaya_layers of the legacy form: attention and MoE blocks (by
    default alternating), one rope_theta, and in the Megatron form
    per-block sliding windows with their own theta."""
    if "rope_parameters" in data:
        raise ValueError("field 'rope_parameters' needs 'layer_types'")
    # With zaya_layers, num_hidden_layers is not read: it counts blocks
    # differently between Zyphra's configs.
    blocks, attention = _megatron_blocks(data)
    rope = {k: data[k] for k in ("rope_theta", "partial_rotary_factor")
            if k in data}
    theta, fraction = _rope(rope, head_dim, "",
                            default_theta=ZAYA_DEFAULT_THETA["hybrid"],
                            default_fraction=ZAYA_DEFAULT_ROPE_FRACTION)
    windows = [None] * len(attention)
    thetas = [theta] * len(attention)
    swa = data.get("swa_layers")
    if swa is not None:
        if not isinstance(swa, list) or len(swa) != blocks:
            raise ValueError(f"field 'swa_layers' must be a list with one "
                             f"window per block ({blocks}), got {swa!r}")
        for i, w in enumerate(swa):
            if isinstance(w, bool) or not isinstance(w, int) or w < 0:
                raise ValueError(f"field 'swa_layers'[{i}] must be an "
                                 f"integer >= 0 (0: global attention), got "
                                 f"{w!r}")
        sliding = _number(data, "swa_rotary_base",
                          ZAYA_DEFAULT_THETA["hybrid_sliding"])
        if sliding <= 0:
            raise ValueError(f"field 'swa_rotary_base' must be positive, "
                             f"got {sliding!r}")
        for i, block in enumerate(attention):
            if swa[block]:
                windows[i], thetas[i] = swa[block] + 1, sliding
    elif "swa_rotary_base" in data:
        raise ValueError("field 'swa_rotary_base' given without "
                         "'swa_layers'")
    return windows, thetas, [fraction] * len(attention), attention


def _zaya(data, dtype, num_layers):
    used, ignored = ZAYA_USED, ZAYA_IGNORED
    if _is_megatron_zaya(data):
        used, ignored = used | MEGATRON_ZAYA_USED, \
            ignored | MEGATRON_ZAYA_IGNORED
    _check_keys(data, used, ignored, "ZAYA")
    width, heads, kv_heads, head_dim = _zaya_heads(data)
    kernels = (_int(data, "cca_time0", default=2),
               _int(data, "cca_time1", default=2))
    if data.get("attention_bias"):
        raise ValueError("field 'attention_bias' is true; attn.cca "
                         "projections have no biases")
    windows, thetas, fractions, hf_layers = _zaya_layers(data, head_dim)
    if len(set(fractions)) > 1:
        raise ValueError(f"the layer types rotate different fractions of "
                         f"each head ({sorted(set(fractions))}); one "
                         f"'partial_rotary_factor' for every layer is "
                         f"supported")
    if num_layers is not None:
        if num_layers > len(hf_layers):
            raise ValueError(f"num_layers ({num_layers}) exceeds the "
                             f"config's {len(hf_layers)} attention layers")
        windows, thetas = windows[:num_layers], thetas[:num_layers]
        hf_layers = hf_layers[:num_layers]
    dtype = _dtype(data, dtype)
    temperature = "clamped" if _bool(data, "clamp_temp", False) else "raw"
    return dict(embed_dim=width, num_heads=heads, num_kv_heads=kv_heads,
                head_dim=head_dim, conv_kernel_sizes=kernels, qk_mean=True,
                value_shift=True, temperature=temperature, norm="clamp_eps",
                eps=builders.MACHINE_EPS[dtype], causal=True, dtype=dtype,
                num_layers=len(hf_layers),
                residual=True, window=windows, rope_theta=thetas,
                rope_fraction=fractions[0], hf_layers=hf_layers)


def _select(kwargs, layers, residual, temperature, batch, seq,
            padding_mask=False):
    """Applies from_hf_config's layer selection and overrides."""
    kwargs = dict(kwargs)
    if layers is not None:
        total = kwargs["num_layers"]
        layers = list(layers)
        if not layers:
            raise ValueError("layers must name at least one layer")
        for index in layers:
            if isinstance(index, bool) or not isinstance(index, int) or \
                    not 0 <= index < total:
                raise ValueError(f"layers: {index!r} is not an attention "
                                 f"layer index in [0, {total})")
        for key in ("window", "rope_theta"):
            if isinstance(kwargs.get(key), list):
                kwargs[key] = [kwargs[key][i] for i in layers]
        kwargs["hf_layers"] = [kwargs["hf_layers"][i] for i in layers]
        kwargs["num_layers"] = len(layers)
    if residual is not None:
        kwargs["residual"] = bool(residual)
    if temperature is not None:
        if "temperature" not in kwargs:
            raise ValueError("temperature applies to CCA (ZAYA) configs only")
        kwargs["temperature"] = temperature
    if padding_mask:
        if "temperature" not in kwargs:
            raise ValueError("padding_mask applies to CCA (ZAYA) configs "
                             "only")
        kwargs["padding_mask"] = padding_mask
    if batch is not None:
        kwargs["batch"] = batch
    if seq is not None:
        kwargs["seq"] = seq
    return kwargs


def hf_config_text(config, dtype=None, num_layers=None, layers=None,
                   residual=None, temperature=None, padding_mask=False):
    """The attn IR text of the config's attention stack (pure Python), with
    a header comment naming the source and the checkpoint blocks.

    config, dtype, num_layers, layers, residual, temperature, padding_mask:
    as in from_hf_config (batch and sequence stay dynamic)."""
    kind, kwargs, source = config_from_hf(config, dtype, num_layers)
    kwargs = _select(kwargs, layers, residual, temperature, None, None,
                     padding_mask)
    hf_layers = kwargs.pop("hf_layers")
    header = [f"Attention stack imported from {os.path.basename(source)} by "
              f"attnfuse-import ({kind}, {kwargs['num_layers']} layers; "
              f"layer i reads the checkpoint's model.layers."
              f"{{{', '.join(map(str, hf_layers))}}}[i].self_attn)."]
    build = builders.cca_text if kind == "cca" else builders.qkv_attention_text
    text, _names = build(header=header, **kwargs)
    return text


def from_hf_config(config, dtype=None, num_layers=None, layers=None,
                   residual=None, temperature=None, batch=None, seq=None,
                   padding_mask=False):
    """The config's attention stack as an attnfuse.Module (function
    `model`). dtype defaults to the config's torch_dtype (else bf16);
    num_layers keeps the first layers; layers picks attention layers by
    index (e.g. [3] for the fourth one alone); residual (default True)
    adds each layer's input to its output; temperature overrides the CCA
    key temperature ("raw", as transformers, or "clamped"); batch and seq
    make those dimensions static; padding_mask (CCA: True for an i64
    mask, or "i32"/"i64") adds the argument `mask [B, S]` after `x`, the
    2-D attention_mask of transformers (1 for a real token, 0 for
    padding). The module remembers which checkpoint block each layer reads
    (attnfuse.load_hf_weights)."""
    from . import _api
    kind, kwargs, _source = config_from_hf(config, dtype, num_layers)
    kwargs = _select(kwargs, layers, residual, temperature, batch, seq,
                     padding_mask)
    hf_layers = kwargs.pop("hf_layers")
    build = _api.cca if kind == "cca" else _api.qkv_attention
    module = build(**kwargs)
    module.hf_layers = {"model": hf_layers}
    module.hf_kind = kind
    return module


def main(argv=None):
    """The attnfuse-import command: `attnfuse-import config.json [-o
    model.mlir] [--dtype ...]` (see --help). argv: the arguments (default
    sys.argv[1:]). Returns the exit status: 1 with the error on stderr for
    an unsupported config."""
    parser = argparse.ArgumentParser(
        prog="attnfuse-import",
        description="Write the attention stack of a Hugging Face config.json "
                    "(GPT-2 style with a sharing mode, or ZAYA CCA) as attn "
                    "IR.")
    parser.add_argument("config", help="config.json")
    parser.add_argument("-o", "--output", default="-",
                        help="output .mlir (default: standard output)")
    parser.add_argument("--dtype", choices=builders.DTYPES,
                        help="element type (default: the config's "
                             "torch_dtype, else bf16)")
    parser.add_argument("--num-layers", type=int,
                        help="keep only the first N attention layers")
    parser.add_argument("--temperature", choices=builders.TEMPERATURES,
                        help="CCA key temperature (default raw, as "
                             "transformers' ZAYA)")
    parser.add_argument("--padding-mask", choices=builders.MASK_DTYPES,
                        help="CCA: take a padding mask [B, S] of this type "
                             "after x (transformers' 2-D attention_mask)")
    args = parser.parse_args(argv)
    try:
        text = hf_config_text(args.config, args.dtype, args.num_layers,
                              temperature=args.temperature,
                              padding_mask=args.padding_mask or False)
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
