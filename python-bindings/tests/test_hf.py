"""Real Hugging Face configs and safetensors checkpoints: the importer on the
published ZAYA1 and paper config fields, the float attributes the builders
write, and attnfuse.load_hf_weights with its errors."""

import json
import re
import subprocess
import sys

import numpy as np
import pytest

import attnfuse
from attnfuse import builders, importer
from attnfuse import weights as weights_module
from attnfuse.weights import save_safetensors

# transformers 5.23's ZayaConfig().to_dict() with the layer types of a
# hybrid model (its fields and defaults, configuration_zaya.py), plus the
# generic keys every PreTrainedConfig writes.
ZAYA_CONFIG = {
    "vocab_size": 262272, "hidden_size": 2048, "num_hidden_layers": 40,
    "num_attention_heads": 8, "num_key_value_heads": 2, "hidden_act": "silu",
    "max_position_embeddings": 131072, "initializer_range": 0.02,
    "rms_norm_eps": 1e-05, "use_cache": True, "tie_word_embeddings": True,
    "rope_parameters": {
        "hybrid": {"rope_type": "default", "rope_theta": 5000000.0,
                   "partial_rotary_factor": 0.5},
        "hybrid_sliding": {"rope_type": "default", "rope_theta": 10000.0,
                           "partial_rotary_factor": 0.5}},
    "sliding_window": 4096, "attention_dropout": 0.0,
    "moe_intermediate_size": 2048, "num_experts_per_tok": 1,
    "num_experts": 16, "output_router_logits": False,
    "layer_types": ["hybrid", "hybrid_sliding"] * 20, "pad_token_id": 0,
    "bos_token_id": 2, "eos_token_id": 106, "head_dim": 128,
    "attention_bias": False, "lm_head_bias": False,
    "router_hidden_size": 256, "cca_time0": 2, "cca_time1": 2,
    "model_type": "zaya", "architectures": ["ZayaForCausalLM"],
    "dtype": "bfloat16", "transformers_version": "5.23.0",
    "chunk_size_feed_forward": 0, "id2label": {"0": "LABEL_0"},
    "label2id": {"LABEL_0": 0}, "problem_type": None,
    "output_hidden_states": False, "return_dict": True,
}

# The legacy ZAYA1-8B form: 80 blocks (attention and MoE alternate), one
# rope_theta, rope_scaling false, no cca_time0/1 and no layer_types.
ZAYA_LEGACY = {
    "model_type": "zaya", "architectures": ["ZayaForCausalLM"],
    "hidden_size": 2048, "num_hidden_layers": 80, "num_attention_heads": 8,
    "num_key_value_heads": 2, "head_dim": 128, "rope_theta": 5000000,
    "partial_rotary_factor": 0.5, "rope_scaling": False,
    "max_position_embeddings": 131072, "vocab_size": 262272,
    "num_experts": 16, "lm_head_bias": False, "router_hidden_size": 256,
    "norm_epsilon": 1e-05, "tie_word_embeddings": True,
    "torch_dtype": "bfloat16", "transformers_version": "4.57.1",
}


def _layer_attrs(text):
    """[(window or None, theta)] of every attn.cca / qkv_attention op."""
    ops = re.split(r"= attn\.(?:cca|qkv_attention)\b", text)[1:]
    out = []
    for op in ops:
        op = op.split("arith.addf")[0]
        window = re.search(r"window = (\d+) : i64", op)
        theta = re.search(r"theta = ([0-9.e+-]+)", op)
        out.append((int(window.group(1)) if window else None,
                    float(theta.group(1)) if theta else None))
    return out


def test_zaya_config_gives_each_layer_its_window_and_theta():
    text = attnfuse.hf_config_text(ZAYA_CONFIG)
    layers = _layer_attrs(text)
    assert len(layers) == 40
    assert layers[0::2] == [(None, 5e6)] * 20
    assert layers[1::2] == [(4096, 1e4)] * 20
    assert text.count("temperature = #attn.temperature<raw>") == 40
    assert "clamped" not in text
    module = attnfuse.parse(text)
    module.verify()
    # The verified module prints the same per-layer attributes back.
    assert _layer_attrs(str(module)) == layers


def test_zaya1_hub_config_forms_are_accepted():
    # The hub's nested rope_parameters also carries a top-level rope_type.
    hub = json.loads(json.dumps(ZAYA_CONFIG))
    hub["rope_parameters"]["rope_type"] = "default"
    assert attnfuse.hf_config_text(hub) == attnfuse.hf_config_text(ZAYA_CONFIG)
    # Without rope_parameters, transformers' defaults per layer type.
    bare = {k: v for k, v in ZAYA_CONFIG.items() if k != "rope_parameters"}
    assert attnfuse.hf_config_text(bare) == attnfuse.hf_config_text(ZAYA_CONFIG)
    # A flat rope_parameters applies to every layer type.
    flat = dict(ZAYA_CONFIG, rope_parameters={
        "rope_type": "default", "rope_theta": 31.25,
        "partial_rotary_factor": 0.5})
    assert {t for _, t in _layer_attrs(attnfuse.hf_config_text(flat))} \
        == {31.25}


def test_legacy_zaya1_config_gives_40_global_layers():
    kind, kwargs, _ = importer.config_from_hf(ZAYA_LEGACY)
    assert kind == "cca" and kwargs["num_layers"] == 40
    assert kwargs["hf_layers"] == list(range(0, 80, 2))
    assert kwargs["conv_kernel_sizes"] == (2, 2)
    assert _layer_attrs(attnfuse.hf_config_text(ZAYA_LEGACY)) == \
        [(None, 5e6)] * 40


# Zyphra's Megatron-style ZAYA1-base config: attention ("a") and MoE blocks
# counted apart, per-block lists with 0 on the blocks a value does not apply
# to, Megatron's num_attention_heads (16: the head size is 2048 / 16) next
# to the CCA query heads (8), and the Megatron keys of the MoE, router,
# norms, residual scaling and fusion choices.
ZAYA_MEGATRON = {
    "model_type": "zaya", "architectures": ["ZayaForCausalLM"],
    "hidden_size": 2048, "num_hidden_layers": 80, "num_attention_heads": 16,
    "num_key_value_heads": 2, "num_query_groups": 2, "cca": True,
    "cca_num_q_heads": [8, 0] * 40, "num_query_groups_list": [2, 0] * 40,
    "kv_channels": 128, "zaya_layers": ["a", 16] * 40, "num_experts": 16,
    "moe_router_topk": 1, "max_position_embeddings": 131072,
    "rope_theta": 5000000, "partial_rotary_factor": 0.5,
    "rope_scaling": False, "vocab_size": 262272, "norm_epsilon": 1e-05,
    "ffn_hidden_size": 4096, "ffn_hidden_size_list": [0, 4096] * 40,
    "zaya_mlp_expansion": [0, 256] * 40, "zaya_use_eda": True,
    "zaya_use_mod": True, "zaya_high_prec": True,
    "scale_residual_merge": True, "add_bias_linear": False,
    "gated_linear_unit": True, "activation_func": "swiglu",
    "normalization": "RMSNorm", "fused_add_norm": False,
    "apply_rope_fusion": False, "bias_activation_fusion": False,
    "residual_in_fp32": False, "clamp_temp": False,
    "tie_word_embeddings": True, "torch_dtype": "bfloat16",
    "transformers_version": "4.57.1",
}


def _ops(text):
    """The module text without its comment header (which names the
    checkpoint blocks)."""
    return "\n".join(line for line in text.splitlines()
                     if not line.startswith("//"))


def test_megatron_zaya1_config_gives_the_transformers_layers():
    kind, kwargs, _ = importer.config_from_hf(ZAYA_MEGATRON)
    assert kind == "cca" and kwargs["num_layers"] == 40
    assert kwargs["hf_layers"] == list(range(0, 80, 2))
    assert (kwargs["num_heads"], kwargs["num_kv_heads"],
            kwargs["head_dim"]) == (8, 2, 128)
    assert kwargs["temperature"] == "raw"
    # The same 40 global layers as transformers' form of the model.
    hf = dict(ZAYA_CONFIG, layer_types=["hybrid"] * 40)
    assert _ops(attnfuse.hf_config_text(ZAYA_MEGATRON)) == \
        _ops(attnfuse.hf_config_text(hf))
    # Integers instead of the per-block lists mean the same.
    flat = dict(ZAYA_MEGATRON, cca_num_q_heads=8)
    del flat["num_query_groups_list"]
    assert attnfuse.hf_config_text(flat) == \
        attnfuse.hf_config_text(ZAYA_MEGATRON)


def test_megatron_zaya_windows_thetas_and_clamped_temperature():
    # A sliding block every other attention block (Megatron's window
    # excludes the query: 4096 is transformers' 4097), its own theta.
    config = dict(ZAYA_MEGATRON, swa_layers=[4096, 0, 0, 0] * 20,
                  swa_rotary_base=10000, clamp_temp=True)
    text = attnfuse.hf_config_text(config)
    assert _layer_attrs(text) == [(4097, 1e4), (None, 5e6)] * 20
    assert text.count("#attn.temperature<clamped>") == 40
    # Blocks in any order: attention blocks are the "a" entries.
    mixed = dict(ZAYA_MEGATRON, zaya_layers=["a", "a", 16, "a"],
                 cca_num_q_heads=[8, 8, 0, 8],
                 num_query_groups_list=[2, 2, 0, 2])
    assert importer.config_from_hf(mixed)[1]["hf_layers"] == [0, 1, 3]


@pytest.mark.parametrize("change,message", [
    ({"cca": False}, "field 'cca' is False"),
    ({"add_bias_linear": True}, "add_bias_linear"),
    ({"cca_num_q_heads": [8, 0] * 39 + [4, 0]},
     r"'cca_num_q_heads' differs between attention blocks \(\[4, 8\]\)"),
    ({"cca_num_q_heads": [8, 0] * 39}, "78 entries, one per block"),
    ({"num_query_groups_list": [0, 2] * 40}, "0 on attention block 0"),
    ({"num_query_groups": 4}, "different KV head counts"),
    ({"head_dim": 64}, "different head sizes"),
    ({"zaya_layers": [16, 16]}, "no attention block"),
    ({"zaya_layers": ["a", "m"]}, r"'zaya_layers'\[1\] is 'm'"),
    ({"swa_layers": [4096] * 3}, "one window per block"),
    ({"swa_rotary_base": 1e4}, "'swa_rotary_base' given without"),
    ({"rotary_percent": 0.5}, "unsupported field 'rotary_percent'"),
])
def test_megatron_zaya_fields_that_change_attention_raise(change, message):
    with pytest.raises(ValueError, match=message):
        attnfuse.hf_config_text(dict(ZAYA_MEGATRON, **change))


def test_attnfuse_import_cli_on_the_zaya1_config(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(ZAYA_CONFIG))
    out = tmp_path / "zaya1.mlir"
    proc = subprocess.run([sys.executable, "-m", "attnfuse.importer",
                           str(path), "-o", str(out)], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert text.count("= attn.cca ") == 40
    assert text.count("window = 4096 : i64") == 20
    assert text.count("theta = 5000000.0") == 20
    assert text.count("theta = 10000.0") == 20
    assert "tensor<?x?x2048xbf16>" in text


@pytest.mark.parametrize("change,field", [
    ({"attn_logit_softcapping": 50.0}, "attn_logit_softcapping"),
    ({"rope_scaling": {"rope_type": "yarn", "factor": 4.0}}, "rope_scaling"),
    ({"rope_parameters": {"hybrid": {"rope_type": "yarn", "factor": 2.0},
                          "hybrid_sliding": {}}}, "rope_type"),
    ({"rope_parameters": {"hybrid": {"rope_theta": 1e4, "factor": 2.0},
                          "hybrid_sliding": {}}}, "factor"),
    ({"layer_types": ["hybrid", "full_attention"] * 20}, "layer_types"),
    ({"sliding_window": None}, "sliding_window"),
    ({"num_hidden_layers": 39}, "num_hidden_layers"),
    ({"rope_theta": 1e4}, "rope_theta"),
    ({"attention_bias": True}, "attention_bias"),
])
def test_zaya_fields_that_change_attention_raise(change, field):
    with pytest.raises(ValueError, match=field):
        attnfuse.hf_config_text(dict(ZAYA_CONFIG, **change))


def test_keys_outside_attention_are_ignored():
    extra = {"my_tokenizer_option": 3, "num_labels": 2,
             "router_aux_loss_coef": 0.01, "output_router_logits": True,
             "zaya_mlp_expansion": [256, 512], "use_cache": False}
    assert attnfuse.hf_config_text(dict(ZAYA_CONFIG, **extra)) == \
        attnfuse.hf_config_text(ZAYA_CONFIG)


def test_temperature_override_and_layer_selection():
    text = attnfuse.hf_config_text(ZAYA_CONFIG, layers=[1, 2],
                                   temperature="clamped", residual=False)
    assert _layer_attrs(text) == [(4096, 1e4), (None, 5e6)]
    assert text.count("#attn.temperature<clamped>") == 2
    assert "arith.addf" not in text
    with pytest.raises(ValueError, match="layers"):
        attnfuse.hf_config_text(ZAYA_CONFIG, layers=[40])


# The paper's GPT-2-style training configs (K=V family).
PAPER_CONFIG = {"model_type": "gpt2", "n_embd": 64, "n_head": 4,
                "n_layer": 2, "attn_sharing": "kv", "n_kv_groups": 2,
                "use_bias": False, "use_flash_attention": True,
                "block_size": 1024, "dropout": 0.0, "vocab_size": 50304}


def test_paper_config_keys():
    kind, kwargs, _ = importer.config_from_hf(PAPER_CONFIG)
    assert kind == "qkv_attention"
    assert kwargs["num_kv_heads"] == 2 and kwargs["biases"] is False
    text = attnfuse.hf_config_text(PAPER_CONFIG)
    assert text.count("attn.qkv_attention <kv>") == 2
    assert "bk(" not in text
    with_bias = attnfuse.hf_config_text(dict(PAPER_CONFIG, use_bias=True))
    assert with_bias.count("bk(") == 2
    attnfuse.parse(text).verify()


def test_padding_mask_is_for_cca_configs():
    module = attnfuse.from_hf_config(ZAYA_CONFIG, layers=[0, 1],
                                     padding_mask=True)
    assert module.argument_names("model")[:2] == ["x", "mask"]
    assert str(module).count("padding_mask(%arg1)") == 2
    with pytest.raises(ValueError, match="padding_mask applies to CCA"):
        attnfuse.from_hf_config(PAPER_CONFIG, padding_mask=True)
    text = attnfuse.hf_config_text(ZAYA_CONFIG, layers=[0],
                                   padding_mask="i32")
    assert "%mask: tensor<?x?xi32>" in text and "padding_mask(%mask)" in text


def test_attnfuse_import_cli_padding_mask(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(ZAYA_CONFIG))
    out = tmp_path / "model.mlir"
    assert importer.main([str(config), "-o", str(out), "--num-layers", "2",
                          "--padding-mask", "i64"]) == 0
    text = out.read_text()
    assert text.count("padding_mask(%mask)") == 2
    attnfuse.parse(text).verify()


AWKWARD = [31.25, 7.77, 0.1, 1.0 / 3.0, 5e6, 1e-5, 2.5e-8, 123456.789,
           1e20, 10000.0, 500000.0, 3.0]


@pytest.mark.parametrize("value", AWKWARD)
def test_float_attributes_parse_back_exactly(value):
    text = builders.float_text(value)
    assert float(text) == value
    # RoPE theta and the softmax scale through the MLIR parser and printer.
    module = attnfuse.qkv_attention(embed_dim=32, num_heads=2, head_dim=16,
                                    rope_theta=value, scale=value)
    printed = str(module)
    theta = re.search(r"theta = ([^,>]+)", printed).group(1)
    scale = re.search(r"scale = ([^ :]+) : f64", printed).group(1)
    assert float(theta) == value
    assert float(scale) == value


def test_float_text_rejects_non_finite():
    with pytest.raises(ValueError, match="finite"):
        builders.float_text(float("nan"))


# ---------------------------------------------------------------------------
# Weights
# ---------------------------------------------------------------------------

TINY = {"model_type": "zaya", "hidden_size": 32, "num_attention_heads": 2,
        "num_key_value_heads": 1, "head_dim": 8, "num_hidden_layers": 2,
        "layer_types": ["hybrid", "hybrid_sliding"], "sliding_window": 4,
        "dtype": "float32"}


def _tiny_checkpoint(rng, layers=(0, 1), dtype=np.float32):
    """HF-named tensors of TINY (Lq 16, Lk 8, C 24)."""
    shapes = {"qkv_proj.q_proj.weight": (16, 32),
              "qkv_proj.k_proj.weight": (8, 32),
              "qkv_proj.v_proj_current.weight": (4, 32),
              "qkv_proj.v_proj_delayed.weight": (4, 32),
              "qkv_proj.conv_qk_depthwise.weight": (24, 1, 2),
              "qkv_proj.conv_qk_depthwise.bias": (24,),
              "qkv_proj.conv_qk_grouped.weight": (24, 8, 2),
              "qkv_proj.conv_qk_grouped.bias": (24,),
              "qk_norm.temp": (1,), "o_proj.weight": (32, 16)}
    tensors = {}
    for i in layers:
        for name, shape in shapes.items():
            tensors[f"model.layers.{i}.self_attn.{name}"] = \
                rng.standard_normal(shape).astype(dtype)
        tensors[f"model.layers.{i}.input_layernorm.weight"] = \
            np.ones(32, dtype)
    tensors["model.embed_tokens.weight"] = np.zeros((8, 32), dtype)
    return tensors


def test_load_hf_weights_maps_names_and_shapes(tmp_path):
    rng = np.random.default_rng(0)
    tensors = _tiny_checkpoint(rng)
    save_safetensors(tmp_path / "model.safetensors", tensors)
    module = attnfuse.from_hf_config(TINY)
    weights = attnfuse.load_hf_weights(module, tmp_path)
    names = module.argument_names("model")[1:]
    assert list(weights) == names
    assert np.array_equal(weights["l1_conv_g_w"], tensors[
        "model.layers.1.self_attn.qkv_proj.conv_qk_grouped.weight"])
    assert np.array_equal(weights["l0_wv_prev"], tensors[
        "model.layers.0.self_attn.qkv_proj.v_proj_delayed.weight"])
    assert weights["l0_temp"].dtype == np.float32
    # A bf16 function gets bf16 bit patterns.
    bf16 = attnfuse.load_hf_weights(attnfuse.from_hf_config(TINY, dtype="bf16"),
                                    tmp_path)
    assert bf16["l0_wq"].dtype == np.uint16
    assert np.array_equal(bf16["l0_wq"], attnfuse.to_bf16(weights["l0_wq"]))
    # Layer selection reads the selected block.
    second = attnfuse.from_hf_config(TINY, layers=[1], residual=False)
    assert attnfuse.hf_weight_names(second)["l0_wq"] == \
        "model.layers.1.self_attn.qkv_proj.q_proj.weight"


def test_load_hf_weights_reads_megatron_names(tmp_path):
    # Zyphra's Megatron-style checkpoint names the same tensors otherwise.
    rng = np.random.default_rng(4)
    tensors = _tiny_checkpoint(rng)
    save_safetensors(tmp_path / "hf.safetensors", tensors)
    hf_names = {v: k for k, v in weights_module.CCA_NAMES.items()}
    renamed = {}
    for name, array in tensors.items():
        head, _, tail = name.partition(".self_attn.")
        renamed[f"{head}.self_attn."
                f"{weights_module.CCA_MEGATRON_NAMES[hf_names[tail]]}"
                if tail else name] = array
    save_safetensors(tmp_path / "megatron.safetensors", renamed)
    module = attnfuse.from_hf_config(TINY)
    ours = attnfuse.load_hf_weights(module, tmp_path / "megatron.safetensors")
    theirs = attnfuse.load_hf_weights(module, tmp_path / "hf.safetensors")
    assert list(ours) == list(theirs)
    for name in ours:
        assert np.array_equal(ours[name], theirs[name]), name
    assert attnfuse.hf_weight_names(module, megatron=True)["l1_wv"] == \
        "model.layers.1.self_attn.qkv.val_proj1.weight"
    with pytest.raises(ValueError, match="attn.cca"):
        attnfuse.hf_weight_names(attnfuse.from_hf_config(PAPER_CONFIG),
                                 megatron=True)


def test_load_hf_weights_reads_sharded_checkpoints(tmp_path):
    rng = np.random.default_rng(1)
    tensors = _tiny_checkpoint(rng)
    names = sorted(tensors)
    shards = {"model-00001-of-00002.safetensors": names[:len(names) // 2],
              "model-00002-of-00002.safetensors": names[len(names) // 2:]}
    weight_map = {}
    for shard, keys in shards.items():
        save_safetensors(tmp_path / shard, {k: tensors[k] for k in keys})
        weight_map.update({k: shard for k in keys})
    (tmp_path / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {}, "weight_map": weight_map}))
    weights = attnfuse.load_hf_weights(attnfuse.from_hf_config(TINY),
                                       tmp_path / "model.safetensors.index.json")
    assert np.array_equal(weights["l1_wo"],
                          tensors["model.layers.1.self_attn.o_proj.weight"])


def test_load_hf_weights_errors(tmp_path):
    rng = np.random.default_rng(2)
    module = attnfuse.from_hf_config(TINY)
    missing = _tiny_checkpoint(rng)
    del missing["model.layers.1.self_attn.qk_norm.temp"]
    save_safetensors(tmp_path / "missing.safetensors", missing)
    with pytest.raises(ValueError, match=r"missing tensor: model\.layers\.1\."
                       r"self_attn\.qk_norm\.temp \(for argument 'l1_temp', "
                       r"shape \[1\]\)"):
        attnfuse.load_hf_weights(module, tmp_path / "missing.safetensors")

    extra = _tiny_checkpoint(rng)
    extra["model.layers.0.self_attn.o_proj.bias"] = np.zeros(32, np.float32)
    save_safetensors(tmp_path / "extra.safetensors", extra)
    with pytest.raises(ValueError, match=r"model\.layers\.0\.self_attn\."
                       r"o_proj\.bias"):
        attnfuse.load_hf_weights(module, tmp_path / "extra.safetensors")

    shaped = _tiny_checkpoint(rng)
    shaped["model.layers.0.self_attn.qkv_proj.conv_qk_grouped.weight"] = \
        np.zeros((24, 2, 8), np.float32)  # not torch Conv1d [C, d, k]
    save_safetensors(tmp_path / "shaped.safetensors", shaped)
    with pytest.raises(ValueError, match=r"conv_qk_grouped\.weight \(argument "
                       r"'l0_conv_g_w'\) has shape \[24, 2, 8\], expected "
                       r"\[24, 8, 2\]"):
        attnfuse.load_hf_weights(module, tmp_path / "shaped.safetensors")

    (tmp_path / "junk.safetensors").write_bytes(b"\xff" * 16)
    with pytest.raises(ValueError, match="not a safetensors file"):
        attnfuse.load_hf_weights(module, tmp_path / "junk.safetensors")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no model.safetensors"):
        attnfuse.load_hf_weights(module, tmp_path / "empty")
    with pytest.raises(TypeError, match="Module or a compiled CpuFunction"):
        attnfuse.load_hf_weights("model", tmp_path)


def test_loader_reads_files_of_the_safetensors_package(tmp_path):
    numpy_io = pytest.importorskip("safetensors.numpy")
    rng = np.random.default_rng(3)
    tensors = _tiny_checkpoint(rng)
    numpy_io.save_file(tensors, str(tmp_path / "model.safetensors"))
    weights = attnfuse.load_hf_weights(attnfuse.from_hf_config(TINY),
                                       tmp_path)
    assert np.array_equal(weights["l0_conv_dw_w"], tensors[
        "model.layers.0.self_attn.qkv_proj.conv_qk_depthwise.weight"])
