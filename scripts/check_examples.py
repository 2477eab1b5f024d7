#!/usr/bin/env python3
"""Runs the shipped example models on the CPU and checks them against the
independent numpy reference (integration_test/reference.py).

For each examples/*.mlir it draws weights scaled by 1/sqrt(fan_in) (so that
activations stay O(1) through the residual stack), rounds them to the
model's bf16, runs `@model` with attnfuse-run (the fused CPU lowering) and
compares with a float64 evaluation of the same layers. The layer
configurations are read from the model's own IR.

    python3 scripts/check_examples.py --build build [--batch 1 --seq 8]

Error norm: max |y - ref| / max |ref| over the output. Tolerance 3e-2: the
model stores bf16 between layers, so every layer output and every residual
sum is rounded (unit roundoff 2^-9 = 2e-3); over L = 20 to 40 layers these
roundings add up with random signs to about sqrt(2L) * 2^-9 = 1.3e-2 to
1.8e-2 (measured: about 1.1e-2 on the 300M models). A wrong mask, head
mapping or rotation gives errors of order 1. The output projections are
drawn 4x smaller than 1/sqrt(fan_in) so that the residual stream, and with
it the logits and their bf16 sensitivity, stays O(1) through the stack.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "integration_test"))
import reference as R  # noqa: E402

TOLERANCE = 3e-2

# The JIT compiles each distinct layer once (attn-outline-layers), so -O2
# costs little compile time and makes the runs several times faster
# (gpt300m_kv, S 8: 12.7 s of CPU at -O2 against 22.0 s at -O0).
OPT_LEVEL = "-O2"

ARG_RE = re.compile(r"(%[\w]+): tensor<([0-9x?]+)x(bf16|f16|f32)>")
LAYER_RE = re.compile(
    r"%y(\d+) = attn\.(qkv_attention <(\w+)>|cca) (%\w+)(.*?)\{(.*?)\}\s*:",
    re.S)


def parse_layers(text):
    """-> list of dicts: the op kind, its operands by keyword and attrs."""
    layers = []
    for match in LAYER_RE.finditer(text):
        index, op, mode, _, operands, attrs = match.groups()
        keywords = dict(re.findall(r"(\w+)\((%\w+)(?:, %\w+)?\)", operands))
        pairs = dict(re.findall(r"(\w+)\((%\w+, %\w+)\)", operands))
        layer = {
            "kind": "cca" if op == "cca" else "qkv", "mode": mode,
            "operands": keywords, "pairs": {k: v.split(", ") for k, v in pairs.items()},
            "heads": int(re.search(r"num_heads = (\d+)", attrs).group(1)),
            "kv_heads": int(re.search(r"num_kv_heads = (\d+)", attrs).group(1)),
            "head_dim": int(re.search(r"head_dim = (\d+)", attrs).group(1)),
            "causal": re.search(r"\bcausal\b", attrs) is not None,
            "window": None, "rope": None,
        }
        if m := re.search(r"window = (\d+)", attrs):
            layer["window"] = int(m.group(1))
        if m := re.search(r"rope<theta = ([0-9.e+]+)(?:, fraction = ([0-9.]+))?>", attrs):
            layer["rope"] = (float(m.group(1)), float(m.group(2) or 1.0))
        if layer["kind"] == "cca":
            k = re.search(r"conv_kernel_sizes = array<i64: (\d+), (\d+)>", attrs)
            layer["kernels"] = (int(k.group(1)), int(k.group(2)))
            layer["qk_mean"] = "qk_mean" in attrs
            layer["value_shift"] = "value_shift" in attrs
            layer["temperature"] = re.search(r"temperature<(\w+)>", attrs).group(1)
        layers.append(layer)
    return layers


def make_argument(name, shape, rng, batch, seq):
    dims = [batch if i == 0 and d == "?" else seq if d == "?" else int(d)
            for i, d in enumerate(shape.split("x"))]
    short = name.split("_", 1)[-1] if name.startswith("%l") else name
    if name == "%x":
        return rng.standard_normal(dims)
    if short.startswith("b") or short.endswith("_b"):  # biases
        return rng.standard_normal(dims) * 0.02
    if short == "temp":
        return rng.uniform(0.0, 1.0, dims)
    if short == "conv_dw_w":
        return rng.standard_normal(dims) / np.sqrt(dims[2])
    if short == "conv_g_w":
        return rng.standard_normal(dims) / np.sqrt(dims[1] * dims[2])
    # Linear weights [out, in]; the output projection of a residual stack is
    # scaled down a little more so that the stack stays O(1).
    scale = 0.25 if short == "wo" else 1.0
    return rng.standard_normal(dims) * scale / np.sqrt(dims[-1])


def reference_model(layers, values):
    h = values["%x"]
    for layer in layers:
        ops = {k: values[v] for k, v in layer["operands"].items()}
        rope = layer["rope"]
        if layer["kind"] == "qkv":
            y = R.qkv_attention(
                h, layer["mode"], ops["wk"], ops["wo"], wq=ops.get("wq"),
                wv=ops.get("wv"), bq=ops.get("bq"), bk=ops.get("bk"),
                bv=ops.get("bv"), bo=ops.get("bo"), logit_bias=None,
                num_heads=layer["heads"], num_kv_heads=layer["kv_heads"],
                head_dim=layer["head_dim"], causal=layer["causal"],
                window=layer["window"], rope_theta=rope[0] if rope else None,
                rope_fraction=rope[1] if rope else 1.0, scale=None)
        else:
            dw, dwb = (values[n] for n in layer["pairs"]["conv_dw"])
            gw, gwb = (values[n] for n in layer["pairs"]["conv_g"])
            y = R.cca(h, ops["wq"], ops["wk"], ops["wv"], dw, dwb, gw, gwb,
                      ops["temp"], ops["wo"], layer["heads"], layer["kv_heads"],
                      layer["head_dim"], layer["kernels"],
                      wv_prev=ops.get("wv_prev"), qk_mean=layer["qk_mean"],
                      value_shift=layer["value_shift"],
                      temperature=layer["temperature"], causal=layer["causal"],
                      window=layer["window"],
                      rope_theta=rope[0] if rope else None,
                      rope_fraction=rope[1] if rope else 1.0)
        h = h + y
    return h


def check(model, runner, batch, seq, workdir):
    text = open(model, encoding="utf-8").read()
    signature = text[text.index("func.func @model("):text.index("{", text.index("func.func @model("))]
    args = ARG_RE.findall(signature)
    dtype = args[0][2]
    rng = np.random.default_rng(0)
    values, paths = {}, []
    for index, (name, shape, _) in enumerate(args):
        array = make_argument(name, shape, rng, batch, seq)
        if dtype == "bf16":
            bits = R.to_bf16_bits(array)
            values[name] = R.from_bf16_bits(bits).astype(np.float64)
        else:
            bits = array.astype({"f32": np.float32, "f16": np.float16}[dtype])
            values[name] = bits.astype(np.float64)
        path = os.path.join(workdir, f"arg{index}.npy")
        np.save(path, bits)
        paths.append(path)
    start = time.time()
    proc = subprocess.run(
        [runner, model, "--entry=model", f"--output-dir={workdir}", OPT_LEVEL,
         *[f"--input={p}" for p in paths]], capture_output=True, text=True)
    seconds = time.time() - start
    if proc.returncode != 0:
        return None, seconds, proc.stderr.strip()
    out = np.load(os.path.join(workdir, "out0.npy"))
    y = R.from_bf16_bits(out).astype(np.float64) if dtype == "bf16" else out.astype(np.float64)
    ref = reference_model(parse_layers(text), values)
    return float(np.max(np.abs(y - ref)) / np.max(np.abs(ref))), seconds, ""


DECODE_LAYER_RE = re.compile(
    r"%y(\d+), [^=]+= attn\.qkv_decode <(\w+)> (%\w+)(.*?)\{(.*?)\}\s*:", re.S)
DECODE_PROMPTS = (5, 3)  # prompt lengths of the two sequences
DECODE_STEPS = 3


def parse_decode_layers(text):
    """The layers of a decode model's @step, as parse_layers (all causal)."""
    step = text[text.index("func.func @step("):]
    layers = []
    for match in DECODE_LAYER_RE.finditer(step):
        _, mode, _, operands, attrs = match.groups()
        layer = {
            "kind": "qkv", "mode": mode,
            # Weights and biases (not the caches and positions).
            "operands": {k: v for k, v in re.findall(r"(\w+)\((%\w+)\)", operands)
                         if k in ("wq", "wk", "wv", "wo", "bq", "bk", "bv", "bo")},
            "heads": int(re.search(r"num_heads = (\d+)", attrs).group(1)),
            "kv_heads": int(re.search(r"num_kv_heads = (\d+)", attrs).group(1)),
            "head_dim": int(re.search(r"head_dim = (\d+)", attrs).group(1)),
            "causal": True, "window": None, "rope": None,
        }
        if m := re.search(r"window = (\d+)", attrs):
            layer["window"] = int(m.group(1))
        if m := re.search(r"rope<theta = ([0-9.e+]+)(?:, fraction = ([0-9.]+))?>", attrs):
            layer["rope"] = (float(m.group(1)), float(m.group(2) or 1.0))
        layers.append(layer)
    return layers


def check_decode(model, runner, workdir):
    """A decode model (@prefill, @step over paged caches): two prompts of
    different lengths are prefilled, then DECODE_STEPS tokens are decoded,
    each call taking the caches the previous one returned; every position is
    compared with the whole-sequence reference."""
    text = open(model, encoding="utf-8").read()
    head = text.index("func.func @prefill(")
    signature = text[head:text.index("{", head)]
    args = ARG_RE.findall(signature)
    dtype = args[0][2]
    batch, longest = len(DECODE_PROMPTS), max(DECODE_PROMPTS)
    rng = np.random.default_rng(0)

    def save(name, array, integer=False):
        path = os.path.join(workdir, name + ".npy")
        if integer:
            np.save(path, np.asarray(array, np.int32))
            return None
        bits = R.to_bf16_bits(array) if dtype == "bf16" else array.astype(np.float32)
        np.save(path, bits)
        return (R.from_bf16_bits(bits) if dtype == "bf16" else bits).astype(np.float64)

    values, weights, caches = {}, [], []
    num_pages = None
    for name, shape, _ in args:
        if name == "%x":
            continue
        if name.endswith("_cache"):
            dims = [int(d) for d in shape.split("x")]
            num_pages = dims[0]
            save(name[1:] + "_0", np.zeros(dims))
            caches.append(name[1:])
            continue
        values[name] = save(name[1:], make_argument(name, shape, rng, batch, 1))
        weights.append(name[1:])
    pages = num_pages // batch
    save("block_table", np.arange(batch * pages).reshape(batch, pages)[:, ::-1], True)
    x_full = rng.standard_normal((batch, longest + DECODE_STEPS, values_width(args)))
    x_exact = save("x_full", x_full)

    def inputs(x_name, pos_name, cache_dir, lengths=False):
        files = [x_name] + weights
        paths = [os.path.join(workdir, f + ".npy") for f in files]
        order = [n[1:] for n, _, _ in args]
        by_name = dict(zip(["x"] + weights, paths))
        for i, c in enumerate(caches):
            by_name[c] = (os.path.join(workdir, c + "_0.npy") if cache_dir is None
                          else os.path.join(cache_dir, f"out{1 + i}.npy"))
        ordered = [by_name[n] for n in order]
        ordered.append(os.path.join(workdir, pos_name + ".npy"))
        if lengths:
            ordered.append(os.path.join(workdir, "lengths.npy"))
        ordered.append(os.path.join(workdir, "block_table.npy"))
        return ordered

    x0 = np.zeros((batch, longest, x_full.shape[2]))
    for b, p in enumerate(DECODE_PROMPTS):
        x0[b, :p] = x_full[b, :p]
    save("x0", x0)
    save("pos0", np.zeros(batch), True)
    save("lengths", np.array(DECODE_PROMPTS), True)
    lines = []
    for s in range(DECODE_STEPS):
        pos = np.array([p + s for p in DECODE_PROMPTS])
        save(f"x{s + 1}", np.stack([x_full[b, pos[b]] for b in range(batch)])[:, None])
        save(f"pos{s + 1}", pos, True)
        previous = os.path.join(workdir, f"call{s}")
        lines.append(" ".join([os.path.join(workdir, f"call{s + 1}")]
                              + inputs(f"x{s + 1}", f"pos{s + 1}", previous)))
    with open(os.path.join(workdir, "steps.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")

    start = time.time()
    for command in (
            [runner, model, "--entry=prefill", OPT_LEVEL,
             f"--output-dir={os.path.join(workdir, 'call0')}",
             *[f"--input={p}" for p in inputs("x0", "pos0", None, lengths=True)]],
            [runner, model, "--entry=step", OPT_LEVEL,
             f"--run-list={os.path.join(workdir, 'steps.txt')}"]):
        proc = subprocess.run(command, capture_output=True, text=True)
        if proc.returncode != 0:
            return None, time.time() - start, proc.stderr.strip()
    seconds = time.time() - start

    def load(call):
        out = np.load(os.path.join(workdir, f"call{call}", "out0.npy"))
        return (R.from_bf16_bits(out) if dtype == "bf16" else out).astype(np.float64)

    layers = parse_decode_layers(text)
    worst = 0.0
    for b, p in enumerate(DECODE_PROMPTS):
        ref = reference_model(layers, dict(values, **{"%x": x_exact[b:b + 1, :p + DECODE_STEPS]}))[0]
        got = [load(0)[b, t] for t in range(p)]
        got += [load(s + 1)[b, 0] for s in range(DECODE_STEPS)]
        worst = max(worst, float(np.max(np.abs(np.stack(got) - ref)) / np.max(np.abs(ref))))
    return worst, seconds, ""


def values_width(args):
    """E of the [B, S, E] input."""
    return int(args[0][1].split("x")[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--seq", type=int, default=8)
    parser.add_argument("models", nargs="*",
                        help="models to run (default: examples/*.mlir)")
    args = parser.parse_args()
    runner = os.path.join(args.build, "bin", "attnfuse-run")
    decode = False
    models = args.models or sorted(
        os.path.join(ROOT, "examples", f) for f in os.listdir(os.path.join(ROOT, "examples"))
        if f.endswith(".mlir"))
    failures = 0
    print(f"CPU runs (fused lowering) against the numpy reference, batch "
          f"{args.batch}, {args.seq} tokens, tolerance {TOLERANCE:g} (max-norm relative):")
    for model in models:
        with tempfile.TemporaryDirectory() as workdir:
            with open(model, encoding="utf-8") as f:
                decode = "func.func @step(" in f.read()
            if decode:
                err, seconds, message = check_decode(model, runner, workdir)
            else:
                err, seconds, message = check(model, runner, args.batch, args.seq,
                                              workdir)
        name = os.path.basename(model)
        if err is None:
            failures += 1
            print(f"  {name:24} FAILED to run ({seconds:.1f} s): {message}")
        else:
            ok = err <= TOLERANCE
            failures += not ok
            what = (f"prefill of {'+'.join(map(str, DECODE_PROMPTS))} tokens, "
                    f"{DECODE_STEPS} decode steps, " if decode else "")
            print(f"  {name:24} rel. error {err:.2e}  {'ok' if ok else 'MISMATCH'}"
                  f"  ({what}{seconds:.1f} s compile + run)")
    print(f"{len(models) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
