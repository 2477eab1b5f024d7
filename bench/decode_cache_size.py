#!/usr/bin/env python3
"""Decode-step time against the KV cache's capacity: caches updated in place
(the default) vs compiled with in_place_caches=False (every step returns a
new copy of each cache).

One kv-sharing GQA-4 decode layer (E 1024, 16 query heads of 64, 4 KV heads,
RoPE unless --rope-theta 0), f32, batch 1, contiguous cache. Every step attends to the same
`--position` cached tokens, so the attention work is the same at every
capacity and what grows with the capacity is only what a step does with
the rest of the cache. Prints a markdown table and writes JSON to --out.

    PYTHONPATH=build/python_packages python3 bench/decode_cache_size.py \\
        --out bench/results/decode-cache-size
"""

import argparse
import json
import platform
import time

import numpy as np

import attnfuse


def time_step(step, values, runs):
    args = [values[n] for n in step.argument_names]
    step(*args)  # warm-up
    seconds = []
    for _ in range(runs):
        start = time.perf_counter()
        step(*args)
        seconds.append(time.perf_counter() - start)
    return float(np.median(seconds)), float(np.min(seconds))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--capacities", default="1024,4096,16384,65536")
    parser.add_argument("--position", type=int, default=512)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--rope-theta", type=float, default=1e4,
                        help="0: no RoPE")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    e, hq, hk, d = 1024, 16, 4, 64
    rows = []
    rng = np.random.default_rng(0)
    for capacity in [int(c) for c in args.capacities.split(",")]:
        module = attnfuse.qkv_decode(sharing="kv", embed_dim=e, num_heads=hq,
                                     num_kv_heads=hk, head_dim=d,
                                     rope_theta=args.rope_theta or None,
                                     capacity=capacity)
        row = {"capacity": capacity,
               "cache_mib": capacity * hk * d * 4 / 2**20}
        for label, in_place in (("in_place", True), ("copying", False)):
            step = attnfuse.compile(module, entry="step", runtime_checks=False,
                                    opt_level=3, in_place_caches=in_place)
            values = {}
            for name, (_, shape) in zip(step.argument_names, step.arguments):
                shape = [1 if s is None else s for s in shape]
                if name == "positions":
                    values[name] = np.array([args.position], np.int32)
                else:
                    values[name] = (0.02 * rng.standard_normal(shape)).astype(np.float32)
            median, best = time_step(step, values, args.runs)
            row[label + "_ms"] = median * 1e3
            row[label + "_min_ms"] = best * 1e3
        rows.append(row)
        print(f"capacity {capacity:6d} ({row['cache_mib']:6.1f} MiB): in place "
              f"{row['in_place_ms']:8.3f} ms, copying {row['copying_ms']:8.3f} ms",
              flush=True)
    lines = ["| cache capacity (tokens) | cache (MiB) | step, in place (ms) | "
             "step, copying (ms) |", "|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['capacity']} | {r['cache_mib']:.1f} | "
                     f"{r['in_place_ms']:.3f} | {r['copying_ms']:.3f} |")
    print("\n".join(lines))
    if args.out:
        meta = {"machine": platform.machine(), "position": args.position,
                "runs": args.runs, "rope_theta": args.rope_theta,
                "layer": "kv GQA-4 E1024 16x64 f32 batch 1"}
        with open(args.out + ".json", "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)
        with open(args.out + ".md", "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
