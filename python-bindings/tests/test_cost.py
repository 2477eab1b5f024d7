"""attnfuse.cost equals the C++ report (attnfuse-opt --attn-cost-report)."""

import json
import subprocess

import pytest

import attnfuse


def cpp_report(tool, path, options):
    proc = subprocess.run(
        [tool, str(path), f"--attn-cost-report={options} format=json",
         "-o", "/dev/null"], capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


@pytest.mark.parametrize("kwargs,options", [
    (dict(), ""),
    (dict(seq_len=4096, dtype="bf16"), "seq-len=4096 elem-type=bf16"),
    (dict(seq_len=1000, batch=8, dtype="fp8"), "seq-len=1000 batch=8 elem-type=fp8"),
])
@pytest.mark.parametrize("model", [
    lambda: attnfuse.qkv_attention(sharing="kv", embed_dim=1024, num_heads=16,
                                   num_kv_heads=4, num_layers=2, window=512),
    lambda: attnfuse.cca(embed_dim=2048, num_heads=8, num_kv_heads=2,
                         head_dim=128, rope_theta=1e4, rope_fraction=0.5,
                         dtype="bf16"),
])
def test_cost_equals_cpp_report(attnfuse_opt, tmp_path, model, kwargs, options):
    module = model()
    path = tmp_path / "model.mlir"
    path.write_text(str(module))
    expected = cpp_report(attnfuse_opt, path, options)
    assert attnfuse.cost(module, **kwargs) == expected
    assert module.cost(**kwargs) == expected


def test_cost_of_the_zaya1_example(attnfuse_opt, root):
    path = f"{root}/examples/zaya1_ccgqa.mlir"
    with open(path) as f:
        module = attnfuse.parse(f.read(), source_name=path)
    report = attnfuse.cost(module, seq_len=32768)
    assert report == cpp_report(attnfuse_opt, path, "seq-len=32768")
    # docs/semantics.md#cost-model: 512 cached values per token and layer,
    # 8x below MHA.
    assert report["layers"][0]["cache_values_per_token"] == 512
    assert report["total"]["layers"] == 40
