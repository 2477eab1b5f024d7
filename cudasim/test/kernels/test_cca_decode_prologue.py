"""The CCA decode-step prologue kernel (attn.cca_decode_prologue: depthwise conv over the state,
the grouped conv as a GEMV, QK-mean, norm, temperature, RoPE at each sequence's position, state
roll) on the emulator through the runtime, against reference.cca_decode_prologue.

Tolerance: f32 arithmetic on bf16 inputs, one bf16 rounding of each output (2^-9 |ref|) and f32
sums of d * k1 products: |got - ref| <= 2^-7 max|ref of the row| + 2^-8 |ref|. The rolled states
are copies and must match exactly.
"""
import numpy as np

import emulator
import reference

HQ, HK, D = 4, 2, 64
LQ, LK, C = HQ * D, HK * D, (HQ + HK) * D


def model():
    t = lambda s: f"tensor<{s}xbf16>"
    args = (f"%qr: {t('?x1x' + str(LQ))}, %kr: {t('?x1x' + str(LK))}, %vc: {t('?x1x64')}, "
            f"%vp: {t('?x1x64')}, %dw: {t(f'{C}x1x2')}, %dwb: {t(C)}, %gw: {t(f'{C}x{D}x2')}, "
            f"%gwb: {t(C)}, %temp: {t(HK)}, %cs: {t(f'?x2x{C}')}, %ss: {t('?x1x64')}, "
            f"%pos: tensor<?xi32>")
    types = ", ".join(a.split(": ", 1)[1] for a in args.split(", %"))
    res = (f"{t(f'?x1x{HQ}x{D}')}, {t(f'?x1x{HK}x{D}')}, {t(f'?x1x{HK}x{D}')}, "
           f"{t(f'?x2x{C}')}, {t('?x1x64')}")
    # The outputs' inits precede the states among the operands.
    q_t, kv_t = t(f'?x1x{HQ}x{D}'), t(f'?x1x{HK}x{D}')
    types = types.replace(f"{t('?x2x' + str(C))}", f"{q_t}, {kv_t}, {kv_t}, {t('?x2x' + str(C))}", 1)
    return f"""
func.func @cd({args}) -> ({res}) {{
  %c0 = arith.constant 0 : index
  %batch = tensor.dim %qr, %c0 : {t(f'?x1x{HQ * D}')}
  %qi = tensor.empty(%batch) : {q_t}
  %kvi = tensor.empty(%batch) : {kv_t}
  %r0, %r1, %r2, %r3, %r4 = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%qi, %kvi, %kvi)
      conv_state(%cs) shift_state(%ss)
      positions(%pos) {{num_heads = {HQ} : i64, num_kv_heads = {HK} : i64, head_dim = {D} : i64,
       conv_kernel_sizes = array<i64: 2, 2>, temperature = #attn.temperature<clamped>, qk_mean,
       value_shift, rope = #attn.rope<theta = 10000.0, fraction = 0.5>}}
      : ({types}) -> ({res})
  return %r0, %r1, %r2, %r3, %r4 : {res}
}}
"""


def test_ccgqa_decode_step():
    art = emulator.compile_model(model(), "cca_decode")
    name = art.kernels[0]
    spec = art.manifest["kernels"][0]
    batch, table_rows = 3, 64
    rng = np.random.default_rng(11)
    shapes = {"qr": (batch, 1, LQ), "kr": (batch, 1, LK), "v_cur": (batch, 1, 64),
              "v_prev": (batch, 1, 64), "conv_dw_weight": (C, 1, 2), "conv_dw_bias": (C,),
              "conv_g_weight": (C, D, 2), "conv_g_bias": (C,), "conv_state": (batch, 2, C),
              "shift_state": (batch, 1, 64)}
    scale = {"conv_g_weight": 1 / np.sqrt(2 * D), "conv_dw_bias": 0.1, "conv_g_bias": 0.1}
    dev = emulator.Device()
    vals, tensors = {}, {}
    for n, shp in shapes.items():
        bits, vals[n] = emulator.bf16(rng.standard_normal(shp) * scale.get(n, 1.0))
        tensors[n] = dev.upload(bits, "bf16")
    bits, vals["temp"] = emulator.bf16(rng.uniform(0.2, 1.5, HK))
    tensors["temp"] = dev.upload(bits, "bf16")
    positions = np.array([0, 17, 63], dtype=np.int32)
    tensors["positions"] = dev.upload(positions, "i32")
    for table in spec["rope_tables"]:
        cos, sin = emulator.rope_tables(table_rows, table["rotated_dims"], table["theta"])
        tensors[table["param"]] = dev.upload(cos if "cos" in table["param"] else sin, "f32")
    outs = {"query": (batch, 1, HQ, D), "key": (batch, 1, HK, D), "value": (batch, 1, HK, D),
            "conv_state_out": (batch, 2, C), "shift_state_out": (batch, 1, 64)}
    for n, shp in outs.items():
        tensors[n] = dev.empty(shp, "bf16")
    art.launch(name, tensors, B=batch, S=1, T=table_rows)
    got = {n: reference.from_bf16_bits(dev.download(tensors[n])).astype(np.float64) for n in outs}
    q, k, v, state, shift = reference.cca_decode_prologue(
        vals["qr"], vals["kr"], vals["v_cur"], vals["conv_dw_weight"], vals["conv_dw_bias"],
        vals["conv_g_weight"], vals["conv_g_bias"], vals["temp"], vals["conv_state"], positions,
        HQ, HK, D, (2, 2), v_prev=vals["v_prev"], shift_state=vals["shift_state"], qk_mean=True,
        value_shift=True, temperature="clamped", rope_theta=10000.0, rope_fraction=0.5)
    for n, ref in (("query", q), ("key", k), ("value", v)):
        err = np.abs(got[n] - ref)
        tol = 2.0 ** -7 * np.abs(ref).max(axis=-1, keepdims=True) + 2.0 ** -8 * np.abs(ref)
        assert np.all(err <= tol), f"{n}: worst {err.max():.4g}"
    assert np.array_equal(got["conv_state_out"], state), "conv state roll differs"
    assert np.array_equal(got["shift_state_out"], shift), "shift state differs"
