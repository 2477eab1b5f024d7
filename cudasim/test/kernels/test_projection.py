"""The projection GEMM kernel (attn.fused_projection: TMA + wgmma, bias and RoPE epilogue, TMA
store) run on the emulator through the runtime, against integration_test/reference.py.

Tolerance: the inputs are bf16 (exact in the f64 reference); the kernel accumulates in f32
(relative error about K * 2^-24, negligible for K <= 256), adds the bf16 bias, rotates with f32
tables and rounds once to bf16 (half an ulp: 2^-9 relative). RoPE mixes two accumulators, so the
error of an output is bounded relative to the pair, not to itself: we accept
|got - ref| <= 2^-8 |ref| + 2^-9 max|ref of the row|.
"""
import numpy as np
import pytest

import emulator
import reference


def model(k, n, d, rope, bias):
    heads = n // d
    rope_attr = ", rope = #attn.rope<theta = 10000.0>" if rope else ""
    b_arg = f", %b: tensor<{n}xbf16>" if bias else ""
    b_use = ", %b" if bias else ""
    b_ty = f", tensor<{n}xbf16>" if bias else ""
    return f"""
func.func @proj(%x: tensor<?x?x{k}xbf16>, %w: tensor<{n}x{k}xbf16>{b_arg}) -> tensor<?x?x{heads}x{d}xbf16> {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %batch = tensor.dim %x, %c0 : tensor<?x?x{k}xbf16>
  %seq = tensor.dim %x, %c1 : tensor<?x?x{k}xbf16>
  %init = tensor.empty(%batch, %seq) : tensor<?x?x{heads}x{d}xbf16>
  %q = attn.fused_projection %x, %w{b_use} outs(%init)
      {{head_dim = {d} : i64{rope_attr}, block_s = 64 : i64, block_n = {d} : i64, block_k = 64 : i64}}
      : (tensor<?x?x{k}xbf16>, tensor<{n}x{k}xbf16>{b_ty}, tensor<?x?x{heads}x{d}xbf16>)
      -> tensor<?x?x{heads}x{d}xbf16>
  return %q : tensor<?x?x{heads}x{d}xbf16>
}}
"""


def run_projection(k, n, d, rope, bias, batch, seq, seed=0):
    art = emulator.compile_model(model(k, n, d, rope, bias), f"proj_k{k}_n{n}")
    assert len(art.kernels) == 1, art.kernels
    name = art.kernels[0]
    rng = np.random.default_rng(seed)
    xb, x = emulator.bf16(rng.standard_normal((batch, seq, k)))
    wb, w = emulator.bf16(rng.standard_normal((n, k)) / np.sqrt(k))
    bb, b = emulator.bf16(rng.standard_normal(n) * 0.5)
    dev = emulator.Device()
    tensors = {"input": dev.upload(xb, "bf16"), "weight": dev.upload(wb, "bf16")}
    if bias:
        tensors["bias"] = dev.upload(bb, "bf16")
    if rope:
        cos, sin = emulator.rope_tables(seq, d, 10000.0)
        tensors["rope_cos"] = dev.upload(cos, "f32")
        tensors["rope_sin"] = dev.upload(sin, "f32")
    tensors["output"] = dev.empty((batch, seq, n), "bf16")
    art.launch(name, tensors, B=batch, S=seq)
    got = reference.from_bf16_bits(dev.download(tensors["output"])).astype(np.float64)
    ref = reference.linear(x, w, b if bias else None)
    if rope:
        ref = reference.merge_heads(reference.rope(reference.split_heads(ref, d), 10000.0))
    return got, ref


def check(got, ref):
    assert np.all(np.isfinite(got)), "the kernel left outputs unwritten or produced NaN/inf"
    tol = 2.0 ** -8 * np.abs(ref) + 2.0 ** -9 * np.abs(ref).max(axis=-1, keepdims=True)
    err = np.abs(got - ref)
    bad = err > tol
    assert not bad.any(), (f"{bad.sum()} of {bad.size} outputs off; worst |err| {err.max():.4g} "
                           f"at {np.unravel_index(err.argmax(), err.shape)}")


@pytest.mark.parametrize("n", [64, 256])
@pytest.mark.parametrize("seq", [1, 130])
def test_projection_bias_rope(n, seq):
    got, ref = run_projection(k=128, n=n, d=64, rope=True, bias=True, batch=1, seq=seq)
    check(got, ref)


def test_projection_plain_batched():
    got, ref = run_projection(k=192, n=128, d=64, rope=False, bias=False, batch=2, seq=70, seed=1)
    check(got, ref)


def test_projection_n1024():
    got, ref = run_projection(k=64, n=1024, d=128, rope=True, bias=True, batch=1, seq=5, seed=2)
    check(got, ref)


def transposed_model(k, n):
    """dx = dy W: a one-head projection that reads W ([k, n], its k rows being the
    reduction) as stored (transposed_weight), B MN-major in the kernel."""
    return f"""
func.func @dx(%dy: tensor<?x?x{k}xbf16>, %w: tensor<{k}x{n}xbf16>) -> tensor<?x?x1x{n}xbf16> {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %batch = tensor.dim %dy, %c0 : tensor<?x?x{k}xbf16>
  %seq = tensor.dim %dy, %c1 : tensor<?x?x{k}xbf16>
  %init = tensor.empty(%batch, %seq) : tensor<?x?x1x{n}xbf16>
  %dx = attn.fused_projection %dy, %w outs(%init)
      {{head_dim = {n} : i64, block_s = 64 : i64, block_n = 64 : i64, block_k = 64 : i64,
       transposed_weight}}
      : (tensor<?x?x{k}xbf16>, tensor<{k}x{n}xbf16>, tensor<?x?x1x{n}xbf16>)
      -> tensor<?x?x1x{n}xbf16>
  return %dx : tensor<?x?x1x{n}xbf16>
}}
"""


@pytest.mark.parametrize("k,n,batch,seq", [(128, 256, 1, 130), (192, 64, 2, 33)])
def test_projection_transposed_weight(k, n, batch, seq):
    art = emulator.compile_model(transposed_model(k, n), f"dx_k{k}_n{n}")
    assert len(art.kernels) == 1 and art.kernels[0].endswith("_wt"), art.kernels
    rng = np.random.default_rng(3)
    dyb, dy = emulator.bf16(rng.standard_normal((batch, seq, k)))
    wb, w = emulator.bf16(rng.standard_normal((k, n)) / np.sqrt(k))
    dev = emulator.Device()
    tensors = {"input": dev.upload(dyb, "bf16"), "weight": dev.upload(wb, "bf16"),
               "output": dev.empty((batch, seq, n), "bf16")}
    art.launch(art.kernels[0], tensors, B=batch, S=seq)
    got = reference.from_bf16_bits(dev.download(tensors["output"])).astype(np.float64)
    check(got, dy @ w)
