#!/usr/bin/env python3
"""CPU benchmark of whole attention layers: fused kernels vs the reference
lowering, in one run on one machine.

For each layer and sequence length it compiles the layer with attnfuse-run
(-O3, no run-time size checks), times --benchmark calls on seeded random
f32 inputs, and reads the layer's FLOPs from attn-cost-report. It prints a
markdown table and writes JSON and markdown next to --out.

    python3 bench/cpu_layers.py --build build --out bench/results/cpu

The layers:
  * zaya1-ccgqa: ZAYA1-shaped CCGQA (E 2048, 8 query heads, 2 KV heads,
    head dim 128, conv kernels 2 and 2, QK-mean, value shift, clamped
    temperature, RoPE on half of each head), causal;
  * kv-gqa4: K=V with GQA-4 in the paper's 300M width (E 1024, 16 heads of
    64, 4 KV heads) with RoPE (rotated on load in the fused kernel), causal.
Timings are CPU figures of this machine; compare ratios within one run.
"""

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile


def tensor(*shape):
    return "tensor<" + "x".join(map(str, shape)) + "xf32>"


def layer_function(args, op):
    """`func.func @layer` over `args` ((name, type) pairs, the input first)
    computing `%y` with `op` (the op's text up to its type list)."""
    types = ", ".join(ty for _, ty in args)
    params = ", ".join(f"%{n}: {ty}" for n, ty in args)
    xt = args[0][1]
    return (f"func.func @layer({params}) -> {xt} {{\n"
            f"  %y = {op}\n"
            f"      : ({types}) -> {xt}\n"
            f"  return %y : {xt}\n}}\n")


def cca_layer(e=2048, hq=8, hk=2, d=128):
    lq, lk, c = hq * d, hk * d, (hq + hk) * d
    args = [("x", "tensor<?x?x%dxf32>" % e), ("wq", tensor(lq, e)),
            ("wk", tensor(lk, e)), ("wv", tensor(lk // 2, e)),
            ("wvp", tensor(lk // 2, e)), ("dw", tensor(c, 1, 2)),
            ("dwb", tensor(c)), ("gw", tensor(c, d, 2)), ("gwb", tensor(c)),
            ("temp", tensor(hk)), ("wo", tensor(e, lq))]
    return layer_function(args, (
        f"attn.cca %x wq(%wq) wk(%wk) wv(%wv) wv_prev(%wvp)\n"
        f"      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) wo(%wo)\n"
        f"      {{num_heads = {hq} : i64, num_kv_heads = {hk} : i64,\n"
        f"       head_dim = {d} : i64, conv_kernel_sizes = array<i64: 2, 2>,\n"
        f"       qk_mean, value_shift, temperature = #attn.temperature<clamped>,\n"
        f"       causal, rope = #attn.rope<theta = 10000.0, fraction = 0.5>}}"))


def kv_layer(e=1024, hq=16, hk=4, d=64):
    lq, lk = hq * d, hk * d
    args = [("x", "tensor<?x?x%dxf32>" % e), ("wq", tensor(lq, e)),
            ("wk", tensor(lk, e)), ("wo", tensor(e, lq))]
    return layer_function(args, (
        f"attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)\n"
        f"      {{num_heads = {hq} : i64, num_kv_heads = {hk} : i64,\n"
        f"       head_dim = {d} : i64, causal,\n"
        f"       rope = #attn.rope<theta = 10000.0>}}"))


LAYERS = {"zaya1-ccgqa": cca_layer, "kv-gqa4": kv_layer}


def layer_flops(opt, model, seq):
    out = subprocess.run(
        [opt, model, f"--attn-cost-report=format=json seq-len={seq} batch=1",
         "-o", os.devnull], check=True, capture_output=True, text=True).stdout
    total = json.loads(out)["total"]
    return total["attention_flops"] + total["projection_flops"] + total["other_flops"]


def run(runner, model, seq, reference, repeats, workdir):
    cmd = [runner, model, "--entry=layer", "--random-seed=0", "--batch=1",
           f"--seq={seq}", "-O3", "--runtime-checks=false",
           f"--benchmark={repeats}", f"--output-dir={workdir}"]
    if reference:
        cmd.append("--reference")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build", help="build directory")
    parser.add_argument("--out", default="bench/results/cpu",
                        help="output path prefix (.json and .md are added)")
    parser.add_argument("--layers", default=",".join(LAYERS))
    parser.add_argument("--seqs", default="512,2048",
                        help="sequence lengths run through both lowerings")
    parser.add_argument("--fused-only-seqs", default="8192",
                        help="sequence lengths run through the fused lowering only")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    runner = os.path.join(args.build, "bin", "attnfuse-run")
    opt = os.path.join(args.build, "bin", "attnfuse-opt")
    plan = []
    for seq in (int(s) for s in args.seqs.split(",") if s):
        plan += [(seq, "fused"), (seq, "reference")]
    plan += [(int(s), "fused") for s in args.fused_only_seqs.split(",") if s]

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.layers.split(","):
            model = os.path.join(tmp, f"{name}.mlir")
            with open(model, "w") as f:
                f.write(LAYERS[name]())
            for seq, lowering in plan:
                flops = layer_flops(opt, model, seq)
                timing = run(runner, model, seq, lowering == "reference",
                             args.repeats, os.path.join(tmp, "out"))
                row = {"layer": name, "seq": seq, "lowering": lowering,
                       "flops": flops, **timing,
                       "gflops": flops / timing["call_s_min"] / 1e9}
                rows.append(row)
                print(f"{name:12} seq {seq:5} {lowering:9} "
                      f"{timing['call_s_min']*1e3:10.1f} ms "
                      f"{row['gflops']:7.2f} GFLOP/s "
                      f"peak {timing['peak_rss_bytes']/2**20:8.0f} MiB",
                      file=sys.stderr, flush=True)

    speedups = {}
    for row in rows:
        if row["lowering"] == "reference":
            fused = next(r for r in rows if r["layer"] == row["layer"] and
                         r["seq"] == row["seq"] and r["lowering"] == "fused")
            speedups[(row["layer"], row["seq"])] = row["call_s_min"] / fused["call_s_min"]

    lines = [
        "| layer | seq | lowering | time (ms, min) | GFLOP/s | peak RSS (MiB) | fused speed-up |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        speedup = speedups.get((row["layer"], row["seq"]))
        lines.append(
            f"| {row['layer']} | {row['seq']} | {row['lowering']} | "
            f"{row['call_s_min']*1e3:.1f} | {row['gflops']:.2f} | "
            f"{row['peak_rss_bytes']/2**20:.0f} | "
            f"{f'{speedup:.1f}x' if speedup and row['lowering'] == 'fused' else ''} |")
    table = "\n".join(lines)
    command = " ".join([os.path.relpath(sys.argv[0])] + sys.argv[1:])
    header = (f"CPU layer benchmark, {datetime.date.today()}, "
              f"{platform.processor() or platform.machine()}, "
              f"{os.cpu_count()} cores, batch 1, f32, {args.repeats} timed calls "
              f"after a warm-up.\nCommand: `{command}`\n")
    print(header + "\n" + table)
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out + ".json", "w") as f:
        json.dump({"command": command, "rows": rows}, f, indent=1)
    with open(args.out + ".md", "w") as f:
        f.write(header + "\n" + table + "\n")


if __name__ == "__main__":
    main()
