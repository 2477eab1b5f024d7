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
    """A call of the AttnFuse runtime failed; status is its afr_status name
    (e.g. "AFR_ERR_VALIDATION") and message the runtime's error text."""

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


class _ProgramOutput(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("rank", ctypes.c_int32),
                ("shape", ctypes.c_int64 * AFR_MAX_RANK),
                ("aliases_input", ctypes.c_int32)]


class _ProgramStats(ctypes.Structure):
    _fields_ = [("launches_per_call", ctypes.c_int64),
                ("arena_bytes", ctypes.c_uint64),
                ("arena_capacity", ctypes.c_uint64),
                ("table_bytes", ctypes.c_uint64),
                ("device_allocations", ctypes.c_int64),
                ("calls", ctypes.c_int64)]


def runtime_library_path():
    """The GPU runtime library this package loads: $ATTNFUSE_RUNTIME_LIB,
    else libattnfuse_runtime.so next to this file."""
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
            "afr_manifest_find_program": (i, [vp, cp, ctypes.POINTER(i)]),
            "afr_manifest_num_programs": (i, [vp]),
            "afr_program_num_inputs": (i, [vp, i]),
            "afr_program_num_outputs": (i, [vp, i]),
            "afr_program_infer": (i, [vp, i, ctypes.POINTER(_Tensor), i,
                                      ctypes.POINTER(_ProgramOutput), i,
                                      ctypes.POINTER(ctypes.c_uint64)]),
            "afr_program_create": (i, [vp, vp, i, ctypes.POINTER(vp)]),
            "afr_program_destroy": (None, [vp]),
            "afr_program_run": (i, [vp, ctypes.POINTER(_Tensor), i,
                                    ctypes.POINTER(_Tensor), i, vp]),
            "afr_program_get_stats": (i, [vp, ctypes.POINTER(_ProgramStats)]),
            "afr_mem_alloc": (i, [vp, ctypes.c_size_t,
                                  ctypes.POINTER(ctypes.c_uint64)]),
            "afr_mem_free": (i, [vp, ctypes.c_uint64]),
            "afr_memcpy_htod": (i, [vp, ctypes.c_uint64, vp, ctypes.c_size_t]),
            "afr_memcpy_dtoh": (i, [vp, vp, ctypes.c_uint64, ctypes.c_size_t]),
            "afr_stream_synchronize": (i, [vp, vp]),
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
    (dict), kernels (names), functions (the compiled functions, each a
    device program), warnings.

    Calling it runs the entry function on the device (see SM90aFunction);
    function(name) gives the others (a decode module's "prefill" and
    "step"); launch() runs one kernel by hand.

    attnfuse.compile makes them: output_dir and files are what the compiler
    wrote, warnings its warnings, entry the function a call runs (default:
    the only one, else `model`), argument_names {function: [name, ...]}."""

    def __init__(self, output_dir, files, warnings=(), entry=None,
                 argument_names=None):
        self.output_dir = output_dir
        self.files = files
        self.warnings = list(warnings)
        self.manifest_path = os.path.join(output_dir, "manifest.json")
        with open(self.manifest_path) as f:
            self.manifest = json.load(f)
        self.kernels = [k["name"] for k in self.manifest["kernels"]]
        self.functions = [p["function"]
                          for p in self.manifest.get("programs", [])]
        self.entry = entry
        self._argument_names = dict(argument_names or {})
        self._functions = {}
        self._handles = None

    def function(self, name):
        """The device program of function `name` as a callable."""
        if name not in self.functions:
            raise ValueError(f"entry: no function {name!r} in the module "
                             f"(functions: {', '.join(self.functions) or 'none'})")
        if name not in self._functions:
            self._functions[name] = SM90aFunction(
                self, name, self._argument_names.get(name))
        return self._functions[name]

    def __call__(self, *args, **kwargs):
        entry = self.entry
        if entry is None:
            if len(self.functions) == 1:
                entry = self.functions[0]
            elif "model" in self.functions:
                entry = "model"
            else:
                raise ValueError(
                    f"entry: the module has several functions "
                    f"({', '.join(self.functions)}); call "
                    f"artifacts.function(name)")
        return self.function(entry)(*args, **kwargs)

    def __repr__(self):
        return (f"<attnfuse.SM90aArtifacts {self.output_dir} "
                f"kernels={self.kernels}>")

    def validate(self, kernel, tensors, B, S, T=None):
        """Checks the buffers against the kernel's manifest entry on the host
        (no GPU needed); raises AttnFuseRuntimeError naming the tensor.

        kernel: the kernel's name in the manifest; tensors: {manifest tensor
        name: tensor}; B, S, T: the batch, query length and key length
        (T defaults to S)."""
        manifest, index = self._manifest_and_index(kernel)
        array, _keep = _tensor_array(tensors)
        sizes = _Sizes(B, S, S if T is None else T)
        _check(_lib().afr_validate(manifest, index, ctypes.byref(sizes),
                                   array, len(array)))

    def launch(self, kernel, tensors, B, S, T=None, stream=None, device=0):
        """Launches one kernel on `device` (asynchronous on `stream`: a
        torch.cuda.Stream, an int handle, or None for the default stream).

        kernel: the kernel's name in the manifest; tensors maps the
        manifest's tensor names ("query", "key", "value", "output", ...) to
        device tensors; B, S, T: the batch, query length and key length (T
        defaults to S). Raises NoDriverError without a
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

    def _manifest(self):
        if self._handles is None:
            handle = ctypes.c_void_p()
            _check(_lib().afr_manifest_load(self.manifest_path.encode(),
                                            ctypes.byref(handle)))
            self._handles = {"manifest": handle, "contexts": {}}
        return self._handles["manifest"]

    def _manifest_and_index(self, kernel):
        self._manifest()
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


_NUMPY_DTYPES = {"bf16": "uint16", "f16": "float16", "f32": "float32",
                 "i32": "int32", "i64": "int64", "u8": "uint8"}
_DTYPE_BY_CODE = {code: name for name, code in _DTYPES.items()}


class SM90aFunction:
    """One compiled function run as a device program: every kernel launch of
    the function in order, intermediates in an arena the program keeps, all
    on one stream.

    Called like the CPU function, with the arguments in order:
    * torch CUDA tensors (or objects with __cuda_array_interface__): read in
      place (non-contiguous tensors are copied), outputs are new torch CUDA
      tensors, launched on torch.cuda.current_stream() (or `stream=`);
    * host arrays (numpy arrays, bf16 as uint16 bit patterns or
      ml_dtypes.bfloat16, torch CPU tensors): copied to device memory and
      back through the runtime, for machines where torch has no CUDA device
      (the emulator driver); outputs are numpy arrays, or torch CPU tensors
      when an argument was a torch tensor.
    Outputs that are inputs updated in place (a decode step's caches) are
    returned as those very arguments, updated. Raises NoDriverError without
    a CUDA driver.

    SM90aArtifacts makes them (call it, or artifacts.function(name)):
    artifacts is the SM90aArtifacts, name the function, argument_names its
    arguments' names. `arguments` lists (dtype, shape) with None for
    dynamic sizes; `launches` counts the kernel launches of one call."""

    def __init__(self, artifacts, name, argument_names=None):
        self.artifacts = artifacts
        self.name = name
        self.argument_names = argument_names
        program = next(p for p in artifacts.manifest["programs"]
                       if p["function"] == name)
        self.arguments = [(i["dtype"], tuple(None if d < 0 else d
                                             for d in i["shape"]))
                          for i in program["inputs"]]
        self.launches = sum(1 for st in program["steps"]
                            if st["op"] == "launch")
        self._programs = {}  # device -> afr_program handle
        self._inferred = {}  # input (dtype, shape)s -> outputs and arena bytes

    def __repr__(self):
        return (f"<attnfuse.SM90aFunction {self.name!r}: "
                f"{len(self.arguments)} arguments, {self.launches} launches>")

    def _describe_arg(self, index):
        if self.argument_names and index < len(self.argument_names):
            return f"argument #{index} ({self.argument_names[index]!r})"
        return f"argument #{index}"

    def _check_shape(self, what, shape, actual):
        if len(actual) != len(shape) or any(
                d is not None and d != n for d, n in zip(shape, actual)):
            want = "[" + ", ".join("?" if d is None else str(d)
                                   for d in shape) + "]"
            raise ValueError(f"{what} of {self.name!r} needs shape {want}, "
                             f"got {list(actual)}")

    @staticmethod
    def _is_device(value):
        device = getattr(value, "device", None)
        if device is not None and getattr(device, "type", None) == "cuda":
            return True
        return hasattr(value, "__cuda_array_interface__")

    def _program(self, device):
        if device not in self._programs:
            manifest = self.artifacts._manifest()
            context, _ = self.artifacts._context(device)
            index = ctypes.c_int()
            _check(_lib().afr_manifest_find_program(
                manifest, self.name.encode(), ctypes.byref(index)))
            handle = ctypes.c_void_p()
            _check(_lib().afr_program_create(context, manifest, index.value,
                                             ctypes.byref(handle)))
            self._programs[device] = (handle, context, index.value)
        return self._programs[device]

    def _infer(self, inputs):
        # Output shapes depend on the input dtypes and shapes only: plan once
        # per signature, not on every call.
        key = tuple((dtype, tuple(shape)) for _, dtype, shape in inputs)
        if key not in self._inferred:
            self._inferred[key] = self._infer_uncached(inputs)
        return self._inferred[key]

    def _infer_uncached(self, inputs):
        manifest = self.artifacts._manifest()
        index = ctypes.c_int()
        _check(_lib().afr_manifest_find_program(
            manifest, self.name.encode(), ctypes.byref(index)))
        count = _lib().afr_program_num_outputs(manifest, index.value)
        outputs = (_ProgramOutput * max(count, 1))()
        arena = ctypes.c_uint64()
        array = self._array(inputs)
        _check(_lib().afr_program_infer(manifest, index.value, array,
                                        len(inputs), outputs, count,
                                        ctypes.byref(arena)))
        return [(_DTYPE_BY_CODE[o.dtype], tuple(o.shape[:o.rank]),
                 o.aliases_input) for o in outputs[:count]], arena.value

    def _array(self, described):
        """(data, dtype, shape) triples -> an afr_tensor array."""
        array = (_Tensor * max(len(described), 1))()
        for j, (data, dtype, shape) in enumerate(described):
            array[j].name = None
            array[j].data = int(data)
            array[j].dtype = _DTYPES[dtype]
            array[j].rank = len(shape)
            step = 1
            for d in reversed(range(len(shape))):
                array[j].shape[d] = shape[d]
                array[j].strides[d] = step
                step *= shape[d]
        return array

    def infer(self, *args):
        """Output (dtype, shape, aliased input or -1) for arguments of these
        shapes (no driver needed), and the arena bytes of one call.

        args: the arguments in order, or anything with their shapes."""
        import numpy as np
        described = []
        for i, (a, spec) in enumerate(zip(args, self.arguments)):
            shape = tuple(getattr(a, "shape", np.shape(a)))
            self._check_shape(self._describe_arg(i), spec[1], shape)
            described.append((0, spec[0], shape))
        return self._infer(described)

    def stats(self, device=0):
        """Launches per call, arena bytes, device allocations so far, ... of
        the program on `device` as a dict (None before its first call
        there)."""
        handle = self._programs.get(device)
        if handle is None:
            return None
        out = _ProgramStats()
        _check(_lib().afr_program_get_stats(handle[0], ctypes.byref(out)))
        return {name: getattr(out, name) for name, _ in out._fields_}

    def __call__(self, *args, stream=None, device=None):
        if len(args) != len(self.arguments):
            raise ValueError(f"{self.name!r} takes {len(self.arguments)} "
                             f"arguments, got {len(args)}")
        on_device = [self._is_device(a) for a in args]
        if any(on_device) and not all(on_device):
            first = on_device.index(False) if on_device[0] else 0
            raise ValueError(
                f"{self._describe_arg(first)} of {self.name!r} is in host "
                f"memory while other arguments are CUDA tensors: pass all on "
                f"one device, or all on the host")
        if not driver_available():
            raise NoDriverError(
                "AFR_ERR_NO_DRIVER",
                "no CUDA driver (libcuda.so.1 not found): sm_90a programs "
                "run only on a machine with an NVIDIA driver")
        if args and all(on_device):
            return self._call_device(args, stream, device)
        return self._call_host(args, device or 0)

    # ---- torch CUDA tensors / __cuda_array_interface__: zero-copy ----
    def _call_device(self, args, stream, device):
        import torch
        tensors = []
        devices = set()
        for i, (a, (dtype, shape)) in enumerate(zip(args, self.arguments)):
            what = self._describe_arg(i)
            if isinstance(a, torch.Tensor):
                held = _TORCH_DTYPES.get(str(a.dtype))
                if held != dtype:
                    raise ValueError(f"{what} of {self.name!r} is {dtype}: "
                                     f"expected a {dtype} tensor, got "
                                     f"{held or a.dtype}")
                self._check_shape(what, shape, tuple(a.shape))
                if not a.is_contiguous():
                    a = a.contiguous()  # one copy, in fresh storage
                devices.add(a.device.index)
                tensors.append(a)
            else:
                data, held, held_shape, strides = _describe(what, a)
                if held != dtype:
                    raise ValueError(f"{what} of {self.name!r} is {dtype}: "
                                     f"expected a {dtype} tensor, got {held}")
                self._check_shape(what, shape, held_shape)
                tensors.append((data, held, held_shape, strides))
        if len(devices) > 1:
            raise ValueError(f"the arguments of {self.name!r} are on several "
                             f"CUDA devices ({sorted(devices)})")
        if device is None:
            device = devices.pop() if devices else torch.cuda.current_device()
        described = []
        for i, t in enumerate(tensors):
            if isinstance(t, torch.Tensor):
                described.append((t.data_ptr(), self.arguments[i][0],
                                  tuple(t.shape)))
            else:
                described.append((t[0], t[1], tuple(t[2])))
        outputs, _ = self._infer(described)
        results, out_described = [], []
        torch_dtypes = {v: k for k, v in _TORCH_DTYPES.items()}
        for dtype, shape, alias in outputs:
            if alias >= 0:
                results.append(args[alias])
                out_described.append((0, dtype, shape))
                continue
            out = torch.empty(shape, device=f"cuda:{device}",
                              dtype=getattr(torch, torch_dtypes[dtype]
                                            .split(".")[1]))
            results.append(out)
            out_described.append((out.data_ptr(), dtype, shape))
        handle, _, _ = self._program(device)
        if stream is None:
            stream = torch.cuda.current_stream(device)
        stream_handle = getattr(stream, "cuda_stream", stream) or 0
        inputs = self._array(described)
        outs = self._array(out_described)
        _check(_lib().afr_program_run(handle, inputs, len(described), outs,
                                      len(out_described),
                                      ctypes.c_void_p(stream_handle)))
        return results[0] if len(results) == 1 else tuple(results)

    # ---- host arrays: copied through device memory ----
    def _host_array(self, index, value, dtype, shape):
        import numpy as np
        what = self._describe_arg(index)
        torch_input = type(value).__module__.startswith("torch")
        if torch_input:
            if str(value.dtype) == "torch.bfloat16":
                value = value.detach().contiguous().view(dtype=_torch_int16())
            array = value.detach().cpu().numpy()
            if dtype == "bf16" and array.dtype == np.int16:
                array = array.view(np.uint16)
        else:
            array = np.asarray(value)
            if dtype == "bf16" and array.dtype.name == "bfloat16":
                array = array.view(np.uint16)  # ml_dtypes.bfloat16
        expected = np.dtype(_NUMPY_DTYPES[dtype])
        if array.dtype != expected:
            hint = (" (bf16 arguments are uint16 bit patterns: use "
                    "attnfuse.to_bf16)" if dtype == "bf16" else "")
            raise ValueError(f"{what} of {self.name!r} is {dtype}: expected a "
                             f"{expected} array, got {array.dtype}{hint}")
        self._check_shape(what, shape, array.shape)
        return np.ascontiguousarray(array)

    def _call_host(self, args, device):
        import numpy as np
        arrays = [self._host_array(i, a, dtype, shape)
                  for i, (a, (dtype, shape)) in enumerate(zip(args,
                                                              self.arguments))]
        described = [(0, spec[0], a.shape)
                     for a, spec in zip(arrays, self.arguments)]
        outputs, _ = self._infer(described)
        handle, context, _ = self._program(device)
        lib = _lib()
        allocated = []

        def alloc(nbytes):
            ptr = ctypes.c_uint64()
            _check(lib.afr_mem_alloc(context, max(nbytes, 16),
                                     ctypes.byref(ptr)))
            allocated.append(ptr.value)
            return ptr.value
        try:
            inputs = []
            for a, spec in zip(arrays, self.arguments):
                ptr = alloc(a.nbytes)
                if a.nbytes:
                    _check(lib.afr_memcpy_htod(
                        context, ptr, a.ctypes.data_as(ctypes.c_void_p),
                        a.nbytes))
                inputs.append((ptr, spec[0], a.shape))
            out_described, host_outputs = [], []
            for dtype, shape, alias in outputs:
                if alias >= 0:
                    out_described.append((0, dtype, shape))
                    host_outputs.append(None)
                    continue
                host = np.empty(shape, dtype=_NUMPY_DTYPES[dtype])
                out_described.append((alloc(host.nbytes), dtype, shape))
                host_outputs.append(host)
            _check(lib.afr_program_run(handle, self._array(inputs),
                                       len(inputs),
                                       self._array(out_described),
                                       len(out_described), None))
            _check(lib.afr_stream_synchronize(context, None))
            results = []
            for (dtype, shape, alias), host, (ptr, _, _) in zip(
                    outputs, host_outputs, out_described):
                if alias >= 0:
                    # Updated in place: copy back into the caller's array.
                    array = arrays[alias]
                    _check(lib.afr_memcpy_dtoh(
                        context, array.ctypes.data_as(ctypes.c_void_p),
                        inputs[alias][0], array.nbytes))
                    _write_back(args[alias], array)
                    results.append(args[alias])
                    continue
                if host.nbytes:
                    _check(lib.afr_memcpy_dtoh(
                        context, host.ctypes.data_as(ctypes.c_void_p), ptr,
                        host.nbytes))
                results.append(host)
        finally:
            for ptr in allocated:
                lib.afr_mem_free(context, ptr)
        if any(type(a).__module__.startswith("torch") for a in args):
            results = [r if type(r).__module__.startswith("torch")
                       else _numpy_to_torch(r, dtype)
                       for r, (dtype, _, _) in zip(results, outputs)]
        return results[0] if len(results) == 1 else tuple(results)


def _torch_int16():
    import torch
    return torch.int16


def _numpy_to_torch(array, dtype):
    import numpy as np
    import torch
    if dtype == "bf16":
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)


def _write_back(original, updated):
    """Stores the updated copy of a host argument into the argument itself
    (an in-place output), unless it already is that memory."""
    import numpy as np
    if type(original).__module__.startswith("torch"):
        import torch
        target = original.view(torch.int16) \
            if original.dtype == torch.bfloat16 else original
        with torch.no_grad():
            target.copy_(torch.from_numpy(
                updated.view(np.int16) if updated.dtype == np.uint16
                and original.dtype == torch.bfloat16 else updated))
        return
    target = np.asarray(original)
    if not np.shares_memory(target, updated):
        np.copyto(target, updated.view(target.dtype), casting="no")
