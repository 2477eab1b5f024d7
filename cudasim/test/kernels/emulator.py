"""Runs sm_90a kernels that attnfuse-compile writes on the emulator, through the same runtime
and Python launch path (attnfuse.runtime) that a GPU uses.

Environment (set by ctest): ATTNFUSE_COMPILE (attnfuse-compile), ATTNFUSE_RUNTIME_LIB
(libattnfuse_runtime.so), ATTNFUSE_CUDA_DRIVER (libattnfuse_cudasim.so).
"""
import atexit
import ctypes
import importlib.util
import json
import os
import shutil
import subprocess
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))


def _load_runtime_module():
    # attnfuse/runtime.py is pure Python; load it without the compiled extension.
    path = os.path.join(REPO, "python-bindings", "attnfuse", "runtime.py")
    spec = importlib.util.spec_from_file_location("attnfuse_runtime_py", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


runtime = _load_runtime_module()


def require_env():
    missing = [v for v in ("ATTNFUSE_COMPILE", "ATTNFUSE_RUNTIME_LIB", "ATTNFUSE_CUDA_DRIVER")
               if not os.environ.get(v)]
    if missing:
        raise RuntimeError("set " + ", ".join(missing) + " (ctest does)")


# A function (kernel name, PTX text) -> PTX text applied to every kernel compile_model writes,
# or None: how the mutation tests break the shipped kernels (see mutate_ptx).
_ptx_mutation = None
_ptx_mutation_hits = []


class mutate_ptx:
    """with mutate_ptx(fn) as hits: kernels compiled inside have fn applied to their PTX;
    hits lists the kernels whose text fn changed."""

    def __init__(self, fn):
        self.fn = fn

    def __enter__(self):
        global _ptx_mutation
        _ptx_mutation = self.fn
        _ptx_mutation_hits.clear()
        return _ptx_mutation_hits

    def __exit__(self, *exc):
        global _ptx_mutation
        _ptx_mutation = None
        return False


def compile_model(mlir_text, name, extra=()):
    """attnfuse-compile --target=sm_90a --no-cubin --no-programs -> SM90aArtifacts."""
    require_env()
    work = tempfile.mkdtemp(prefix="cudasim-" + name + "-")
    atexit.register(shutil.rmtree, work, True)
    src = os.path.join(work, name + ".mlir")
    with open(src, "w") as f:
        f.write(mlir_text)
    out = os.path.join(work, "out")
    # The tests launch kernel by kernel: no device programs (a lone decode prologue or
    # rotation has no cache to size its RoPE tables by; cudasim/test/programs runs programs).
    r = subprocess.run([os.environ["ATTNFUSE_COMPILE"], src, "--target=sm_90a", "-o", out,
                        "--no-cubin", "--no-programs", *extra], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"attnfuse-compile failed on {src}:\n{r.stderr}")
    files = sorted(os.listdir(out))
    if _ptx_mutation is not None:
        for f in files:
            if f.endswith(".ptx"):
                path = os.path.join(out, f)
                with open(path) as fh:
                    text = fh.read()
                mutated = _ptx_mutation(f[:-4], text)
                if mutated != text:
                    _ptx_mutation_hits.append(f[:-4])
                    with open(path, "w") as fh:
                        fh.write(mutated)
    return runtime.SM90aArtifacts(out, files)


class Device:
    """Device memory through the runtime's C API (afr_mem_alloc / afr_memcpy_*)."""

    def __init__(self):
        lib = runtime._lib()
        vp, u64 = ctypes.c_void_p, ctypes.c_uint64
        lib.afr_context_create.argtypes = [ctypes.c_int, ctypes.POINTER(vp)]
        lib.afr_mem_alloc.argtypes = [vp, ctypes.c_size_t, ctypes.POINTER(u64)]
        lib.afr_mem_free.argtypes = [vp, u64]
        lib.afr_memcpy_htod.argtypes = [vp, u64, vp, ctypes.c_size_t]
        lib.afr_memcpy_dtoh.argtypes = [vp, vp, u64, ctypes.c_size_t]
        self.lib = lib
        self.ctx = vp()
        runtime._check(lib.afr_context_create(0, ctypes.byref(self.ctx)))
        self.live = []

    def upload(self, array, dtype):
        """array: numpy array (for bf16: uint16 bit patterns) -> (ptr, dtype, shape, strides)."""
        a = np.ascontiguousarray(array)
        ptr = ctypes.c_uint64()
        runtime._check(self.lib.afr_mem_alloc(self.ctx, max(a.nbytes, 16), ctypes.byref(ptr)))
        if a.nbytes:
            runtime._check(self.lib.afr_memcpy_htod(self.ctx, ptr.value,
                                                    a.ctypes.data_as(ctypes.c_void_p), a.nbytes))
        self.live.append(ptr.value)
        strides, step = [], 1
        for dim in reversed(a.shape):
            strides.insert(0, step)
            step *= dim
        return (ptr.value, dtype, tuple(a.shape), tuple(strides))

    def empty(self, shape, dtype):
        np_dtype = {"bf16": np.uint16, "f16": np.uint16, "f32": np.float32, "i32": np.int32}[dtype]
        # Filled with all-ones bytes (NaN for floats) so that unwritten outputs are visible.
        return self.upload(np.full(shape, -1, dtype=np.int64).astype(np_dtype)
                           if dtype != "f32" else np.full(shape, np.nan, np.float32), dtype)

    def download(self, t):
        ptr, dtype, shape, _ = t
        np_dtype = {"bf16": np.uint16, "f16": np.uint16, "f32": np.float32, "i32": np.int32}[dtype]
        out = np.empty(shape, dtype=np_dtype)
        runtime._check(self.lib.afr_memcpy_dtoh(self.ctx, out.ctypes.data_as(ctypes.c_void_p),
                                                ptr, out.nbytes))
        return out


def bf16(a):
    """Rounds to bf16 and returns (bits, the rounded values as float64)."""
    import reference
    bits = reference.to_bf16_bits(np.asarray(a, dtype=np.float32))
    return bits, reference.from_bf16_bits(bits).astype(np.float64)


def rope_tables(positions, rotated, theta):
    """The manifest's tables: cos/sin(p * theta^(-2i/r)) in f64, rounded to f32, [positions, r/2]."""
    i = np.arange(rotated // 2)
    angle = np.arange(positions)[:, None] * theta ** (-2.0 * i / rotated)[None, :]
    return np.cos(angle).astype(np.float32), np.sin(angle).astype(np.float32)
