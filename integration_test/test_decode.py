"""Decode over a KV cache reproduces the prefill, token for token.

Each case is one layer in its decode form (`attn.qkv_decode` or
`attn.cca_decode`) in two functions, called as a serving engine would: a
@prefill of prompts of DIFFERENT lengths per sequence (padded to the longest,
`positions = 0`, `lengths` = the prompt lengths, zero cache and states), then
@step calls of one token per sequence (static T = 1, the shape the decode
kernels attn.flash_decode / attn.cca_decode_prologue serve in the fused
lowering), each taking the cache and states the previous call returned (the
run list chains the output files). Every output row is compared with the float64 reference of the
WHOLE-sequence layer (reference.py, written from docs/semantics.md) at the same
position, so decode == prefill at every position.

Paged caches (a shuffled block table) are checked against the reference and
against the contiguous run of the same case, which must agree exactly: the
page indirection moves rows, it does not change arithmetic.

Tolerances and the error norm are those of test_numerics.py.
"""

import subprocess
import zlib
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import numpy as np
import pytest

import reference as R
from test_numerics import TOLERANCE, decode, quantize, rel_err, rope_attr, ttype

E = 32
PROMPTS = (5, 1, 3)  # prompt length of each sequence
STEPS = 4  # decode steps after the prefill
CAPACITY = 12  # cache rows per sequence (>= longest prompt + STEPS)
PAGE = 4  # rows per page of a paged cache


@dataclass
class Case:
    name: str
    kind: str  # "qkv" or "cca"
    dtype: str = "f32"
    mode: str = "none"  # qkv sharing mode
    hq: int = 4
    hk: int = 4
    d: int = 8
    rope: Optional[Tuple[float, float]] = None
    window: Optional[int] = None
    biases: bool = False
    kernels: Tuple[int, int] = (2, 2)
    qk_mean: bool = True
    value_shift: bool = True
    temperature: str = "clamped"
    paged: bool = False
    index_type: str = "i32"  # of positions, lengths and block tables
    params: Dict[str, Tuple] = field(default_factory=dict)

    # -- shapes ------------------------------------------------------------

    def weights(self):
        """(name, shape, fan_in) of every weight operand, in operand order."""
        e, d, lq, lk = E, self.d, self.hq * self.d, self.hk * self.d
        if self.kind == "qkv":
            out = []
            if self.mode in ("none", "kv"):
                out.append(("wq", (lq, e), e))
            out.append(("wk", (lk, e), e))
            if self.mode in ("none", "qk"):
                out.append(("wv", (lk, e), e))
            out.append(("wo", (e, lq), lq))
            if self.biases:
                out += [(n, (lq if n == "bq" else e if n == "bo" else lk,), 0)
                        for n in ("bq", "bk", "bv", "bo")
                        if (n != "bq" or self.mode in ("none", "kv"))
                        and (n != "bv" or self.mode in ("none", "qk"))]
            return out
        c, (k0, k1) = lq + lk, self.kernels
        lv = lk // 2 if self.value_shift else lk
        out = [("wq", (lq, e), e), ("wk", (lk, e), e), ("wv", (lv, e), e)]
        if self.value_shift:
            out.append(("wvp", (lv, e), e))
        out += [("dw", (c, 1, k0), k0), ("dwb", (c,), 0), ("gw", (c, d, k1), d * k1),
                ("gwb", (c,), 0), ("temp", (self.hk,), -1), ("wo", (e, lq), lq)]
        return out

    def cache_names(self):
        if self.kind == "qkv" and self.mode in ("kv", "qkv"):
            return ["kv"]
        return ["kc", "vc"]

    def state_shapes(self):
        if self.kind != "cca":
            return []
        k0, k1 = self.kernels
        c = (self.hq + self.hk) * self.d
        out = [("cs", (None, k0 - 1 + k1 - 1, c))]
        if self.value_shift:
            out.append(("ss", (None, 1, self.hk * self.d // 2)))
        return out

    def cache_shape(self):
        if self.paged:
            return (None, PAGE, self.hk, self.d)
        return (None, CAPACITY, self.hk, self.d)

    # -- IR ------------------------------------------------------------------

    def function(self, name, prefill):
        """@prefill: T tokens with lengths; @step: one token, no lengths."""
        t = self.dtype
        cache_type = ttype(self.cache_shape(), t)
        x_shape = (None, None, E) if prefill else (None, 1, E)
        params = [f"%x: {ttype(x_shape, t)}"]
        params += [f"%{n}: {ttype(s, t)}" for n, s, _ in self.weights()]
        params += [f"%{n}: {cache_type}" for n in self.cache_names()]
        params += [f"%{n}: {ttype(s, t)}" for n, s in self.state_shapes()]
        it = self.index_type
        params += [f"%pos: tensor<?x{it}>"] + ([f"%len: tensor<?x{it}>"] if prefill else [])
        if self.paged:
            params.append(f"%bt: tensor<?x?x{it}>")
        results = ([ttype(x_shape, t)] + [cache_type] * len(self.cache_names())
                   + [ttype(s, t) for _, s in self.state_shapes()])
        names = ["%y"] + [f"%{n}2" for n in self.cache_names()] + [
            f"%{n}2" for n, _ in self.state_shapes()]
        attrs = [f"num_heads = {self.hq} : i64", f"num_kv_heads = {self.hk} : i64",
                 f"head_dim = {self.d} : i64"]
        if self.window is not None:
            attrs.append(f"window = {self.window} : i64")
        if self.rope is not None:
            attrs.append(f"rope = {rope_attr(self.rope)}")
        tail = (f" cache({', '.join('%' + n for n in self.cache_names())})")
        if self.kind == "qkv":
            w = {n for n, _, _ in self.weights()}
            body = f"attn.qkv_decode <{self.mode}> %x"
            body += "".join(f" {n}(%{n})" for n in ("wq", "wk", "wv", "wo") if n in w)
            body += "".join(f" {n}(%{n})" for n in ("bq", "bk", "bv", "bo") if n in w)
            body += tail
        else:
            k0, k1 = self.kernels
            attrs.append(f"conv_kernel_sizes = array<i64: {k0}, {k1}>")
            if self.qk_mean:
                attrs.append("qk_mean")
            if self.value_shift:
                attrs.append("value_shift")
            attrs.append(f"temperature = #attn.temperature<{self.temperature}>")
            body = "attn.cca_decode %x wq(%wq) wk(%wk) wv(%wv)"
            body += " wv_prev(%wvp)" if self.value_shift else ""
            body += " conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) wo(%wo)" + tail
            body += " conv_state(%cs)"
            body += " shift_state(%ss)" if self.value_shift else ""
        body += " positions(%pos)" + (" lengths(%len)" if prefill else "")
        body += " block_table(%bt)" if self.paged else ""
        types = ", ".join(p.split(": ", 1)[1] for p in params)
        return (f"func.func @{name}({', '.join(params)}) -> ({', '.join(results)}) {{\n"
                f"  {', '.join(names)} = {body} {{{', '.join(attrs)}}}\n"
                f"      : ({types}) -> ({', '.join(results)})\n"
                f"  return {', '.join(names)} : {', '.join(results)}\n}}\n")

    def ir(self):
        return self.function("prefill", True) + "\n" + self.function("step", False)

    # -- reference -----------------------------------------------------------

    def reference(self, x, w):
        """Whole-sequence layer output for x [1, N, E]."""
        if self.kind == "qkv":
            return R.qkv_attention(
                x, self.mode, w["wk"], w["wo"], wq=w.get("wq"), wv=w.get("wv"),
                bq=w.get("bq"), bk=w.get("bk"), bv=w.get("bv"), bo=w.get("bo"),
                num_heads=self.hq, num_kv_heads=self.hk, head_dim=self.d,
                causal=True, window=self.window,
                rope_theta=self.rope[0] if self.rope else None,
                rope_fraction=self.rope[1] if self.rope else 1.0)
        return R.cca(x, w["wq"], w["wk"], w["wv"], w["dw"], w["dwb"], w["gw"],
                     w["gwb"], w["temp"], w["wo"], self.hq, self.hk, self.d,
                     self.kernels, wv_prev=w.get("wvp"), qk_mean=self.qk_mean,
                     value_shift=self.value_shift, temperature=self.temperature,
                     causal=True, window=self.window,
                     rope_theta=self.rope[0] if self.rope else None,
                     rope_fraction=self.rope[1] if self.rope else 1.0)


def make_weights(case, rng):
    out = {}
    for name, shape, fan_in in case.weights():
        if fan_in == -1:  # key temperature, as in test_numerics.py
            if case.temperature == "raw":
                out[name] = rng.uniform(0.5, 1.5, shape)
            else:
                out[name] = rng.uniform(-0.5, 2.5 if case.dtype == "f32" else 1.0, shape)
        elif fan_in == 0:  # biases
            out[name] = 0.1 * rng.standard_normal(shape)
        else:
            out[name] = rng.standard_normal(shape) * fan_in ** -0.5
    return out


def run_case(tool, case, tmp_path):
    """Runs prefill + STEPS decode steps; returns (outputs per call, exact
    inputs) where outputs[k] is the float64 y of call k."""
    rng = np.random.default_rng(zlib.crc32(case.name.replace("-paged", "").encode()))
    batch = len(PROMPTS)
    total = [p + STEPS for p in PROMPTS]
    x_full = rng.standard_normal((batch, max(total), E))
    weights = make_weights(case, rng)

    saved = {}

    def save(path, array, integer=False):
        if integer:
            np.save(path, np.asarray(array, dtype={"i32": np.int32, "i64": np.int64}[case.index_type]))
            return np.asarray(array)
        q, exact = quantize(array, case.dtype)
        np.save(path, q)
        return exact

    exact_w = {n: save(tmp_path / f"{n}.npy", weights[n]) for n in weights}
    x_exact = quantize(x_full, case.dtype)[1]

    # Cache and state operands of the first call: zeros.
    if case.paged:
        pages_per_seq = CAPACITY // PAGE
        num_pages = batch * pages_per_seq + 3  # a few pages no one uses
        perm = rng.permutation(num_pages)[: batch * pages_per_seq]
        block_table = perm.reshape(batch, pages_per_seq)
        cache0 = np.zeros((num_pages, PAGE, case.hk, case.d))
        save(tmp_path / "bt.npy", block_table, integer=True)
    else:
        cache0 = np.zeros((batch, CAPACITY, case.hk, case.d))
    for n in case.cache_names():
        save(tmp_path / f"{n}0.npy", cache0)
    for n, shape in case.state_shapes():
        save(tmp_path / f"{n}0.npy", np.zeros((batch,) + shape[1:]))

    n_caches, n_states = len(case.cache_names()), len(case.state_shapes())
    prefill_lines, step_lines = [], []
    for call in range(STEPS + 1):
        out_dir = tmp_path / f"call{call}"
        if call == 0:
            x = np.zeros((batch, max(PROMPTS), E))
            for b, p in enumerate(PROMPTS):
                x[b, :p] = x_full[b, :p]
            pos = np.zeros(batch)
        else:
            pos = np.array([p + call - 1 for p in PROMPTS])
            x = np.stack([x_full[b, pos[b]] for b in range(batch)])[:, None, :]
        save(tmp_path / f"x{call}.npy", x)
        save(tmp_path / f"pos{call}.npy", pos, integer=True)
        prev = tmp_path / f"call{call - 1}"
        carried = []
        for i, n in enumerate(case.cache_names()):
            carried.append(tmp_path / f"{n}0.npy" if call == 0 else prev / f"out{1 + i}.npy")
        for i, (n, _) in enumerate(case.state_shapes()):
            carried.append(tmp_path / f"{n}0.npy" if call == 0
                           else prev / f"out{1 + n_caches + i}.npy")
        inputs = ([tmp_path / f"x{call}.npy"]
                  + [tmp_path / f"{n}.npy" for n, _, _ in case.weights()]
                  + carried + [tmp_path / f"pos{call}.npy"])
        if call == 0:
            save(tmp_path / "len0.npy", np.array(PROMPTS), integer=True)
            inputs.append(tmp_path / "len0.npy")
        if case.paged:
            inputs.append(tmp_path / "bt.npy")
        line = " ".join(str(p) for p in [out_dir] + inputs)
        (prefill_lines if call == 0 else step_lines).append(line)
    (tmp_path / "model.mlir").write_text(case.ir())
    for entry, lines in (("prefill", prefill_lines), ("step", step_lines)):
        (tmp_path / f"{entry}.txt").write_text("\n".join(lines) + "\n")
        proc = subprocess.run([*tool, str(tmp_path / "model.mlir"), f"--entry={entry}",
                               f"--run-list={tmp_path / (entry + '.txt')}"],
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, (
            f"attnfuse-run --entry={entry} failed ({proc.returncode}):\n{proc.stderr}\n"
            f"IR:\n{case.ir()}")
    outputs = [decode(np.load(tmp_path / f"call{k}" / "out0.npy"), case.dtype)
               for k in range(STEPS + 1)]
    finals = [np.load(tmp_path / f"call{STEPS}" / f"out{1 + i}.npy")
              for i in range(n_caches + n_states)]
    return outputs, x_exact, exact_w, finals


def check_against_prefill(case, outputs, x_exact, exact_w):
    tol = TOLERANCE[case.dtype]
    failures = []
    for b, prompt in enumerate(PROMPTS):
        total = prompt + STEPS
        ref = case.reference(x_exact[b : b + 1, :total], exact_w)[0]  # [N, E]
        got = [outputs[0][b, t] for t in range(prompt)]
        got += [outputs[k][b, 0] for k in range(1, STEPS + 1)]
        got = np.stack(got)
        if not np.all(np.isfinite(got)):
            failures.append(f"sequence {b}: non-finite output")
            continue
        # Per position, so that a wrong row is named.
        scale = max(np.max(np.abs(ref)), 1e-30)
        for t in range(total):
            err = np.max(np.abs(got[t] - ref[t])) / scale
            if err > tol:
                phase = "prefill" if t < prompt else f"decode step {t - prompt + 1}"
                failures.append(f"sequence {b} position {t} ({phase}): "
                                f"rel_err {err:.3e} > {tol:.0e}")
    assert not failures, f"{case.name}:\n" + "\n".join(failures)


def qkv(mode, hq, hk, tag="", **kw):
    heads = "MHA" if hq == hk else "MQA" if hk == 1 else f"GQA{hq // hk}"
    dtype = kw.get("dtype", "f32")
    return Case(f"qkv-{mode}-{heads}{tag}-{dtype}", "qkv", mode=mode, hq=hq, hk=hk, **kw)


def cca(hq, hk, tag="", **kw):
    kind = "CCA" if hq == hk else f"CCGQA{hq // hk}"
    dtype = kw.get("dtype", "f32")
    return Case(f"{kind}{tag}-{dtype}", "cca", hq=hq, hk=hk, **kw)


CASES = [
    # Every sharing mode, with GQA/MQA where the mode admits it, with RoPE.
    qkv("none", 8, 8), qkv("none", 8, 2, rope=(10000.0, 1.0), tag="-rope"),
    qkv("kv", 8, 8), qkv("kv", 8, 2, rope=(10000.0, 1.0), tag="-rope"),
    qkv("kv", 8, 1, rope=(500.0, 0.5), tag="-rope-partial"),
    qkv("qk", 4, 4, rope=(10000.0, 0.5), tag="-rope-partial"),
    qkv("qkv", 4, 4), qkv("qkv", 4, 4, rope=(10000.0, 1.0), tag="-rope"),
    # Windows (the window slides past the prompt) and biases.
    qkv("kv", 8, 2, window=3, rope=(10000.0, 1.0), tag="-window3-rope"),
    qkv("none", 4, 2, biases=True, tag="-biases"),
    # CCA / CCGQA with every toggle.
    cca(4, 4, rope=(10000.0, 0.5)),
    cca(4, 2, rope=(10000.0, 0.5)),
    cca(8, 2, d=4, kernels=(3, 2), rope=(10000.0, 0.5), tag="-k32"),
    cca(4, 2, qk_mean=False, value_shift=False, temperature="raw", tag="-plain"),
    cca(4, 2, kernels=(3, 3), window=4, tag="-k33-window4"),
    # 64-bit positions, lengths and page tables (the fused decode kernels read
    # 32-bit ones; these layers keep the attention on the primitives).
    qkv("kv", 8, 2, rope=(10000.0, 1.0), index_type="i64", tag="-rope-i64"),
    cca(4, 2, rope=(10000.0, 0.5), index_type="i64", tag="-i64"),
    # bf16 caches and activations.
    qkv("kv", 8, 2, rope=(10000.0, 1.0), dtype="bf16", tag="-rope"),
    cca(4, 2, rope=(10000.0, 0.5), dtype="bf16"),
]
PAGED = ["qkv-none-GQA4-rope-f32", "qkv-kv-GQA4-rope-f32", "qkv-kv-MQA-rope-partial-f32",
         "CCGQA2-f32", "CCGQA4-k32-f32", "qkv-kv-GQA4-rope-bf16", "qkv-kv-GQA4-rope-i64-f32",
         "CCGQA2-i64-f32"]


def test_case_names_are_unique():
    names = [c.name for c in CASES]
    assert len(names) == len(set(names))
    assert set(PAGED) <= set(names)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_decode_matches_prefill(attnfuse_run, case, tmp_path):
    outputs, x_exact, exact_w, _ = run_case(attnfuse_run, case, tmp_path)
    check_against_prefill(case, outputs, x_exact, exact_w)


@pytest.mark.parametrize("name", PAGED)
def test_paged_matches_contiguous(attnfuse_run, name, tmp_path):
    base = next(c for c in CASES if c.name == name)
    paged = Case(**{**base.__dict__, "name": base.name + "-paged", "paged": True})
    (tmp_path / "paged").mkdir()
    (tmp_path / "contiguous").mkdir()
    outputs, x_exact, exact_w, _ = run_case(attnfuse_run, paged, tmp_path / "paged")
    check_against_prefill(paged, outputs, x_exact, exact_w)
    reference_outputs, _, _, _ = run_case(attnfuse_run, base, tmp_path / "contiguous")
    for k, (got, want) in enumerate(zip(outputs, reference_outputs)):
        if k == 0:  # padded prefill rows past a prompt are unspecified
            for b, prompt in enumerate(PROMPTS):
                np.testing.assert_array_equal(got[b, :prompt], want[b, :prompt],
                                              err_msg=f"prefill, sequence {b}")
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"decode step {k}")


@pytest.mark.parametrize("paged", [False, True], ids=["contiguous", "paged"])
def test_position_past_capacity_is_an_error(attnfuse_run, paged, tmp_path):
    """Writing past a sequence's capacity stops the run with a message; it
    never writes out of bounds."""
    case = Case("qkv-kv-capacity", "qkv", mode="kv", hq=4, hk=2, paged=paged)
    rng = np.random.default_rng(0)
    batch = 2
    paths = [tmp_path / "x.npy"]
    np.save(paths[0], rng.standard_normal((batch, 1, E)).astype(np.float32))
    for name, shape, _ in case.weights():
        paths.append(tmp_path / f"{name}.npy")
        np.save(paths[-1], rng.standard_normal(shape).astype(np.float32))
    rows = (CAPACITY // PAGE * batch, PAGE) if paged else (batch, CAPACITY)
    paths.append(tmp_path / "kv.npy")
    np.save(paths[-1], np.zeros(rows + (case.hk, case.d), np.float32))
    for name, values in (("pos", [3, CAPACITY]), ("len", [1, 1])):
        paths.append(tmp_path / f"{name}.npy")
        np.save(paths[-1], np.array(values, np.int32))
    if paged:
        paths.append(tmp_path / "bt.npy")
        np.save(paths[-1], np.arange(batch * CAPACITY // PAGE, dtype=np.int32)
                .reshape(batch, -1))
    (tmp_path / "model.mlir").write_text(case.ir())
    proc = subprocess.run(
        [*attnfuse_run, str(tmp_path / "model.mlir"), "--entry=prefill",
         f"--output-dir={tmp_path / 'out'}"] + [f"--input={p}" for p in paths],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0
    output = proc.stdout + proc.stderr
    assert "KV cache update: a token's position is outside the sequence's cache capacity" in output, output
    assert "a run-time check of 'prefill' failed, nothing after it ran" in output, output
