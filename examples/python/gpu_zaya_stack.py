"""A ZAYA-style CCGQA stack compiled for sm_90a and run in one call.

On a machine with an H100/H200 and CUDA torch, the arguments are CUDA
tensors and so is the result; elsewhere the same call takes CPU tensors,
given a CUDA driver stand-in such as the emulator:
    ATTNFUSE_CUDA_DRIVER=build/lib/libattnfuse_cudasim.so
"""
import torch

import attnfuse

# Two CCGQA layers with residuals (the real ZAYA1: 2048 wide, 40 layers).
model = attnfuse.cca(embed_dim=256, num_heads=4, num_kv_heads=2, head_dim=64,
                     dtype="bf16", rope_theta=1e4, rope_fraction=0.5,
                     num_layers=2)
run = attnfuse.compile(model, target="sm_90a")  # kernels + device program

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
shapes = [shape for _, shape in run.function("model").arguments[1:]]
args = [torch.randn(2, 64, 256)] + [  # x: batch 2, 64 tokens; the weights
    torch.randn(s) / s[-1] ** 0.5 if len(s) > 1 else 0.5 + torch.rand(s)
    for s in shapes]
args = [a.to(device, torch.bfloat16) for a in args]
y = run(*args)  # every kernel of both layers, on the current stream
print(tuple(y.shape), y.dtype, y.device.type)
print(run.function("model").stats())  # launches per call, arena bytes, ...

# The CPU JIT path computes the same, to bf16 accuracy.
reference = attnfuse.compile(model)(*[a.cpu() for a in args]).float()
error = (y.cpu().float() - reference).abs().max() / reference.abs().max()
print(f"max difference to the CPU path: {error:.1e}")
assert error < 2 ** -5
