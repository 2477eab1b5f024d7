"""Copies of a device program on the emulator through the runtime: tensor.concat on the
last dimension and tensor.extract_slice of a column range (what a CCA gradient program joins
and splits: the query and key projections side by side, the convolutions' results back apart),
against numpy's concatenate and slicing, and attn.mask_tokens (a padded batch's rows zeroed)
against numpy's where. Copies: the results must be exact.

The copies only lower inside a device program (a function with kernels), so each model also
runs a value-shift gradient; chunk widths cover 16-byte vectors (widths a multiple of 8), 4-
and 2-byte ones, and single elements, and the chunk counts end inside a CTA.
"""
import numpy as np
import pytest

import emulator


def model(widths, dtype, slice_range):
    """concat(inputs of `widths`) -> value_shift_grad (makes it a device program), and a
    slice [offset, offset + width) of the concat's columns."""
    total = sum(widths)
    offset, width = slice_range
    ins = [f"tensor<?x?x{w}x{dtype}>" for w in widths]
    whole, part = f"tensor<?x?x{total}x{dtype}>", f"tensor<?x?x{width}x{dtype}>"
    half = f"tensor<?x?x{total // 2}x{dtype}>"
    args = ", ".join(f"%a{i}: {t}" for i, t in enumerate(ins))
    names = ", ".join(f"%a{i}" for i in range(len(ins)))
    return f"""
func.func @columns({args}) -> ({whole}, {part}, {half}) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cat = tensor.concat dim(2) {names} : ({", ".join(ins)}) -> {whole}
  %dc, %dp = attn.value_shift_grad %cat : ({whole}) -> ({half}, {half})
  %b = tensor.dim %cat, %c0 : {whole}
  %s = tensor.dim %cat, %c1 : {whole}
  %part = tensor.extract_slice %cat[0, 0, {offset}] [%b, %s, {width}] [1, 1, 1]
      : {whole} to {part}
  return %cat, %part, %dc : {whole}, {part}, {half}
}}
"""


def random_bits(rng, shape, dtype):
    if dtype == "f32":
        return rng.standard_normal(shape).astype(np.float32)
    # Any 16-bit pattern, NaNs included: a copy moves bits.
    return rng.integers(0, 1 << 16, size=shape, dtype=np.uint16)


CASES = [
    # widths, dtype, slice (offset, width), batch, tokens
    ((256, 128), "bf16", (256, 128), 2, 37),   # a CCA Q|K join and its K part
    ((256, 128, 64), "bf16", (0, 256), 1, 5),  # three inputs; the first part
    ((40, 24), "bf16", (8, 48), 3, 7),         # 16-byte chunks across a piece boundary
    ((6, 10), "bf16", (2, 12), 2, 3),          # 4-byte chunks
    ((3, 5), "bf16", (3, 5), 1, 129),          # single elements
    ((12, 4), "f32", (4, 8), 2, 9),            # 16-byte chunks of four f32
]


@pytest.mark.parametrize("widths,dtype,slice_range,batch,tokens", CASES)
def test_concat_and_slice(widths, dtype, slice_range, batch, tokens):
    art = emulator.compile_model(model(widths, dtype, slice_range),
                                 "columns_" + "_".join(map(str, widths)) + dtype)
    concat = next(k for k in art.kernels if k.startswith("attn_concat_"))
    piece = next(k for k in art.kernels if k.startswith("attn_slice_"))
    rng = np.random.default_rng(sum(widths) + tokens)
    inputs = [random_bits(rng, (batch, tokens, w), dtype) for w in widths]
    dev = emulator.Device()
    total = sum(widths)
    t = {f"input{i}": dev.upload(x, dtype) for i, x in enumerate(inputs)}
    t["output"] = dev.empty((batch, tokens, total), dtype)
    art.launch(concat, t, B=batch, S=tokens, T=1)
    want = np.concatenate(inputs, axis=2)
    got = dev.download(t["output"])
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8))

    offset, width = slice_range
    s = {"source": dev.upload(want, dtype), "output": dev.empty((batch, tokens, width), dtype)}
    art.launch(piece, s, B=batch, S=tokens, T=1)
    got = dev.download(s["output"])
    assert np.array_equal(got.view(np.uint8),
                          np.ascontiguousarray(want[..., offset:offset + width]).view(np.uint8))


def mask_model(width, mask_type):
    x, m = f"tensor<?x?x{width}xbf16>", f"tensor<?x?x{mask_type}>"
    return f"""
func.func @mask(%x: {x}, %m: {m}) -> {x} {{
  %y = attn.mask_tokens %x, %m : {x}, {m}
  return %y : {x}
}}
"""


@pytest.mark.parametrize("width,mask_type", [(384, "i64"), (40, "i32"), (6, "i64")])
def test_mask_tokens(width, mask_type):
    """attn.mask_tokens: the rows of tokens whose mask is 0 become zeros, the others copies."""
    art = emulator.compile_model(mask_model(width, mask_type), f"mask_w{width}_{mask_type}")
    (kernel,) = art.kernels
    batch, tokens = 3, 11
    rng = np.random.default_rng(width)
    x = random_bits(rng, (batch, tokens, width), "bf16")
    mask = (rng.random((batch, tokens)) < 0.7).astype(np.int64 if mask_type == "i64" else np.int32)
    mask[0] = 1
    mask[1, 5:] = 0
    dev = emulator.Device()
    t = {"input": dev.upload(x, "bf16"), "mask": dev.upload(mask, mask_type),
         "result": dev.empty((batch, tokens, width), "bf16")}
    art.launch(kernel, t, B=batch, S=tokens, T=1)
    want = np.where(mask[..., None] != 0, x, np.uint16(0))
    assert np.array_equal(dev.download(t["result"]), want)
