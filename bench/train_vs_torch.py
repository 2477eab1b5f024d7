#!/usr/bin/env python3
"""CPU training step of one attention layer: attnfuse.torch vs PyTorch eager.

One step is the forward and the backward of one layer (f32, batch 1,
causal, gradients of the input and of every parameter, a fixed random
cotangent) through torch autograd:

  * kv-gqa4: attnfuse.torch.QKVAttention, K=V sharing, GQA-4 (E 1024, 16
    query heads of 64, 4 KV heads), RoPE theta 1e4; torch: a plain module
    with the same projections (nn.Linear, the same weights), RoPE and
    F.scaled_dot_product_attention(is_causal=True, enable_gqa=True);
  * zaya-ccgqa: attnfuse.torch.CCAAttention.from_hf_config of a ZAYA1-shaped
    CCGQA layer scaled to E 1024 (8 query heads, 2 KV heads, head dim 128,
    conv kernels 2 and 2, QK-mean, value shift, raw key temperature,
    ZAYA's clamp-eps norm, RoPE theta 5e6 on half of each head); torch:
    transformers' ZayaAttention (sdpa) of the same config and weights;
  * mha: an MHA layer of the CCA layer's width (E 1024, 8 heads of 128,
    separate q/k/v), for the CCA-vs-MHA training-time ratio; torch as
    kv-gqa4, without GQA.
Each (layer, S, thread count N) runs in its own process with
OMP_NUM_THREADS=N (attnfuse's kernels use the OpenMP runtime's default)
and torch.set_num_threads(N); that process times ours and torch on the same
inputs and weights, so every ratio comes from one run, and reports their
output and gradient difference. Warm-up: one step at S 16 each (ours: the
JIT compilation of the layer's training forward and backward, which the
modules call when autograd records) and one forward at S 16 without
autograd (ours: the layer's own op), and one step at S each; then --runs
rounds of one step of ours and one of torch, interleaved so that the
machine's drift falls on both, and the median of each, or a single round
where one takes more than --long-step-s. Ours is not run where its step is
predicted to take more than --max-step-s (from the largest measured S
below, growing as S^p: p from the two largest measured S, at least 1, else
1); torch is then timed alone up to --torch-only-seq. A step that takes
longer is killed (a watchdog in this process), and torch is timed alone.

Then the peak resident memory of one step (getrusage ru_maxrss), each
(layer, ours or torch, S in --mem-seq) in a fresh process with one thread:
the layer is built and run once at S 16 (JIT compilation included), the
inputs drawn, then one step; `step growth` is the step's own increase of the
peak. Ours is skipped where its step is predicted over --max-step-s (or
was not timed at that S or below).

    PYTHONPATH=build/python_packages python3 bench/train_vs_torch.py \\
        --seq 512,2048,8192 --out bench/results/train-vs-torch-2026-12-02
"""

import argparse
import json
import math
import os
import platform
import resource
import shlex
import subprocess
import sys
import tempfile
import time

LAYERS = {
    "kv-gqa4": dict(kind="qkv", embed=1024, heads=16, kv_heads=4,
                    head_dim=64, sharing="kv"),
    "zaya-ccgqa": dict(kind="cca", embed=1024, heads=8, kv_heads=2,
                       head_dim=128),
    "mha": dict(kind="qkv", embed=1024, heads=8, kv_heads=8, head_dim=128,
                sharing="none"),
}


# --- the layers ----------------------------------------------------------------

def torch_rope(t, theta):
    """NeoX RoPE on every dim of each head of t [B, S, H, d], positions
    0..S-1 (attnfuse's rope<theta>, fraction 1)."""
    import torch
    d = t.shape[-1]
    half = d // 2
    freq = theta ** (-2.0 * torch.arange(half, dtype=torch.float64) / d)
    angle = (torch.arange(t.shape[1], dtype=torch.float64)[:, None]
             * freq).float()
    cos, sin = angle.cos()[None, :, None], angle.sin()[None, :, None]
    x1, x2 = t[..., :half], t[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)


def torch_qkv_module(e, hq, hk, d, sharing, theta):
    import torch.nn.functional as F
    from torch import nn

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.q_proj = nn.Linear(e, hq * d, bias=False)
            self.k_proj = nn.Linear(e, hk * d, bias=False)
            if sharing == "none":
                self.v_proj = nn.Linear(e, hk * d, bias=False)
            self.o_proj = nn.Linear(hq * d, e, bias=False)

        def forward(self, x):
            b, s, _ = x.shape
            q = torch_rope(self.q_proj(x).view(b, s, hq, d), theta)
            kv = self.k_proj(x).view(b, s, hk, d)
            k = torch_rope(kv, theta)
            v = kv if sharing == "kv" else self.v_proj(x).view(b, s, hk, d)
            o = F.scaled_dot_product_attention(
                q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                is_causal=True, enable_gqa=hq != hk)
            return self.o_proj(o.transpose(1, 2).reshape(b, s, hq * d))

    return Attention()


def make_layers(name):
    """(ours, theirs): callables x -> y over modules with the same
    weights, and the modules."""
    import torch
    import attnfuse.torch as at
    c = LAYERS[name]
    torch.manual_seed(0)
    if c["kind"] == "qkv":
        ours = at.QKVAttention(c["embed"], c["heads"],
                               num_kv_heads=c["kv_heads"],
                               head_dim=c["head_dim"], sharing=c["sharing"],
                               rope_theta=1e4)
        theirs = torch_qkv_module(c["embed"], c["heads"], c["kv_heads"],
                                  c["head_dim"], c["sharing"], 1e4)
        theirs.load_state_dict(ours.state_dict())  # strict: same names
        return ours, ours, theirs, theirs
    import transformers
    from transformers.models.zaya import modeling_zaya
    config = transformers.ZayaConfig(
        hidden_size=c["embed"], num_attention_heads=c["heads"],
        num_key_value_heads=c["kv_heads"], head_dim=c["head_dim"],
        num_hidden_layers=1, layer_types=["hybrid"], num_experts=2,
        moe_intermediate_size=16, router_hidden_size=8, vocab_size=256,
        use_cache=False, attn_implementation="sdpa")
    zaya = modeling_zaya.ZayaAttention(config, 0)
    with torch.no_grad():  # a nonzero key temperature (its init is zero)
        zaya.qk_norm.temp.uniform_(0.5, 1.5)
    rotary = modeling_zaya.ZayaRotaryEmbedding(config)
    ours = at.CCAAttention.from_hf_config(config, 0)
    ours.load_state_dict(zaya.state_dict())  # strict
    embeddings = {}

    def zaya_call(x):
        seq = x.shape[1]
        if seq not in embeddings:
            embeddings[seq] = rotary(x, torch.arange(seq)[None], "hybrid")
        return zaya(x, attention_mask=None,
                    position_embeddings=embeddings[seq])[0]

    return (lambda x: ours(x)[0]), ours, zaya_call, zaya


def step(call, module, x0, cotangent):
    """One training step's forward and backward; -> (y, gradients)."""
    print("# step", file=sys.stderr, flush=True)  # the parent's watchdog
    module.zero_grad(set_to_none=True)
    x = x0.clone().requires_grad_()
    y = call(x)
    y.backward(cotangent)
    return y.detach(), dict({n: p.grad for n, p in module.named_parameters()},
                            input=x.grad)


def median(values):
    values = sorted(values)
    n = len(values)
    return values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2


def median_time(fn, runs):
    seconds = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        seconds.append(time.perf_counter() - start)
    return median(seconds)


def relative(a, b):
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-30)).item()


def child_time(args):
    import torch
    torch.set_num_threads(args.threads)
    ours_call, ours, torch_call, theirs = make_layers(args.layer)
    e = LAYERS[args.layer]["embed"]
    generator = torch.Generator().manual_seed(1)
    x0 = torch.randn(1, args.seq, e, generator=generator)
    cotangent = torch.randn(x0.shape, generator=generator)
    small = torch.randn(1, 16, e), torch.randn(1, 16, e)
    row = {"case": args.layer, "seq": args.seq, "threads": args.threads}
    runs = {}
    if not args.torch_only:
        runs["ours"] = (ours_call, ours)
    runs["torch"] = (torch_call, theirs)
    results = {}
    for who, (call, module) in runs.items():
        # Warm-up: a step at S 16 (ours: the JIT compilation of the
        # layer's training forward and backward) and a forward at S 16
        # without autograd (ours: the layer's own op, which inference
        # calls); then, for both, one step at S: the first step at a new
        # length pays the first touch of its buffers' pages (measured
        # 0.25 s of ours' 0.9 s at S 2048), which a training loop pays once.
        start = time.perf_counter()
        step(call, module, *small)
        with torch.no_grad():
            call(small[0])
        row[f"{who}_warmup_s"] = time.perf_counter() - start
        step(call, module, x0, cotangent)
    # Rounds of one step each, ours then torch: on a shared 2-core machine
    # torch's own step time drifts by up to 2x within a minute, so timing
    # all of one and then all of the other measures the drift as well.
    seconds = {who: [] for who in runs}
    for _ in range(args.runs):
        for who, (call, module) in runs.items():
            start = time.perf_counter()
            results[who] = step(call, module, x0, cotangent)
            seconds[who].append(time.perf_counter() - start)
        if max(v[-1] for v in seconds.values()) > args.long_step_s:
            break
    for who, (call, module) in runs.items():
        row[f"{who}_step_s"] = median(seconds[who])
        row[f"{who}_steps_timed"] = len(seconds[who])
        with torch.no_grad():
            row[f"{who}_forward_s"] = median_time(lambda: call(x0), args.runs)
        print(f"# {who} done", file=sys.stderr, flush=True)
    if "ours" in results:
        (y, grads), (ty, tgrads) = results["ours"], results["torch"]
        row["rel_diff_out"] = relative(y, ty)
        row["rel_diff_grad"] = max(relative(grads[n], tgrads[n])
                                   for n in tgrads)
        row["ours_over_torch_step"] = row["ours_step_s"] / row["torch_step_s"]
    print(json.dumps(row), flush=True)


def child_memory(args):
    import torch
    torch.set_num_threads(args.threads)
    ours_call, ours, torch_call, theirs = make_layers(args.layer)
    call, module = ((ours_call, ours) if args.impl == "ours"
                    else (torch_call, theirs))
    e = LAYERS[args.layer]["embed"]
    step(call, module, torch.randn(1, 16, e), torch.randn(1, 16, e))
    module.zero_grad(set_to_none=True)
    generator = torch.Generator().manual_seed(1)
    x0 = torch.randn(1, args.seq, e, generator=generator)
    cotangent = torch.randn(x0.shape, generator=generator)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    step(call, module, x0, cotangent)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"case": args.layer, "impl": args.impl, "seq": args.seq,
                      "threads": args.threads, "rss_before_mib": before / 1024,
                      "rss_peak_mib": after / 1024,
                      "step_growth_mib": (after - before) / 1024,
                      "step_s": seconds}), flush=True)


# --- the parent ------------------------------------------------------------------

def run_child(argv, threads, step_limit):
    """-> (the child's JSON row, None) or (None, why there is none). The
    child prints a line to stderr before each step: it is killed when none
    comes for step_limit seconds (60 more for the imports and the first
    step's JIT compilation)."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    with tempfile.TemporaryFile("w+") as out, \
            tempfile.NamedTemporaryFile("w+") as err:
        child = subprocess.Popen([sys.executable, os.path.abspath(__file__)]
                                 + argv, env=env, stdout=out, stderr=err,
                                 text=True)
        started, lines = time.monotonic(), 0
        while child.poll() is None:
            time.sleep(0.2)
            err.seek(0)
            count = err.read().count("# step")
            if count != lines:
                started, lines = time.monotonic(), count
            limit = step_limit + (60 if lines <= 1 else 0)
            if time.monotonic() - started > limit:
                child.kill()
                child.wait()
                return None, (f"a step did not finish within {limit:.0f} s "
                              f"(killed)")
        out.seek(0)
        err.seek(0)
        if child.returncode != 0:
            tail = (err.read().strip().splitlines() or ["?"])[-1]
            return None, f"failed (exit {child.returncode}): {tail}"
        return json.loads(out.read().strip().splitlines()[-1]), None


def by_config(rows, case, threads, seq):
    return [r for r in rows if (r["case"], r["threads"], r["seq"])
            == (case, threads, seq) and "ours_step_s" in r]


def predicted_step(rows, case, threads, seq):
    """(ours' step time at `seq`, how it was predicted) from the largest
    measured S below it, growing as S^p: p from the two largest measured S
    (at least 1), or 1 (the projections' linear growth, the least a step
    can grow) when only one is measured; None when none is."""
    known = sorted((r for r in rows if r["case"] == case
                    and r["threads"] == threads and r["seq"] < seq
                    and "ours_step_s" in r), key=lambda r: r["seq"])
    if not known:
        return None
    last = known[-1]
    exponent, how = 1.0, "linear"
    if len(known) > 1:
        before = known[-2]
        exponent = max(1.0, math.log(last["ours_step_s"] / before["ours_step_s"])
                       / math.log(last["seq"] / before["seq"]))
        how = f"S^{exponent:.2f} as from S {before['seq']}"
    seconds = last["ours_step_s"] * (seq / last["seq"]) ** exponent
    return seconds, (f"{last['ours_step_s']:.1f} s at S {last['seq']}, "
                     f"{how}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq", default="512,2048,8192")
    parser.add_argument("--layers", default=",".join(LAYERS))
    parser.add_argument("--threads", default="1,2",
                        help="thread counts: OMP_NUM_THREADS=N for ours, "
                             "torch.set_num_threads(N)")
    parser.add_argument("--runs", type=int, default=3,
                        help="timed rounds of steps (and forwards); their "
                             "median counts")
    parser.add_argument("--long-step-s", type=float, default=30.0,
                        help="time one step only where it takes longer")
    parser.add_argument("--max-step-s", type=float, default=120.0,
                        help="skip ours where one step is predicted slower")
    parser.add_argument("--torch-only-seq", type=int, default=2048,
                        help="time torch alone up to this S where ours is "
                             "skipped")
    parser.add_argument("--mem-seq", default="512,8192",
                        help="peak RSS of one step at these S ('' skips)")
    parser.add_argument("--out", default=None,
                        help="writes OUT.json and OUT.md")
    # One configuration in a child process.
    parser.add_argument("--child", choices=["time", "memory"], help=argparse.SUPPRESS)
    parser.add_argument("--layer", help=argparse.SUPPRESS)
    parser.add_argument("--impl", help=argparse.SUPPRESS)
    parser.add_argument("--torch-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.seq, args.threads = int(args.seq), int(args.threads)
        return (child_time if args.child == "time" else child_memory)(args)

    layers = [name for name in args.layers.split(",") if name]
    unknown = set(layers) - set(LAYERS)
    if unknown:
        parser.error(f"unknown --layers {sorted(unknown)}")
    seqs = sorted(int(s) for s in args.seq.split(",") if s)
    threads = [int(t) for t in args.threads.split(",")]
    started = time.perf_counter()
    load_before, commit_before = os.getloadavg(), commit()
    rows, skipped = [], []
    for name in layers:
        for t in threads:
            for seq in seqs:
                prediction = predicted_step(rows, name, t, seq)
                torch_only = False
                failed = [why for c, q, th, why in skipped
                          if (c, th) == (name, t) and q < seq
                          and why.startswith("ours: a step")]
                if failed:
                    prediction = (math.inf, "a step at a smaller S passed the limit")
                if prediction and prediction[0] > args.max_step_s:
                    reason = (f"ours: one step predicted {prediction[0]:.0f} s "
                              f"> {args.max_step_s:.0f} s ({prediction[1]})")
                    if seq > args.torch_only_seq:
                        skipped.append((name, seq, t, reason + "; torch not "
                                        "timed either (no ratio)"))
                        continue
                    skipped.append((name, seq, t, reason + "; torch timed alone"))
                    torch_only = True
                argv = ["--child", "time", "--layer", name, "--seq", str(seq),
                        "--threads", str(t), "--runs", str(args.runs)]
                row, why = run_child(argv + (["--torch-only"] if torch_only else []),
                                     t, args.max_step_s)
                if row is None and not torch_only and "did not finish" in why:
                    skipped.append((name, seq, t, f"ours: {why}; torch timed alone"))
                    print(f"{name:10s} S={seq:5d} threads {t}: ours {why}", flush=True)
                    row, why = run_child(argv + ["--torch-only"], t, args.max_step_s)
                if row is None:
                    skipped.append((name, seq, t, why))
                    print(f"{name:10s} S={seq:5d} threads {t}: skipped: {why}",
                          flush=True)
                    continue
                rows.append(row)
                print_row(row)
    mem_rows = []
    for seq in sorted(int(s) for s in args.mem_seq.split(",") if s):
        for name in layers:
            for impl in ("ours", "torch"):
                measured = by_config(rows, name, 1, seq)
                prediction = predicted_step(rows, name, 1, seq)
                if impl == "ours" and not measured and (
                        prediction is None or prediction[0] > args.max_step_s):
                    why = ("not timed" if prediction is None else
                           f"one step predicted {prediction[0]:.0f} s "
                           f"({prediction[1]})")
                    skipped.append((name, seq, "mem", f"ours' peak RSS: {why}"))
                    continue
                argv = ["--child", "memory", "--layer", name, "--impl", impl,
                        "--seq", str(seq), "--threads", "1"]
                row, why = run_child(argv, 1, args.max_step_s)
                if row is None:
                    skipped.append((name, seq, "mem", f"{impl}' peak RSS: {why}"))
                    continue
                mem_rows.append(row)
                print(f"{name:10s} {impl:5s} S={seq:5d}: peak RSS "
                      f"{row['rss_peak_mib']:8.1f} MiB (step +"
                      f"{row['step_growth_mib']:7.1f} MiB, {row['step_s']:.1f} s)",
                      flush=True)
    report(args, rows, mem_rows, skipped, time.perf_counter() - started,
           (load_before, os.getloadavg()), (commit_before, commit()))


def print_row(r):
    ours = (f"ours {r['ours_step_s']*1e3:9.1f} ms (fwd {r['ours_forward_s']*1e3:7.1f})"
            if "ours_step_s" in r else "ours skipped")
    ratio = (f", ours/torch {r['ours_over_torch_step']:6.2f}, rel diff out "
             f"{r['rel_diff_out']:.1e} grads {r['rel_diff_grad']:.1e}"
             if "ours_step_s" in r else "")
    print(f"{r['case']:10s} S={r['seq']:5d} threads {r['threads']}: {ours}, "
          f"torch {r['torch_step_s']*1e3:9.1f} ms (fwd "
          f"{r['torch_forward_s']*1e3:7.1f}){ratio}", flush=True)


def commit():
    """The source tree's git commit (None outside a checkout)."""
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True,
                              cwd=os.path.dirname(os.path.abspath(__file__))
                              ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def fmt(value, scale=1e3, digits=1):
    return "-" if value is None else f"{value * scale:.{digits}f}"


def report(args, rows, mem_rows, skipped, seconds, load, commits):
    import torch
    lines = ["| case | S | threads (ours and torch) | ours step (ms) | torch step (ms) | "
             "ours/torch step | ours fwd (ms) | torch fwd (ms) | rel. diff out | "
             "rel. diff grads |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['case']} | {r['seq']} | {r['threads']} | {fmt(r.get('ours_step_s'))} | "
            f"{fmt(r['torch_step_s'])} | {fmt(r.get('ours_over_torch_step'), 1, 2)} | "
            f"{fmt(r.get('ours_forward_s'))} | {fmt(r['torch_forward_s'])} | "
            + (f"{r['rel_diff_out']:.1e} | {r['rel_diff_grad']:.1e} |"
               if "rel_diff_out" in r else "- | - |"))
    by = {(r["case"], r["seq"], r["threads"]): r for r in rows}
    ratios = []
    for (case, seq, t), r in sorted(by.items()):
        mha = by.get(("mha", seq, t))
        if case != "zaya-ccgqa" or mha is None:
            continue
        ours = (r["ours_step_s"] / mha["ours_step_s"]
                if "ours_step_s" in r and "ours_step_s" in mha else None)
        ratios.append(f"| {seq} | {t} | {fmt(ours, 1, 2)} | "
                      f"{r['torch_step_s'] / mha['torch_step_s']:.2f} |")
    if ratios:
        lines += ["", "CCA vs MHA at equal width (zaya-ccgqa step time / mha step "
                  "time; below 1: CCA trains faster):", "",
                  "| S | threads | ours | torch (ZayaAttention / SDPA MHA) |",
                  "|---|---|---|---|"] + ratios
    if mem_rows:
        lines += ["", "Peak RSS of one training step (1 thread, fresh process each):",
                  "", "| case | S | impl | peak RSS (MiB) | before the step (MiB) | "
                  "step growth (MiB) | step (s) |", "|---|---|---|---|---|---|---|"]
        lines += [f"| {r['case']} | {r['seq']} | {r['impl']} | {r['rss_peak_mib']:.0f} | "
                  f"{r['rss_before_mib']:.0f} | {r['step_growth_mib']:.0f} | "
                  f"{r['step_s']:.1f} |" for r in mem_rows]
    if skipped:
        lines += ["", "Skipped:", ""]
        lines += [f"* {case} S {seq} threads {t}: {why}" if t != "mem" else
                  f"* {case} S {seq}: {why}" for case, seq, t, why in skipped]
    changed = (f" ({commits[1]} at the end)" if commits[1] != commits[0]
               else "")
    lines += ["", f"Commit {commits[0]}{changed}. Total time of the run: {seconds:.0f} s; load average (1, 5, "
              f"15 min) {', '.join(f'{v:.1f}' for v in load[0])} at the start, "
              f"{', '.join(f'{v:.1f}' for v in load[1])} at the end "
              f"({os.cpu_count()} CPUs)."]
    print("\n".join(lines))
    if args.out:
        meta = {"machine": platform.machine(), "python": platform.python_version(),
                "torch": torch.__version__, "cpus": os.cpu_count(),
                "argv": sys.argv[1:], "seconds": seconds, "commits_start_end": commits,
                "loadavg_start_end": load}
        with open(args.out + ".json", "w") as f:
            json.dump({"meta": meta, "rows": rows, "memory": mem_rows,
                       "skipped": [list(s) for s in skipped]}, f, indent=1)
        python = os.path.relpath(sys.executable)
        if python.startswith(".."):
            python = sys.executable
        command = shlex.join(
            [python, os.path.relpath(os.path.abspath(__file__))]
            + sys.argv[1:])
        if os.environ.get("PYTHONPATH"):
            command = f"PYTHONPATH={os.environ['PYTHONPATH']} {command}"
        with open(args.out + ".md", "w") as f:
            f.write(f"`{command}`\n\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
