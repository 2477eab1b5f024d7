"""End-to-end numerics of the attn-to-cpu lowering against reference.py.

Each test is one IR variant: the MLIR text is generated here, with dynamic
batch and sequence dimensions, compiled ONCE by attnfuse-run (--run-list) and
executed on random inputs for every (batch, seq) in its shape list (by default
batch 1 and 3 x seq 1, 7 and 129). The output is compared with the float64
numpy reference, which is written from docs/semantics.md, not from the
lowering.

Error norm: rel_err = max|y - ref| / max|ref| over the whole output (a
normwise relative error in the max norm), computed against the reference on
exactly the values the tool received (bf16/f16 inputs are rounded first).

Tolerances:
* f32: 1e-5. The lowering accumulates in f32; f32 rounding (u = 6e-8) over
  at most a few hundred terms per dot product stays near 1e-6.
* bf16: 2e-2, f16: 3e-3. Arithmetic runs in f32, but every primitive op
  returns a bf16 tensor, so values are rounded to bf16 (unit roundoff
  u = 2^-9 = 1.95e-3) at each primitive boundary: 4 roundings on the QKV
  path (projection, RoPE, attention output, output projection) and up to
  about 9 on the CCA path (projections, two convolutions, qk-mean, norm,
  value shift, RoPE, attention, output projection). Each rounding perturbs
  its tensor by <= u relatively; a perturbation of q or k by u moves a
  logit l by about 2u|l|, which the softmax passes on to the probabilities
  roughly unchanged. With logits of magnitude <= ~4 here the worst case is
  about (9 + 2 * 4) u = 3.3e-2 and the typical (random-sign) accumulation
  about sqrt(17) u = 8e-3; 2e-2 sits between and catches any real bug (a
  wrong mask, head mapping or rotation gives errors of order 1). f16 has
  u = 2^-11, so the same reasoning gives 3e-3.
"""

import itertools
import os
import subprocess
import zlib
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np
import pytest

import reference as R

TOLERANCE = {"f32": 1e-5, "bf16": 2e-2, "f16": 3e-3}
INTEGER_TYPES = {"i32": np.int32, "i64": np.int64}
SHAPES = [(b, s) for b in (1, 3) for s in (1, 7, 129)]  # (batch, seq)
QUICK_SHAPES = [(1, 1), (3, 7), (1, 129)]


# ---------------------------------------------------------------------------
# Harness
# ---------------------------------------------------------------------------


def ttype(shape, dtype):
    """MLIR tensor type; None marks a dynamic dimension."""
    dims = "x".join("?" if d is None else str(d) for d in shape)
    return f"tensor<{dims}x{dtype}>" if dims else f"tensor<{dtype}>"


def quantize(a, dtype):
    """-> (array to save in the .npy file, exact float64 values it holds)."""
    if dtype == "f32":
        q = np.asarray(a, dtype=np.float32)
        return q, q.astype(np.float64)
    if dtype == "f16":
        q = np.asarray(a, dtype=np.float16)
        return q, q.astype(np.float64)
    if dtype == "bf16":
        bits = R.to_bf16_bits(a)  # saved as '<u2' bit patterns
        return bits, R.from_bf16_bits(bits).astype(np.float64)
    raise ValueError(dtype)


def decode(array, dtype):
    if dtype == "bf16":
        assert array.dtype == np.uint16, f"bf16 results are <u2, got {array.dtype}"
        return R.from_bf16_bits(array).astype(np.float64)
    expected = {"f32": np.float32, "f16": np.float16}[dtype]
    assert array.dtype == expected, f"{dtype} results are {expected}, got {array.dtype}"
    return array.astype(np.float64)


def rel_err(y, ref):
    scale = np.max(np.abs(ref))
    return np.max(np.abs(y - ref)) / (scale if scale > 0 else 1.0)


@dataclass
class Arg:
    name: str
    shape: Tuple  # MLIR shape, None = dynamic
    make: Callable  # (rng, B, S) -> np.ndarray
    dtype: Optional[str] = None  # an integer operand's type (i32, i64)


@dataclass
class Variant:
    name: str
    dtype: str
    args: List[Arg]
    op: str  # MLIR op(s) computing %y from the %<arg names>
    result_shape: Tuple
    reference: Callable  # dict name -> float64 array  ->  float64 array
    shapes: Sequence[Tuple[int, int]] = tuple(SHAPES)
    check: Optional[Callable] = None  # extra check(y, inputs, B, S)
    tiles: Optional[str] = None  # attn-to-cpu tile options (fused lowering)

    def ir(self):
        params = ", ".join(f"%{a.name}: {ttype(a.shape, a.dtype or self.dtype)}"
                           for a in self.args)
        rtype = ttype(self.result_shape, self.dtype)
        return (f"func.func @main({params}) -> {rtype} {{\n"
                f"  {self.op}\n"
                f"  return %y : {rtype}\n}}\n")

    def operand_types(self):
        return ", ".join(ttype(a.shape, a.dtype or self.dtype) for a in self.args)


def run_variant(tool, variant, tmp_path):
    rng = np.random.default_rng(zlib.crc32(variant.name.encode()))
    model = tmp_path / "model.mlir"
    model.write_text(variant.ir())
    lines, cases = [], []
    for batch, seq in variant.shapes:
        case_dir = tmp_path / f"b{batch}_s{seq}"
        case_dir.mkdir()
        exact, paths = {}, []
        for arg in variant.args:
            if arg.dtype in INTEGER_TYPES:
                saved = np.asarray(arg.make(rng, batch, seq),
                                   INTEGER_TYPES[arg.dtype])
                values = saved
            else:
                saved, values = quantize(arg.make(rng, batch, seq), variant.dtype)
            path = case_dir / f"{arg.name}.npy"
            np.save(path, saved)
            paths.append(str(path))
            exact[arg.name] = values
        lines.append(" ".join([str(case_dir / "out")] + paths))
        cases.append((batch, seq, exact, case_dir / "out" / "out0.npy"))
    run_list = tmp_path / "runs.txt"
    run_list.write_text("\n".join(lines) + "\n")
    options = [f"--pipeline-options={variant.tiles}"] if variant.tiles else []
    proc = subprocess.run(
        [*tool, str(model), "--entry=main", f"--run-list={run_list}", *options],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (
        f"attnfuse-run failed ({proc.returncode}):\n{proc.stderr}\nIR:\n{variant.ir()}")

    tol = TOLERANCE[variant.dtype]
    failures = []
    for batch, seq, exact, out in cases:
        y = decode(np.load(out), variant.dtype)
        ref = variant.reference(exact)
        if y.shape != ref.shape:
            failures.append(f"B={batch} S={seq}: shape {y.shape}, reference {ref.shape}")
            continue
        if not np.all(np.isfinite(y)):
            failures.append(f"B={batch} S={seq}: non-finite output")
            continue
        err = rel_err(y, ref)
        if err > tol:
            failures.append(f"B={batch} S={seq}: rel_err {err:.3e} > {tol:.0e}")
        if variant.check:
            message = variant.check(y, exact, batch, seq)
            if message:
                failures.append(f"B={batch} S={seq}: {message}")
    assert not failures, f"{variant.name}:\n" + "\n".join(failures)


# Random initializers. Weights are scaled by 1/sqrt(fan_in) so that
# activations stay O(1) and the logits stay moderate.
def normal(*shape_fn, scale=1.0):
    def make(rng, b, s):
        shape = tuple(d(b, s) if callable(d) else d for d in shape_fn)
        return rng.standard_normal(shape) * scale
    return make


def uniform(lo, hi, *shape):
    return lambda rng, b, s: rng.uniform(lo, hi, shape)


BATCH = lambda b, s: b  # noqa: E731
SEQ = lambda b, s: s  # noqa: E731


def padding_mask(rng, b, s):
    """[B, S] with 1 for real tokens: sequence 0 padded on the left, 1 on
    the right, 2 on both sides and with holes (any pattern is a mask), the
    rest by turns; up to a third of a sequence is padding on each side."""
    mask = np.ones((b, s), np.int64)
    for row in range(b):
        left = rng.integers(0, s // 3 + 1) if row % 3 != 1 else 0
        right = rng.integers(0, s // 3 + 1) if row % 3 != 0 else 0
        mask[row, :left] = 0
        mask[row, s - right:] = 0
        if row % 3 == 2:
            mask[row] &= rng.random(s) < 0.8
    return mask


def rope_attr(rope):
    theta, fraction = rope
    return f"#attn.rope<theta = {theta:.1f}, fraction = {fraction}>"


# ---------------------------------------------------------------------------
# attn.qkv_attention variants (docs/semantics.md#attnqkv_attention)
# ---------------------------------------------------------------------------


def qkv_variant(mode, hq, hk, d=4, dtype="f32", causal=True, window=None,
                rope=None, scale=None, biases=False, logit_bias=None,
                shapes=SHAPES, tag=""):
    e = 32
    lq, lk = hq * d, hk * d
    has_q = mode in ("none", "kv")
    has_v = mode in ("none", "qk")
    args = [Arg("x", (None, None, e), normal(BATCH, SEQ, e))]
    w = lambda rows: normal(rows, e, scale=e ** -0.5)  # noqa: E731
    if has_q:
        args.append(Arg("wq", (lq, e), w(lq)))
    args.append(Arg("wk", (lk, e), w(lk)))
    if has_v:
        args.append(Arg("wv", (lk, e), w(lk)))
    args.append(Arg("wo", (e, lq), normal(e, lq, scale=lq ** -0.5)))
    bias_args = []
    if biases:
        if has_q:
            bias_args.append(("bq", lq))
        bias_args.append(("bk", lk))
        if has_v:
            bias_args.append(("bv", lk))
        bias_args.append(("bo", e))
        for name, n in bias_args:
            args.append(Arg(name, (n,), normal(n, scale=0.1)))
    if logit_bias == "st":
        args.append(Arg("lb", (None, None), normal(SEQ, SEQ)))
    elif logit_bias == "hst":
        args.append(Arg("lb", (hq, None, None), normal(hq, SEQ, SEQ)))

    operands = f"<{mode}> %x"
    operands += " wq(%wq)" if has_q else ""
    operands += " wk(%wk)"
    operands += " wv(%wv)" if has_v else ""
    operands += " wo(%wo)"
    operands += "".join(f" {name}(%{name})" for name, _ in bias_args)
    operands += " logit_bias(%lb)" if logit_bias else ""
    attrs = [f"num_heads = {hq} : i64", f"num_kv_heads = {hk} : i64",
             f"head_dim = {d} : i64"]
    if causal:
        attrs.append("causal")
    if window is not None:
        attrs.append(f"window = {window} : i64")
    if rope is not None:
        attrs.append(f"rope = {rope_attr(rope)}")
    if scale is not None:
        attrs.append(f"scale = {scale} : f64")
    xtype = ttype((None, None, e), dtype)

    def reference(v):
        return R.qkv_attention(
            v["x"], mode, v["wk"], v["wo"], wq=v.get("wq"), wv=v.get("wv"),
            bq=v.get("bq"), bk=v.get("bk"), bv=v.get("bv"), bo=v.get("bo"),
            logit_bias=v.get("lb"), num_heads=hq, num_kv_heads=hk, head_dim=d,
            causal=causal, window=window,
            rope_theta=rope[0] if rope else None,
            rope_fraction=rope[1] if rope else 1.0, scale=scale)

    heads = ("MHA" if hq == hk else "MQA" if hk == 1 else f"GQA{hq // hk}")
    name = f"qkv-{mode}-{heads}{tag}-{dtype}"
    variant = Variant(name, dtype, args, "", (None, None, e), reference, shapes)
    variant.op = (f"%y = attn.qkv_attention {operands} {{{', '.join(attrs)}}}"
                  f" : ({variant.operand_types()}) -> {xtype}")
    return variant


HEADS = {"MHA": (8, 8), "GQA2": (8, 4), "GQA4": (8, 2), "MQA": (8, 1)}

QKV_VARIANTS = (
    # Every sharing mode with every head configuration it admits (qk and qkv
    # use the key as the query, so the verifier requires MHA).
    [qkv_variant(mode, *HEADS[h]) for mode in ("none", "kv") for h in HEADS]
    + [qkv_variant("qk", 8, 8), qkv_variant("qkv", 8, 8)]
    # RoPE, full and partial, on every mode; kv with RoPE on GQA/MQA.
    + [
        qkv_variant("none", 8, 8, rope=(10000.0, 1.0), tag="-rope"),
        qkv_variant("none", 8, 4, d=8, rope=(10000.0, 0.5), tag="-rope-partial"),
        qkv_variant("kv", 8, 8, rope=(10000.0, 1.0), tag="-rope"),
        qkv_variant("kv", 8, 2, rope=(10000.0, 1.0), tag="-rope"),
        qkv_variant("kv", 8, 1, d=8, rope=(500.0, 0.5), tag="-rope-partial"),
        qkv_variant("qk", 8, 8, rope=(10000.0, 0.5), tag="-rope-partial"),
        qkv_variant("qkv", 8, 8, rope=(10000.0, 1.0), tag="-rope"),
    ]
    # Masks: non-causal, sliding windows (causal and bidirectional).
    + [
        qkv_variant("none", 8, 4, causal=False, tag="-noncausal"),
        qkv_variant("kv", 8, 2, causal=False, rope=(10000.0, 1.0), tag="-noncausal-rope"),
        qkv_variant("none", 8, 8, window=4, tag="-window4"),
        qkv_variant("kv", 8, 2, window=1, tag="-window1"),
        qkv_variant("none", 8, 2, causal=False, window=3, tag="-noncausal-window3"),
    ]
    # Logit bias ((Q=K-V)+ / (Q=K=V)+), projection biases, explicit scale.
    + [
        qkv_variant("qk", 8, 8, logit_bias="st", tag="-bias-st"),
        qkv_variant("qkv", 8, 8, logit_bias="hst", tag="-bias-hst"),
        qkv_variant("kv", 8, 2, causal=False, logit_bias="hst", tag="-noncausal-bias-hst"),
        qkv_variant("none", 8, 4, biases=True, scale=0.3, tag="-biases-scale"),
        qkv_variant("qkv", 8, 8, biases=True, window=5, rope=(10000.0, 0.5),
                    tag="-biases-window-rope"),
    ]
    # bf16 and f16 (arithmetic in f32, bf16/f16 tensors between primitives).
    + [
        qkv_variant("none", 8, 8, dtype="bf16"),
        qkv_variant("kv", 8, 2, rope=(10000.0, 1.0), dtype="bf16", tag="-rope"),
        qkv_variant("kv", 8, 1, window=4, dtype="bf16", tag="-window4"),
        qkv_variant("qkv", 8, 8, logit_bias="st", rope=(10000.0, 0.5), dtype="bf16",
                    tag="-bias-rope"),
        qkv_variant("none", 8, 4, biases=True, dtype="f16", tag="-biases"),
    ]
)


# ---------------------------------------------------------------------------
# attn.cca variants (docs/semantics.md#attncca)
# ---------------------------------------------------------------------------


def cca_variant(hq, hk, d=8, kernels=(2, 2), qk_mean=True, value_shift=True,
                temperature="clamped", causal=True, window=None,
                rope=(10000.0, 0.5), dtype="f32", shapes=SHAPES, tag="",
                mask=None):
    e = 32
    lq, lk = hq * d, hk * d
    c = lq + lk
    k0, k1 = kernels
    lv = lk // 2 if value_shift else lk
    args = [
        Arg("x", (None, None, e), normal(BATCH, SEQ, e)),
        Arg("wq", (lq, e), normal(lq, e, scale=e ** -0.5)),
        Arg("wk", (lk, e), normal(lk, e, scale=e ** -0.5)),
        Arg("wv", (lv, e), normal(lv, e, scale=e ** -0.5)),
    ]
    if value_shift:
        args.append(Arg("wvp", (lv, e), normal(lv, e, scale=e ** -0.5)))
    # Raw temperatures are positive scales; clamped ones span both clamp
    # bounds of exp(clamp(t, 1e-7, 2)) in f32. In bf16 the clamped range stops
    # at t = 1 (tau <= e): the logits reach sqrt(d) * tau, and the bf16
    # rounding error of a logit grows with its size (see the module doc).
    if temperature == "raw":
        temp = uniform(0.5, 1.5, hk)
    else:
        temp = uniform(-0.5, 2.5 if dtype == "f32" else 1.0, hk)
    args += [
        Arg("dw", (c, 1, k0), normal(c, 1, k0, scale=k0 ** -0.5)),
        Arg("dwb", (c,), normal(c, scale=0.1)),
        Arg("gw", (c, d, k1), normal(c, d, k1, scale=(d * k1) ** -0.5)),
        Arg("gwb", (c,), normal(c, scale=0.1)),
        Arg("temp", (hk,), temp),
        Arg("wo", (e, lq), normal(e, lq, scale=lq ** -0.5)),
    ]
    if mask is not None:
        args.append(Arg("mask", (None, None), padding_mask, dtype=mask))
    attrs = [f"num_heads = {hq} : i64", f"num_kv_heads = {hk} : i64",
             f"head_dim = {d} : i64",
             f"conv_kernel_sizes = array<i64: {k0}, {k1}>"]
    if qk_mean:
        attrs.append("qk_mean")
    if value_shift:
        attrs.append("value_shift")
    attrs.append(f"temperature = #attn.temperature<{temperature}>")
    if causal:
        attrs.append("causal")
    if window is not None:
        attrs.append(f"window = {window} : i64")
    if rope is not None:
        attrs.append(f"rope = {rope_attr(rope)}")

    def reference(v):
        return R.cca(v["x"], v["wq"], v["wk"], v["wv"], v["dw"], v["dwb"],
                     v["gw"], v["gwb"], v["temp"], v["wo"], hq, hk, d, kernels,
                     wv_prev=v.get("wvp"), qk_mean=qk_mean,
                     value_shift=value_shift, temperature=temperature,
                     causal=causal, window=window,
                     rope_theta=rope[0] if rope else None,
                     rope_fraction=rope[1] if rope else 1.0,
                     padding_mask=v.get("mask"))

    kind = "CCA" if hq == hk else f"CCGQA{hq // hk}"
    name = (f"{kind}-k{k0}{k1}-{'mean' if qk_mean else 'nomean'}-"
            f"{'shift' if value_shift else 'noshift'}-{temperature}{tag}"
            f"{'-mask-' + mask if mask else ''}-{dtype}")
    variant = Variant(name, dtype, args, "", (None, None, e), reference, shapes)
    wvp = " wv_prev(%wvp)" if value_shift else ""
    masked = " padding_mask(%mask)" if mask else ""
    xtype = ttype((None, None, e), dtype)
    variant.op = (f"%y = attn.cca %x wq(%wq) wk(%wk) wv(%wv){wvp} conv_dw(%dw, %dwb)"
                  f" conv_g(%gw, %gwb) temp(%temp) wo(%wo){masked}"
                  f" {{{', '.join(attrs)}}}"
                  f" : ({variant.operand_types()}) -> {xtype}")
    return variant


CCA_VARIANTS = []
for _hq, _hk in ((4, 4), (4, 2)):  # CCA and CCGQA
    CCA_VARIANTS += [
        cca_variant(_hq, _hk),  # ZAYA1-like: k = (2, 2), all toggles on
        cca_variant(_hq, _hk, qk_mean=False),
        cca_variant(_hq, _hk, value_shift=False),
        cca_variant(_hq, _hk, temperature="raw"),
        cca_variant(_hq, _hk, kernels=(3, 3)),
        cca_variant(_hq, _hk, kernels=(2, 3), qk_mean=False, value_shift=False,
                    temperature="raw"),
    ]
CCA_VARIANTS += [
    cca_variant(8, 2, d=4, kernels=(3, 2), tag="-G4"),
    cca_variant(4, 2, rope=None, tag="-norope"),
    cca_variant(4, 4, rope=(10000.0, 1.0), causal=False, tag="-noncausal-ropefull"),
    cca_variant(4, 2, window=3, tag="-window3"),
    cca_variant(4, 4, dtype="bf16"),
    cca_variant(4, 2, kernels=(3, 3), temperature="raw", dtype="bf16"),
    # Padded batches (left, right, both sides and holes; see padding_mask).
    cca_variant(4, 2, mask="i64"),
    cca_variant(4, 2, window=3, kernels=(3, 2), tag="-window3", mask="i32"),
    cca_variant(4, 4, qk_mean=False, rope=None, tag="-norope", mask="i64"),
    cca_variant(4, 2, dtype="bf16", mask="i64"),
]


# ---------------------------------------------------------------------------
# Primitive ops used directly (shapes the layers never produce)
# ---------------------------------------------------------------------------


def primitive(name, dtype, args, op, result_shape, reference, shapes=SHAPES,
              check=None):
    variant = Variant(name, dtype, args, "", result_shape, reference, shapes, check)
    variant.op = op.replace("$TYPES", variant.operand_types()).replace(
        "$RESULT", ttype(result_shape, dtype))
    return variant


def _sdpa_decode():
    # S queries over T = S + 3 keys: the queries are the last S positions.
    t = lambda b, s: s + 3  # noqa: E731
    return primitive(
        "sdpa-decode-offset-window", "f32",
        [Arg("q", (None, None, 4, 8), normal(BATCH, SEQ, 4, 8)),
         Arg("k", (None, None, 2, 8), normal(BATCH, t, 2, 8)),
         Arg("v", (None, None, 2, 8), normal(BATCH, t, 2, 8))],
        "%y = attn.sdpa %q, %k, %v {causal, window = 5 : i64} : ($TYPES) -> $RESULT",
        (None, None, 4, 8),
        lambda v: R.sdpa(v["q"], v["k"], v["v"], causal=True, window=5))


def _sdpa_fully_masked():
    # T = ceil(S / 2) < S keys under a causal mask: query i sees j <= i + T - S,
    # so the first S - T rows see nothing and must be exactly zero.
    t = lambda b, s: (s + 1) // 2  # noqa: E731

    def check(y, inputs, b, s):
        masked = s - (s + 1) // 2
        if masked and np.any(y[:, :masked] != 0.0):
            return f"the {masked} fully masked rows are not all zero"
        return None

    return primitive(
        "sdpa-fully-masked-rows", "f32",
        [Arg("q", (None, None, 2, 4), normal(BATCH, SEQ, 2, 4)),
         Arg("k", (None, None, 2, 4), normal(BATCH, t, 2, 4)),
         Arg("v", (None, None, 2, 4), normal(BATCH, t, 2, 4))],
        "%y = attn.sdpa %q, %k, %v {causal} : ($TYPES) -> $RESULT",
        (None, None, 2, 4),
        lambda v: R.sdpa(v["q"], v["k"], v["v"], causal=True), check=check)


def _sdpa_key_mask():
    # GQA-2, causal with a window, keys masked by a padding mask: the rows
    # whose visible keys are all padding give zeros.
    return primitive(
        "sdpa-gqa2-causal-window4-key-mask", "f32",
        [Arg("q", (None, None, 4, 8), normal(BATCH, SEQ, 4, 8)),
         Arg("k", (None, None, 2, 8), normal(BATCH, SEQ, 2, 8)),
         Arg("v", (None, None, 2, 8), normal(BATCH, SEQ, 2, 8)),
         Arg("mask", (None, None), padding_mask, dtype="i32")],
        "%y = attn.sdpa %q, %k, %v key_mask(%mask) {causal, window = 4 : i64}"
        " : ($TYPES) -> $RESULT",
        (None, None, 4, 8),
        lambda v: R.sdpa(v["q"], v["k"], v["v"], causal=True, window=4,
                         key_mask=v["mask"]))


def _sdpa_bias_dv():
    # Per-head bias, explicit scale, value dim (6) != head dim (8), MQA, no mask.
    return primitive(
        "sdpa-bias-hst-scale-dv6-MQA", "f32",
        [Arg("q", (None, None, 4, 8), normal(BATCH, SEQ, 4, 8)),
         Arg("k", (None, None, 1, 8), normal(BATCH, SEQ, 1, 8)),
         Arg("v", (None, None, 1, 6), normal(BATCH, SEQ, 1, 6)),
         Arg("bias", (4, None, None), normal(4, SEQ, SEQ))],
        "%y = attn.sdpa %q, %k, %v bias(%bias) {scale = 0.2 : f64} : ($TYPES) -> $RESULT",
        (None, None, 4, 6),
        lambda v: R.sdpa(v["q"], v["k"], v["v"], bias=v["bias"], scale=0.2))


def _sdpa_bf16():
    return primitive(
        "sdpa-gqa2-causal-bf16", "bf16",
        [Arg("q", (None, None, 4, 8), normal(BATCH, SEQ, 4, 8)),
         Arg("k", (None, None, 2, 8), normal(BATCH, SEQ, 2, 8)),
         Arg("v", (None, None, 2, 8), normal(BATCH, SEQ, 2, 8))],
        "%y = attn.sdpa %q, %k, %v {causal} : ($TYPES) -> $RESULT",
        (None, None, 4, 8),
        lambda v: R.sdpa(v["q"], v["k"], v["v"], causal=True))


def _conv(groups, padding, kernel, bias):
    c = 8
    out_seq = lambda b, s: s + padding - (kernel - 1)  # noqa: E731
    args = [Arg("u", (None, None, c), normal(BATCH, SEQ, c)),
            Arg("w", (c, c // groups, kernel), normal(c, c // groups, kernel))]
    if bias:
        args.append(Arg("b", (c,), normal(c)))
    operands = "%u, %w, %b" if bias else "%u, %w"
    shapes = [(b, s) for b, s in SHAPES if out_seq(b, s) >= 0]
    return primitive(
        f"causal_conv1d-g{groups}-p{padding}-k{kernel}{'-bias' if bias else ''}",
        "f32", args,
        f"%y = attn.causal_conv1d {operands} {{groups = {groups} : i64, "
        f"padding = {padding} : i64}} : ($TYPES) -> $RESULT",
        (None, None, c),
        lambda v: R.causal_conv1d(v["u"], v["w"], v.get("b"), groups, padding),
        shapes=shapes)


def _qk_mean_norm():
    # qk_mean then qk_norm with clamped temperatures, G = 3, eps = 1e-6.
    def reference(v):
        g = 3
        qc, kc, qr, kr = v["qc"], v["kc"], v["qr"], v["kr"]
        q = qc + 0.5 * qr + 0.5 * np.repeat(kr, g, axis=2)
        k = kc + 0.5 * qr.reshape(qr.shape[0], qr.shape[1], 2, g, 4).mean(axis=3) + 0.5 * kr
        tau = np.exp(np.clip(v["temp"], 1e-7, 2.0))
        q = 2.0 * q / np.sqrt((q * q).sum(-1, keepdims=True) + 1e-6)
        k = 2.0 * k / np.sqrt((k * k).sum(-1, keepdims=True) + 1e-6) * tau[:, None]
        # Return both results side by side: [B, S, 6 + 2, 4].
        return np.concatenate([q, k], axis=2)

    qt, kt = "tensor<?x?x6x4xf32>", "tensor<?x?x2x4xf32>"
    return primitive(
        "qk_mean-qk_norm-G3-clamped", "f32",
        [Arg("qc", (None, None, 6, 4), normal(BATCH, SEQ, 6, 4)),
         Arg("kc", (None, None, 2, 4), normal(BATCH, SEQ, 2, 4)),
         Arg("qr", (None, None, 6, 4), normal(BATCH, SEQ, 6, 4)),
         Arg("kr", (None, None, 2, 4), normal(BATCH, SEQ, 2, 4)),
         Arg("temp", (2,), lambda rng, b, s: np.array([-0.3, 2.7]))],
        f"%q, %k = attn.qk_mean %qc, %kc, %qr, %kr : {qt}, {kt}\n"
        f"  %qn, %kn = attn.qk_norm %q, %k, %temp {{temperature = #attn.temperature<clamped>,"
        f" eps = 1.0e-6 : f64}} : {qt}, {kt}, tensor<2xf32>\n"
        f"  %y = tensor.concat dim(2) %qn, %kn : ({qt}, {kt}) -> tensor<?x?x8x4xf32>",
        (None, None, 8, 4), reference)


def _value_shift():
    def reference(v):
        prev = np.concatenate([np.zeros_like(v["p"][:, :1]), v["p"][:, :-1]], axis=1)
        return np.concatenate([v["c"], prev], axis=-1)

    return primitive(
        "value_shift", "f32",
        [Arg("c", (None, None, 6), normal(BATCH, SEQ, 6)),
         Arg("p", (None, None, 6), normal(BATCH, SEQ, 6))],
        "%y = attn.value_shift %c, %p : ($TYPES) -> $RESULT",
        (None, None, 12), reference)


def _rope(theta, fraction, dtype):
    return primitive(
        f"rope-theta{int(theta)}-f{fraction}-{dtype}", dtype,
        [Arg("x", (None, None, 3, 16), normal(BATCH, SEQ, 3, 16))],
        f"%y = attn.rope %x {{rope = {rope_attr((theta, fraction))}}} : $RESULT",
        (None, None, 3, 16), lambda v: R.rope(v["x"], theta, fraction))


def _project_bf16():
    return primitive(
        "project-bias-bf16", "bf16",
        [Arg("x", (None, None, 24), normal(BATCH, SEQ, 24)),
         Arg("w", (10, 24), normal(10, 24, scale=24 ** -0.5)),
         Arg("b", (10,), normal(10))],
        "%y = attn.project %x, %w, %b : ($TYPES) -> $RESULT",
        (None, None, 10), lambda v: R.linear(v["x"], v["w"], v["b"]))


PRIMITIVE_VARIANTS = [
    _sdpa_decode(), _sdpa_fully_masked(), _sdpa_key_mask(), _sdpa_bias_dv(),
    _sdpa_bf16(),
    _conv(groups=2, padding=2, kernel=3, bias=True),
    _conv(groups=8, padding=4, kernel=2, bias=False),
    _conv(groups=1, padding=0, kernel=1, bias=True),
    _qk_mean_norm(), _value_shift(),
    _rope(10000.0, 1.0, "f32"), _rope(500.0, 0.25, "f32"), _rope(10000.0, 0.5, "bf16"),
    _project_bf16(),
]

# ---------------------------------------------------------------------------
# Tile boundaries of the fused kernels
# ---------------------------------------------------------------------------

# Small tiles, and sequences just below, at and above their multiples: the
# last query and key tiles are partial, causal diagonals and windows cross
# tile edges, and the convolution halo (P = 4 for k = (3, 3)) and the value
# shift reach into the previous token tile.
SMALL_TILES = "block-q=8 block-kv=16 block-s=8 block-n=16 block-k=16"
TILE_SHAPES = [(1, 7), (1, 8), (2, 9), (1, 15), (1, 16), (2, 17), (1, 33)]


def _tiled(variant):
    variant.name += "-tiles"
    variant.tiles = SMALL_TILES
    variant.shapes = TILE_SHAPES
    return variant


TILE_VARIANTS = [
    _tiled(qkv_variant("kv", 8, 2, window=5, rope=(10000.0, 1.0), tag="-window5-rope")),
    _tiled(qkv_variant("none", 8, 8, causal=False, window=6, logit_bias="st",
                       tag="-noncausal-window6-bias")),
    _tiled(qkv_variant("qkv", 8, 8, d=8, rope=(10000.0, 0.5), logit_bias="hst",
                       biases=True, tag="-rope-bias")),
    _tiled(qkv_variant("qk", 4, 4, d=8, rope=(10000.0, 1.0), causal=False, tag="-rope")),
    _tiled(qkv_variant("kv", 8, 1, d=8, rope=(500.0, 0.5), dtype="bf16", tag="-rope")),
    _tiled(cca_variant(4, 4, kernels=(3, 3))),
    _tiled(cca_variant(4, 2, window=6, temperature="raw", tag="-window6")),
    _tiled(cca_variant(4, 2, kernels=(2, 3), dtype="bf16")),
    _tiled(cca_variant(4, 2, kernels=(3, 3), window=6, tag="-window6",
                       mask="i64")),
]

ALL_VARIANTS = QKV_VARIANTS + CCA_VARIANTS + PRIMITIVE_VARIANTS + TILE_VARIANTS


def test_variant_names_are_unique():
    names = [v.name for v in ALL_VARIANTS]
    assert len(names) == len(set(names)), [n for n in names if names.count(n) > 1]


@pytest.mark.parametrize("variant", ALL_VARIANTS, ids=lambda v: v.name)
def test_numerics(attnfuse_run, variant, tmp_path):
    if variant.tiles and "--reference" in attnfuse_run:
        pytest.skip("tile sizes only shape the fused lowering")
    run_variant(attnfuse_run, variant, tmp_path)
