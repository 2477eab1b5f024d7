"""ctypes binding of the AttnFuse runtime's C API (runtime/include/attnfuse/runtime.h),
for the device check. Only the standard library and, for Tensor helpers, torch."""
import ctypes
import json

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


class Kernel:
    def __init__(self, rt, handle):
        self.rt, self.handle = rt, handle

    def launch(self, B, S, T, tensors, stream):
        """tensors: (ctypes array, keepalive) from make_tensors; stream: an int handle."""
        arr, _ = tensors
        sz = Sizes(B, S, T)
        self.rt._check(self.rt.lib.afr_launch(self.handle, ctypes.byref(sz), arr, len(arr),
                                              ctypes.c_void_p(stream)))
