"""attn.sdpa kernel (SIMT, f32 online softmax) on the emulator through the runtime, against
reference.sdpa (float64 numpy): GQA and MQA, causal with and without positions, windows, key
masks, bias, explicit scales, odd query and key counts, value dims that are not multiples of 32.

attnfuse-compile fuses every attn.sdpa without positions into attn.flash_attention, so the
kernel is reached (and tested here) with a positions operand; queries "at the end of the keys"
are positions[b] = T - S.

Tolerance: as for FlashAttention (test_flash_attention.py): scores and P.V are f32 on bf16
inputs and the output is rounded once to bf16: |got - ref| <= 2^-7 max|v| + 2^-8 |ref|.
"""
import numpy as np
import pytest

import emulator
import reference


def model(hq, hk, d, dv, causal, window, scale, bias, positions, key_mask):
    q = f"tensor<?x?x{hq}x{d}xbf16>"
    k = f"tensor<?x?x{hk}x{d}xbf16>"
    v = f"tensor<?x?x{hk}x{dv}xbf16>"
    o = f"tensor<?x?x{hq}x{dv}xbf16>"
    args, types, ops = ["%q: " + q, "%k: " + k, "%v: " + v], [q, k, v], ""
    if bias:
        bt = "tensor<?x?xbf16>" if bias == 2 else f"tensor<{hq}x?x?xbf16>"
        args.append("%b: " + bt)
        types.append(bt)
        ops += " bias(%b)"
    if positions:
        args.append(f"%p: tensor<?x{positions}>")
        types.append(f"tensor<?x{positions}>")
        ops += " positions(%p)"
    if key_mask:
        args.append(f"%m: tensor<?x?x{key_mask}>")
        types.append(f"tensor<?x?x{key_mask}>")
        ops += " key_mask(%m)"
    attrs = []
    if causal:
        attrs.append("causal")
    if window:
        attrs.append(f"window = {window} : i64")
    if scale:
        attrs.append(f"scale = {scale} : f64")
    attr = ("{" + ", ".join(attrs) + "}") if attrs else ""
    return f"""
func.func @sdpa({", ".join(args)}) -> {o} {{
  %o = attn.sdpa %q, %k, %v{ops} {attr} : ({", ".join(types)}) -> {o}
  return %o : {o}
}}
"""


def run(batch, s, t, hq, hk, d, dv=None, causal=False, window=None, scale=None, bias=None,
        positions=None, pos_type="i32", key_mask=None, seed=0):
    dv = dv or d
    text = model(hq, hk, d, dv, causal, window, scale, bias,
                 pos_type if positions is not None else None,
                 "i32" if key_mask is not None else None)
    art = emulator.compile_model(text, f"sdpa_h{hq}_{hk}_d{d}")
    (kernel,) = art.kernels
    assert art.manifest["kernels"][0]["kind"] == "sdpa"
    rng = np.random.default_rng(seed)
    qb, q = emulator.bf16(rng.standard_normal((batch, s, hq, d)))
    kb, k = emulator.bf16(rng.standard_normal((batch, t, hk, d)))
    vb, v = emulator.bf16(rng.standard_normal((batch, t, hk, dv)))
    dev = emulator.Device()
    tensors = {"query": dev.upload(qb, "bf16"), "key": dev.upload(kb, "bf16"),
               "value": dev.upload(vb, "bf16"), "output": dev.empty((batch, s, hq, dv), "bf16")}
    bias_v = None
    if bias:
        bb, bias_v = emulator.bf16(rng.standard_normal((s, t) if bias == 2 else (hq, s, t)))
        tensors["bias"] = dev.upload(bb, "bf16")
    if positions is not None:
        tensors["positions"] = dev.upload(
            np.asarray(positions, np.int32 if pos_type == "i32" else np.int64), pos_type)
    if key_mask is not None:
        tensors["key_mask"] = dev.upload(np.asarray(key_mask, np.int32), "i32")
    art.launch(kernel, tensors, B=batch, S=s, T=t)
    got = reference.from_bf16_bits(dev.download(tensors["output"])).astype(np.float64)
    ref = reference.sdpa(q, k, v, bias=bias_v, causal=causal, window=window, scale=scale,
                         key_mask=key_mask, positions=positions)
    return got, ref, np.abs(v).max()


def check(got, ref, vmax):
    assert np.all(np.isfinite(got))
    err = np.abs(got - ref)
    assert np.all(err <= 2.0 ** -7 * vmax + 2.0 ** -8 * np.abs(ref)), err.max()


@pytest.mark.parametrize("pos_type", ["i32", "i64"])
def test_causal_positions_gqa4_over_cache(pos_type):
    # The paged decoder's prefill: 19 new queries per sequence at positions[b] + i over a
    # gathered cache of 64 rows; the rows past each sequence's last query are never visible.
    check(*run(batch=2, s=19, t=64, hq=8, hk=2, d=64, causal=True, positions=[0, 30],
               pos_type=pos_type))


def test_causal_self_attention_odd_lengths_mqa():
    check(*run(batch=1, s=37, t=37, hq=4, hk=1, d=64, causal=True, positions=[0], seed=1))


def test_causal_window_suffix_queries():
    # The last S of T positions (query i at i + T - S); window 7; head dim 32.
    check(*run(batch=2, s=5, t=45, hq=4, hk=2, d=32, causal=True, window=7, positions=[40, 40],
               seed=2))


def test_window_positions_d128_value_dim_40():
    check(*run(batch=2, s=9, t=70, hq=2, hk=2, d=128, dv=40, causal=True, window=20,
               positions=[3, 61], seed=3))


def test_key_mask_noncausal_and_fully_masked_sequence():
    mask = np.ones((3, 33), np.int32)
    mask[0, :5] = 0      # left padding
    mask[1, 20:] = 0     # right padding
    mask[2, :] = 0       # nothing visible: zero rows
    got, ref, vmax = run(batch=3, s=6, t=33, hq=4, hk=1, d=64, key_mask=mask,
                         positions=[0, 7, 27], seed=4)
    check(got, ref, vmax)
    assert np.all(got[2] == 0)


@pytest.mark.parametrize("bias", [2, 3])
def test_bias_and_scale(bias):
    check(*run(batch=1, s=17, t=17, hq=4, hk=2, d=64, causal=True, bias=bias, scale=0.2,
               positions=[0], seed=5 + bias))
