"""The FlashAttention kernel (attn.flash_attention: warp-specialized TMA + wgmma, online softmax in
registers, RS-form P.V) run on the emulator through the runtime, against reference.sdpa.

Tolerance: Q, K, V are bf16 (exact in the f64 reference). P is rounded to bf16 before P.V
(relative 2^-9 per weight, so at most 2^-9 max|v| on the weighted sum), the row sum l is
accumulated from the unrounded f32 p (another 2^-9 max|v| of mismatch), ex2.approx and the f32
accumulation add far less, and O is rounded once to bf16 (2^-9 |o|). We accept
|got - ref| <= 2^-7 max|v| + 2^-8 |ref|, twice that bound.
"""
import numpy as np
import pytest

import emulator
import reference


def model(hq, hk, d, causal, window, keqv, key_rope, mask=None, shared_query=False,
          block_q=64, block_kv=64):
    attrs = [f"block_q = {block_q} : i64", f"block_kv = {block_kv} : i64"]
    if key_rope:
        attrs.append("key_rope = #attn.rope<theta = 10000.0>")
    if causal:
        attrs.insert(0, "causal")
    if window:
        attrs.append(f"window = {window} : i64")
    kv_args = f"%k: tensor<?x?x{hk}x{d}xbf16>" + ("" if keqv else f", %v: tensor<?x?x{hk}x{d}xbf16>")
    kv_use = "%k" if keqv else "%k, %v"
    kv_ty = f"tensor<?x?x{hk}x{d}xbf16>" + ("" if keqv else f", tensor<?x?x{hk}x{d}xbf16>")
    if mask:
        kv_args += f", %m: tensor<?x?x{mask}>"
        kv_use += " key_mask(%m)"
        kv_ty += f", tensor<?x?x{mask}>"
    if shared_query:
        # Sharing modes qk / qkv (what attn.qkv_attention <qk> / <qkv> lowers to): the query
        # operand is the key tensor itself.
        assert hq == hk
        return f"""
func.func @fa({kv_args}) -> tensor<?x?x{hq}x{d}xbf16> {{
{init("%k", f"tensor<?x?x{hq}x{d}xbf16>")}
  %o = attn.flash_attention %k, {kv_use} outs(%init) {{{", ".join(attrs)}}}
      : (tensor<?x?x{hq}x{d}xbf16>, {kv_ty}, tensor<?x?x{hq}x{d}xbf16>) -> tensor<?x?x{hq}x{d}xbf16>
  return %o : tensor<?x?x{hq}x{d}xbf16>
}}
"""
    return f"""
func.func @fa(%q: tensor<?x?x{hq}x{d}xbf16>, {kv_args}) -> tensor<?x?x{hq}x{d}xbf16> {{
{init("%q", f"tensor<?x?x{hq}x{d}xbf16>")}
  %o = attn.flash_attention %q, {kv_use} outs(%init) {{{", ".join(attrs)}}}
      : (tensor<?x?x{hq}x{d}xbf16>, {kv_ty}, tensor<?x?x{hq}x{d}xbf16>) -> tensor<?x?x{hq}x{d}xbf16>
  return %o : tensor<?x?x{hq}x{d}xbf16>
}}
"""


def init(query, ty):
    """The result's init (its shape: batch and S of the query), an attn.flash_attention operand."""
    return (f"  %c0 = arith.constant 0 : index\n"
            f"  %c1 = arith.constant 1 : index\n"
            f"  %batch = tensor.dim {query}, %c0 : {ty}\n"
            f"  %seq = tensor.dim {query}, %c1 : {ty}\n"
            f"  %init = tensor.empty(%batch, %seq) : {ty}")


def padding(rng, batch, t):
    """A key mask [B, T]: sequence 0 left-padded, 1 right-padded, 2 padded on both sides with
    holes (any pattern is a mask)."""
    m = np.ones((batch, t), np.int64)
    for b in range(batch):
        left = rng.integers(1, t // 2 + 1) if b % 3 != 1 else 0
        right = rng.integers(1, t // 3 + 1) if b % 3 != 0 else 0
        m[b, :left] = 0
        m[b, t - right:] = 0
        if b % 3 == 2:
            m[b] &= rng.random(t) < 0.7
    return m


def run_flash(hq, hk, d, s, t, causal=False, window=None, keqv=False, key_rope=False, batch=1,
              seed=0, mask=None, shared_query=False, block_q=64, block_kv=64):
    art = emulator.compile_model(model(hq, hk, d, causal, window, keqv, key_rope, mask,
                                       shared_query, block_q, block_kv),
                                 f"fa_h{hq}_{hk}_d{d}_q{block_q}")
    kernels = [k for k in art.kernels if k.startswith("attn_fa")]
    assert len(kernels) == 1, art.kernels
    rng = np.random.default_rng(seed)
    qb, q = emulator.bf16(rng.standard_normal((batch, s, hq, d)))
    kb, k = emulator.bf16(rng.standard_normal((batch, t, hk, d)))
    vb, v = (kb, k) if keqv else emulator.bf16(rng.standard_normal((batch, t, hk, d)))
    dev = emulator.Device()
    tensors = {"key": dev.upload(kb, "bf16")}
    if shared_query:
        # One buffer behind both operands, as a model launches it (s == t).
        qb, q = kb, k
        tensors["query"] = tensors["key"]
    else:
        tensors["query"] = dev.upload(qb, "bf16")
    if not keqv:
        tensors["value"] = dev.upload(vb, "bf16")
    key_mask = None
    if mask:
        key_mask = padding(rng, batch, t)
        tensors["key_mask"] = dev.upload(key_mask.astype({"i32": np.int32, "i64": np.int64}[mask]),
                                         mask)
    spec = next(x for x in art.manifest["kernels"] if x["name"] == kernels[0])
    for table in spec.get("rope_tables", []):
        rows = {"S": s, "T": t}.get(table["shape"][0], table["shape"][0])
        cos, sin = emulator.rope_tables(rows, table["rotated_dims"], table["theta"])
        tensors[table["param"]] = dev.upload(cos if "cos" in table["param"] else sin, "f32")
    tensors["output"] = dev.empty((batch, s, hq, d), "bf16")
    art.launch(kernels[0], tensors, B=batch, S=s, T=t)
    got = reference.from_bf16_bits(dev.download(tensors["output"])).astype(np.float64)
    # Key RoPE on load rotates the keys for the scores only (V of K=V stays un-rotated), at
    # absolute key positions.
    kq = reference.rope(k, 10000.0) if key_rope else k
    ref = reference.sdpa(q, kq, v, causal=causal, window=window, key_mask=key_mask)
    return got, ref, np.abs(v).max()


def check(got, ref, vmax):
    assert np.all(np.isfinite(got)), "outputs unwritten or NaN/inf"
    err = np.abs(got - ref)
    tol = 2.0 ** -7 * vmax + 2.0 ** -8 * np.abs(ref)
    bad = err > tol
    assert not bad.any(), (f"{bad.sum()} of {bad.size} outputs off; worst |err| {err.max():.4g} "
                           f"at {np.unravel_index(err.argmax(), err.shape)}")


@pytest.mark.parametrize("s", [1, 127, 128, 129, 300])
def test_mha_d64(s):
    check(*run_flash(hq=2, hk=2, d=64, s=s, t=s))


@pytest.mark.parametrize("s", [1, 127, 128, 129, 300])
def test_gqa2_d128_causal(s):
    check(*run_flash(hq=2, hk=1, d=128, s=s, t=s, causal=True, seed=s))


@pytest.mark.parametrize("s,t", [(1, 300), (127, 300), (129, 200)])
@pytest.mark.parametrize("d", [64, 128])
def test_s_ne_t_causal(d, s, t):
    check(*run_flash(hq=1, hk=1, d=d, s=s, t=t, causal=True, seed=s + d))


@pytest.mark.parametrize("keqv", [True, False], ids=["qkv", "qk"])
@pytest.mark.parametrize("d,s,causal", [(64, 129, True), (128, 70, False)])
def test_shared_query(keqv, d, s, causal):
    """Sharing modes qkv (q = k = v: one tensor) and qk (q = k, separate v)."""
    check(*run_flash(hq=2, hk=2, d=d, s=s, t=s, causal=causal, keqv=keqv, shared_query=True,
                     seed=d + s))


CASES = {
    "mha_d64_causal_300": dict(hq=1, hk=1, d=64, s=300, t=300, causal=True),
    "mha_d128_causal_129": dict(hq=1, hk=1, d=128, s=129, t=129, causal=True),
    "gqa4_d64_causal": dict(hq=8, hk=2, d=64, s=40, t=40, causal=True),
    "gqa8_d128": dict(hq=8, hk=1, d=128, s=20, t=20),
    "mqa_d64_causal": dict(hq=4, hk=1, d=64, s=70, t=70, causal=True),
    "keqv_gqa4_causal": dict(hq=4, hk=1, d=64, s=100, t=100, causal=True, keqv=True),
    "keqv_key_rope_gqa4_causal": dict(hq=4, hk=1, d=64, s=130, t=130, causal=True, keqv=True,
                                      key_rope=True),
    "window_d64_causal": dict(hq=1, hk=1, d=64, s=300, t=300, causal=True, window=100),
    "s_ne_t_causal": dict(hq=2, hk=2, d=64, s=50, t=200, causal=True),
    "s_ne_t_noncausal_d128": dict(hq=1, hk=1, d=128, s=3, t=129),
    "batch2_d64": dict(hq=2, hk=1, d=64, s=65, t=65, causal=True, batch=2),
    # Padded batches: every key tile masked by the key mask (fully masked rows give zeros).
    "key_mask_i64_gqa2_causal": dict(hq=4, hk=2, d=64, s=100, t=100, causal=True, batch=3,
                                     mask="i64"),
    "key_mask_i32_keqv_window": dict(hq=2, hk=1, d=64, s=70, t=70, causal=True, window=20,
                                     keqv=True, batch=2, mask="i32"),
    "key_mask_i32_noncausal_d128": dict(hq=1, hk=1, d=128, s=40, t=130, batch=3, mask="i32"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_flash(name):
    check(*run_flash(**CASES[name], seed=len(name)))


# Head dims off the 64-column slabs are zero-filled by TMA up to the next slab (96 computes as
# 128, 80 as 128); 256 streams 64-key tiles (block_kv 128 is capped) and, at block_q 64, runs
# one CTA per SM. Each case crosses a tile edge in S and in T.
HEAD_DIM_CASES = {
    "d96_gqa2_causal": dict(hq=4, hk=2, d=96, s=129, t=129, causal=True),
    "d96_keqv_key_rope_causal": dict(hq=2, hk=1, d=96, s=70, t=70, causal=True, keqv=True,
                                     key_rope=True),
    "d96_s_ne_t_q128": dict(hq=2, hk=2, d=96, s=40, t=150, block_q=128, block_kv=128),
    "d80_mha": dict(hq=1, hk=1, d=80, s=65, t=65),
    "d256_mha_causal_q128_kv128": dict(hq=2, hk=2, d=256, s=200, t=200, causal=True,
                                       block_q=128, block_kv=128),
    "d256_gqa4_s_ne_t_causal": dict(hq=4, hk=1, d=256, s=50, t=170, causal=True),
    "d256_keqv_key_rope_key_mask": dict(hq=2, hk=1, d=256, s=70, t=70, causal=True, keqv=True,
                                        key_rope=True, batch=2, mask="i64"),
}


@pytest.mark.parametrize("name", sorted(HEAD_DIM_CASES))
def test_head_dims_beyond_64_and_128(name):
    check(*run_flash(**HEAD_DIM_CASES[name], seed=len(name)))
