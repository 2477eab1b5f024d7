"""attn.qk_mean and attn.qk_mean_grad kernels (GQA groups 1, 2, 4; batch 1 and 3) on the emulator
through the runtime, against float64 formulas written here from the ops' definitions (G = Hq / Hk):
  q[h] = q_conv[h] + 0.5 q_raw[h] + 0.5 k_raw[h / G],
  k[j] = k_conv[j] + 0.5 mean_{h / G = j} q_raw[h] + 0.5 k_raw[j];
  dq_raw[h] = 0.5 dq[h] + 0.5 / G dk[h / G],  dk_raw[j] = 0.5 sum_{h / G = j} dq[h] + 0.5 dk[j].

Tolerance: bf16 inputs (exact in float64), a few f32 operations and one rounding to bf16:
|got - ref| <= 2^-8 |ref| + 2^-20 (sum of the absolute terms).
"""
import numpy as np
import pytest

import emulator
import reference


def model(hq, hk, d, grad):
    q, k = f"tensor<?x?x{hq}x{d}xbf16>", f"tensor<?x?x{hk}x{d}xbf16>"
    if grad:
        return f"""
func.func @mean_grad(%dq: {q}, %dk: {k}) -> ({q}, {k}) {{
  %dqr, %dkr = attn.qk_mean_grad %dq, %dk : {q}, {k}
  return %dqr, %dkr : {q}, {k}
}}
"""
    return f"""
func.func @mean(%qc: {q}, %kc: {k}, %qr: {q}, %kr: {k}) -> ({q}, {k}) {{
  %q, %k = attn.qk_mean %qc, %kc, %qr, %kr : {q}, {k}
  return %q, %k : {q}, {k}
}}
"""


def expected(inputs, group, grad):
    """float64 results and bounds (sums of absolute terms)."""
    if grad:
        dq, dk = inputs
        kv = np.repeat(dk, group, axis=2)
        q = 0.5 * dq + 0.5 / group * kv
        q_bound = 0.5 * np.abs(dq) + 0.5 / group * np.abs(kv)
        b, s, hq, d = dq.shape
        grouped = dq.reshape(b, s, hq // group, group, d)
        k = 0.5 * grouped.sum(axis=3) + 0.5 * dk
        k_bound = 0.5 * np.abs(grouped).sum(axis=3) + 0.5 * np.abs(dk)
        return (q, q_bound), (k, k_bound)
    qc, kc, qr, kr = inputs
    kv = np.repeat(kr, group, axis=2)
    q = qc + 0.5 * qr + 0.5 * kv
    q_bound = np.abs(qc) + 0.5 * np.abs(qr) + 0.5 * np.abs(kv)
    b, s, hq, d = qr.shape
    grouped = qr.reshape(b, s, hq // group, group, d)
    k = kc + 0.5 * grouped.mean(axis=3) + 0.5 * kr
    k_bound = np.abs(kc) + 0.5 * np.abs(grouped).mean(axis=3) + 0.5 * np.abs(kr)
    return (q, q_bound), (k, k_bound)


@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("batch,tokens,hq,hk,d", [
    (2, 37, 4, 2, 64),    # the CCA test layer's heads
    (1, 5, 8, 2, 128),    # ZAYA1's
    (3, 9, 2, 2, 32),     # G 1
])
def test_qk_mean(batch, tokens, hq, hk, d, grad):
    art = emulator.compile_model(model(hq, hk, d, grad),
                                 f"qk_mean{'_grad' if grad else ''}_h{hq}_k{hk}_d{d}")
    (kernel,) = art.kernels
    rng = np.random.default_rng(hq + d + grad)
    shapes = [(batch, tokens, hq, d), (batch, tokens, hk, d)]
    names = ["q_grad", "k_grad"] if grad else ["q_conv", "k_conv", "q_raw", "k_raw"]
    dev = emulator.Device()
    tensors, inputs = {}, []
    for i, name in enumerate(names):
        bits, values = emulator.bf16(rng.standard_normal(shapes[i % 2]))
        tensors[name] = dev.upload(bits, "bf16")
        inputs.append(values)
    outs = ["q_raw_grad", "k_raw_grad"] if grad else ["query", "key"]
    for name, shape in zip(outs, shapes):
        tensors[name] = dev.empty(shape, "bf16")
    art.launch(kernel, tensors, B=batch, S=tokens, T=1)
    for name, (ref, bound) in zip(outs, expected(inputs, hq // hk, grad)):
        got = reference.from_bf16_bits(dev.download(tensors[name])).astype(np.float64)
        err = np.abs(got - ref)
        assert (err <= 2.0 ** -8 * np.abs(ref) + 2.0 ** -20 * bound + 1e-7).all(), \
            (name, err.max())
