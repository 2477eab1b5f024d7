"""A K=V GQA decode loop compiled for sm_90a: prefill the prompts into a
paged KV cache, then generate token by token; each call updates the cache in
place on the device.

On a machine with an H100/H200 and CUDA torch the tensors live on the GPU;
elsewhere the same loop runs on CPU tensors, given a CUDA driver stand-in
such as the emulator:
    ATTNFUSE_CUDA_DRIVER=build/lib/libattnfuse_cudasim.so
"""
import torch

import attnfuse

# Two K=V layers, 4 query heads over 2 shared key/value heads, RoPE; the
# cache holds one tensor per layer: 8 pages of 16 tokens.
model = attnfuse.qkv_decode(sharing="kv", embed_dim=256, num_heads=4,
                            num_kv_heads=2, head_dim=64, dtype="bf16",
                            rope_theta=1e4, page_size=16, num_pages=8,
                            num_layers=2)
gpu = attnfuse.compile(model, target="sm_90a")
prefill, step = gpu.function("prefill"), gpu.function("step")
cpu_prefill = attnfuse.compile(model, entry="prefill")  # the CPU JIT path,
cpu_step = attnfuse.compile(model, entry="step")        # for comparison

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
bf16 = dict(device=device, dtype=torch.bfloat16)
weights = {n: torch.randn(s[0], s[1]).to(**bf16) / s[1] ** 0.5
           for n, (_, s) in zip(prefill.argument_names, prefill.arguments)
           if n.endswith(("_wq", "_wk", "_wo"))}
caches = {n: torch.zeros(8, 16, 2, 64, **bf16)
          for n in prefill.argument_names if n.endswith("_cache")}
cpu_caches = {n: c.cpu().clone() for n, c in caches.items()}
i32 = dict(device=device, dtype=torch.int32)
block_table = torch.tensor([[3, 0, 5, 1], [2, 6, 4, 7]], **i32)  # 4 pages each
lengths = torch.tensor([10, 7], **i32)  # prompts of 10 and 7 tokens


def run(function, caches, **values):
    args = dict(weights, **caches, **values, block_table=block_table)
    args = [args[name] for name in function.argument_names]
    if function in (cpu_prefill, cpu_step):
        args = [a.cpu() for a in args]
    y, *updated = function(*args)
    # The caches come back updated in place: the very tensors passed in.
    assert all(u is c for u, c in zip(updated, caches.values()))
    return y


x = torch.randn(2, 10, 256).to(**bf16)  # prompts padded to 10 tokens
start = torch.zeros(2, **i32)
y = run(prefill, caches, x=x, positions=start, lengths=lengths)
ref = run(cpu_prefill, cpu_caches, x=x, positions=start, lengths=lengths)
worst = 0.0
for t in range(4):  # 4 new tokens per sequence
    token = torch.randn(2, 1, 256).to(**bf16)
    positions = lengths + t  # the new token's slot
    y = run(step, caches, x=token, positions=positions)
    ref = run(cpu_step, cpu_caches, x=token, positions=positions)
    error = ((y.cpu().float() - ref.float()).abs().max() / ref.float().abs().max())
    worst = max(worst, float(error))
print(f"{step.launches} launches per step; max difference to the CPU path "
      f"over 4 steps: {worst:.1e}")
assert worst < 2 ** -5
