"""Numerics of attn.flash_decode (one decode step) on the CPU lowering.

Each case writes one function calling attn.flash_decode, runs it through
attnfuse-run (attn-to-cpu, JIT) on .npy inputs and compares the output and
the updated caches with reference.flash_decode_reference (float64 numpy,
written from the op's semantics). The caches hold random values everywhere,
also past each sequence's position, so a kernel that reads a token it should
not see fails. Tolerances as in test_numerics.py (one rounding of the output
to the element type, f32 arithmetic); the caches must come back bit-exact
apart from the new token, which is itself an input value.
"""

import os
import shutil
import subprocess
import zlib
from dataclasses import dataclass, field
from typing import Optional, Tuple

import numpy as np
import pytest

import reference as R
from test_numerics import TOLERANCE, decode, quantize, rel_err, rope_attr, ttype


@pytest.fixture(scope="session")
def run_tool():
    path = os.environ.get("ATTNFUSE_RUN") or shutil.which("attnfuse-run")
    if not path or not os.access(path, os.X_OK):
        pytest.fail("attnfuse-run not found: set ATTNFUSE_RUN to the built binary")
    return path


@dataclass
class Case:
    name: str
    dtype: str = "f32"
    batch: int = 3
    heads: int = 8
    kv_heads: int = 2
    head_dim: int = 16
    value_dim: Optional[int] = None  # None: K=V
    capacity: int = 48  # contiguous capacity, or pages per sequence * page size
    page_size: Optional[int] = None  # paged when set
    extra_pages: int = 3
    positions: Tuple[int, ...] = (5, 37, 0)
    block_kv: int = 8
    num_splits: int = 0
    window: Optional[int] = None
    scale: Optional[float] = None
    query_rope: Optional[Tuple[float, float]] = None
    key_rope: Optional[Tuple[float, float]] = None
    dynamic_batch: bool = True

    @property
    def key_is_value(self):
        return self.value_dim is None


def build_inputs(case, rng):
    """-> (ordered [(name, saved array, exact float64 or int array, MLIR type)])."""
    b, hq, hk, d = case.batch, case.heads, case.kv_heads, case.head_dim
    dyn = None if case.dynamic_batch else b
    args = []

    def add_float(name, shape, mlir_shape):
        saved, exact = quantize(rng.uniform(-1.0, 1.0, size=shape), case.dtype)
        args.append((name, saved, exact, ttype(mlir_shape, case.dtype)))

    add_float("q", (b, 1, hq, d), (dyn, 1, hq, d))
    add_float("k", (b, 1, hk, d), (dyn, 1, hk, d))
    if not case.key_is_value:
        dv = case.value_dim
        add_float("v", (b, 1, hk, dv), (dyn, 1, hk, dv))
    if case.page_size:
        pages_per_seq = case.capacity // case.page_size
        num_pages = b * pages_per_seq + case.extra_pages
        cache_shape = (num_pages, case.page_size, hk)
        mlir_cache = (None, case.page_size, hk)
    else:
        cache_shape = (b, case.capacity, hk)
        mlir_cache = (dyn, case.capacity, hk)
    add_float("kc", cache_shape + (d,), mlir_cache + (d,))
    if not case.key_is_value:
        add_float("vc", cache_shape + (case.value_dim,), mlir_cache + (case.value_dim,))
    positions = np.asarray(case.positions, dtype=np.int32)
    args.append(("pos", positions, positions, ttype((dyn,), "i32")))
    if case.page_size:
        # Every sequence owns distinct pages, in shuffled order.
        table = rng.permutation(num_pages)[: b * pages_per_seq]
        table = table.reshape(b, pages_per_seq).astype(np.int32)
        args.append(("bt", table, table, ttype((dyn, None), "i32")))
    return args


def function_ir(case, args):
    types = {name: t for name, _, _, t in args}
    params = ", ".join(f"%{name}: {t}" for name, _, _, t in args)
    cache_types = [types["kc"]] + ([] if case.key_is_value else [types["vc"]])
    hq, dv = case.heads, case.value_dim or case.head_dim
    out_type = ttype((None if case.dynamic_batch else case.batch, 1, hq, dv), case.dtype)
    results = [out_type] + cache_types
    attrs = [f"block_kv = {case.block_kv} : i64"]
    if case.num_splits:
        attrs.append(f"num_splits = {case.num_splits} : i64")
    if case.window:
        attrs.append(f"window = {case.window} : i64")
    if case.scale:
        attrs.append(f"scale = {case.scale!r} : f64")
    if case.query_rope:
        attrs.append(f"query_rope = {rope_attr(case.query_rope)}")
    if case.key_rope:
        attrs.append(f"key_rope = {rope_attr(case.key_rope)}")
    new = "%q, %k" + ("" if case.key_is_value else ", %v")
    caches = "%kc" + ("" if case.key_is_value else ", %vc")
    table = " block_table(%bt)" if case.page_size else ""
    names = ["%o", "%kc2"] + ([] if case.key_is_value else ["%vc2"])
    # The output's init follows the new rows among the operands.
    new_count = 2 if case.key_is_value else 3
    operand_types = ", ".join([t for _, _, _, t in args][:new_count] + [out_type]
                              + [t for _, _, _, t in args][new_count:])
    init = (f"  %c0 = arith.constant 0 : index\n"
            f"  %batch = tensor.dim %q, %c0 : {types['q']}\n"
            f"  %init = tensor.empty(%batch) : {out_type}\n"
            if case.dynamic_batch else f"  %init = tensor.empty() : {out_type}\n")
    return (f"func.func @main({params}) -> ({', '.join(results)}) {{\n"
            f"{init}"
            f"  {', '.join(names)} = attn.flash_decode {new} outs(%init) cache({caches}) "
            f"positions(%pos){table} {{{', '.join(attrs)}}}\n"
            f"      : ({operand_types}) -> ({', '.join(results)})\n"
            f"  return {', '.join(names)} : {', '.join(results)}\n}}\n")


CASES = [
    # Contiguous K=V, GQA-4, f32; positions 0, mid-tile and tile-aligned.
    Case("contiguous-kv-gqa4-f32", positions=(5, 37, 0)),
    Case("contiguous-kv-gqa4-f32-last", positions=(47, 8, 15), block_kv=16),
    # Separate V of another width, MQA.
    Case("contiguous-v-mqa-f32", heads=4, kv_heads=1, value_dim=8, positions=(3, 46, 20)),
    # Paged with a shuffled block table.
    Case("paged-kv-gqa4-f32", page_size=4, capacity=40, positions=(0, 17, 39)),
    Case("paged-v-mha-f32", heads=2, kv_heads=2, value_dim=16, page_size=8, capacity=32,
         positions=(31, 9, 16), block_kv=4, dynamic_batch=False),
    # RoPE on load (query and key), partial and full; window.
    Case("contiguous-kv-rope-f32", query_rope=(10000.0, 1.0), key_rope=(10000.0, 1.0)),
    Case("paged-v-rope-window-f32", value_dim=16, page_size=4, capacity=40, window=9,
         query_rope=(500.0, 0.5), key_rope=(500.0, 0.5), positions=(2, 33, 12)),
    Case("contiguous-kv-window-mqa-f32", heads=4, kv_heads=1, window=5, scale=0.3,
         positions=(4, 30, 47)),
    # Contiguous with a window and partial RoPE: the tables start at the
    # first key tile of any window, the tiles before p are read in place.
    Case("contiguous-v-rope-window-f32", value_dim=16, capacity=64, window=19,
         query_rope=(10000.0, 0.5), key_rope=(10000.0, 0.5), positions=(50, 63, 27)),
    # bf16 and f16 storage, f32 arithmetic.
    Case("contiguous-kv-rope-bf16", dtype="bf16", query_rope=(10000.0, 1.0),
         key_rope=(10000.0, 1.0)),
    Case("paged-v-gqa4-window-bf16", dtype="bf16", value_dim=16, page_size=8, capacity=48,
         window=20, positions=(44, 1, 25)),
    Case("contiguous-v-mqa-f16", dtype="f16", heads=4, kv_heads=1, value_dim=16,
         key_rope=(10000.0, 0.5), positions=(10, 0, 41)),
    # Splits requested: the CPU form gives the same result with any split.
    Case("contiguous-kv-splits-f32", num_splits=4, block_kv=4, positions=(45, 2, 19)),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_flash_decode(run_tool, case, tmp_path):
    rng = np.random.default_rng(zlib.crc32(case.name.encode()))
    args = build_inputs(case, rng)
    model = tmp_path / "model.mlir"
    model.write_text(function_ir(case, args))
    inputs = []
    for name, saved, _, _ in args:
        path = tmp_path / f"{name}.npy"
        np.save(path, saved)
        inputs.append(f"--input={path}")
    out_dir = tmp_path / "out"
    proc = subprocess.run([run_tool, str(model), "--entry=main", *inputs,
                           f"--output-dir={out_dir}"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (
        f"attnfuse-run failed ({proc.returncode}):\n{proc.stderr}\n{model.read_text()}")

    exact = {name: values for name, _, values, _ in args}
    ref_out, ref_kc, ref_vc = R.flash_decode_reference(
        exact["q"], exact["k"], exact["kc"], exact["pos"], v_new=exact.get("v"),
        value_cache=exact.get("vc"), block_table=exact.get("bt"), window=case.window,
        scale=case.scale, query_rope=case.query_rope, key_rope=case.key_rope)

    out = decode(np.load(out_dir / "out0.npy"), case.dtype)
    assert out.shape == ref_out.shape
    assert np.all(np.isfinite(out))
    err = rel_err(out, ref_out)
    assert err <= TOLERANCE[case.dtype], f"output rel_err {err:.3e}"
    np.testing.assert_array_equal(decode(np.load(out_dir / "out1.npy"), case.dtype), ref_kc,
                                  err_msg="updated key cache")
    if not case.key_is_value:
        np.testing.assert_array_equal(decode(np.load(out_dir / "out2.npy"), case.dtype),
                                      ref_vc, err_msg="updated value cache")


def test_flash_decode_position_outside_capacity(run_tool, tmp_path):
    """A position at the capacity stops with the op's message, never writes."""
    case = Case("outside", batch=2, positions=(3, 48))
    rng = np.random.default_rng(1)
    args = build_inputs(case, rng)
    model = tmp_path / "model.mlir"
    model.write_text(function_ir(case, args))
    inputs = []
    for name, saved, _, _ in args:
        np.save(tmp_path / f"{name}.npy", saved)
        inputs.append(f"--input={tmp_path / (name + '.npy')}")
    proc = subprocess.run([run_tool, str(model), "--entry=main", *inputs,
                           f"--output-dir={tmp_path / 'out'}"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0
    assert "positions[b] is outside the cache capacity" in proc.stderr + proc.stdout
