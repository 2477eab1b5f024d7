"""Property test of the CPU JIT boundary (Hypothesis): random shapes, some
inconsistent and some empty, random element types and layouts (strided,
read-only, misaligned), and now and then an argument of the wrong element
type. Every call either matches the float64 reference of
integration_test/reference.py or raises a clear error; none crashes."""

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import attnfuse  # noqa: E402
import reference  # noqa: E402

HQ, HK, D = 4, 2, 8

IR = """func.func @attend(%q: tensor<?x?x{hq}x{d}x{t}>, %k: tensor<?x?x{hk}x{d}x{t}>,
                 %v: tensor<?x?x{hk}x{d}x{t}>, %bias: tensor<?x?x{t}>)
    -> tensor<?x?x{hq}x{d}x{t}> {{
  %o = attn.sdpa %q, %k, %v bias(%bias) {{causal}}
      : (tensor<?x?x{hq}x{d}x{t}>, tensor<?x?x{hk}x{d}x{t}>,
         tensor<?x?x{hk}x{d}x{t}>, tensor<?x?x{t}>) -> tensor<?x?x{hq}x{d}x{t}>
  return %o : tensor<?x?x{hq}x{d}x{t}>
}}"""

# bf16 travels as uint16 bit patterns; its tolerance is a few units in the
# last place of bf16 (2^-8 relative) at the outputs' magnitude (<= 1).
DTYPES = {"f32": (np.float32, 2e-5), "f64": (np.float64, 1e-10),
          "f16": (np.float16, 1e-2), "bf16": (np.uint16, 3e-2)}
_compiled = {}


def function(dtype):
    if dtype not in _compiled:
        text = IR.format(hq=HQ, hk=HK, d=D, t=dtype)
        _compiled[dtype] = attnfuse.compile(attnfuse.parse(text))
    return _compiled[dtype]


@st.composite
def layout(draw, array):
    """The same values as `array`, in a layout the caller may hand in."""
    kind = draw(st.sampled_from(["dense", "strided", "readonly", "misaligned",
                                 "fortran"]))
    if kind == "strided" and array.ndim:
        wide = np.zeros(array.shape[:-1] + (2 * array.shape[-1],), array.dtype)
        wide[..., ::2] = array
        return wide[..., ::2]
    if kind == "readonly":
        copy = array.copy()
        copy.flags.writeable = False
        return copy
    if kind == "misaligned" and array.itemsize > 1:
        raw = np.zeros(array.nbytes + 1, np.uint8)
        out = raw[1:].view(array.dtype).reshape(array.shape)
        out[...] = array
        return out
    if kind == "fortran":
        return np.asfortranarray(array)
    return array


@st.composite
def call(draw):
    dtype = draw(st.sampled_from(sorted(DTYPES)))
    size = st.integers(min_value=0, max_value=5)
    b, s, t = draw(size), draw(size), draw(size)
    # Most calls are consistent; some change one size of one argument.
    shapes = {"q": [b, s, HQ, D], "k": [b, t, HK, D], "v": [b, t, HK, D],
              "bias": [s, t]}
    broken = None
    if draw(st.booleans()) and draw(st.booleans()):
        name = draw(st.sampled_from(sorted(shapes)))
        axis = draw(st.sampled_from([0, 1] if name != "bias" else [0, 1]))
        new = draw(size.filter(lambda n: n != shapes[name][axis]))
        shapes[name] = list(shapes[name])
        shapes[name][axis] = new
        broken = (name, axis)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if dtype == "bf16":
        values = {n: attnfuse.to_bf16(rng.uniform(-1, 1, shp))
                  for n, shp in shapes.items()}
    else:
        values = {n: rng.uniform(-1, 1, shp).astype(DTYPES[dtype][0])
                  for n, shp in shapes.items()}
    laid_out = {n: draw(layout(a)) for n, a in values.items()}
    # Now and then one argument arrives with another element type.
    retyped = None
    if broken is None and draw(st.integers(0, 7)) == 0:
        name = draw(st.sampled_from(sorted(shapes)))
        other = draw(st.sampled_from([np.int32, np.int64, np.float64,
                                      np.float32, np.float16]).filter(
            lambda t: np.dtype(t) != np.dtype(DTYPES[dtype][0])))
        laid_out[name] = values[name].astype(other)
        retyped = name
    return dtype, values, laid_out, broken, retyped


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(call())
def test_every_call_matches_the_reference_or_raises(case):
    dtype, values, laid_out, broken, retyped = case
    f = function(dtype)
    names = ("q", "k", "v", "bias")
    args = [laid_out[n] for n in names]
    if retyped is not None:
        with pytest.raises(ValueError, match=rf"argument #{names.index(retyped)}"
                           rf" of 'attend' is {dtype}: expected a"):
            f(*args)
        return
    if broken is not None:
        with pytest.raises(RuntimeError, match=r"run-time size check of "
                           r"'attend' failed before the call: argument #\d "
                           r"dimension \d is \d+ but argument #\d dimension "
                           r"\d is \d+; attn.sdpa"):
            f(*args)
        return
    out = f(*args)
    if dtype == "bf16":
        out = attnfuse.from_bf16(out)
        exact = {n: attnfuse.from_bf16(a) for n, a in values.items()}
    else:
        exact = values
    b, s, t = values["q"].shape[0], values["q"].shape[1], values["k"].shape[1]
    if t == 0:  # no key at all: every row is fully masked and gives zeros
        expected = np.zeros((b, s, HQ, D))
    else:
        expected = reference.sdpa(exact["q"], exact["k"], exact["v"],
                                  bias=exact["bias"], causal=True)
    assert out.shape == expected.shape
    tolerance = DTYPES[dtype][1]
    np.testing.assert_allclose(out.astype(np.float64), expected,
                               rtol=tolerance, atol=tolerance)
    # The inputs are left as they were.
    for name, array in laid_out.items():
        assert np.array_equal(array, values[name])
