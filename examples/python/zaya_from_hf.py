"""A Hugging Face ZAYA checkpoint through AttnFuse, checked against
transformers: no download, the model is a tiny random one.

transformers builds a 2-layer ZAYA (one global layer, one sliding-window
layer) and saves it (config.json + model.safetensors); AttnFuse imports the
config and the weights, compiles each attention layer for the CPU, and runs
it on the inputs that transformers' own attention saw (forward hooks).

The README's Hugging Face example; python-bindings/tests/test_readme.py runs
it (when torch and transformers are installed) and checks that the README
shows this file's code.
"""
import tempfile

import numpy as np
import torch
import transformers

import attnfuse

config = transformers.ZayaConfig(  # tiny ZAYA: 64 wide, 4 x 16 latent heads
    hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
    num_hidden_layers=2, layer_types=["hybrid", "hybrid_sliding"],
    sliding_window=8, num_experts=2, moe_intermediate_size=32,
    router_hidden_size=16, vocab_size=128)
torch.manual_seed(0)
model = transformers.ZayaForCausalLM(config).eval()
with torch.no_grad():  # the learned key temperatures start at 0: make them not
    for block in model.model.layers:
        block.self_attn.qk_norm.temp.uniform_(0.5, 2.0)
folder = tempfile.mkdtemp()
model.save_pretrained(folder)  # config.json + model.safetensors

seen = {}  # layer -> (attention input, attention output) in transformers
for i, block in enumerate(model.model.layers):
    block.self_attn.register_forward_hook(
        lambda mod, args, kwargs, out, i=i: seen.__setitem__(
            i, (kwargs["hidden_states"].numpy(), out[0].numpy())),
        with_kwargs=True)
with torch.no_grad():
    model(torch.randint(0, 128, (2, 24)))  # batch 2, 24 tokens (> window)

for i in range(2):
    layer = attnfuse.from_hf_config(f"{folder}/config.json", layers=[i],
                                    residual=False, dtype="f32")
    run = attnfuse.compile(layer, target="cpu")
    weights = attnfuse.load_hf_weights(run, folder)  # {argument: array}
    x, expected = seen[i]
    y = run(x, *weights.values())
    error = np.abs(y - expected).max() / np.abs(expected).max()
    print(f"layer {i} ({config.layer_types[i]}): max error {error:.1e}")
    assert error <= 1e-5
