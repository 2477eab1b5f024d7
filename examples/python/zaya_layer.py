"""A ZAYA-style CCGQA layer from a Hugging Face config: build, price, run.

The example of docs/python.md; python-bindings/tests/test_readme.py runs it
and checks that the page shows this file's code.
"""
import numpy as np

import attnfuse

config = {  # a small ZAYA config.json (the real one: 2048 wide, 40 layers)
    "model_type": "zaya", "hidden_size": 256, "num_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 32, "cca_time0": 2, "cca_time1": 2,
    "num_hidden_layers": 1, "layer_types": ["hybrid_sliding"],
    "sliding_window": 4096, "rope_parameters": {"hybrid_sliding": {
        "rope_type": "default", "rope_theta": 10000.0,
        "partial_rotary_factor": 0.5}},
    "vocab_size": 262144, "dtype": "float32",
}
layer = attnfuse.from_hf_config(config)        # attn.cca, function @model
report = attnfuse.cost(layer, seq_len=32768, dtype="bf16")
print("cache per token:", report["total"]["cache_bytes_per_token"], "bytes;",
      "prefill FLOPs:", report["total"]["attention_flops"]
      + report["total"]["projection_flops"] + report["total"]["other_flops"])

run = attnfuse.compile(layer, target="cpu")    # fused kernels, JIT
rng = np.random.default_rng(0)
inputs = [rng.standard_normal([2, 16, 256] if name == "x" else shape,
                              dtype=np.float32) * 0.1
          for name, (_, shape) in zip(run.argument_names, run.arguments)]
y = run(*inputs)                               # numpy in, numpy out
print(y.shape, y.dtype)
