"""sm_90a artifacts and the GPU launcher (ctypes over libattnfuse_runtime).

Pure Python: this module imports without the compiled extension and without
LLVM, so it also runs on a GPU machine that only has the runtime library
(set ATTNFUSE_RUNTIME_LIB to its path when it is not next to this file).

Launches take torch tensors (anything with data_ptr(), dtype, shape and
stride()), objects with __cuda_array_interface__, or raw
(data_pointer, dtype, shape, strides) tuples with dtype one of bf16, f16,
f32, i32, i64, u8 and strides in elements.
"""

import ctypes
import json
import os

AFR_MAX_RANK = 8
_DTYPES = {"bf16": 1, "f16": 2, "f32": 3, "i32": 4, "i64": 5, "u8": 6}
_TORCH_DTYPES = {"torch.bfloat16": "bf16", "torch.float16": "f16",
                 "torch.float32": "f32", "torch.int32": "i32",
                 "torch.int64": "i64", "torch.uint8": "u8"}
_TYPESTRS = {"<f2": "f16", "<f4": "f32", "<i4": "i32", "<i8": "i64",
             "|u1": "u8", "<V2": "bf16"}


class AttnFuseRuntimeError(RuntimeError):
    """A call of the AttnFuse runtime failed; status is its afr_status name."""

    def __init__(self, status, message):
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


class NoDriverError(AttnFuseRuntimeError):
    """No CUDA driver (libcuda.so.1) on this machine."""


_STATUS = {0: "AFR_OK", 1: "AFR_ERR_INVALID_ARGUMENT", 2: "AFR_ERR_IO",
           3: "AFR_ERR_MANIFEST", 4: "AFR_ERR_NOT_FOUND",
           5: "AFR_ERR_VALIDATION", 6: "AFR_ERR_NO_DRIVER", 7: "AFR_ERR_CUDA"}


class _Sizes(ctypes.Structure):
    _fields_ = [("B", ctypes.c_int64), ("S", ctypes.c_int64),
                ("T", ctypes.c_int64)]


class _Tensor(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("data", ctypes.c_uint64),
                ("dtype", ctypes.c_int), ("rank", ctypes.c_int32),
                ("shape", ctypes.c_int64 * AFR_MAX_RANK),
                ("strides", ctypes.c_int64 * AFR_MAX_RANK)]


def runtime_library_path():
    path = os.environ.get("ATTNFUSE_RUNTIME_LIB")
    if path:
        return path
    return os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "libattnfuse_runtime.so")


_library = None


def _lib():
    global _library
    if _library is None:
        path = runtime_library_path()
        if not os.path.exists(path):
            raise FileNotFoundError(
                f"the AttnFuse runtime library is not at {path}; set "
                f"ATTNFUSE_RUNTIME_LIB")
        lib = ctypes.CDLL(path)
        vp, cp, i = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
        sig = {
            "afr_last_error": (cp, []),
            "afr_driver_available": (i, []),
            "afr_manifest_load": (i, [cp, ctypes.POINTER(vp)]),
            "afr_manifest_destroy": (None, [vp]),
            "afr_manifest_find_kernel": (i, [vp, cp, ctypes.POINTER(i)]),
            "afr_validate": (i, [vp, i, ctypes.POINTER(_Sizes),
                                 ctypes.POINTER(_Tensor), i]),
            "afr_context_create": (i, [i, ctypes.POINTER(vp)]),
            "afr_kernel_load": (i, [vp, vp, i, ctypes.POINTER(vp)]),
            "afr_launch": (i, [vp, ctypes.POINTER(_Sizes),
                               ctypes.POINTER(_Tensor), i, vp]),
        }
        for name, (restype, argtypes) in sig.items():
            function = getattr(lib, name)
            function.restype, function.argtypes = restype, argtypes
        _library = lib
    return _library


def _check(status):
    if status != 0:
        name = _STATUS.get(status, str(status))
        error = NoDriverError if status == 6 else AttnFuseRuntimeError
        raise error(name, _lib().afr_last_error().decode())


def driver_available():
    """True when libcuda.so.1 loads and has every entry point needed."""
    return bool(_lib().afr_driver_available())


def _describe(name, tensor):
    """(data pointer, dtype name, shape, strides in elements)."""
    if isinstance(tensor, tuple) and len(tensor) == 4:
        return tensor
    if hasattr(tensor, "data_ptr") and hasattr(tensor, "stride"):
        dtype = _TORCH_DTYPES.get(str(tensor.dtype))
        if dtype is None:
            raise ValueError(f"tensor {name!r}: unsupported dtype {tensor.dtype}")
        if getattr(tensor, "device", None) is not None and \
                getattr(tensor.device, "type", "cuda") != "cuda":
            raise ValueError(f"tensor {name!r} is on {tensor.device}, not on a "
                             f"CUDA device")
        return (tensor.data_ptr(), dtype, tuple(tensor.shape),
                tuple(tensor.stride()))
    interface = getattr(tensor, "__cuda_array_interface__", None)
    if interface is not None:
        dtype = _TYPESTRS.get(interface["typestr"])
        if dtype is None:
            raise ValueError(f"tensor {name!r}: unsupported typestr "
                             f"{interface['typestr']}")
        shape = tuple(interface["shape"])
        item = {"f16": 2, "bf16": 2, "f32": 4, "i32": 4, "i64": 8, "u8": 1}[dtype]
        strides = interface.get("strides")
        if strides is None:
            strides, step = [], 1
            for dim in reversed(shape):
                strides.insert(0, step)
                step *= dim
        else:
            strides = [s // item for s in strides]
        return (interface["data"][0], dtype, shape, tuple(strides))
    raise TypeError(f"tensor {name!r}: expected a torch tensor, an object "
                    f"with __cuda_array_interface__ or a (data_ptr, dtype, "
                    f"shape, strides) tuple, got {type(tensor).__name__}")


def _tensor_array(tensors):
    array = (_Tensor * len(tensors))()
    keep = []
    for j, (name, tensor) in enumerate(tensors.items()):
        data, dtype, shape, strides = _describe(name, tensor)
        if dtype not in _DTYPES:
            raise ValueError(f"tensor {name!r}: dtype must be one of "
                             f"{', '.join(_DTYPES)}, got {dtype!r}")
        if len(shape) > AFR_MAX_RANK or len(shape) != len(strides):
            raise ValueError(f"tensor {name!r}: rank {len(shape)} with "
                             f"{len(strides)} strides")
        encoded = name.encode()
        keep.append(encoded)
        array[j].name = encoded
        array[j].data = int(data)
        array[j].dtype = _DTYPES[dtype]
        array[j].rank = len(shape)
        for d, (size, stride) in enumerate(zip(shape, strides)):
            array[j].shape[d] = size
            array[j].strides[d] = stride
    return array, keep


class SM90aArtifacts:
    """What compile(target="sm_90a") wrote: output_dir, files, manifest
    (dict), kernels (names), warnings (ops left to the host)."""

    def __init__(self, output_dir, files, warnings=()):
        self.output_dir = output_dir
        self.files = files
        self.warnings = list(warnings)
        self.manifest_path = os.path.join(output_dir, "manifest.json")
        with open(self.manifest_path) as f:
            self.manifest = json.load(f)
        self.kernels = [k["name"] for k in self.manifest["kernels"]]
        self._handles = None

    def __repr__(self):
        return (f"<attnfuse.SM90aArtifacts {self.output_dir} "
                f"kernels={self.kernels}>")

    def validate(self, kernel, tensors, B, S, T=None):
        """Checks the buffers against the kernel's manifest entry on the host
        (no GPU needed); raises AttnFuseRuntimeError naming the tensor."""
        manifest, index = self._manifest_and_index(kernel)
        array, _keep = _tensor_array(tensors)
        sizes = _Sizes(B, S, S if T is None else T)
        _check(_lib().afr_validate(manifest, index, ctypes.byref(sizes),
                                   array, len(array)))

    def launch(self, kernel, tensors, B, S, T=None, stream=None, device=0):
        """Launches one kernel on `device` (asynchronous on `stream`: a
        torch.cuda.Stream, an int handle, or None for the default stream).

        tensors maps the manifest's tensor names ("query", "key", "value",
        "output", ...) to device tensors. Raises NoDriverError without a
        CUDA driver, AttnFuseRuntimeError for invalid buffers or a failed launch.
        """
        array, _keep = _tensor_array(tensors)
        if not driver_available():
            raise NoDriverError(
                "AFR_ERR_NO_DRIVER",
                "no CUDA driver (libcuda.so.1 not found): sm_90a kernels "
                "launch only on a machine with an NVIDIA driver")
        manifest, index = self._manifest_and_index(kernel)
        context, kernels = self._context(device)
        if index not in kernels:
            handle = ctypes.c_void_p()
            _check(_lib().afr_kernel_load(context, manifest, index,
                                          ctypes.byref(handle)))
            kernels[index] = handle
        sizes = _Sizes(B, S, S if T is None else T)
        stream_handle = getattr(stream, "cuda_stream", stream) or 0
        _check(_lib().afr_launch(kernels[index], ctypes.byref(sizes), array,
                                 len(array), ctypes.c_void_p(stream_handle)))

    def _manifest_and_index(self, kernel):
        if self._handles is None:
            handle = ctypes.c_void_p()
            _check(_lib().afr_manifest_load(self.manifest_path.encode(),
                                            ctypes.byref(handle)))
            self._handles = {"manifest": handle, "contexts": {}}
        if kernel not in self.kernels:
            raise ValueError(f"kernel must be one of {', '.join(self.kernels)},"
                             f" got {kernel!r}")
        index = ctypes.c_int()
        _check(_lib().afr_manifest_find_kernel(self._handles["manifest"],
                                               kernel.encode(),
                                               ctypes.byref(index)))
        return self._handles["manifest"], index.value

    def _context(self, device):
        contexts = self._handles["contexts"]
        if device not in contexts:
            context = ctypes.c_void_p()
            _check(_lib().afr_context_create(device, ctypes.byref(context)))
            contexts[device] = (context, {})
        return contexts[device]
