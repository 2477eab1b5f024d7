"""Every error path raises a Python exception with a useful message."""

import json
import shutil

import numpy as np
import pytest

import attnfuse

LAYER = """func.func @f(%x: tensor<?x?x32xf32>, %wq: tensor<32x32xf32>,
                %wk: tensor<{wk}x32xf32>, %wo: tensor<32x32xf32>)
    -> tensor<?x?x32xf32> {{
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {{num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 8 : i64, causal}}
      : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<{wk}x32xf32>,
         tensor<32x32xf32>) -> tensor<?x?x32xf32>
  return %y : tensor<?x?x32xf32>
}}
"""


def test_parse_error_carries_location():
    with pytest.raises(attnfuse.MLIRError) as info:
        attnfuse.parse("func.func @f() {\n  %0 = arith.constant : i32\n}",
                       source_name="bad.mlir")
    severity, location, message = info.value.diagnostics[0]
    assert severity == "error" and location.startswith("bad.mlir:2:")
    assert f"{location}: " in str(info.value)


def test_verify_error_names_the_operand():
    text = LAYER.format(wk=24)  # wk must be [num_kv_heads * head_dim, E]
    with pytest.raises(attnfuse.MLIRError, match="'wk' must have shape"):
        attnfuse.parse(text)
    module = attnfuse.parse(text, verify=False)
    with pytest.raises(attnfuse.MLIRError) as info:
        module.verify()
    assert info.value.diagnostics[0][1].startswith("<string>:4:")


def test_pipeline_errors():
    module = attnfuse.parse(LAYER.format(wk=16))
    with pytest.raises(attnfuse.MLIRError, match="no-such-pass"):
        module.run_pipeline("attn-decompose,no-such-pass")
    # A pass failure reports the op's location: the sm_90a kernels need a
    # head dim that is a multiple of 16.
    text, _ = attnfuse.builders.qkv_attention_text(
        embed_dim=400, num_heads=10, head_dim=40, dtype="bf16")
    d40 = attnfuse.parse(text, source_name="d40.mlir")
    with pytest.raises(attnfuse.MLIRError) as info:
        d40.run_pipeline("attn-decompose,attn-fuse,attn-to-ptx")
    assert any(loc.startswith("d40.mlir:") and "head_dim 40" in msg
               for _, loc, msg in info.value.diagnostics), info.value
    # run_pipeline leaves the module itself unchanged.
    assert "attn.qkv_attention" in str(module)
    lowered = module.run_pipeline("builtin.module(attn-decompose)")
    assert "attn.sdpa" in str(lowered)
    assert str(module.run_pipeline("attn-decompose")) == str(lowered)


def test_cost_errors():
    module = attnfuse.qkv_attention(embed_dim=32, num_heads=4)
    with pytest.raises(ValueError, match="seq_len"):
        attnfuse.cost(module, seq_len=0)
    with pytest.raises(ValueError, match="dtype"):
        attnfuse.cost(module, dtype="int4")


@pytest.fixture(scope="module")
def layer():
    module = attnfuse.qkv_attention(sharing="kv", embed_dim=32, num_heads=4,
                                    num_kv_heads=2)
    return attnfuse.compile(module, target="cpu")


def args_for(function, batch=2, seq=3):
    return [np.zeros(tuple(batch if i == 0 and d is None else seq if d is None
                           else d for i, d in enumerate(shape)), np.float32)
            for _, shape in function.arguments]


def test_bad_arguments_to_the_compiled_function(layer):
    args = args_for(layer)
    with pytest.raises(ValueError, match="takes 4 arguments, got 3"):
        layer(*args[:3])
    with pytest.raises(ValueError, match=r"argument #1 \('l0_wq'\).*f32.*float64"):
        layer(args[0], args[1].astype(np.float64), *args[2:])
    with pytest.raises(ValueError, match=r"argument #2 \('l0_wk'\) .*needs shape \[16, 32\], got \[32, 32\]"):
        layer(args[0], args[1], np.zeros((32, 32), np.float32), args[3])
    with pytest.raises(ValueError, match=r"argument #0 \('x'\) .*needs shape \[\?, \?, 32\]"):
        layer(np.zeros((2, 32), np.float32), *args[1:])


def test_inconsistent_dynamic_sizes_raise(layer):
    # Two inputs that share their dynamic sizes.
    text = """func.func @add(%a: tensor<?x4xf32>, %b: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %c = arith.addf %a, %b : tensor<?x4xf32>
  return %c : tensor<?x4xf32>
}"""
    add = attnfuse.compile(attnfuse.parse(text))
    ones = np.ones((3, 4), np.float32)
    assert np.array_equal(add(ones, ones), 2 * ones)
    assert np.array_equal(ones, np.ones((3, 4)))  # the inputs are not written
    with pytest.raises(RuntimeError, match=r"run-time size check of 'add' "
                       r"failed before the call: argument #1 dimension 0 is 2 "
                       r"but argument #0 dimension 0 is 3; arith.addf at "
                       r"<string>:2:\d+ needs operand #1 and operand #0 to "
                       r"agree in dimension 0"):
        add(ones, np.ones((2, 4), np.float32))
    assert np.array_equal(add(ones, ones), 2 * ones)  # still usable


def test_compile_errors():
    module = attnfuse.qkv_attention(embed_dim=32, num_heads=4)
    with pytest.raises(ValueError, match="target"):
        attnfuse.compile(module, target="sm_80")
    with pytest.raises(ValueError, match="entry"):
        attnfuse.compile(module, entry="nope")
    with pytest.raises(ValueError, match="block_q"):
        attnfuse.compile(module, block_q=0)
    with pytest.raises(ValueError, match="tile_m"):
        attnfuse.compile(module, tile_m=4)
    with pytest.raises(ValueError, match="elem_type"):
        attnfuse.compile(module, target="sm_90a", elem_type="f32")
    with pytest.raises(TypeError, match="attnfuse.parse"):
        attnfuse.compile(str(module))
    with pytest.raises(ValueError, match="vectorize"):
        attnfuse.compile(module, vectorise=False)
    with pytest.raises(ValueError, match="register_tile_n"):
        attnfuse.compile(module, register_tile_n=0)


def test_sm90a_kernels_of_a_padded_layer_take_the_mask(tmp_path):
    """A layer with a padding mask compiles for sm_90a: the prologue and the
    flash kernel each take the mask as a pointer parameter (the emulator
    tests in cudasim/test/kernels check what they compute)."""
    module = attnfuse.cca(embed_dim=128, num_heads=4, num_kv_heads=2,
                          head_dim=64, dtype="bf16", rope_theta=1e4,
                          rope_fraction=0.5, padding_mask="i32")
    artifacts = attnfuse.compile(module, target="sm_90a",
                                 output_dir=tmp_path, cubin=False)
    masks = {k["name"]: [t["name"] for t in k["tensors"]
                         if t["name"].endswith("mask")]
             for k in artifacts.manifest["kernels"]}
    assert any(name.startswith("attn_cca_prologue") and m == ["padding_mask"]
               for name, m in masks.items()), masks
    assert any(name.startswith("attn_fa") and m == ["key_mask"]
               for name, m in masks.items()), masks
    # A mask the kernels do not read is an error on the op.
    text = str(attnfuse.cca(embed_dim=128, num_heads=4, num_kv_heads=2,
                            head_dim=64, dtype="bf16", padding_mask="i32"))
    with pytest.raises(attnfuse.MLIRError, match="read a padding_mask of i32 "
                                                 "or i64, got 'i8'"):
        attnfuse.compile(attnfuse.parse(text.replace("xi32>", "xi8>")),
                         target="sm_90a", output_dir=tmp_path / "i8",
                         cubin=False)


def test_sm90a_artifacts_and_launch_without_driver(tmp_path):
    module = attnfuse.qkv_attention(sharing="kv", embed_dim=256, num_heads=4,
                                    num_kv_heads=2, head_dim=64, dtype="bf16")
    cubin = shutil.which("ptxas") is not None or \
        shutil.os.path.exists("/usr/local/cuda/bin/ptxas")
    artifacts = attnfuse.compile(module, target="sm_90a",
                                 output_dir=tmp_path / "out", cubin=cubin)
    assert artifacts.manifest["format"] == "attnfuse-sm90a-manifest"
    assert any(f.endswith("manifest.json") for f in artifacts.files)
    assert artifacts.kernels
    if cubin:
        assert any(f.endswith(".cubin") for f in artifacts.files)
    with open(artifacts.manifest_path) as f:
        assert json.load(f)["kernels"][0]["name"] == artifacts.kernels[0]
    if attnfuse.runtime.driver_available():
        pytest.skip("this machine has a CUDA driver")
    fake = (0x10000, "bf16", (1, 128, 4, 64), (32768, 256, 64, 1))
    with pytest.raises(attnfuse.NoDriverError, match="no CUDA driver"):
        artifacts.launch(artifacts.kernels[0], {"query": fake}, B=1, S=128)
    with pytest.raises(ValueError, match="kernel must be one of"):
        artifacts.validate("nope", {"query": fake}, B=1, S=128)
    with pytest.raises(TypeError, match="tensor 'query'"):
        artifacts.launch(artifacts.kernels[0], {"query": object()}, B=1, S=128)


def test_sm90a_program_without_driver_and_its_checks(tmp_path):
    """The compiled module is callable: without a CUDA driver the call raises
    NoDriverError; shapes are inferred on the host all the same."""
    module = attnfuse.qkv_attention(sharing="kv", embed_dim=256, num_heads=4,
                                    num_kv_heads=2, head_dim=64, dtype="bf16",
                                    num_layers=2)
    artifacts = attnfuse.compile(module, target="sm_90a", output_dir=tmp_path,
                                 cubin=False)
    assert artifacts.functions == ["model"]
    function = artifacts.function("model")
    assert function.launches == 10  # per layer: 3 GEMMs, attention, add
    args = [np.zeros((2, 5, 256), np.uint16)] + [
        np.zeros(shape, np.uint16) for _, shape in function.arguments[1:]]
    outputs, arena = function.infer(*args)
    assert outputs == [("bf16", (2, 5, 256), -1)] and arena > 0
    with pytest.raises(ValueError, match="entry: no function 'nope'"):
        artifacts.function("nope")
    with pytest.raises(ValueError, match="takes 7 arguments, got 1"):
        artifacts(args[0])
    if attnfuse.runtime.driver_available():
        pytest.skip("this machine has a CUDA driver")
    with pytest.raises(attnfuse.NoDriverError, match="no CUDA driver"):
        artifacts(*args)


HF_GPT2 = {"model_type": "gpt2", "n_embd": 64, "n_head": 4, "n_layer": 2,
           "attn_sharing": "kv", "num_key_value_heads": 2, "vocab_size": 50257}


@pytest.mark.parametrize("change,field", [
    ({"attn_logit_softcap": 30.0}, "attn_logit_softcap"),
    ({"n_head": 3}, "n_embd"),
    ({"num_key_value_heads": 3}, "num_key_value_heads"),
    ({"attn_sharing": "qk"}, "attn_sharing"),
    ({"attn_sharing": "q=k"}, "attn_sharing"),
    ({"n_layer": 0}, "n_layer"),
    ({"n_kv_head": 2}, "n_kv_head"),
    ({"n_kv_groups": 3}, "n_kv_groups"),
    ({"use_bias": "yes"}, "use_bias"),
    ({"partial_rotary_factor": 0.5}, "rope_theta"),
])
def test_bad_gpt2_fields_raise(change, field):
    with pytest.raises(ValueError, match=field):
        attnfuse.from_hf_config(dict(HF_GPT2, **change))


HF_ZAYA = {"model_type": "zaya", "hidden_size": 256, "num_attention_heads": 4,
           "num_key_value_heads": 2, "head_dim": 32, "cca_time0": 2,
           "cca_time1": 2, "partial_rotary_factor": 0.5, "rope_theta": 10000.0,
           "num_hidden_layers": 2, "vocab_size": 262144, "num_experts": 16}


@pytest.mark.parametrize("change,field", [
    ({"query_pre_attn_scalar": 1}, "query_pre_attn_scalar"),
    ({"num_hidden_layers": 3}, "num_hidden_layers"),
    ({"cca_time0": 0}, "cca_time0"),
    ({"partial_rotary_factor": 0.0}, "partial_rotary_factor"),
    ({"partial_rotary_factor": 1.5}, "partial_rotary_factor"),
    ({"num_key_value_heads": 3}, "num_key_value_heads"),
    ({"head_dim": 128}, "hidden_size"),
    ({"rope_theta": -1}, "rope_theta"),
    ({"num_hidden_layers": "40"}, "num_hidden_layers"),
    ({"rope_scaling": {"type": "linear"}}, "rope_scaling"),
])
def test_bad_zaya_fields_raise(change, field):
    with pytest.raises(ValueError, match=field):
        attnfuse.from_hf_config(dict(HF_ZAYA, **change))


def test_missing_field_raises():
    config = dict(HF_ZAYA)
    del config["hidden_size"]
    with pytest.raises(ValueError, match="missing field 'hidden_size'"):
        attnfuse.from_hf_config(config)
