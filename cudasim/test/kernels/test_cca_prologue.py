"""The CCA prologue kernel (attn.cca_prologue: one TMA + wgmma GEMM for [Wq; Wk; Wv; Wv_prev],
then the two causal convolutions, QK-mean, L2 norm, temperature and RoPE from shared memory) on
the emulator through the runtime, against reference.cca_qkv. S in {1, 63, 64, 65, 200}: the halo
of a block's convolution crosses into the previous block with TMA rows at negative coordinates.
A small shape (E 128, 4/2 heads x 64) for the S sweep, ZAYA1's full shape (E 2048, 8/2 x 128) at
S = 1 and 129.

Tolerance: the kernel rounds the projections u to bf16 before the convolutions and QK-mean
(docs/hopper-design.md; the reference keeps f64), a relative 2^-9 per element that the two
convolutions (2 x d x k1 terms) and the normalisation carry to the outputs at the scale of the row,
plus the final bf16 rounding (2^-9 |ref|). We accept |got - ref| <= 2^-6 max|ref of the row| +
2^-8 |ref| (four times the u rounding, for cancellation in the convolutions).
"""
import numpy as np
import pytest

import emulator
import reference

SMALL = (128, 4, 2, 64)  # E, Hq, Hk, d
ZAYA1 = (2048, 8, 2, 128)  # ZAYA1's attention: width 2048, 8 query heads, 2 KV heads, d128


def model(kernels, extras, mask=None, shape=SMALL):
    E, HQ, HK, D = shape
    k0, k1 = kernels
    c = (HQ + HK) * D
    opts = ", qk_mean, value_shift, temperature = #attn.temperature<clamped>, " \
           "rope = #attn.rope<theta = 10000.0, fraction = 0.5>" if extras else ""
    vrows = HK * D // 2 if extras else HK * D
    wvp_arg = f", %wvp: tensor<{vrows}x{E}xbf16>" if extras else ""
    wvp_use = " wv_prev(%wvp)" if extras else ""
    wvp_ty = f", tensor<{vrows}x{E}xbf16>" if extras else ""
    mask_arg = f", %m: tensor<?x?x{mask}>" if mask else ""
    mask_use = " padding_mask(%m)" if mask else ""
    mask_ty = f", tensor<?x?x{mask}>" if mask else ""
    return f"""
func.func @cca(%x: tensor<?x?x{E}xbf16>, %wq: tensor<{HQ * D}x{E}xbf16>,
               %wk: tensor<{HK * D}x{E}xbf16>, %wv: tensor<{vrows}x{E}xbf16>{wvp_arg},
               %dw: tensor<{c}x1x{k0}xbf16>, %dwb: tensor<{c}xbf16>,
               %gw: tensor<{c}x{D}x{k1}xbf16>, %gwb: tensor<{c}xbf16>, %temp: tensor<{HK}xbf16>
               {mask_arg})
    -> (tensor<?x?x{HQ}x{D}xbf16>, tensor<?x?x{HK}x{D}xbf16>, tensor<?x?x{HK}x{D}xbf16>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %batch = tensor.dim %x, %c0 : tensor<?x?x{E}xbf16>
  %seq = tensor.dim %x, %c1 : tensor<?x?x{E}xbf16>
  %q_init = tensor.empty(%batch, %seq) : tensor<?x?x{HQ}x{D}xbf16>
  %k_init = tensor.empty(%batch, %seq) : tensor<?x?x{HK}x{D}xbf16>
  %v_init = tensor.empty(%batch, %seq) : tensor<?x?x{HK}x{D}xbf16>
  %q, %k, %v = attn.cca_prologue %x wq(%wq) wk(%wk) wv(%wv){wvp_use}
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp){mask_use}
      outs(%q_init, %k_init, %v_init)
      {{num_heads = {HQ} : i64, num_kv_heads = {HK} : i64, head_dim = {D} : i64,
       conv_kernel_sizes = array<i64: {k0}, {k1}>{opts}, block_s = 64 : i64}}
      : (tensor<?x?x{E}xbf16>, tensor<{HQ * D}x{E}xbf16>, tensor<{HK * D}x{E}xbf16>,
         tensor<{vrows}x{E}xbf16>{wvp_ty}, tensor<{c}x1x{k0}xbf16>,
         tensor<{c}xbf16>, tensor<{c}x{D}x{k1}xbf16>, tensor<{c}xbf16>, tensor<{HK}xbf16>
         {mask_ty}, tensor<?x?x{HQ}x{D}xbf16>, tensor<?x?x{HK}x{D}xbf16>,
         tensor<?x?x{HK}x{D}xbf16>)
      -> (tensor<?x?x{HQ}x{D}xbf16>, tensor<?x?x{HK}x{D}xbf16>, tensor<?x?x{HK}x{D}xbf16>)
  return %q, %k, %v : tensor<?x?x{HQ}x{D}xbf16>, tensor<?x?x{HK}x{D}xbf16>, tensor<?x?x{HK}x{D}xbf16>
}}
"""


def run_cca(s, kernels, extras, batch=1, seed=0, mask=None, shape=SMALL):
    E, HQ, HK, D = shape
    art = emulator.compile_model(model(kernels, extras, mask, shape), "cca")
    name = next(k for k in art.kernels if k.startswith("attn_cca_prologue"))
    spec = next(x for x in art.manifest["kernels"] if x["name"] == name)
    k0, k1 = kernels
    c = (HQ + HK) * D
    vrows = HK * D // 2 if extras else HK * D
    rng = np.random.default_rng(seed)
    arrays = {
        "input": rng.standard_normal((batch, s, E)),
        "wq": rng.standard_normal((HQ * D, E)) / np.sqrt(E),
        "wk": rng.standard_normal((HK * D, E)) / np.sqrt(E),
        "wv": rng.standard_normal((vrows, E)) / np.sqrt(E),
        "conv_dw_weight": rng.standard_normal((c, 1, k0)) * 0.5,
        "conv_dw_bias": rng.standard_normal(c) * 0.1,
        "conv_g_weight": rng.standard_normal((c, D, k1)) / np.sqrt(D * k1),
        "conv_g_bias": rng.standard_normal(c) * 0.1,
        "temp": rng.uniform(0.2, 1.5, HK),
    }
    if extras:
        arrays["wv_prev"] = rng.standard_normal((vrows, E)) / np.sqrt(E)
    dev = emulator.Device()
    vals, tensors = {}, {}
    for name_, a in arrays.items():
        bits, vals[name_] = emulator.bf16(a)
        tensors[name_] = dev.upload(bits, "bf16")
    for table in spec.get("rope_tables", []):
        cos, sin = emulator.rope_tables(s, table["rotated_dims"], table["theta"])
        tensors[table["param"]] = dev.upload(cos if "cos" in table["param"] else sin, "f32")
    x = vals["input"]
    if mask:
        # Sequence 0 left-padded, 1 padded on both sides with holes, 2 right-padded.
        m = np.ones((batch, s), np.int64)
        for b in range(batch):
            left = rng.integers(1, s // 2 + 1) if b != 2 else 0
            right = rng.integers(1, s // 3 + 1) if b != 0 else 0
            m[b, :left] = 0
            m[b, s - right:] = 0
            if b == 1:
                m[b] &= rng.random(s) < 0.7
        tensors["padding_mask"] = dev.upload(
            m.astype({"i32": np.int32, "i64": np.int64}[mask]), mask)
        # docs/semantics.md: a padded token is a zero row of x.
        x = x * (m != 0)[:, :, None]
    tensors["query"] = dev.empty((batch, s, HQ, D), "bf16")
    tensors["key"] = dev.empty((batch, s, HK, D), "bf16")
    tensors["value"] = dev.empty((batch, s, HK, D), "bf16")
    art.launch(name, tensors, B=batch, S=s)
    got = [reference.from_bf16_bits(dev.download(tensors[n])).astype(np.float64)
           for n in ("query", "key", "value")]
    ref = reference.cca_qkv(
        x, vals["wq"], vals["wk"], vals["wv"], vals["conv_dw_weight"],
        vals["conv_dw_bias"], vals["conv_g_weight"], vals["conv_g_bias"], vals["temp"],
        HQ, HK, D, kernels, wv_prev=vals.get("wv_prev"), qk_mean=extras, value_shift=extras,
        temperature="clamped" if extras else "raw",
        rope_theta=10000.0 if extras else None, rope_fraction=0.5)
    return got, ref


def check(got, ref):
    for name, g, r in zip(("query", "key", "value"), got, ref):
        assert np.all(np.isfinite(g)), f"{name}: unwritten or NaN/inf outputs"
        err = np.abs(g - r)
        tol = 2.0 ** -6 * np.abs(r).max(axis=-1, keepdims=True) + 2.0 ** -8 * np.abs(r)
        bad = err > tol
        assert not bad.any(), (f"{name}: {bad.sum()} of {bad.size} off, worst {err.max():.4g} "
                               f"at {np.unravel_index(err.argmax(), err.shape)}")


@pytest.mark.parametrize("s", [1, 63, 64, 65, 200])
def test_ccgqa_zaya1_options(s):
    check(*run_cca(s, (2, 2), extras=True, seed=s))


def test_ccgqa_plain_k3():
    check(*run_cca(70, (3, 3), extras=False, batch=2, seed=5))


@pytest.mark.parametrize("mask", ["i32", "i64"])
def test_padding_mask_zeroes_the_padded_tokens(mask):
    """Padded tokens are zero rows of x: in the block, in the halo of the next block (S = 100
    crosses the 64-token block edge) and for the value shift."""
    check(*run_cca(100, (2, 2), extras=True, batch=3, seed=7, mask=mask))


@pytest.mark.parametrize("shape", [(128, 2, 1, 64), (128, 3, 3, 128)])
def test_value_shift_with_odd_kv_heads(shape):
    """With an odd number of KV heads the value shift's halves meet inside the middle head: its
    first d/2 columns are the current token's (Wv), the rest the previous token's (Wv_prev).
    MQA (one KV head, d64) and three KV heads (d128, the middle one split)."""
    check(*run_cca(65, (2, 2), extras=True, batch=2, seed=11, shape=shape))


@pytest.mark.parametrize("s", [1, 129])
def test_ccgqa_zaya1_full_shape(s):
    """ZAYA1's own layer shape (E 2048, 8/2 heads x 128) with its options; S = 129: three token
    blocks, the last one row."""
    check(*run_cca(s, (2, 2), extras=True, seed=s + 7, shape=ZAYA1))
