"""Numerics of attn.cca_decode_prologue (one CCA decode step) on the CPU.

Two independent checks, each through attnfuse-run (attn-to-cpu, the fused
lowering: the op is a kernel op, which the reference lowering does not take):

* one step against `reference.cca_decode_prologue`, written from the
  definition of the op and its decode state (docs/semantics.md,
  #attncca_decode_prologue and #cca-decode-state) on
  random inputs, random (non-zero) states and a different position per
  sequence; the state results must be exact copies;
* a whole sequence decoded token by token (the step unrolled in the IR, its
  state results fed to the next step, starting from zero states at positions
  0, 1, ...) against `reference.cca_qkv`, the prefill's q, k and v for the
  same down-projections: a decode over a prompt must reproduce the prefill.

Tolerances and error norm as in test_numerics.py (f32 1e-5, bf16 2e-2): the
step accumulates in f32 and, in bf16, rounds once to bf16 at its outputs.
"""

import os
import subprocess
import zlib

import numpy as np
import pytest

import reference as R
from conftest import _find_tool
from test_numerics import TOLERANCE, decode, quantize, rel_err


@pytest.fixture(scope="module")
def tool():
    path = _find_tool()
    if not path or not os.access(path, os.X_OK):
        pytest.fail("attnfuse-run not found: set ATTNFUSE_RUN to the built "
                    "binary (e.g. build/bin/attnfuse-run) or put it on PATH")
    return path


class Config:
    """One decode-prologue configuration and its IR pieces."""

    def __init__(self, hq, hk, d=8, kernels=(2, 2), qk_mean=True, value_shift=True,
                 temperature="clamped", rope=(10000.0, 0.5), dtype="f32"):
        self.hq, self.hk, self.d = hq, hk, d
        self.k0, self.k1 = kernels
        self.qk_mean, self.value_shift = qk_mean, value_shift
        self.temperature, self.rope, self.dtype = temperature, rope, dtype
        self.lq, self.lk = hq * d, hk * d
        self.c = self.lq + self.lk
        self.p = (self.k0 - 1) + (self.k1 - 1)
        self.lv = self.lk // 2 if value_shift else self.lk
        kind = "CCA" if hq == hk else f"CCGQA{hq // hk}"
        self.name = (f"{kind}-k{self.k0}{self.k1}-{'mean' if qk_mean else 'nomean'}-"
                     f"{'shift' if value_shift else 'noshift'}-{temperature}-"
                     f"{'rope' if rope else 'norope'}-{dtype}")

    def attrs(self):
        a = [f"num_heads = {self.hq} : i64", f"num_kv_heads = {self.hk} : i64",
             f"head_dim = {self.d} : i64",
             f"conv_kernel_sizes = array<i64: {self.k0}, {self.k1}>",
             f"temperature = #attn.temperature<{self.temperature}>"]
        if self.qk_mean:
            a.append("qk_mean")
        if self.value_shift:
            a.append("value_shift")
        if self.rope:
            a.append(f"rope = #attn.rope<theta = {self.rope[0]}, fraction = {self.rope[1]}>")
        return "{" + ", ".join(a) + "}"

    def t(self, *dims, elem=None):
        shape = "x".join("?" if x is None else str(x) for x in dims)
        return f"tensor<{shape}x{elem or self.dtype}>"

    def params(self, rng):
        """Random conv weights, biases and temperatures (float64)."""
        c, d, hk = self.c, self.d, self.hk
        if self.temperature == "raw":
            temp = rng.uniform(0.5, 1.5, hk)
        else:  # both clamp bounds in f32; tau <= e in bf16 (see test_numerics)
            temp = rng.uniform(-0.5, 2.5 if self.dtype == "f32" else 1.0, hk)
        return {
            "dw": rng.standard_normal((c, 1, self.k0)) * self.k0 ** -0.5,
            "dwb": rng.standard_normal(c) * 0.1,
            "gw": rng.standard_normal((c, d, self.k1)) * (d * self.k1) ** -0.5,
            "gwb": rng.standard_normal(c) * 0.1,
            "temp": temp,
        }

    def param_types(self):
        c, d = self.c, self.d
        return [("dw", self.t(c, 1, self.k0)), ("dwb", self.t(c)),
                ("gw", self.t(c, d, self.k1)), ("gwb", self.t(c)), ("temp", self.t(self.hk))]

    def reference_step(self, v, positions):
        return R.cca_decode_prologue(
            v["qr"], v["kr"], v["vc"], v["dw"], v["dwb"], v["gw"], v["gwb"], v["temp"],
            v["cs"], positions, self.hq, self.hk, self.d, (self.k0, self.k1),
            v_prev=v.get("vp"), shift_state=v.get("ss"), qk_mean=self.qk_mean,
            value_shift=self.value_shift, temperature=self.temperature,
            rope_theta=self.rope[0] if self.rope else None,
            rope_fraction=self.rope[1] if self.rope else 1.0)


CONFIGS = [
    Config(4, 4),  # CCA, ZAYA1 toggles
    Config(8, 2),  # CCGQA-4
    Config(8, 2, qk_mean=False),
    Config(4, 4, value_shift=False),
    Config(8, 2, value_shift=False, rope=None, temperature="raw"),
    Config(8, 2, kernels=(3, 2)),
    Config(4, 4, kernels=(3, 2), qk_mean=False, temperature="raw"),
    Config(8, 2, rope=(10000.0, 1.0), temperature="raw"),
    Config(4, 4, dtype="bf16"),
    Config(8, 2, kernels=(3, 2), dtype="bf16"),
    Config(8, 2, value_shift=False, temperature="raw", dtype="bf16"),
    Config(4, 2, kernels=(1, 3), dtype="bf16"),
    Config(4, 4, kernels=(1, 1)),  # no conv state (P = 0)
]


def run_tool(tool, ir, tmp_path, inputs):
    """JIT-runs @main of `ir` on the arrays `inputs` (saved in order); returns
    the raw result arrays."""
    model = tmp_path / "model.mlir"
    model.write_text(ir)
    paths = []
    for i, array in enumerate(inputs):
        path = tmp_path / f"in{i}.npy"
        np.save(path, array)
        paths.append(f"--input={path}")
    out = tmp_path / "out"
    proc = subprocess.run([tool, str(model), "--entry=main", *paths,
                           f"--output-dir={out}"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"attnfuse-run failed:\n{proc.stderr}\nIR:\n{ir}"
    results = []
    while (out / f"out{len(results)}.npy").exists():
        results.append(np.load(out / f"out{len(results)}.npy"))
    return results


def step_ir(cfg):
    """@main: one decode step with a dynamic batch."""
    B = None
    ops = [("qr", cfg.t(B, 1, cfg.lq)), ("kr", cfg.t(B, 1, cfg.lk)),
           ("vc", cfg.t(B, 1, cfg.lv))]
    if cfg.value_shift:
        ops.append(("vp", cfg.t(B, 1, cfg.lk // 2)))
    ops += cfg.param_types() + [("cs", cfg.t(B, cfg.p, cfg.c))]
    if cfg.value_shift:
        ops.append(("ss", cfg.t(B, 1, cfg.lk // 2)))
    ops.append(("pos", cfg.t(B, elem="i32")))
    results = [cfg.t(B, 1, cfg.hq, cfg.d), cfg.t(B, 1, cfg.hk, cfg.d),
               cfg.t(B, 1, cfg.hk, cfg.d), cfg.t(B, cfg.p, cfg.c)]
    if cfg.value_shift:
        results.append(cfg.t(B, 1, cfg.lk // 2))
    names = [f"%r{i}" for i in range(len(results))]
    vp = ", %vp" if cfg.value_shift else ""
    ss = " shift_state(%ss)" if cfg.value_shift else ""
    rtypes = ", ".join(results)
    # The outputs' inits precede the states among the operands.
    operand_types = [t for _, t in ops]
    first_state = [n for n, _ in ops].index("cs")
    operand_types[first_state:first_state] = results[:3]
    inits = "".join(f"  %init{i} = tensor.empty(%batch) : {t}\n"
                    for i, t in enumerate(results[:3]))
    ir = (f"func.func @main({', '.join(f'%{n}: {t}' for n, t in ops)}) -> ({rtypes}) {{\n"
          f"  %c0 = arith.constant 0 : index\n"
          f"  %batch = tensor.dim %qr, %c0 : {ops[0][1]}\n"
          f"{inits}"
          f"  {', '.join(names)} = attn.cca_decode_prologue %qr, %kr, %vc{vp}\n"
          f"      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp)\n"
          f"      outs(%init0, %init1, %init2) conv_state(%cs){ss}\n"
          f"      positions(%pos) {cfg.attrs()}\n"
          f"      : ({', '.join(operand_types)}) -> ({rtypes})\n"
          f"  return {', '.join(names)} : {rtypes}\n}}\n")
    return ir, [n for n, _ in ops]


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.name)
def test_step_matches_reference(tool, cfg, tmp_path):
    rng = np.random.default_rng(zlib.crc32(("step" + cfg.name).encode()))
    batch = 3
    positions = np.array([0, 5, 1000], dtype=np.int32)
    values = cfg.params(rng)
    values.update({
        "qr": rng.standard_normal((batch, 1, cfg.lq)),
        "kr": rng.standard_normal((batch, 1, cfg.lk)),
        "vc": rng.standard_normal((batch, 1, cfg.lv)),
        "cs": rng.standard_normal((batch, cfg.p, cfg.c)),
    })
    if cfg.value_shift:
        values["vp"] = rng.standard_normal((batch, 1, cfg.lk // 2))
        values["ss"] = rng.standard_normal((batch, 1, cfg.lk // 2))
    ir, order = step_ir(cfg)
    saved, exact = [], {}
    for name in order:
        if name == "pos":
            saved.append(positions)
            continue
        array, exact[name] = quantize(values[name], cfg.dtype)
        saved.append(array)
    results = run_tool(tool, ir, tmp_path, saved)
    expected = cfg.reference_step(exact, positions)
    assert len(results) == len(expected)
    tol = TOLERANCE[cfg.dtype]
    names = ["query", "key", "value", "conv_state_out", "shift_state_out"]
    for name, y, ref in zip(names, results, expected):
        y = decode(y, cfg.dtype)
        assert y.shape == ref.shape, f"{name}: shape {y.shape}, reference {ref.shape}"
        if name in ("value", "conv_state_out", "shift_state_out"):
            # Moved, never computed: bit-exact.
            assert np.array_equal(y, ref), f"{name} differs from the reference"
        else:
            err = rel_err(y, ref)
            assert err <= tol, f"{name}: rel_err {err:.3e} > {tol:.0e}"


def sequence_ir(cfg, batch, seq):
    """@main: `seq` decode steps unrolled, each step's state results feeding
    the next; inputs are the whole sequence's projections, positions [S, B]."""
    B, S = batch, seq
    lines = []
    ops = [("qr", cfg.t(B, S, cfg.lq)), ("kr", cfg.t(B, S, cfg.lk)),
           ("vc", cfg.t(B, S, cfg.lv))]
    if cfg.value_shift:
        ops.append(("vp", cfg.t(B, S, cfg.lk // 2)))
    ops += cfg.param_types() + [("pos", cfg.t(S, B, elem="i32"))]
    cs_t, ss_t = cfg.t(B, cfg.p, cfg.c), cfg.t(B, 1, cfg.lk // 2)
    q_t, kv_t = cfg.t(B, 1, cfg.hq, cfg.d), cfg.t(B, 1, cfg.hk, cfg.d)
    qs_t, kvs_t = cfg.t(B, S, cfg.hq, cfg.d), cfg.t(B, S, cfg.hk, cfg.d)
    lines.append(f"  %cs0 = arith.constant dense<0.0> : {cs_t}")
    if cfg.value_shift:
        lines.append(f"  %ss0 = arith.constant dense<0.0> : {ss_t}")
    lines.append(f"  %q0 = tensor.empty() : {qs_t}")
    lines.append(f"  %k0 = tensor.empty() : {kvs_t}")
    lines.append(f"  %v0 = tensor.empty() : {kvs_t}")
    lines.append(f"  %qi = tensor.empty() : {q_t}")
    lines.append(f"  %kvi = tensor.empty() : {kv_t}")

    def token(name, width, t):
        return (f"  %{name}_{t} = tensor.extract_slice %{name}[0, {t}, 0] [{B}, 1, {width}] "
                f"[1, 1, 1] : {cfg.t(B, S, width)} to {cfg.t(B, 1, width)}")

    for t in range(S):
        lines.append(token("qr", cfg.lq, t))
        lines.append(token("kr", cfg.lk, t))
        lines.append(token("vc", cfg.lv, t))
        if cfg.value_shift:
            lines.append(token("vp", cfg.lk // 2, t))
        lines.append(f"  %pos_{t} = tensor.extract_slice %pos[{t}, 0] [1, {B}] [1, 1] : "
                     f"{cfg.t(S, B, elem='i32')} to {cfg.t(B, elem='i32')}")
        vp = f", %vp_{t}" if cfg.value_shift else ""
        ss = f" shift_state(%ss{t})" if cfg.value_shift else ""
        ss_out = f", %ss{t + 1}" if cfg.value_shift else ""
        in_types = [cfg.t(B, 1, cfg.lq), cfg.t(B, 1, cfg.lk), cfg.t(B, 1, cfg.lv)]
        if cfg.value_shift:
            in_types.append(cfg.t(B, 1, cfg.lk // 2))
        in_types += [t_ for _, t_ in cfg.param_types()] + [q_t, kv_t, kv_t, cs_t]
        if cfg.value_shift:
            in_types.append(ss_t)
        in_types.append(cfg.t(B, elem="i32"))
        out_types = [q_t, kv_t, kv_t, cs_t] + ([ss_t] if cfg.value_shift else [])
        lines.append(
            f"  %q_{t}, %k_{t}, %v_{t}, %cs{t + 1}{ss_out} = attn.cca_decode_prologue "
            f"%qr_{t}, %kr_{t}, %vc_{t}{vp} conv_dw(%dw, %dwb) conv_g(%gw, %gwb) "
            f"temp(%temp) outs(%qi, %kvi, %kvi) conv_state(%cs{t}){ss} "
            f"positions(%pos_{t}) {cfg.attrs()} "
            f": ({', '.join(in_types)}) -> ({', '.join(out_types)})")
        for name, heads, whole, one in (("q", cfg.hq, qs_t, q_t), ("k", cfg.hk, kvs_t, kv_t),
                                        ("v", cfg.hk, kvs_t, kv_t)):
            lines.append(f"  %{name}{t + 1} = tensor.insert_slice %{name}_{t} into "
                         f"%{name}{t}[0, {t}, 0, 0] [{B}, 1, {heads}, {cfg.d}] [1, 1, 1, 1] "
                         f": {one} into {whole}")
    rtypes = f"{qs_t}, {kvs_t}, {kvs_t}"
    body = "\n".join(lines)
    ir = (f"func.func @main({', '.join(f'%{n}: {t}' for n, t in ops)}) -> ({rtypes}) {{\n"
          f"{body}\n  return %q{S}, %k{S}, %v{S} : {rtypes}\n}}\n")
    return ir, [n for n, _ in ops]


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.name)
def test_token_by_token_decode_matches_prefill(tool, cfg, tmp_path):
    rng = np.random.default_rng(zlib.crc32(("sequence" + cfg.name).encode()))
    batch, seq, e = 2, 6, 16
    values = cfg.params(rng)
    x = rng.standard_normal((batch, seq, e))
    weights = {"wq": rng.standard_normal((cfg.lq, e)) * e ** -0.5,
               "wk": rng.standard_normal((cfg.lk, e)) * e ** -0.5,
               "wv": rng.standard_normal((cfg.lv, e)) * e ** -0.5}
    if cfg.value_shift:
        weights["wvp"] = rng.standard_normal((cfg.lk // 2, e)) * e ** -0.5
    # The step's inputs: the down-projections of each token, rounded to the
    # element type. The prefill reference below gets exactly those values.
    proj = {"qr": R.linear(x, weights["wq"]), "kr": R.linear(x, weights["wk"]),
            "vc": R.linear(x, weights["wv"])}
    if cfg.value_shift:
        proj["vp"] = R.linear(x, weights["wvp"])
    values.update(proj)
    positions = np.repeat(np.arange(seq, dtype=np.int32)[:, None], batch, axis=1)
    ir, order = sequence_ir(cfg, batch, seq)
    saved, exact = [], {}
    for name in order:
        if name == "pos":
            saved.append(positions)
            continue
        array, exact[name] = quantize(values[name], cfg.dtype)
        saved.append(array)
    results = run_tool(tool, ir, tmp_path, saved)

    # The prefill prologue on an input whose projections are the rounded
    # ones: x = identity rows over [qr | kr | vc | vp] with block weights.
    widths = [cfg.lq, cfg.lk, cfg.lv] + ([cfg.lk // 2] if cfg.value_shift else [])
    x_exact = np.concatenate([exact[n] for n in ("qr", "kr", "vc", "vp")[:len(widths)]],
                             axis=-1)
    eye = np.eye(sum(widths))
    blocks = np.split(eye, np.cumsum(widths)[:-1], axis=0)
    q, k, v = R.cca_qkv(
        x_exact, blocks[0], blocks[1], blocks[2], exact["dw"], exact["dwb"], exact["gw"],
        exact["gwb"], exact["temp"], cfg.hq, cfg.hk, cfg.d, (cfg.k0, cfg.k1),
        wv_prev=blocks[3] if cfg.value_shift else None, qk_mean=cfg.qk_mean,
        value_shift=cfg.value_shift, temperature=cfg.temperature,
        rope_theta=cfg.rope[0] if cfg.rope else None,
        rope_fraction=cfg.rope[1] if cfg.rope else 1.0)
    tol = TOLERANCE[cfg.dtype]
    for name, y, ref in zip(("query", "key", "value"), results, (q, k, v)):
        y = decode(y, cfg.dtype)
        assert y.shape == ref.shape, f"{name}: shape {y.shape}, prefill {ref.shape}"
        err = rel_err(y, ref)
        assert err <= tol, f"{name}: rel_err {err:.3e} > {tol:.0e} against the prefill"
