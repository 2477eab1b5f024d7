"""The backward of the flash attention kernel (attn.flash_attention_grad on sm_90a: the dQ kernel,
which also writes D = rowsum(dO * O), then the dK/dV kernel) run on the emulator through the
runtime, against a dense float64 backward written here from docs/semantics.md, and the forward
kernel's log-sum-exp result against the float64 one.

Tolerance: Q, K, V, O and dO are bf16 (exact in the f64 reference). The kernels round P and dS to
bf16 as wgmma A operands (relative 2^-9 each), take exp2 with ex2.approx, accumulate in f32 and
round each gradient once to bf16 (2^-9 relative). We accept
|got - ref| <= 2^-6 max(max|ref|, 2^-4) + 2^-7 |ref| per gradient (the floor: a gradient that
cancels to 0, such as dQ of a row with one visible key).
"""
import numpy as np
import pytest

import emulator
import reference


def model(hq, hk, d, causal, window, keqv, mask):
    attrs = ["block_q = 64 : i64", "block_kv = 64 : i64"]
    if causal:
        attrs.insert(0, "causal")
    if window:
        attrs.append(f"window = {window} : i64")
    q_ty, kv_ty = f"tensor<?x?x{hq}x{d}xbf16>", f"tensor<?x?x{hk}x{d}xbf16>"
    kv_args = f"%k: {kv_ty}" + ("" if keqv else f", %v: {kv_ty}")
    kv_use = "%k" if keqv else "%k, %v"
    kv_types = kv_ty if keqv else f"{kv_ty}, {kv_ty}"
    mask_arg = mask_use = mask_ty = ""
    if mask:
        mask_arg, mask_use, mask_ty = (f", %m: tensor<?x?x{mask}>", " key_mask(%m)",
                                       f", tensor<?x?x{mask}>")
    outs = "%dq0, %dk0" + ("" if keqv else ", %dk0")
    results = f"{q_ty}, {kv_ty}" + ("" if keqv else f", {kv_ty}")
    names = "%dq, %dk" + ("" if keqv else ", %dv")
    return f"""
func.func @grad(%q: {q_ty}, {kv_args}, %o: {q_ty}, %do: {q_ty}{mask_arg},
                %l: tensor<?x?x{hq}xf32>) -> ({results}) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tensor.dim %q, %c0 : {q_ty}
  %s = tensor.dim %q, %c1 : {q_ty}
  %t = tensor.dim %k, %c1 : {kv_ty}
  %dq0 = tensor.empty(%b, %s) : {q_ty}
  %dk0 = tensor.empty(%b, %t) : {kv_ty}
  {names} = attn.flash_attention_grad %q, {kv_use}, %o, %do{mask_use} lse(%l)
      outs({outs}) {{{", ".join(attrs)}}}
      : ({q_ty}, {kv_types}, {q_ty}, {q_ty}{mask_ty}, tensor<?x?x{hq}xf32>, {results})
      -> ({results})
  return {names} : {results}
}}
"""


def visible(bsz, s, t, causal, window, key_mask):
    """[B, S, T]: whether query i (at key position i + T - S) sees key j."""
    p = np.arange(s)[:, None] + (t - s)
    j = np.arange(t)[None, :]
    keep = np.ones((s, t), bool)
    if causal:
        keep &= j <= p
    if window:
        keep &= p - j < window
    keep = np.broadcast_to(keep, (bsz, s, t)).copy()
    if key_mask is not None:
        keep &= (key_mask != 0)[:, None, :]
    return keep


def run_grad(hq, hk, d, s, t, causal=False, window=None, keqv=False, mask=None, batch=1, seed=0):
    art = emulator.compile_model(model(hq, hk, d, causal, window, keqv, mask), f"fag_h{hq}_{hk}")
    dq_kernel = next(k for k in art.kernels if k.startswith("attn_fa_dq"))
    dkv_kernel = next(k for k in art.kernels if k.startswith("attn_fa_dkv"))
    rng = np.random.default_rng(seed)
    qb, q = emulator.bf16(rng.standard_normal((batch, s, hq, d)))
    kb, k = emulator.bf16(rng.standard_normal((batch, t, hk, d)))
    vb, v = (kb, k) if keqv else emulator.bf16(rng.standard_normal((batch, t, hk, d)))
    dob, do = emulator.bf16(rng.standard_normal((batch, s, hq, d)))
    key_mask = None
    if mask:
        key_mask = (rng.random((batch, t)) < 0.8).astype(np.int64)
        key_mask[:, 0] = 1
    keep = visible(batch, s, t, causal, window, key_mask)
    scale = 1.0 / np.sqrt(d)
    o, lse, _, _, _, _ = reference.sdpa_backward(q, k, v, do, keep, scale)
    # The forward's output as the kernel stores it (bf16), and the gradients of that output.
    ob, o = emulator.bf16(o)
    dev = emulator.Device()
    tensors = {"query": dev.upload(qb, "bf16"), "key": dev.upload(kb, "bf16"),
               "output": dev.upload(ob, "bf16"), "output_grad": dev.upload(dob, "bf16"),
               "lse": dev.upload(lse.astype(np.float32), "f32")}
    if not keqv:
        tensors["value"] = dev.upload(vb, "bf16")
    if mask:
        tensors["key_mask"] = dev.upload(key_mask.astype(np.int32 if mask == "i32" else np.int64),
                                         mask)
    tensors["query_grad"] = dev.empty((batch, s, hq, d), "bf16")
    tensors["delta"] = dev.empty((batch, s, hq), "f32")
    art.launch(dq_kernel, dict(tensors), B=batch, S=s, T=t)
    tensors["key_grad"] = dev.empty((batch, t, hk, d), "bf16")
    if not keqv:
        tensors["value_grad"] = dev.empty((batch, t, hk, d), "bf16")
    art.launch(dkv_kernel, {n: x for n, x in tensors.items() if n not in ("output", "query_grad")},
               B=batch, S=s, T=t)
    got = {name: reference.from_bf16_bits(dev.download(tensors[name])).astype(np.float64)
           for name in ("query_grad", "key_grad") + (() if keqv else ("value_grad",))}
    got["delta"] = dev.download(tensors["delta"]).astype(np.float64)
    # The reference of the gradients the kernels compute: with the bf16 O (as D reads it).
    _, _, delta, dq, dk, dv = reference.sdpa_backward(q, k, v, do, keep, scale, output=o)
    ref = {"query_grad": dq, "key_grad": dk + dv if keqv else dk, "delta": delta}
    if not keqv:
        ref["value_grad"] = dv
    return got, ref


def check(got, ref):
    for name, r in ref.items():
        g = got[name]
        assert np.all(np.isfinite(g)), f"{name}: unwritten or NaN/inf"
        err = np.abs(g - r)
        tol = 2.0 ** -6 * max(np.abs(r).max(), 2.0 ** -4) + 2.0 ** -7 * np.abs(r)
        bad = err > tol
        assert not bad.any(), (f"{name}: {bad.sum()} of {bad.size} off; worst |err| "
                               f"{err.max():.4g} at {np.unravel_index(err.argmax(), err.shape)} "
                               f"(max |ref| {np.abs(r).max():.4g})")


@pytest.mark.parametrize("s", [1, 70, 129])
def test_mha_d64(s):
    check(*run_grad(hq=2, hk=2, d=64, s=s, t=s, seed=s))


@pytest.mark.parametrize("s", [64, 127, 200])
def test_gqa2_d128_causal_keqv(s):
    """Head dim 128, K=V: one dKV accumulator of 64 f32 per thread."""
    check(*run_grad(hq=4, hk=2, d=128, s=s, t=s, causal=True, keqv=True, seed=s))


@pytest.mark.parametrize(
    "hq,hk,s,t,causal,mask,batch",
    [(2, 2, 70, 70, False, None, 1), (4, 1, 100, 170, True, "i64", 2),
     (8, 1, 129, 129, True, None, 1)],
    ids=["mha-partial", "g4-s-ne-t-mask", "g8-causal"])
def test_d128_separate_kv(hq, hk, s, t, causal, mask, batch):
    """Head dim 128 with separate dK and dV accumulators (64 + 64 f32 per thread): the
    Llama shape. The row statistics reach the columns through shared memory."""
    check(*run_grad(hq=hq, hk=hk, d=128, s=s, t=t, causal=causal, mask=mask, batch=batch,
                    seed=s + t))


@pytest.mark.parametrize("d,hq,hk,s,t,keqv,mask", [
    (96, 2, 2, 70, 70, False, None), (96, 4, 1, 100, 170, True, "i64"),
    (80, 2, 1, 65, 65, False, None), (32, 4, 2, 129, 129, True, None)],
    ids=["d96-mha", "d96-keqv-g4-mask", "d80-g2", "d32-keqv"])
def test_head_dims_padded_to_64_column_slabs(d, hq, hk, s, t, keqv, mask):
    """Head dims off 64 and 128 compute on whole 64-column slabs that TMA zero-fills past the
    tensor's columns; the stores of dQ, dK and dV clip them, and D reads the real columns."""
    check(*run_grad(hq=hq, hk=hk, d=d, s=s, t=t, causal=True, keqv=keqv, mask=mask,
                    batch=2 if mask else 1, seed=d + s))


@pytest.mark.parametrize("hq,hk", [(4, 1), (8, 1), (16, 2)], ids=["g4", "g8", "g8-hk2"])
def test_groups(hq, hk):
    """GQA / MQA: the dK/dV kernel sums every query head of the group (packed into its tiles)."""
    check(*run_grad(hq=hq, hk=hk, d=64, s=90, t=90, causal=True, seed=hq))


@pytest.mark.parametrize("s,t", [(70, 200), (129, 150), (1, 130)])
def test_s_ne_t_causal(s, t):
    check(*run_grad(hq=2, hk=1, d=64, s=s, t=t, causal=True, seed=s + t))


@pytest.mark.parametrize("d", [64, 128])
def test_shared_key_value(d):
    """K=V: one gradient for the shared tensor, dK + dV summed in one accumulator."""
    check(*run_grad(hq=4, hk=2, d=d, s=150, t=150, causal=True, keqv=True, seed=d))


def test_window_batch():
    check(*run_grad(hq=2, hk=2, d=64, s=200, t=200, causal=True, window=48, batch=2, seed=5))


@pytest.mark.parametrize("mask", ["i32", "i64"])
def test_key_mask(mask):
    """A padded batch: masked keys get no gradient, and pass none to the queries."""
    check(*run_grad(hq=4, hk=2, d=64, s=100, t=100, causal=False, mask=mask, batch=2, seed=9))


def test_forward_lse():
    """attn.flash_attention with an lse result: the forward kernel stores each row's
    log-sum-exp of its scaled scores (what the backward reads), -inf for a row without keys."""
    hq, hk, d, s = 4, 2, 64, 130
    text = f"""
func.func @fa(%q: tensor<?x?x{hq}x{d}xbf16>, %k: tensor<?x?x{hk}x{d}xbf16>,
              %v: tensor<?x?x{hk}x{d}xbf16>, %m: tensor<?x?xi64>)
    -> (tensor<?x?x{hq}x{d}xbf16>, tensor<?x?x{hq}xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tensor.dim %q, %c0 : tensor<?x?x{hq}x{d}xbf16>
  %s = tensor.dim %q, %c1 : tensor<?x?x{hq}x{d}xbf16>
  %init = tensor.empty(%b, %s) : tensor<?x?x{hq}x{d}xbf16>
  %linit = tensor.empty(%b, %s) : tensor<?x?x{hq}xf32>
  %o, %l = attn.flash_attention %q, %k, %v key_mask(%m) outs(%init, %linit)
      {{causal, block_q = 64 : i64, block_kv = 64 : i64}}
      : (tensor<?x?x{hq}x{d}xbf16>, tensor<?x?x{hk}x{d}xbf16>, tensor<?x?x{hk}x{d}xbf16>,
         tensor<?x?xi64>, tensor<?x?x{hq}x{d}xbf16>, tensor<?x?x{hq}xf32>)
      -> (tensor<?x?x{hq}x{d}xbf16>, tensor<?x?x{hq}xf32>)
  return %o, %l : tensor<?x?x{hq}x{d}xbf16>, tensor<?x?x{hq}xf32>
}}
"""
    art = emulator.compile_model(text, "fa_lse")
    kernel = next(k for k in art.kernels if k.startswith("attn_fa"))
    assert kernel.endswith("_lse"), kernel
    rng = np.random.default_rng(3)
    qb, q = emulator.bf16(rng.standard_normal((1, s, hq, d)))
    kb, k = emulator.bf16(rng.standard_normal((1, s, hk, d)))
    vb, v = emulator.bf16(rng.standard_normal((1, s, hk, d)))
    key_mask = np.ones((1, s), np.int64)
    key_mask[0, :5] = 0  # queries 0-4 see no key
    dev = emulator.Device()
    tensors = {"query": dev.upload(qb, "bf16"), "key": dev.upload(kb, "bf16"),
               "value": dev.upload(vb, "bf16"), "key_mask": dev.upload(key_mask, "i64"),
               "output": dev.empty((1, s, hq, d), "bf16"), "lse": dev.empty((1, s, hq), "f32")}
    art.launch(kernel, tensors, B=1, S=s, T=s)
    got = dev.download(tensors["lse"]).astype(np.float64)
    keep = visible(1, s, s, True, None, key_mask)
    o, lse, *_ = reference.sdpa_backward(q, k, v, np.zeros_like(q), keep, 1.0 / np.sqrt(d))
    assert np.all(np.isneginf(got[0, :5])), got[0, :5]
    assert np.all(np.isneginf(lse[0, :5]))
    err = np.abs(got[0, 5:] - lse[0, 5:])
    assert err.max() < 1e-3, f"worst lse error {err.max():.3g}"
    out = reference.from_bf16_bits(dev.download(tensors["output"])).astype(np.float64)
    assert np.abs(out - o).max() <= 2.0 ** -7 * np.abs(v).max() + 2.0 ** -8 * np.abs(o).max()
