"""The documentation's Python examples are the files of examples/python/,
copied exactly (zaya_layer.py in docs/python.md, zaya_from_hf.py in
docs/transformers.md), and they run; README.md's first Python block is its
hello-world example; the attnfuse-import command works."""

import os
import re
import subprocess
import sys

import pytest


def python_blocks(root, page):
    """The ```python blocks of a Markdown page, runnable ones included."""
    text = open(os.path.join(root, page)).read()
    return re.findall(r"```python(?: run)?\n(.*?)```", text, re.S)


def test_python_guide_example_runs(root):
    path = os.path.join(root, "examples", "python", "zaya_layer.py")
    code = open(path).read()
    code = code[code.index("import numpy"):]
    assert code in python_blocks(root, "docs/python.md"), \
        "docs/python.md's ZAYA layer example differs from " + path
    proc = subprocess.run([sys.executable, path], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "cache per token: 256 bytes" in proc.stdout  # 2 Lk bf16 values
    assert "(2, 16, 256) float32" in proc.stdout


def test_attnfuse_import_cli(root, tmp_path):
    config = tmp_path / "config.json"
    config.write_text('{"model_type": "gpt2", "n_embd": 64, "n_head": 4, '
                      '"n_layer": 3, "attn_sharing": "kv", '
                      '"num_key_value_heads": 1, "vocab_size": 50257}')
    out = tmp_path / "model.mlir"
    proc = subprocess.run([sys.executable, "-m", "attnfuse.importer",
                           str(config), "-o", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert text.count("attn.qkv_attention <kv>") == 3
    assert "num_kv_heads = 1 : i64" in text
    import attnfuse
    attnfuse.parse(text).verify()
    config.write_text('{"model_type": "gpt2", "n_embd": 64, "n_head": 4, '
                      '"n_layer": 3, "n_kv_heads": 2}')
    proc = subprocess.run([sys.executable, "-m", "attnfuse.importer",
                           str(config)], capture_output=True, text=True)
    assert proc.returncode == 1
    assert "unsupported field 'n_kv_heads'" in proc.stderr


def test_zaya1_config_reproduces_the_example_model(root):
    import attnfuse
    # transformers 5.23's ZayaConfig() defaults: 40 "hybrid" layers.
    config = {"model_type": "zaya", "hidden_size": 2048,
              "num_attention_heads": 8, "num_key_value_heads": 2,
              "head_dim": 128, "cca_time0": 2, "cca_time1": 2,
              "num_hidden_layers": 40, "layer_types": ["hybrid"] * 40,
              "rope_parameters": {
                  "hybrid": {"rope_type": "default", "rope_theta": 5e6,
                             "partial_rotary_factor": 0.5},
                  "hybrid_sliding": {"rope_type": "default",
                                     "rope_theta": 1e4,
                                     "partial_rotary_factor": 0.5}},
              "sliding_window": None, "dtype": "bfloat16"}
    imported = attnfuse.from_hf_config(config)
    with open(os.path.join(root, "examples", "zaya1_ccgqa.mlir")) as f:
        example = attnfuse.parse(f.read())
    # Same ops, attributes and types as the shipped ZAYA1 example.
    assert str(imported) == str(example)


def test_readme_hello_world_runs(root):
    """README.md's Python example (also run by ctest docs/code-blocks) runs
    as written and prints the output shape its comment shows."""
    blocks = python_blocks(root, "README.md")
    assert blocks, "README.md has no Python example"
    proc = subprocess.run([sys.executable, "-c", blocks[0]], cwd=root,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "(2, 8, 64)"
    assert "from_hf_config" in blocks[0] and "attnfuse.compile" in blocks[0]


def test_transformers_guide_hugging_face_example(root):
    path = os.path.join(root, "examples", "python", "zaya_from_hf.py")
    code = open(path).read()
    code = code[code.index("import tempfile"):]
    assert code in python_blocks(root, "docs/transformers.md"), \
        "docs/transformers.md's Hugging Face example differs from " + path
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    if not hasattr(transformers, "ZayaConfig"):
        pytest.skip("this transformers has no ZAYA model")
    proc = subprocess.run([sys.executable, path], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    errors = re.findall(r"layer (\d) \((\w+)\): max error (\S+)",
                        proc.stdout)
    assert [(i, kind) for i, kind, _ in errors] == [
        ("0", "hybrid"), ("1", "hybrid_sliding")], proc.stdout
    assert all(float(e) <= 1e-5 for _, _, e in errors), proc.stdout
