"""attn.qk_norm's kernel and attn.qk_norm_grad's two kernels on the emulator through the runtime
(the norm; the head rows' gradients with each key row's temperature share, then the temperature
gradient summed per key head), against float64 values written here from the ops' definitions:
  y = sqrt(d) x / n(x) (times tau for keys), n = sqrt(|x|^2 + eps) or max(|x|, eps);
  dx = sqrt(d) / n (g - x (x . g) / n^2), g = dy (dy tau for keys), and sqrt(d) g / eps where
  the clamp max(|x|, eps) holds; dtau[j] = sum_{b,t,i} dk_out sqrt(d) k / n(k); dtemp = dtau
  (<raw>) or dtau tau inside [1e-7, 2] and 0 outside (<clamped>, tau = exp(clamp(temp))).

Tolerance: the inputs are bf16 and the reference runs on their exact values; each head row of
a result is compared to 2^-7 of its own largest magnitude (one bf16 rounding plus f32 sums), the
temperature gradient to 2^-7 of itself. Row (0, 0) of the queries is zero, so the clamp (or the
eps under the root) decides its value and gradient, and row (0, 1) is shorter than the clamp's
eps.
"""
import numpy as np
import pytest

import emulator
import reference

SQRT_EPS, CLAMP_EPS = 1e-6, 1.1920929e-07


def types_and_attrs(hq, hk, d, clamped, clamp_eps):
    """The q, k and temp types, and the norm's attribute dictionary."""
    types = (f"tensor<?x?x{hq}x{d}xbf16>", f"tensor<?x?x{hk}x{d}xbf16>", f"tensor<{hk}xbf16>")
    attrs = [f"eps = {CLAMP_EPS if clamp_eps else SQRT_EPS:e} : f64"]
    if clamped:
        attrs.append("temperature = #attn.temperature<clamped>")
    if clamp_eps:
        attrs.append("norm = #attn.norm<clamp_eps>")
    return types, "{" + ", ".join(attrs) + "}"


def model(hq, hk, d, clamped, clamp_eps):
    (q, k, t), attrs = types_and_attrs(hq, hk, d, clamped, clamp_eps)
    return f"""
func.func @norm_grad(%q: {q}, %k: {k}, %t: {t}, %dq: {q}, %dk: {k}) -> ({q}, {k}, {t}) {{
  %gq, %gk, %gt = attn.qk_norm_grad %q, %k, %t, %dq, %dk {attrs} : {q}, {k}, {t}
  return %gq, %gk, %gt : {q}, {k}, {t}
}}
"""


def norm_model(hq, hk, d, clamped, clamp_eps):
    (q, k, t), attrs = types_and_attrs(hq, hk, d, clamped, clamp_eps)
    return f"""
func.func @norm(%q: {q}, %k: {k}, %t: {t}) -> ({q}, {k}) {{
  %qn, %kn = attn.qk_norm %q, %k, %t {attrs} : {q}, {k}, {t}
  return %qn, %kn : {q}, {k}
}}
"""


def norm(x, d, eps, clamp_eps):
    """y = sqrt(d) x / n(x) per row of the last axis (float64)."""
    length = np.sqrt((x * x).sum(-1, keepdims=True))
    n = np.maximum(length, eps) if clamp_eps else np.sqrt(length * length + eps)
    return np.sqrt(d) * x / n


def norm_grad(x, g, d, eps, clamp_eps):
    """dx of y = sqrt(d) x / n(x) for the cotangent g, per row of the last axis (float64)."""
    length = np.sqrt((x * x).sum(-1, keepdims=True))
    if clamp_eps:
        n = np.maximum(length, eps)
        projection = np.where(length >= eps, (x * g).sum(-1, keepdims=True) / (n * n), 0.0)
    else:
        n = np.sqrt(length * length + eps)
        projection = (x * g).sum(-1, keepdims=True) / (n * n)
    return np.sqrt(d) / n * (g - x * projection), n


def close_per_row(got, want):
    err = np.abs(got - want).max(-1)
    scale = np.abs(want).max(-1)
    assert (err <= 2.0 ** -7 * scale + 1e-30).all(), (err / np.maximum(scale, 1e-30)).max()


CASES = [
    # B, S, Hq, Hk, d, clamped temperature, clamp_eps norm, temperatures
    (2, 37, 4, 2, 64, True, True, (0.3, 1.5)),       # CCGQA as ZAYA builds it
    (1, 300, 2, 1, 128, False, False, (0.7,)),       # raw tau; 300 rows wrap the 256 threads
    (3, 5, 8, 8, 64, True, True, (-0.5, 2.5, 1.0, 0.2, 1e-9, 0.5, 1.9, 0.1)),  # clamp edges
    (2, 9, 12, 4, 32, False, True, (1.0, 0.5, 2.0, 0.25)),  # 16 head rows, 8 warps each twice
]


def inputs(batch, tokens, hq, hk, d, temps, seed):
    """bf16 bits and exact values of q, k, their cotangents and temp; query rows (0, 0) zero
    and (0, 1) shorter than the clamp's eps."""
    rng = np.random.default_rng(seed)
    raw = {"q": rng.standard_normal((batch, tokens, hq, d)),
           "k": rng.standard_normal((batch, tokens, hk, d)) * 3.0,
           "q_out_grad": rng.standard_normal((batch, tokens, hq, d)),
           "k_out_grad": rng.standard_normal((batch, tokens, hk, d))}
    raw["q"][0, 0, 0] = 0.0
    unit = raw["q"][0, 0, 1] / np.linalg.norm(raw["q"][0, 0, 1])
    raw["q"][0, 0, 1] = 0.9 * CLAMP_EPS * unit
    raw["temp"] = np.array(temps, dtype=np.float64)
    bits, x = {}, {}
    for name, value in raw.items():
        bits[name], x[name] = emulator.bf16(value)
    return bits, x


@pytest.mark.parametrize("batch,tokens,hq,hk,d,clamped,clamp_eps,temps", CASES)
def test_qk_norm(batch, tokens, hq, hk, d, clamped, clamp_eps, temps):
    art = emulator.compile_model(norm_model(hq, hk, d, clamped, clamp_eps),
                                 f"qk_norm_h{hq}_hk{hk}_d{d}_{int(clamped)}{int(clamp_eps)}")
    (kernel,) = art.kernels
    bits, x = inputs(batch, tokens, hq, hk, d, temps, seed=hq * d + tokens + 1)
    eps = CLAMP_EPS if clamp_eps else SQRT_EPS
    tau = np.exp(np.clip(x["temp"], 1e-7, 2.0)) if clamped else x["temp"]
    want_q = norm(x["q"], d, eps, clamp_eps)
    want_k = norm(x["k"], d, eps, clamp_eps) * tau[:, None]

    dev = emulator.Device()
    t = {name: dev.upload(bits[name], "bf16") for name in ("q", "k", "temp")}
    t["q_out"] = dev.empty((batch, tokens, hq, d), "bf16")
    t["k_out"] = dev.empty((batch, tokens, hk, d), "bf16")
    art.launch(kernel, t, B=batch, S=tokens, T=1)
    close_per_row(reference.from_bf16_bits(dev.download(t["q_out"])).astype(np.float64), want_q)
    close_per_row(reference.from_bf16_bits(dev.download(t["k_out"])).astype(np.float64), want_k)


@pytest.mark.parametrize("batch,tokens,hq,hk,d,clamped,clamp_eps,temps", CASES)
def test_qk_norm_grad(batch, tokens, hq, hk, d, clamped, clamp_eps, temps):
    art = emulator.compile_model(model(hq, hk, d, clamped, clamp_eps),
                                 f"qk_norm_grad_h{hq}_hk{hk}_d{d}_{int(clamped)}{int(clamp_eps)}")
    rows = next(k for k in art.kernels if not k.endswith("_temp"))
    temperature = next(k for k in art.kernels if k.endswith("_temp"))
    # Query row (0, 1) is shorter than eps but not zero: under the clamp the projection term
    # drops.
    bits, x = inputs(batch, tokens, hq, hk, d, temps, seed=hq * d + tokens)
    temp = x["temp"]

    eps = CLAMP_EPS if clamp_eps else SQRT_EPS
    tau = np.exp(np.clip(temp, 1e-7, 2.0)) if clamped else temp
    want_q, _ = norm_grad(x["q"], x["q_out_grad"], d, eps, clamp_eps)
    want_k, n_k = norm_grad(x["k"], x["k_out_grad"] * tau[:, None], d, eps, clamp_eps)
    dtau = (x["k_out_grad"] * np.sqrt(d) * x["k"] / n_k).sum(axis=(0, 1, 3))
    if clamped:
        want_temp = np.where((temp >= 1e-7) & (temp <= 2.0), dtau * tau, 0.0)
    else:
        want_temp = dtau

    dev = emulator.Device()
    t = {name: dev.upload(b, "bf16") for name, b in bits.items()}
    t["q_grad"] = dev.empty((batch, tokens, hq, d), "bf16")
    t["k_grad"] = dev.empty((batch, tokens, hk, d), "bf16")
    t["temp_shares"] = dev.empty((batch, tokens, hk), "f32")
    art.launch(rows, t, B=batch, S=tokens, T=1)
    t["temp_grad"] = dev.empty((hk,), "bf16")
    art.launch(temperature, {k: t[k] for k in ("temp_shares", "temp", "temp_grad")},
               B=batch, S=tokens, T=1)

    got = {name: reference.from_bf16_bits(dev.download(t[name])).astype(np.float64)
           for name in ("q_grad", "k_grad", "temp_grad")}
    close_per_row(got["q_grad"], want_q)
    close_per_row(got["k_grad"], want_k)
    err = np.abs(got["temp_grad"] - want_temp)
    assert (err <= 2.0 ** -7 * np.abs(want_temp) + 1e-30).all(), (got["temp_grad"], want_temp)
    if clamped:
        outside = (temp < 1e-7) | (temp > 2.0)
        assert (got["temp_grad"][outside] == 0).all()
