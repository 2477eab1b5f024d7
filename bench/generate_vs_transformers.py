#!/usr/bin/env python3
"""CPU generation: transformers' ZayaForCausalLM.generate() with its own
cache vs the same model with every ZayaAttention swapped for
attnfuse.torch.CCAAttention and an attnfuse.generation.AttnFuseCache.

The model is random, with ZAYA1's attention shape (E 2048, 8 query heads,
2 KV heads, head dim 128, conv kernels 2 and 2) in --layers layers
(global and sliding-window alternating), a small MoE and vocabulary, f32.
Each (batch, threads) runs in its own process (OMP_NUM_THREADS and
torch.set_num_threads): a warm-up generate of each (ours: the JIT
compilation of the decode functions), then --runs rounds of one generate of
each, interleaved; the median of each. Reported: the time of the whole
generate, the prefill (one forward of the prompt) and the mean per-token
decode step (from a second generate of max_new_tokens = 1), tokens per
second, and whether the tokens are equal.

    PYTHONPATH=build/python_packages .venv/bin/python \\
        bench/generate_vs_transformers.py --out bench/results/generate-cpu
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time


def build(layers):
    import torch
    import transformers
    import attnfuse.torch as at
    config = transformers.ZayaConfig(
        hidden_size=2048, num_attention_heads=8, num_key_value_heads=2,
        head_dim=128, num_hidden_layers=layers,
        layer_types=["hybrid", "hybrid_sliding"] * (layers // 2)
        + ["hybrid"] * (layers % 2), sliding_window=64, num_experts=2,
        moe_intermediate_size=256, router_hidden_size=64, vocab_size=512,
        pad_token_id=0, eos_token_id=None, bos_token_id=None)
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    reference = transformers.ZayaForCausalLM(config).eval()
    return reference, at.swap_zaya_attention(reference)


def child(args):
    import torch
    from attnfuse.generation import AttnFuseCache
    torch.set_num_threads(args.threads)
    reference, swapped = build(args.layers)
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(1, 512, (args.batch, args.prompt),
                        generator=generator)
    capacity = args.prompt + args.new_tokens

    def run(model, ours, new_tokens):
        cache = AttnFuseCache.for_model(model, capacity) if ours else None
        start = time.perf_counter()
        with torch.no_grad():
            out = model.generate(ids, max_new_tokens=new_tokens,
                                 min_new_tokens=new_tokens, do_sample=False,
                                 past_key_values=cache, pad_token_id=0)
        return time.perf_counter() - start, out

    run(swapped, True, 2)  # compiles prefill and step
    run(reference, False, 2)
    times = {"ours": [], "torch": [], "ours_prefill": [], "torch_prefill": []}
    tokens = {}
    for _ in range(args.runs):
        for name, model, ours in (("ours", swapped, True),
                                  ("torch", reference, False)):
            seconds, out = run(model, ours, args.new_tokens)
            times[name].append(seconds)
            tokens[name] = out
            seconds, _ = run(model, ours, 1)
            times[name + "_prefill"].append(seconds)
    row = {"batch": args.batch, "threads": args.threads,
           "prompt": args.prompt, "new_tokens": args.new_tokens,
           "tokens_equal": bool(torch.equal(tokens["ours"],
                                            tokens["torch"]))}
    for name in ("ours", "torch"):
        total = statistics.median(times[name])
        prefill = statistics.median(times[name + "_prefill"])
        step = (total - prefill) / (args.new_tokens - 1)
        row[name] = {"generate_s": total, "prefill_s": prefill,
                     "step_s": step,
                     "tokens_per_s": args.batch / step}
    print(json.dumps(row))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--batches", default="1,4")
    parser.add_argument("--threads-list", default="1,2")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", default=None,
                        help="write OUT.json and OUT.md")
    parser.add_argument("--child", action="store_true",
                        help=argparse.SUPPRESS)
    parser.add_argument("--batch", type=int, default=1,
                        help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=1,
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)
    rows = []
    for threads in [int(t) for t in args.threads_list.split(",")]:
        for batch in [int(b) for b in args.batches.split(",")]:
            command = [sys.executable, __file__, "--child",
                       "--layers", str(args.layers),
                       "--prompt", str(args.prompt),
                       "--new-tokens", str(args.new_tokens),
                       "--runs", str(args.runs), "--batch", str(batch),
                       "--threads", str(threads)]
            env = dict(os.environ, OMP_NUM_THREADS=str(threads))
            out = subprocess.run(command, env=env, capture_output=True,
                                 text=True, check=True).stdout
            rows.append(json.loads(out.strip().splitlines()[-1]))
            r = rows[-1]
            print(f"batch {batch} threads {threads}: step ours "
                  f"{r['ours']['step_s'] * 1e3:.1f} ms, transformers "
                  f"{r['torch']['step_s'] * 1e3:.1f} ms; prefill ours "
                  f"{r['ours']['prefill_s'] * 1e3:.0f} ms, transformers "
                  f"{r['torch']['prefill_s'] * 1e3:.0f} ms; tokens equal "
                  f"{r['tokens_equal']}", flush=True)
    lines = [
        "`" + " ".join(["PYTHONPATH=build/python_packages",
                        ".venv/bin/python", "bench/generate_vs_transformers.py"]
                       + sys.argv[1:]) + "`", "",
        f"ZAYA1-shaped attention (E 2048, 8/2 heads of 128), {args.layers} "
        f"layers, f32, prompt {args.prompt}, {args.new_tokens} new tokens, "
        f"greedy; median of {args.runs}; {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs.", "",
        "| batch | threads | ours step (ms) | transformers step (ms) | "
        "ours/transformers step | ours prefill (ms) | transformers prefill "
        "(ms) | ours tokens/s | transformers tokens/s | tokens equal |",
        "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        o, t = r["ours"], r["torch"]
        lines.append(
            f"| {r['batch']} | {r['threads']} | {o['step_s'] * 1e3:.1f} | "
            f"{t['step_s'] * 1e3:.1f} | {o['step_s'] / t['step_s']:.2f} | "
            f"{o['prefill_s'] * 1e3:.0f} | {t['prefill_s'] * 1e3:.0f} | "
            f"{o['tokens_per_s']:.1f} | {t['tokens_per_s']:.1f} | "
            f"{r['tokens_equal']} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out + ".json", "w") as f:
            json.dump(rows, f, indent=1)
        with open(args.out + ".md", "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
