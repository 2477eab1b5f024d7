#!/usr/bin/env python3
"""CPU layers and a decode step: AttnFuse's JIT vs PyTorch eager, in one run.

  * kv-gqa4: K=V sharing, GQA-4 (E 1024, 16 query heads of 64, 4 KV heads),
    RoPE, causal, f32, batch 1; torch: F.scaled_dot_product_attention with
    enable_gqa=True;
  * zaya1-ccgqa: one layer of examples/zaya1_ccgqa.mlir's configuration
    (bench/cpu_layers.py's cca_layer); torch: a direct implementation of
    docs/semantics.md#attncca (projections, the two causal convolutions,
    QK-mean, L2 norm, clamped temperature, value shift, RoPE on half of each
    head, SDPA with GQA, up-projection);
  * decode: one kv-gqa4 step over a --decode-cache token cache (our caches
    updated in place; torch writes the new row with an in-place copy and
    rotates the cached keys on read, as attn.qkv_decode does).
Each layer runs in every element type of --dtype: f32, and bf16 (the type
checkpoints ship in: ours takes bf16 arguments and accumulates in f32;
torch runs the same code on bf16 tensors). For each thread count N of
--threads, ours is compiled with
attnfuse.compile(..., num_threads=N) (the OpenMP threads of the kernels'
parallel loops) and torch runs under torch.set_num_threads(N).
GFLOP/s use the FLOPs of attn-cost-report. Then the compile time
(attnfuse.compile, -O2 default) of each examples/*.mlir (--examples ''
skips it; --decode-cache 0 skips the decode step; --cases decode-step runs
the decode step alone).

    PYTHONPATH=build/python_packages python3 bench/cpu_vs_torch.py \\
        --seq 512,2048 --out bench/results/cpu-vs-torch
    # short calls (a prompt's prefill, a few tokens), both types:
    PYTHONPATH=build/python_packages python3 bench/cpu_vs_torch.py \\
        --seq 8,64,512 --dtype f32,bf16 --decode-cache 0 --examples ''
"""

import argparse
import glob
import json
import math
import os
import platform
import sys
import time

import numpy as np

import attnfuse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_layers  # noqa: E402


def timed(fn, runs):
    fn()
    seconds = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        seconds.append(time.perf_counter() - start)
    return float(np.median(seconds))


def flops_of(module, seq, function=None):
    total = attnfuse.cost(module, seq_len=seq, batch=1, function=function)["total"]
    return total["attention_flops"] + total["projection_flops"] + total["other_flops"]


def random_args(function, rng, seq):
    out = []
    for _, shape in function.arguments:
        shape = [1 if i == 0 and s is None else seq if s is None else s
                 for i, s in enumerate(shape)]
        fan = shape[-1] if len(shape) > 1 else 1
        out.append((rng.standard_normal(shape) / math.sqrt(fan)).astype(np.float32))
    return out


# --- torch implementations -------------------------------------------------

def torch_rope(t, positions, theta, fraction):
    import torch
    d = t.shape[-1]
    r = int(round(fraction * d))
    half = r // 2
    freq = theta ** (-2.0 * torch.arange(half, dtype=torch.float64) / r)
    angle = (positions.double()[:, None] * freq).float()  # [S, half]
    cos = angle.cos()[None, :, None].to(t.dtype)
    sin = angle.sin()[None, :, None].to(t.dtype)
    x1, x2 = t[..., :half], t[..., half:r]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin, t[..., r:]], -1)


def torch_kv_layer(x, wq, wk, wo, hq=16, hk=4, d=64, theta=1e4):
    import torch
    import torch.nn.functional as F
    b, s, _ = x.shape
    pos = torch.arange(s)
    q = torch_rope((x @ wq.T).view(b, s, hq, d), pos, theta, 1.0)
    kv = (x @ wk.T).view(b, s, hk, d)
    k = torch_rope(kv, pos, theta, 1.0)
    o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                       kv.transpose(1, 2), is_causal=True,
                                       enable_gqa=True)
    return o.transpose(1, 2).reshape(b, s, hq * d) @ wo.T


def torch_cca_layer(x, wq, wk, wv, wvp, dw, dwb, gw, gwb, temp, wo,
                    hq=8, hk=2, d=128, theta=1e4, fraction=0.5):
    import torch
    import torch.nn.functional as F
    b, s, e = x.shape
    lq, lk, g = hq * d, hk * d, hq // hk
    qr, kr = x @ wq.T, x @ wk.T
    u = torch.cat([qr, kr], -1).transpose(1, 2)  # [B, C, S]
    p = (dw.shape[2] - 1) + (gw.shape[2] - 1)
    m = F.conv1d(F.pad(u, (p, 0)), dw, dwb, groups=lq + lk)
    c = F.conv1d(m, gw, gwb, groups=hq + hk).transpose(1, 2)  # [B, S, C]
    cq, ck = c[..., :lq].view(b, s, hq, d), c[..., lq:].view(b, s, hk, d)
    qrh, krh = qr.view(b, s, hq, d), kr.view(b, s, hk, d)
    q = cq + 0.5 * qrh + 0.5 * krh.repeat_interleave(g, dim=2)
    k = ck + 0.5 * qrh.view(b, s, hk, g, d).mean(3) + 0.5 * krh
    q = math.sqrt(d) * q / torch.sqrt((q * q).sum(-1, keepdim=True) + 1e-12)
    k = math.sqrt(d) * k / torch.sqrt((k * k).sum(-1, keepdim=True) + 1e-12)
    k = k * torch.exp(temp.clamp(1e-7, 2.0))[None, None, :, None]
    xprev = torch.cat([torch.zeros_like(x[:, :1]), x[:, :-1]], 1)
    v = torch.cat([x @ wv.T, xprev @ wvp.T], -1).view(b, s, hk, d)
    pos = torch.arange(s)
    q, k = torch_rope(q, pos, theta, fraction), torch_rope(k, pos, theta, fraction)
    o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                       v.transpose(1, 2), is_causal=True,
                                       enable_gqa=True)
    return o.transpose(1, 2).reshape(b, s, lq) @ wo.T


def torch_kv_step(x, wq, wk, wo, cache, position, hq=16, hk=4, d=64, theta=1e4):
    import torch
    import torch.nn.functional as F
    p = int(position)
    cache[0, p] = (x[0, 0] @ wk.T).view(hk, d)  # in place
    kv = cache[:, : p + 1]
    pos = torch.arange(p + 1)
    k = torch_rope(kv, pos, theta, 1.0)
    q = torch_rope((x @ wq.T).view(1, 1, hq, d), pos[p:], theta, 1.0)
    o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                       kv.transpose(1, 2), enable_gqa=True)
    return o.transpose(1, 2).reshape(1, 1, hq * d) @ wo.T


# --- the runs ----------------------------------------------------------------

def in_dtype(module_text, dtype):
    """The f32 module text of bench/cpu_layers.py in `dtype`."""
    return module_text if dtype == "f32" else module_text.replace("xf32>", "xbf16>")


def compare(name, module, seq, torch_fn, args, threads, runs, rows, flops,
            function=None, entry=None, dtype="f32"):
    import torch
    targs = [torch.from_numpy(a) for a in args]
    if dtype == "bf16":
        # The same values in bf16 on both sides.
        targs = [t.to(torch.bfloat16) for t in targs]
        args = [attnfuse.to_bf16(a) for a in args]
    for t in threads:
        compile_start = time.perf_counter()
        ours = attnfuse.compile(module, entry=entry, runtime_checks=False,
                                opt_level=3, num_threads=t)
        compile_s = time.perf_counter() - compile_start
        ours_s = timed(lambda: ours(*args), runs)
        ours_out = ours(*args)
        ours_out = ours_out[0] if isinstance(ours_out, tuple) else ours_out
        if dtype == "bf16":
            ours_out = attnfuse.from_bf16(ours_out)
        torch.set_num_threads(t)
        with torch.no_grad():
            torch_s = timed(lambda: torch_fn(*targs), runs)
            want = torch_fn(*targs).float().numpy()
        err = float(np.max(np.abs(ours_out - want)) / max(np.max(np.abs(want)), 1e-30))
        row = {"case": name, "dtype": dtype, "seq": seq, "threads": t,
               "ours_s": ours_s, "torch_s": torch_s, "flops": flops,
               "ours_gflops": flops / ours_s / 1e9,
               "torch_gflops": flops / torch_s / 1e9,
               "ours_over_torch_time": ours_s / torch_s,
               "rel_err_vs_torch": err, "ours_compile_s": compile_s}
        rows.append(row)
        print(f"{name:12s} {dtype:4s} S={seq:5d} threads {t}: ours {ours_s*1e3:9.2f} ms "
              f"({row['ours_gflops']:6.2f} GFLOP/s), torch {torch_s*1e3:9.2f} ms "
              f"({row['torch_gflops']:6.2f} GFLOP/s), ours/torch time "
              f"{row['ours_over_torch_time']:6.2f}, rel err {err:.1e}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq", default="512", help="prefill lengths, e.g. 512,2048,8192")
    parser.add_argument("--cca-seq", default=None, help="CCA lengths (default: --seq)")
    parser.add_argument("--decode-cache", type=int, default=4096)
    parser.add_argument("--threads", "--torch-threads", dest="threads", default="1,2",
                        help="thread counts: ours num_threads=N, torch.set_num_threads(N)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dtype", default="f32",
                        help="element types of the layers: f32, bf16 or both "
                             "(the decode step is f32)")
    parser.add_argument("--examples", default="examples/*.mlir")
    parser.add_argument("--out", default=None)
    parser.add_argument("--cases", default="kv-gqa4,zaya1-ccgqa,decode-step",
                        help="which of kv-gqa4, zaya1-ccgqa, decode-step to run")
    args = parser.parse_args()
    cases = set(args.cases.split(","))
    unknown = cases - {"kv-gqa4", "zaya1-ccgqa", "decode-step"}
    if unknown:
        parser.error(f"unknown --cases {sorted(unknown)}")
    import torch
    threads = [int(t) for t in args.threads.split(",")]
    seqs = [int(s) for s in args.seq.split(",") if s]
    cca_seqs = [int(s) for s in (args.cca_seq or args.seq).split(",") if s]
    dtypes = args.dtype.split(",")
    if set(dtypes) - {"f32", "bf16"}:
        parser.error(f"unknown --dtype {args.dtype!r} (f32, bf16)")
    rng = np.random.default_rng(0)
    rows = []

    for dtype in dtypes:
        kv = attnfuse.parse(in_dtype(cpu_layers.kv_layer(), dtype))
        kv32 = attnfuse.parse(cpu_layers.kv_layer())
        for s in seqs if "kv-gqa4" in cases else []:
            compare("kv-gqa4", kv, s, torch_kv_layer, random_args(
                attnfuse.compile(kv32, runtime_checks=False, opt_level=0), rng, s),
                threads, args.runs, rows, flops_of(kv32, s), dtype=dtype)
        cca = attnfuse.parse(in_dtype(cpu_layers.cca_layer(), dtype))
        cca32 = attnfuse.parse(cpu_layers.cca_layer())
        for s in cca_seqs if "zaya1-ccgqa" in cases else []:
            fargs = random_args(attnfuse.compile(cca32, runtime_checks=False, opt_level=0), rng, s)
            fargs[9] = rng.uniform(0.2, 1.5, fargs[9].shape).astype(np.float32)  # temp
            compare("zaya1-ccgqa", cca, s, torch_cca_layer, fargs, threads,
                    args.runs, rows, flops_of(cca32, s), dtype=dtype)

    # Decode: one step at the last position of the cache.
    if args.decode_cache > 0 and "decode-step" in cases:
        decode_step(args, rng, threads, rows)
    compiles = compile_times(args.examples)
    report(args, rows, compiles, torch)


def decode_step(args, rng, threads, rows):
    cap = args.decode_cache
    dec = attnfuse.qkv_decode(sharing="kv", embed_dim=1024, num_heads=16,
                              num_kv_heads=4, head_dim=64, rope_theta=1e4,
                              capacity=cap)
    step = attnfuse.compile(dec, entry="step", runtime_checks=False, opt_level=0)
    dargs = random_args(step, rng, 1)
    names = step.argument_names
    dargs[names.index("positions")] = np.array([cap - 1], np.int32)
    cache = dargs[names.index("l0_kv_cache")]
    order = [names.index(n) for n in ("x", "l0_wq", "l0_wk", "l0_wo", "l0_kv_cache", "positions")]

    def torch_step(*a):
        return torch_kv_step(*[a[i] for i in order])
    compare("decode-step", dec, cap, torch_step, dargs, threads, args.runs * 5,
            rows, flops_of(dec, None, function="step"), entry="step")
    del cache


def compile_times(pattern):
    compiles = []
    for path in sorted(glob.glob(pattern)) if pattern else []:
        module = attnfuse.parse(open(path).read(), source_name=path)
        names = module.functions() if hasattr(module, "functions") else None
        entry = "step" if "decode" in os.path.basename(path) else None
        start = time.perf_counter()
        attnfuse.compile(module, entry=entry)
        seconds = time.perf_counter() - start
        compiles.append({"example": os.path.basename(path), "entry": entry or "default",
                         "compile_s": seconds})
        print(f"compile {os.path.basename(path):28s} {seconds:7.2f} s", flush=True)
    return compiles


def report(args, rows, compiles, torch):
    lines = ["| case | dtype | S / cache | threads (ours and torch) | ours (ms) | torch (ms) | "
             "ours GFLOP/s | torch GFLOP/s | ours/torch time | rel. diff |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['case']} | {r.get('dtype', 'f32')} | {r['seq']} | {r['threads']} | "
                     f"{r['ours_s']*1e3:.2f} | "
                     f"{r['torch_s']*1e3:.2f} | {r['ours_gflops']:.2f} | {r['torch_gflops']:.2f} | "
                     f"{r['ours_over_torch_time']:.2f} | {r['rel_err_vs_torch']:.1e} |")
    if compiles:
        lines += ["", "| example | entry | attnfuse.compile (s) |", "|---|---|---|"]
        lines += [f"| {c['example']} | {c['entry']} | {c['compile_s']:.2f} |"
                  for c in compiles]
    print("\n".join(lines))
    if args.out:
        meta = {"machine": platform.machine(), "python": platform.python_version(),
                "torch": torch.__version__, "cpus": os.cpu_count(),
                "argv": sys.argv[1:]}
        with open(args.out + ".json", "w") as f:
            json.dump({"meta": meta, "rows": rows, "compiles": compiles}, f, indent=1)
        with open(args.out + ".md", "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
