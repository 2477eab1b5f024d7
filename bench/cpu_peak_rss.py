#!/usr/bin/env python3
"""Peak resident memory of one CPU layer call as the sequence grows.

For each --seq S, a fresh Python process compiles the layer (bench/
cpu_layers.py: kv-gqa4 or zaya1-ccgqa, f32, batch 1, runtime checks off),
draws its inputs, and calls it once; it reports its peak RSS
(getrusage ru_maxrss) after the inputs exist and after the call, so the
call's own growth (padded copies, per-thread tiles, the output) is the
difference. Memory linear in S shows as a growth per token that stays
flat as S grows; the S x T score matrix would add S^2 * heads * 4 bytes.
No torch is imported.

    PYTHONPATH=build/python_packages python3 bench/cpu_peak_rss.py \\
        --layer kv-gqa4 --seq 2048,8192 --threads 1
"""

import argparse
import json
import os
import subprocess
import sys

CHILD = r"""
import resource, sys, numpy as np
sys.path.insert(0, {bench!r})
import attnfuse, cpu_layers
layer, seq, threads = {layer!r}, {seq}, {threads}
text = cpu_layers.kv_layer() if layer == "kv-gqa4" else cpu_layers.cca_layer()
function = attnfuse.compile(attnfuse.parse(text), runtime_checks=False,
                            num_threads=threads)
rng = np.random.default_rng(0)
args = []
for _, shape in function.arguments:
    dims = [1 if d is None and i == 0 else seq if d is None else d
            for i, d in enumerate(shape)]
    args.append(rng.standard_normal(dims).astype(np.float32) * 0.02)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
out = function(*args)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(before, after, out.nbytes)
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layer", default="kv-gqa4",
                        choices=["kv-gqa4", "zaya1-ccgqa"])
    parser.add_argument("--seq", default="2048,8192")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default=None, help="JSON file for the rows")
    args = parser.parse_args()
    bench = os.path.dirname(os.path.abspath(__file__))
    rows = []
    for seq in [int(s) for s in args.seq.split(",") if s]:
        code = CHILD.format(bench=bench, layer=args.layer, seq=seq,
                            threads=args.threads)
        result = subprocess.run([sys.executable, "-c", code], check=True,
                                capture_output=True, text=True)
        before, after, output = (int(v) for v in result.stdout.split())
        row = {"layer": args.layer, "seq": seq, "threads": args.threads,
               "rss_inputs_mib": before / 1024, "rss_peak_mib": after / 1024,
               "call_growth_mib": (after - before) / 1024,
               "output_mib": output / 2**20,
               "growth_per_token_kib": (after - before) / seq}
        rows.append(row)
        print(f"{args.layer} S={seq:6d}: peak RSS {after / 1024:8.1f} MiB "
              f"(inputs and compiled code {before / 1024:8.1f} MiB, call "
              f"+{(after - before) / 1024:7.1f} MiB = "
              f"{(after - before) / seq:6.1f} KiB per token; output "
              f"{output / 2**20:6.1f} MiB)", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
