"""A Hugging Face ZAYA checkpoint through AttnFuse, checked against
transformers: no download, the model is a tiny random one.

transformers builds a 2-layer ZAYA (one global layer, one sliding-window
layer) and saves it (config.json + model.safetensors) and runs a
left-padded batch with a 2-D attention_mask; AttnFuse imports the config and
the weights, compiles each attention layer for the CPU with the padding mask
as an argument, and runs it on the inputs and the mask that transformers'
own attention saw (forward hooks), comparing the real tokens.

The Hugging Face example of docs/transformers.md;
python-bindings/tests/test_readme.py runs it (when torch and transformers are
installed) and checks that the page shows this file's code.
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
mask = torch.ones(2, 24, dtype=torch.long)  # batch 2, 24 tokens (> window);
mask[1, :5] = 0  # sequence 1 is left-padded: 5 padding tokens, 19 real ones
with torch.no_grad():
    model(torch.randint(0, 128, (2, 24)), attention_mask=mask)

real = mask.numpy() == 1  # transformers' padded rows carry no meaning
for i in range(2):
    layer = attnfuse.from_hf_config(f"{folder}/config.json", layers=[i],
                                    residual=False, dtype="f32",
                                    padding_mask=True)  # takes x, mask, ...
    run = attnfuse.compile(layer, target="cpu")
    weights = attnfuse.load_hf_weights(run, folder)  # {argument: array}
    x, expected = seen[i]
    y = run(x, mask.numpy(), *weights.values())
    error = np.abs(y - expected)[real].max() / np.abs(expected[real]).max()
    print(f"layer {i} ({config.layer_types[i]}): max error {error:.1e}")
    assert error <= 1e-5
