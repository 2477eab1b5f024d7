"""ctypes binding of the AttnFuse runtime's C API (runtime/include/attnfuse/runtime.h),
for the device check. Only the standard library and, for Tensor helpers, torch.

Buffers: make_tensors binds device tensors (torch CUDA tensors) by pointer. Without a CUDA
device in torch (e.g. on the emulator, ATTNFUSE_CUDA_DRIVER=libattnfuse_cudasim.so),
HostMirror.make_tensors takes host arrays (CPU torch tensors or numpy arrays), copies them into
device memory through the runtime's afr_mem_alloc / afr_memcpy_htod, and Kernel.launch copies
every buffer back (afr_memcpy_dtoh) after the launch, so the same launch code serves both."""
import ctypes
import json
import os

AFR_MAX_RANK = 8
STATUS = {0: "AFR_OK", 1: "AFR_ERR_INVALID_ARGUMENT", 2: "AFR_ERR_IO", 3: "AFR_ERR_MANIFEST",
          4: "AFR_ERR_NOT_FOUND", 5: "AFR_ERR_VALIDATION", 6: "AFR_ERR_NO_DRIVER",
          7: "AFR_ERR_CUDA"}
DTYPE = {"bf16": 1, "f16": 2, "f32": 3, "i32": 4, "i64": 5, "u8": 6}


class Sizes(ctypes.Structure):
    _fields_ = [("B", ctypes.c_int64), ("S", ctypes.c_int64), ("T", ctypes.c_int64)]


class Tensor(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("data", ctypes.c_uint64), ("dtype", ctypes.c_int),
                ("rank", ctypes.c_int32), ("shape", ctypes.c_int64 * AFR_MAX_RANK),
                ("strides", ctypes.c_int64 * AFR_MAX_RANK)]


class TmaParams(ctypes.Structure):
    _fields_ = [("param", ctypes.c_char * 64), ("tensor", ctypes.c_char * 64),
                ("data_type", ctypes.c_uint32), ("rank", ctypes.c_uint32),
                ("global_address", ctypes.c_uint64), ("global_dim", ctypes.c_uint64 * 5),
                ("global_strides", ctypes.c_uint64 * 4), ("box_dim", ctypes.c_uint32 * 5),
                ("element_strides", ctypes.c_uint32 * 5), ("interleave", ctypes.c_uint32),
                ("swizzle", ctypes.c_uint32), ("l2_promotion", ctypes.c_uint32),
                ("oob_fill", ctypes.c_uint32)]


class LaunchDims(ctypes.Structure):
    _fields_ = [("grid", ctypes.c_uint32 * 3), ("block", ctypes.c_uint32 * 3),
                ("dynamic_smem_bytes", ctypes.c_uint32)]


class AfrError(RuntimeError):
    def __init__(self, status, message):
        super().__init__(f"{STATUS.get(status, status)}: {message}")
        self.status = status
        self.message = message


class Runtime:
    def __init__(self, lib_path):
        lib = ctypes.CDLL(lib_path)
        self.lib = lib
        vp, cp, i, st = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int
        lib.afr_last_error.restype = cp
        lib.afr_last_error.argtypes = []
        lib.afr_manifest_load.restype = st
        lib.afr_manifest_load.argtypes = [cp, ctypes.POINTER(vp)]
        lib.afr_manifest_destroy.argtypes = [vp]
        lib.afr_manifest_destroy.restype = None
        lib.afr_manifest_find_kernel.restype = st
        lib.afr_manifest_find_kernel.argtypes = [vp, cp, ctypes.POINTER(i)]
        lib.afr_kernel_launch_dims.restype = st
        lib.afr_kernel_launch_dims.argtypes = [vp, i, ctypes.POINTER(Sizes),
                                               ctypes.POINTER(LaunchDims)]
        lib.afr_validate.restype = st
        lib.afr_validate.argtypes = [vp, i, ctypes.POINTER(Sizes), ctypes.POINTER(Tensor), i]
        lib.afr_driver_available.restype = i
        lib.afr_driver_available.argtypes = []
        lib.afr_context_create.restype = st
        lib.afr_context_create.argtypes = [i, ctypes.POINTER(vp)]
        lib.afr_context_destroy.restype = None
        lib.afr_context_destroy.argtypes = [vp]
        lib.afr_context_compute_capability.restype = st
        lib.afr_context_compute_capability.argtypes = [vp, ctypes.POINTER(i)]
        lib.afr_kernel_load.restype = st
        lib.afr_kernel_load.argtypes = [vp, vp, i, ctypes.POINTER(vp)]
        lib.afr_kernel_destroy.restype = None
        lib.afr_kernel_destroy.argtypes = [vp]
        lib.afr_launch.restype = st
        lib.afr_launch.argtypes = [vp, ctypes.POINTER(Sizes), ctypes.POINTER(Tensor), i, vp]
        u64 = ctypes.c_uint64
        lib.afr_mem_alloc.restype = st
        lib.afr_mem_alloc.argtypes = [vp, ctypes.c_size_t, ctypes.POINTER(u64)]
        lib.afr_mem_free.restype = st
        lib.afr_mem_free.argtypes = [vp, u64]
        lib.afr_memcpy_htod.restype = st
        lib.afr_memcpy_htod.argtypes = [vp, u64, vp, ctypes.c_size_t]
        lib.afr_memcpy_dtoh.restype = st
        lib.afr_memcpy_dtoh.argtypes = [vp, vp, u64, ctypes.c_size_t]
        lib.afr_stream_synchronize.restype = st
        lib.afr_stream_synchronize.argtypes = [vp, vp]
        lib.afr_eval_expr.restype = st
        lib.afr_eval_expr.argtypes = [cp, ctypes.POINTER(Sizes), ctypes.POINTER(ctypes.c_int64)]
        lib.afr_kernel_num_tma.restype = i
        lib.afr_kernel_num_tma.argtypes = [vp, i]
        lib.afr_tma_encode_params.restype = st
        lib.afr_tma_encode_params.argtypes = [vp, i, i, ctypes.POINTER(Sizes),
                                              ctypes.POINTER(Tensor), i,
                                              ctypes.POINTER(TmaParams)]
        self.ctx = None

    def _check(self, status):
        if status != 0:
            raise AfrError(status, self.lib.afr_last_error().decode())

    def driver_available(self):
        return bool(self.lib.afr_driver_available())

    def create_context(self, device=0):
        ctx = ctypes.c_void_p()
        self._check(self.lib.afr_context_create(device, ctypes.byref(ctx)))
        self.ctx = ctx
        cc = ctypes.c_int()
        self._check(self.lib.afr_context_compute_capability(ctx, ctypes.byref(cc)))
        return cc.value

    def synchronize(self, stream=0):
        self._check(self.lib.afr_stream_synchronize(self.ctx, ctypes.c_void_p(stream)))

    def eval_expr(self, expr, B, S, T):
        """A manifest size expression ("ceil_div(S, 64)", "B", 128) for the sizes."""
        if isinstance(expr, int):
            return expr
        value = ctypes.c_int64()
        sz = Sizes(B, S, T)
        self._check(self.lib.afr_eval_expr(str(expr).encode(), ctypes.byref(sz),
                                           ctypes.byref(value)))
        return value.value

    def load_manifest(self, path):
        m = ctypes.c_void_p()
        self._check(self.lib.afr_manifest_load(path.encode(), ctypes.byref(m)))
        with open(path) as f:
            doc = json.load(f)
        return Manifest(self, m, doc)


class Manifest:
    def __init__(self, rt, handle, doc):
        self.rt, self.handle, self.doc = rt, handle, doc

    def kernels(self):
        return self.doc["kernels"]

    def index(self, name):
        i = ctypes.c_int()
        self.rt._check(self.rt.lib.afr_manifest_find_kernel(self.handle, name.encode(),
                                                            ctypes.byref(i)))
        return i.value

    def launch_dims(self, index, B, S, T):
        d = LaunchDims()
        sz = Sizes(B, S, T)
        self.rt._check(self.rt.lib.afr_kernel_launch_dims(self.handle, index, ctypes.byref(sz),
                                                          ctypes.byref(d)))
        return list(d.grid), list(d.block), d.dynamic_smem_bytes

    def validate(self, index, B, S, T, tensors):
        """Host-side check of the buffers (tensors: from make_tensors); raises AfrError."""
        arr, _ = tensors
        sz = Sizes(B, S, T)
        self.rt._check(self.rt.lib.afr_validate(self.handle, index, ctypes.byref(sz), arr,
                                                len(arr)))

    def tma_params(self, index, B, S, T, tensors):
        """The cuTensorMapEncodeTiled arguments of every descriptor of the kernel."""
        arr, _ = tensors
        sz = Sizes(B, S, T)
        out = []
        for j in range(self.rt.lib.afr_kernel_num_tma(self.handle, index)):
            p = TmaParams()
            self.rt._check(self.rt.lib.afr_tma_encode_params(self.handle, index, j,
                                                             ctypes.byref(sz), arr, len(arr),
                                                             ctypes.byref(p)))
            out.append(p)
        return out

    def load(self, index):
        k = ctypes.c_void_p()
        self.rt._check(self.rt.lib.afr_kernel_load(self.rt.ctx, self.handle, index,
                                                   ctypes.byref(k)))
        return Kernel(self.rt, k)


def make_tensors(named):
    """named: list of (name, torch.Tensor) -> (ctypes array of Tensor, keepalive list: the
    tensors first, in order, then the encoded names)."""
    arr = (Tensor * len(named))()
    keep = [t for _, t in named]  # the tensors stay alive as long as the argument array
    for j, (name, t) in enumerate(named):
        b = name.encode()
        keep.append(b)
        arr[j].name = b
        arr[j].data = t.data_ptr()
        arr[j].dtype = {"torch.bfloat16": 1, "torch.float16": 2, "torch.float32": 3,
                        "torch.int32": 4, "torch.int64": 5, "torch.uint8": 6}[str(t.dtype)]
        arr[j].rank = t.dim()
        for d in range(t.dim()):
            arr[j].shape[d] = t.shape[d]
            arr[j].strides[d] = t.stride(d)
    return arr, keep


def _host_view(a):
    """(host address, bytes, dtype name, shape, strides in elements) of a contiguous CPU torch
    tensor or numpy array (bf16 as numpy uint16 bit patterns: dtype_name says so)."""
    if hasattr(a, "data_ptr"):  # torch
        if getattr(a.device, "type", "cpu") != "cpu":
            raise ValueError(f"HostMirror takes host tensors, got one on {a.device}")
        if not a.is_contiguous():
            raise ValueError("HostMirror takes contiguous tensors")
        dtype = {"torch.bfloat16": "bf16", "torch.float16": "f16", "torch.float32": "f32",
                 "torch.int32": "i32", "torch.int64": "i64", "torch.uint8": "u8"}[str(a.dtype)]
        return (a.data_ptr(), a.numel() * a.element_size(), dtype, tuple(a.shape),
                tuple(a.stride()))
    raise TypeError(f"expected a torch tensor, got {type(a).__name__}")


class HostArray:
    """A numpy array with the dtype the runtime should see (numpy has no bf16: pass the uint16
    bit patterns with dtype "bf16")."""

    def __init__(self, array, dtype):
        if not array.flags["C_CONTIGUOUS"]:
            raise ValueError("HostArray takes C-contiguous arrays")
        self.array, self.dtype = array, dtype


class Mirrored(tuple):
    """(ctypes array, keepalive) like make_tensors, bound to device copies of host buffers;
    Kernel.launch copies them back after the launch."""

    def copy_back(self):
        for host, nbytes, dptr in self.pairs:
            if nbytes:
                self.mirror.rt._check(self.mirror.rt.lib.afr_memcpy_dtoh(
                    self.mirror.rt.ctx, ctypes.c_void_p(host), dptr, nbytes))

    def free(self):
        for _, _, dptr in self.pairs:
            self.mirror.rt.lib.afr_mem_free(self.mirror.rt.ctx, dptr)
        self.pairs = []


class HostMirror:
    """Device memory for host buffers through the runtime's memory API (a GPU or the
    emulator). Needs a context (Runtime.create_context)."""

    def __init__(self, rt):
        self.rt = rt

    def alloc(self, nbytes):
        ptr = ctypes.c_uint64()
        # At least 16 bytes: the runtime requires non-null, 16-byte aligned buffers.
        self.rt._check(self.rt.lib.afr_mem_alloc(self.rt.ctx, max(nbytes, 16),
                                                 ctypes.byref(ptr)))
        return ptr.value

    def make_tensors(self, named):
        """named: list of (name, CPU torch tensor or HostArray) -> Mirrored."""
        arr = (Tensor * len(named))()
        keep = [t for _, t in named]
        pairs = []
        by_host = {}
        for j, (name, t) in enumerate(named):
            if isinstance(t, HostArray):
                a = t.array
                host, nbytes, dtype = a.ctypes.data, a.nbytes, t.dtype
                shape = a.shape
                strides = tuple(s // a.itemsize for s in a.strides)
            else:
                host, nbytes, dtype, shape, strides = _host_view(t)
            key = (host, nbytes)
            if key in by_host:  # one buffer bound twice (K=V): one device copy
                dptr = by_host[key]
            else:
                dptr = self.alloc(nbytes)
                if nbytes:
                    self.rt._check(self.rt.lib.afr_memcpy_htod(self.rt.ctx, dptr,
                                                               ctypes.c_void_p(host), nbytes))
                by_host[key] = dptr
                pairs.append((host, nbytes, dptr))
            b = name.encode()
            keep.append(b)
            arr[j].name = b
            arr[j].data = dptr
            arr[j].dtype = DTYPE[dtype]
            arr[j].rank = len(shape)
            for d in range(len(shape)):
                arr[j].shape[d] = shape[d]
                arr[j].strides[d] = strides[d]
        m = Mirrored((arr, keep))
        m.pairs, m.mirror = pairs, self
        return m


class Kernel:
    def __init__(self, rt, handle):
        self.rt, self.handle = rt, handle

    def launch(self, B, S, T, tensors, stream):
        """tensors: (ctypes array, keepalive) from make_tensors, or Mirrored from
        HostMirror.make_tensors (then the launch is synchronous and the host buffers hold the
        results when it returns); stream: an int handle."""
        arr = tensors[0]
        sz = Sizes(B, S, T)
        self.rt._check(self.rt.lib.afr_launch(self.handle, ctypes.byref(sz), arr, len(arr),
                                              ctypes.c_void_p(stream)))
        if isinstance(tensors, Mirrored):
            self.rt.synchronize(stream)
            tensors.copy_back()


class Driver:
    """The CUDA driver library the runtime loads (ATTNFUSE_CUDA_DRIVER or libcuda.so.1),
    opened directly for what the runtime does not expose: the driver version, the device
    name, cuModuleLoadData of one image, cuTensorMapEncodeTiled without a launch. Calls that
    need a context use the current one (Runtime.create_context makes it current)."""

    def __init__(self):
        self.path = os.environ.get("ATTNFUSE_CUDA_DRIVER") or "libcuda.so.1"
        lib = ctypes.CDLL(self.path)
        self.lib = lib
        i, vp, cp = ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p
        lib.cuInit.argtypes = [ctypes.c_uint]
        lib.cuDriverGetVersion.argtypes = [ctypes.POINTER(i)]
        lib.cuDeviceGet.argtypes = [ctypes.POINTER(i), i]
        lib.cuDeviceGetName.argtypes = [cp, i, i]
        lib.cuModuleLoadData.argtypes = [ctypes.POINTER(vp), vp]
        lib.cuModuleUnload.argtypes = [vp]
        lib.cuGetErrorName.argtypes = [i, ctypes.POINTER(cp)]
        lib.cuGetErrorString.argtypes = [i, ctypes.POINTER(cp)]
        u64p, u32p = ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint32)
        lib.cuTensorMapEncodeTiled.argtypes = [vp, i, ctypes.c_uint, ctypes.c_uint64, u64p,
                                               u64p, u32p, u32p, i, i, i, i]
        self.lib.cuInit(0)

    def error(self, code):
        name, text = ctypes.c_char_p(), ctypes.c_char_p()
        self.lib.cuGetErrorName(code, ctypes.byref(name))
        self.lib.cuGetErrorString(code, ctypes.byref(text))
        n = name.value.decode() if name.value else str(code)
        t = text.value.decode() if text.value else ""
        return f"{n}: {t}" if t else n

    def version(self):
        v = ctypes.c_int()
        r = self.lib.cuDriverGetVersion(ctypes.byref(v))
        return v.value if r == 0 else None

    def device_name(self, ordinal=0):
        dev = ctypes.c_int()
        if self.lib.cuDeviceGet(ctypes.byref(dev), ordinal) != 0:
            return None
        buf = ctypes.create_string_buffer(256)
        if self.lib.cuDeviceGetName(buf, 256, dev.value) != 0:
            return None
        return buf.value.decode()

    def load_module(self, image):
        """cuModuleLoadData of a cubin or a NUL-terminated PTX image -> (ok, error text)."""
        mod = ctypes.c_void_p()
        buf = ctypes.create_string_buffer(image, len(image))
        r = self.lib.cuModuleLoadData(ctypes.byref(mod), buf)
        if r != 0:
            return False, self.error(r)
        self.lib.cuModuleUnload(mod)
        return True, ""

    def encode_tensor_map(self, p):
        """cuTensorMapEncodeTiled with the runtime's afr_tma_params -> error text or ""."""
        raw = ctypes.create_string_buffer(128 + 128)
        addr = (ctypes.addressof(raw) + 127) // 128 * 128  # as the runtime aligns a CUtensorMap
        r = self.lib.cuTensorMapEncodeTiled(
            ctypes.c_void_p(addr), p.data_type, p.rank, p.global_address, p.global_dim,
            p.global_strides, p.box_dim, p.element_strides, p.interleave, p.swizzle,
            p.l2_promotion, p.oob_fill)
        return "" if r == 0 else self.error(r)
