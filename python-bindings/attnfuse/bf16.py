"""bf16 in numpy, which has no bfloat16 type.

Convention: a bf16 array is a numpy uint16 array holding the bit patterns
(the upper 16 bits of the float32 encoding). to_bf16 rounds float values to
the nearest bf16 (ties to even); from_bf16 widens to float32 exactly. Arrays
of ml_dtypes.bfloat16 are accepted wherever bf16 is, when ml_dtypes is
installed.
"""

import numpy as np


def to_bf16(values):
    """float array -> uint16 bf16 bit patterns (round to nearest even).

    values: an array or anything numpy converts to float32; NaN stays a
    quiet NaN."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    wide = bits.astype(np.uint64)
    rounded = ((wide + ((wide >> 16) & 1) + 0x7FFF) >> 16).astype(np.uint16)
    # NaN stays a (quiet) NaN instead of rounding into infinity.
    nan = np.isnan(np.asarray(values, dtype=np.float32))
    return np.where(nan, np.uint16(0x7FC0), rounded).astype(np.uint16)


def from_bf16(bits):
    """uint16 bf16 bit patterns (or ml_dtypes.bfloat16) -> float32.

    bits: the array of bit patterns; any other dtype raises ValueError."""
    array = np.asarray(bits)
    if bf16_dtype() is not None and array.dtype == bf16_dtype():
        array = array.view(np.uint16)
    if array.dtype != np.uint16:
        raise ValueError(f"from_bf16 takes uint16 bit patterns, got {array.dtype}")
    return (array.astype(np.uint32) << 16).view(np.float32)


def bf16_dtype():
    """ml_dtypes.bfloat16 as a numpy dtype, or None without ml_dtypes."""
    try:
        import ml_dtypes
    except ImportError:
        return None
    return np.dtype(ml_dtypes.bfloat16)
