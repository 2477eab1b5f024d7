#!/usr/bin/env python3
"""AttnFuse device check, whole-model part: one example model end to end through its device
program, timed against the same model in eager PyTorch.

Run by `scripts/device-check.sh run DIR OUT` (DIR/whole/<model>/ holds what
`attnfuse-compile --target=sm_90a` wrote for it: cubins, manifest.json with the device
program of @model). The eager model is rebuilt from the manifest alone, kernel by kernel, with
the same weights: a projection GEMM is F.linear (+ bias, RoPE when the kernel rotates), a
flash attention kernel is torch.nn.functional.scaled_dot_product_attention (causal, GQA via
enable_gqa, K=V when the kernel reads one tensor for both), the element-wise kernel is `+`.
Programs with other kernels (the CCA prologue) are skipped with the reason.

* numerics: the program's output against the eager model in float32 with each kernel's
  result rounded to bf16, as the program stores it (bf16 weights and input);
* timing (CUDA only): CUDA events around one call, median of ITERS after WARMUP, the program
  (every launch on the current stream, its arena allocated once) against eager bf16 torch
  (SDPA picks cuDNN / flash), at batch x tokens of SHAPES;
* the launches per call, the arena bytes and the device allocations after the timed calls.

Writes OUT/whole-model-<date>-<gpu>.json and .md. Without a CUDA device in torch but with a
driver the runtime loads (the emulator: ATTNFUSE_CUDA_DRIVER=libattnfuse_cudasim.so), the
program runs on host arrays copied through device memory (attnfuse.runtime), one small
shape, numerics only.
"""
import argparse
import datetime
import importlib.util
import json
import math
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SHAPES = ((1, 2048), (8, 512), (1, 8192))
HOST_SHAPES = ((2, 8),)
WARMUP, ITERS = 3, 10


def load_runtime(lib):
    """attnfuse/runtime.py (pure Python, next to this script) over `lib`."""
    os.environ["ATTNFUSE_RUNTIME_LIB"] = lib
    spec = importlib.util.spec_from_file_location("attnfuse_runtime",
                                                  os.path.join(HERE, "runtime.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def to_bf16_bits(values):
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + ((bits >> 16) & 1) + 0x7FFF) >> 16).astype(np.uint16)


def from_bf16_bits(bits):
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


class EagerModel:
    """The program of a manifest replayed with torch ops (an independent implementation of
    what each kernel computes, from its manifest configuration)."""

    SUPPORTED = ("projection_gemm", "flash_attention", "elementwise")

    def __init__(self, manifest, function="model"):
        self.kernels = {k["name"]: k for k in manifest["kernels"]}
        self.program = next(p for p in manifest["programs"] if p["function"] == function)
        unsupported = sorted({self.kernels[s["kernel"]]["kind"] for s in self.program["steps"]
                              if s["op"] == "launch"} - set(self.SUPPORTED))
        self.unsupported = unsupported

    @staticmethod
    def _rope(torch, x, rotated, theta):
        # x [B, S, H, d]: rotate-half over the first `rotated` dims of each head.
        s = x.shape[1]
        i = torch.arange(rotated // 2, dtype=torch.float64, device=x.device)
        angle = torch.arange(s, dtype=torch.float64, device=x.device)[:, None] * \
            theta ** (-2.0 * i / rotated)[None, :]
        cos = torch.cos(angle).to(x.dtype)[None, :, None, :]
        sin = torch.sin(angle).to(x.dtype)[None, :, None, :]
        a, b = x[..., :rotated // 2], x[..., rotated // 2:rotated]
        return torch.cat([a * cos - b * sin, b * cos + a * sin, x[..., rotated:]], dim=-1)

    def __call__(self, torch, args):
        F = torch.nn.functional
        values = {i: a for i, a in enumerate(args)}
        for step in self.program["steps"]:
            if step["op"] == "view":
                src = values[step["source"]]
                shape = list(step["shape"])
                if "collapse" in step:
                    shape = [math.prod(src.shape[d] for d in g) for g in step["collapse"]]
                else:
                    for gi, group in enumerate(step["expand"]):
                        known = math.prod(shape[d] for d in group if shape[d] >= 0)
                        for d in group:
                            if shape[d] < 0:
                                shape[d] = src.shape[gi] // known
                values[step["result"]] = src.reshape(shape)
                continue
            kernel = self.kernels[step["kernel"]]
            config, kind, t = kernel["config"], kernel["kind"], step["tensors"]
            (result,) = step["results"]
            if kind == "projection_gemm":
                x, w = values[t["input"]], values[t["weight"]]
                y = F.linear(x, w, values[t["bias"]] if "bias" in t else None)
                if config.get("rope_dims"):
                    d = config["head_dim"]
                    theta = kernel["rope_tables"][0]["theta"]
                    y = self._rope(torch, y.unflatten(-1, (-1, d)), config["rope_dims"],
                                   theta).flatten(-2)
                out = y
            elif kind == "flash_attention":
                q = values[t["query"]]
                k = values[t["key"]]
                v = k if config["key_is_value"] else values[t["value"]]
                # [B, S, H, d] -> [B, H, S, d]
                o = F.scaled_dot_product_attention(
                    q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                    is_causal=config["causal"], scale=config["scale"],
                    enable_gqa=config["num_heads"] != config["num_kv_heads"])
                out = o.transpose(1, 2)
            else:  # elementwise add
                out = values[t["lhs"]] + values[t["rhs"]]
            # Every kernel stores its result in the model's type (bf16): so does the replay.
            out = out.to(torch.bfloat16).to(out.dtype)
            # The result type may view the kernel's tensor ([B, S, N] as [B, S, 1, N]): its
            # static sizes, its dynamic ones from the kernel's at the same index.
            values[result["value"]] = out.reshape(
                [s if s >= 0 else out.shape[i] for i, s in enumerate(result["shape"])])
        (output,) = self.program["outputs"]
        return values[output]


def output_projection_weights(program, kernels):
    """Inputs that are the weights of a GEMM whose result feeds a residual add."""
    producer = {}
    for step in program["steps"]:
        if step["op"] == "view":
            producer[step["result"]] = ("view", step["source"])
        else:
            for r in step["results"]:
                producer[r["value"]] = ("launch", step)
    weights = set()
    for step in program["steps"]:
        if step["op"] != "launch" or kernels[step["kernel"]]["kind"] != "elementwise":
            continue
        for value in step["tensors"].values():
            while producer.get(value, ("", None))[0] == "view":
                value = producer[value][1]
            kind, source = producer.get(value, ("", None))
            if kind == "launch" and kernels[source["kernel"]]["kind"] == "projection_gemm":
                weights.add(source["tensors"]["weight"])
    return weights


def random_arguments(program, kernels, batch, seq, seed=0):
    """Activations N(0, 1); weights N(0, 1/fan_in), the output projections 4x smaller and
    biases N(0, 0.02^2), so that the residual stream stays O(1) through the stack (as
    scripts/check_examples.py draws them)."""
    rng = np.random.default_rng(seed)
    output_weights = output_projection_weights(program, kernels)
    args = []
    for i, spec in enumerate(program["inputs"]):
        dims = [batch if d < 0 and j == 0 else (seq if d < 0 else d)
                for j, d in enumerate(spec["shape"])]
        if i == 0:
            scale = 1.0
        elif len(dims) == 1:
            scale = 0.02
        else:
            scale = (0.25 if i in output_weights else 1.0) / math.sqrt(dims[-1])
        args.append(to_bf16_bits(rng.standard_normal(dims).astype(np.float32) * scale))
    return args


def run_model(name, art_dir, runtime, torch, cuda, shapes, report):
    with open(os.path.join(art_dir, "manifest.json")) as f:
        manifest = json.load(f)
    eager = EagerModel(manifest)
    entry = {"model": name, "results": []}
    report["models"].append(entry)
    if eager.unsupported:
        entry["skipped"] = f"no eager replay of kernels {eager.unsupported}"
        print(f"{name}: skipped ({entry['skipped']})")
        return True
    artifacts = runtime.SM90aArtifacts(art_dir, sorted(os.listdir(art_dir)))
    program = artifacts.function("model")
    entry["launches_per_call"] = program.launches
    ok = True
    for batch, seq in shapes:
        args = random_arguments(eager.program, eager.kernels, batch, seq)
        row = {"batch": batch, "seq": seq}
        entry["results"].append(row)
        start = time.time()
        if cuda:
            dev = [torch.from_numpy(a.view(np.int16)).view(torch.bfloat16).cuda() for a in args]
            out = program(*dev)
            torch.cuda.synchronize()
            got = out.float().cpu().numpy()
            with torch.no_grad():
                ref = eager(torch, [a.float() for a in dev]).float().cpu().numpy()
        else:
            got = from_bf16_bits(program(*args))
            with torch.no_grad():
                ref = eager(torch, [torch.from_numpy(from_bf16_bits(a)) for a in args]).numpy()
        row["first_call_s"] = time.time() - start
        err = float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30))
        row["max_rel_err_vs_eager_f32"] = err
        row["pass"] = bool(np.all(np.isfinite(got)) and err <= 2.0 ** -5)
        ok = ok and row["pass"]
        if cuda:
            def timed(fn):
                for _ in range(WARMUP):
                    fn()
                times = []
                for _ in range(ITERS):
                    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    a.record()
                    fn()
                    b.record()
                    b.synchronize()
                    times.append(a.elapsed_time(b))
                return float(np.median(times))
            with torch.no_grad():
                row["program_ms"] = timed(lambda: program(*dev))
                row["eager_torch_bf16_ms"] = timed(lambda: eager(torch, dev))
            row["speedup_vs_eager"] = row["eager_torch_bf16_ms"] / row["program_ms"]
        row["stats"] = program.stats(0 if not cuda else torch.cuda.current_device())
        print(f"{name} B={batch} S={seq}: err {err:.2e} {'PASS' if row['pass'] else 'FAIL'}"
              + (f", program {row['program_ms']:.3f} ms, eager torch {row['eager_torch_bf16_ms']:.3f}"
                 f" ms ({row['speedup_vs_eager']:.2f}x)" if cuda else "")
              + f", stats {row['stats']}", flush=True)
    return ok


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dir", required=True, help="the prepared directory (DIR/whole/<model>)")
    p.add_argument("--lib", required=True, help="libattnfuse_runtime.so")
    p.add_argument("--out", required=True)
    p.add_argument("--models", default="", help="comma-separated subset of DIR/whole")
    p.add_argument("--require-pass", action="store_true")
    args = p.parse_args()
    import torch
    runtime = load_runtime(args.lib)
    cuda = torch.cuda.is_available()
    whole = os.path.join(args.dir, "whole")
    names = sorted(os.listdir(whole)) if os.path.isdir(whole) else []
    if args.models:
        names = [n for n in names if n in args.models.split(",")]
    gpu = torch.cuda.get_device_name() if cuda else "emulator"
    report = {"date": datetime.date.today().isoformat(), "device": gpu, "models": [],
              "command": " ".join(sys.argv)}
    ok = True
    for name in names:
        try:
            ok = run_model(name, os.path.join(whole, name), runtime, torch, cuda,
                           SHAPES if cuda else HOST_SHAPES, report) and ok
        except Exception as error:  # keep going: report what failed
            ok = False
            report["models"].append({"model": name, "error": f"{type(error).__name__}: {error}"})
            print(f"{name}: ERROR {type(error).__name__}: {error}", flush=True)
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, f"whole-model-{report['date']}-{gpu.replace(' ', '_')}")
    with open(stem + ".json", "w") as f:
        json.dump(report, f, indent=2)
    with open(stem + ".md", "w") as f:
        f.write(f"# Whole models through their device programs ({gpu}, {report['date']})\n\n")
        f.write(f"Command: `{report['command']}`\n\n| model | B x S | max rel err | program ms | "
                "eager torch ms | speedup | launches | arena bytes |\n|---|---|---|---|---|---|---|---|\n")
        for m in report["models"]:
            for r in m.get("results", []):
                if "max_rel_err_vs_eager_f32" not in r:
                    continue
                f.write(f"| {m['model']} | {r['batch']} x {r['seq']} | "
                        f"{r['max_rel_err_vs_eager_f32']:.2e} | {r.get('program_ms', '-')} | "
                        f"{r.get('eager_torch_bf16_ms', '-')} | {r.get('speedup_vs_eager', '-')} | "
                        f"{m.get('launches_per_call')} | {r['stats']['arena_bytes']} |\n")
    print(f"wrote {stem}.json/.md")
    if args.require_pass and (not ok or not names):
        sys.exit(1)


if __name__ == "__main__":
    main()
