"""Modules, cost reports and compilation on top of the _attnfuse extension."""

import json
import numbers
import os
import re
import tempfile

import numpy as np

from . import builders
from .bf16 import bf16_dtype

_SPEC_DTYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16,
                "bf16": np.uint16, "i32": np.int32, "i64": np.int64}


def _extension():
    try:
        from . import _attnfuse
    except ImportError as error:  # the pure-Python parts work without it
        raise ImportError(
            "attnfuse's compiled extension (_attnfuse) is not available: "
            "install the package with `pip install ./python-bindings` or put "
            "the build tree's python_packages/ on PYTHONPATH") from error
    return _attnfuse


class MLIRError(Exception):
    """An MLIR operation failed.

    message: what failed; diagnostics: list of (severity, location, message)
    with location "file:line:col" where MLIR has one. str() lists every
    diagnostic as "severity: location: message".
    """

    def __init__(self, message, diagnostics=()):
        self.message = message
        self.diagnostics = [tuple(d) for d in diagnostics]
        lines = [message] + [f"{sev}: {loc}: {msg}"
                             for sev, loc, msg in self.diagnostics]
        super().__init__("\n".join(lines))


def _call(function, *args, **kwargs):
    """Runs an extension call, turning its errors into MLIRError."""
    ext = _extension()
    try:
        return function(*args, **kwargs)
    except ext.Error as error:
        message, diagnostics = error.args
        raise MLIRError(message, diagnostics) from None


class Module:
    """A builtin.module of attn IR.

    str(module) is its text; module.verify() raises MLIRError when it does
    not verify; module.run_pipeline(...) returns a NEW module and leaves this
    one unchanged. Modules made by the builders know their arguments' names
    (argument_names(function)).

    Modules come from attnfuse.parse, the builders (attnfuse.qkv_attention,
    attnfuse.cca, ...) and attnfuse.from_hf_config; the constructor's handle
    (the extension's module object) and argument_names ({function: [name,
    ...]}) are theirs.
    """

    def __init__(self, handle, argument_names=None):
        self._handle = handle
        self._argument_names = dict(argument_names or {})
        # Set by attnfuse.from_hf_config: the checkpoint block of each layer
        # per function, and "cca" or "qkv_attention".
        self.hf_layers = {}
        self.hf_kind = None

    def __str__(self):
        return str(self._handle)

    def __repr__(self):
        return f"<attnfuse.Module functions={self.functions()}>"

    def verify(self):
        """Runs the verifiers; raises MLIRError with their diagnostics when
        the module is invalid, else returns the module."""
        _call(self._handle.verify)
        return self

    def run_pipeline(self, pipeline):
        """Runs a pass pipeline ("attn-decompose,canonicalize" or
        "builtin.module(...)") on a copy; returns the copy."""
        copy = self._handle.clone()
        _call(copy.run_pipeline, pipeline)
        return Module(copy)

    def clone(self):
        """A copy of the module (argument names and Hugging Face layer
        information included)."""
        copy = Module(self._handle.clone(), self._argument_names)
        copy.hf_layers = dict(self.hf_layers)
        copy.hf_kind = self.hf_kind
        return copy

    def functions(self):
        """Names of the functions with a body."""
        return list(self._handle.function_names())

    def argument_names(self, function):
        """The builder's argument names of `function`, or None."""
        return self._argument_names.get(function)

    def signature(self, function):
        """([(dtype, shape)], [(dtype, shape)]) of the arguments and results
        of the function named `function`; dynamic dimensions are None."""
        args, results = _call(self._handle.signature, function)
        fix = lambda specs: [(t, tuple(None if d < 0 else d for d in s))  # noqa: E731
                             for t, s in specs]
        return fix(args), fix(results)

    def cost(self, **kwargs):
        """attnfuse.cost(self, **kwargs): the cost report as a dict."""
        return cost(self, **kwargs)

    def compile(self, target="cpu", **kwargs):
        """attnfuse.compile(self, target, **kwargs): a CpuFunction for
        target "cpu", SM90aArtifacts for "sm_90a"."""
        return compile(self, target=target, **kwargs)


def parse(text, source_name="<string>", verify=True):
    """Parses attn IR text into a Module; MLIRError with the parser's
    diagnostics when it does not parse (or, with verify, does not verify).

    text: the IR; source_name: the file name the diagnostics' locations
    show; verify: run the verifiers after parsing (default True)."""
    ext = _extension()
    return Module(_call(ext.parse, text, source_name, bool(verify)))


def _built(text, names, name):
    module = parse(text, source_name=f"<attnfuse builder {name}>")
    module._argument_names[name] = names
    return module


def qkv_attention(**config):
    """A stack of `attn.qkv_attention` layers as a Module; keyword arguments
    as builders.qkv_attention_text (sharing, embed_dim, num_heads,
    num_kv_heads, head_dim, causal, window, rope_theta, rope_fraction,
    scale, biases, logit_bias, dtype, batch, seq, num_layers, residual,
    name)."""
    text, names = builders.qkv_attention_text(**config)
    return _built(text, names, config.get("name", "model"))


def cca(**config):
    """A stack of `attn.cca` layers as a Module; keyword arguments as
    builders.cca_text (embed_dim, num_heads, num_kv_heads, head_dim,
    conv_kernel_sizes, qk_mean, value_shift, temperature, causal, window,
    rope_theta, rope_fraction, dtype, batch, seq, num_layers, residual,
    name, padding_mask)."""
    text, names = builders.cca_text(**config)
    return _built(text, names, config.get("name", "model"))


def _built_decode(text, names):
    module = parse(text, source_name="<attnfuse decode builder>")
    module._argument_names.update(names)
    return module


def qkv_decode(**config):
    """A stack of `attn.qkv_decode` layers as a Module with two functions:
    `prefill` (prompts padded to T tokens; arguments x, weights, caches,
    positions, lengths[, block_table]) and `step` (one token per sequence; no
    lengths), each returning the output and every layer's updated cache.
    Keyword arguments as builders.qkv_decode_text: those of qkv_attention
    (without causal, seq, name) plus `capacity` (contiguous caches) or
    `page_size` and `num_pages` (paged caches)."""
    return _built_decode(*builders.qkv_decode_text(**config))


def cca_decode(**config):
    """A stack of `attn.cca_decode` layers as a Module with `prefill` and
    `step` functions (see qkv_decode); each layer's caches are followed by
    its conv state and, with value_shift, its shift state."""
    return _built_decode(*builders.cca_decode_text(**config))


def cost(module, seq_len=None, batch=None, dtype=None, function=None):
    """The attn-cost-report of `module` as a dict (the JSON of
    `attnfuse-opt --attn-cost-report=format=json`). seq_len and batch
    default to the static shapes, else 32768 and 1; dtype (f32, f16, bf16,
    fp8) to the IR's element type; function restricts the report to one
    function's layers (a decode module's "step": its "prefill" runs the
    same layers)."""
    for name, value in (("seq_len", seq_len), ("batch", batch)):
        if value is not None and (isinstance(value, bool)
                                  or not isinstance(value, int) or value < 1):
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if dtype is not None and dtype not in ("f32", "f16", "bf16", "fp8"):
        raise ValueError(f"dtype must be f32, f16, bf16 or fp8, got {dtype!r}")
    if function is not None and not isinstance(function, str):
        raise ValueError(f"function must be a function name, got {function!r}")
    text = _call(module._handle.cost_report, seq_len, batch, dtype or "",
                 function or "")
    return json.loads(text)


def _pick_entry(module, entry):
    functions = module.functions()
    if entry is not None:
        if entry not in functions:
            raise ValueError(f"entry: no function {entry!r} in the module "
                             f"(functions: {', '.join(functions) or 'none'})")
        return entry
    if len(functions) == 1:
        return functions[0]
    if "model" in functions:
        return "model"
    raise ValueError(f"entry: the module has several functions "
                     f"({', '.join(functions)}); name one")


_FLOAT_DTYPES = ("f16", "bf16", "f32", "f64")


def _gradient_indices(module, entry, wrt, specs):
    """The argument indices `wrt` names (None: every float argument)."""
    names = module.argument_names(entry)

    def describe(index):
        if names and index < len(names):
            return f"argument #{index} ({names[index]!r})"
        return f"argument #{index}"

    if wrt is None:
        indices = [i for i, (dtype, _) in enumerate(specs)
                   if dtype in _FLOAT_DTYPES]
        if not indices:
            raise ValueError(f"wrt: {entry!r} has no floating-point argument "
                             f"to differentiate")
        return indices
    if isinstance(wrt, (str, numbers.Integral)):
        wrt = [wrt]
    indices = []
    for item in wrt:
        if isinstance(item, str):
            if not names:
                raise ValueError(f"wrt: {entry!r} has no argument names (a "
                                 f"parsed module); give argument indices, "
                                 f"not {item!r}")
            if item not in names:
                raise ValueError(f"wrt: {entry!r} has no argument {item!r} "
                                 f"(arguments: {', '.join(names)})")
            index = names.index(item)
        elif isinstance(item, numbers.Integral) and not isinstance(item, bool):
            if not 0 <= item < len(specs):
                raise ValueError(f"wrt: {entry!r} has {len(specs)} arguments, "
                                 f"no argument #{item}")
            index = int(item)
        else:
            raise ValueError(f"wrt: an argument name or index, got {item!r}")
        if specs[index][0] not in _FLOAT_DTYPES:
            raise ValueError(f"wrt: {describe(index)} of {entry!r} is "
                             f"{specs[index][0]}, not a floating-point "
                             f"tensor: it has no gradient")
        if index in indices:
            raise ValueError(f"wrt: {describe(index)} is named twice")
        indices.append(index)
    if not indices:
        raise ValueError("wrt: no argument to differentiate")
    return indices


def grad(module, entry=None, wrt=None, residuals=False):
    """The vector-Jacobian product of a function, as a new Module.

    Runs `attn-differentiate` on a copy of `module`, which keeps `entry` and
    adds `{entry}_vjp(arguments..., cotangents...) -> (gradients...)`: the
    arguments of `entry` in order, then one cotangent per result of `entry`
    (of the result's type), returning the gradient of each `wrt` argument in
    order (of that argument's type). Compile it with
    `attnfuse.compile(gmodule, entry=f"{entry}_vjp")`.

    module: an attnfuse.Module (a builder's layer stack, attnfuse.parse).
    entry: the function to differentiate (default: the only function, else
        `model`).
    wrt: None (every floating-point argument: the input and every weight),
        or argument indices and/or argument names (the builder's names,
        `module.argument_names(entry)`, e.g. "x", "l0_wq"): a list, or
        one of them.
        Integer arguments (a padding `mask`, positions) have no gradient:
        naming one raises ValueError, as does an unknown name.
    residuals: False (the gradient function recomputes the forward), or
        True: instead of `_vjp`, the module gets
        `{entry}_fwd(arguments...) -> (results..., residuals...)`, the
        forward that also returns, for every attention in layer order, its
        query, key and value (each once; not an argument), its output and
        the log-sum-exp of its rows ([B, S, Hq] f32), and
        `{entry}_bwd(arguments..., residuals..., cotangents...) ->
        (gradients...)`, which reads them instead of recomputing the
        attention.

    The returned module knows the argument names of the `_vjp` (`_fwd`,
    `_bwd`) function (when `entry`'s are known): those of `entry`, then
    `residual0`, `residual1`, ... (for `_bwd`), then one per cotangent,
    `d_out` for a single result (`d_out0`, `d_out1`, ... for several).
    MLIRError when the pass refuses the function (a decode function, an op
    without a gradient).
    """
    if not isinstance(module, Module):
        raise TypeError(f"grad needs an attnfuse.Module (attnfuse.parse(text) "
                        f"or a builder), got {type(module).__name__}")
    entry = _pick_entry(module, entry)
    specs, results = module.signature(entry)
    indices = _gradient_indices(module, entry, wrt, specs)
    option = " residuals=true" if residuals else ""
    gradient = module.run_pipeline(
        f"attn-differentiate{{function={entry} "
        f"wrt={','.join(str(i) for i in indices)}{option}}}")
    gradient._argument_names = dict(module._argument_names)
    names = module.argument_names(entry)
    if names:
        cotangents = (["d_out"] if len(results) == 1 else
                      [f"d_out{i}" for i in range(len(results))])
        if residuals:
            forward_results = gradient.signature(f"{entry}_fwd")[1]
            count = len(forward_results) - len(results)
            gradient._argument_names[f"{entry}_fwd"] = list(names)
            gradient._argument_names[f"{entry}_bwd"] = (
                list(names) + [f"residual{i}" for i in range(count)]
                + cotangents)
        else:
            gradient._argument_names[f"{entry}_vjp"] = list(names) + cotangents
    gradient.hf_layers = dict(module.hf_layers)
    gradient.hf_kind = module.hf_kind
    return gradient


def compile(module, target="cpu", entry=None, **options):
    """Compiles `module` for a target.

    target="cpu": lowers with attn-to-cpu and JIT-compiles `entry` (default:
    the only function, else `model`); returns a CpuFunction, called with
    numpy arrays. Options: fused (True: the fused kernels; False: the
    reference lowering), block_q, block_kv, block_s, block_n, block_k (tile
    sizes), runtime_checks (True), opt_level (2), in_place_caches (True:
    the KV caches the function updates and returns are written through the
    caller's arrays, see CpuFunction), num_threads (None: the OpenMP
    runtime's default, OMP_NUM_THREADS or one thread per core; N: the
    kernels' parallel loops run on N threads; results are the same for every
    count), parallel (True; False: every loop sequential, no OpenMP),
    vectorize (True: the kernels' tiles are register-blocked vector code;
    False: scalar loops), register_tile_m and register_tile_n (the rows
    and columns of a GEMM tile's register block; by default chosen for the
    host: 6 x 64 with AVX-512, else 2 x 32), wait_policy ("active": the
    parallel loops' threads spin for the OpenMP runtime's blocktime after
    a loop, ready for the next; "passive": they sleep at once, for callers
    whose own threads run between calls, as attnfuse.torch's layers do).

    target="sm_90a": lowers to PTX and cubins (ptxas) and a device program
    per function, and returns SM90aArtifacts: called like the CPU function
    (torch CUDA tensors in and out on the current stream, or host arrays
    copied through device memory), `.function(name)` for the other
    functions. Options: output_dir (default: a new temporary directory),
    elem_type (bf16 or f16), block_q, block_kv, stages (None: the
    compiler's defaults, those of attnfuse-compile), ptxas (path), cubin
    (True), programs (True; False writes only the kernels, to launch by hand).
    """
    if not isinstance(module, Module):
        raise TypeError(f"compile needs an attnfuse.Module (attnfuse.parse(text) "
                        f"or a builder), got {type(module).__name__}")
    if target == "cpu":
        return _compile_cpu(module, entry, **options)
    if target == "sm_90a":
        return _compile_sm90a(module, entry=entry, **options)
    raise ValueError(f"target must be 'cpu' or 'sm_90a', got {target!r}")


_CPU_TILES = ("block_q", "block_kv", "block_s", "block_n", "block_k",
              "register_tile_m", "register_tile_n")


def _compile_cpu(module, entry, fused=True, runtime_checks=True, opt_level=2,
                 in_place_caches=True, num_threads=None, parallel=True,
                 vectorize=True, wait_policy="active", **tiles):
    entry = _pick_entry(module, entry)
    parts = []
    for name, value in tiles.items():
        if name not in _CPU_TILES:
            raise ValueError(f"{name}: not an option of target 'cpu' (options: "
                             f"fused, runtime_checks, opt_level, "
                             f"in_place_caches, num_threads, parallel, "
                             f"vectorize, wait_policy, "
                             f"{', '.join(_CPU_TILES)})")
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
        parts.append(f"{name.replace('_', '-')}={value}")
    if not isinstance(opt_level, int) or not 0 <= opt_level <= 3:
        raise ValueError(f"opt_level must be 0, 1, 2 or 3, got {opt_level!r}")
    if num_threads is not None and (isinstance(num_threads, bool)
                                    or not isinstance(num_threads, int)
                                    or num_threads < 1):
        raise ValueError(f"num_threads must be a positive integer or None, "
                         f"got {num_threads!r}")
    if wait_policy not in ("active", "passive"):
        raise ValueError(f"wait_policy must be 'active' or 'passive', got "
                         f"{wait_policy!r}")
    if not vectorize:
        parts.append("vectorize=false")
    if not parallel:
        if num_threads is not None:
            raise ValueError(f"num_threads={num_threads} needs parallel=True")
        parts.append("parallel=false")
    function = _call(module._handle.compile_cpu, entry, " ".join(parts),
                     bool(fused), bool(runtime_checks), opt_level,
                     bool(in_place_caches), num_threads or 0,
                     wait_policy == "passive")
    compiled = CpuFunction(function, module.argument_names(entry))
    # What attnfuse.load_hf_weights needs of an imported module.
    compiled.hf_layers = getattr(module, "hf_layers", {}).get(entry)
    compiled.hf_kind = getattr(module, "hf_kind", None)
    return compiled


def check_shape(function, what, shape, actual):
    """ValueError unless `actual` (a shape) fits `shape` (None: any size):
    the message of every argument check, numpy, DLPack or torch op."""
    if len(actual) != len(shape) or any(
            d is not None and d != n for d, n in zip(shape, actual)):
        want = "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"
        raise ValueError(f"{what} of {function!r} needs shape {want}, got "
                         f"{list(actual)}")


class CpuFunction:
    """A JIT-compiled function, called with host arrays in the order of its
    arguments: numpy arrays, or any DLPack producer in host memory (torch
    CPU tensors, JAX, ...), which are read in place without a copy.
    Element types: f32 -> float32, f16 -> float16, f64 -> float64, i32/i64
    -> int32/int64, bf16 -> bfloat16 tensors (torch.bfloat16, or
    ml_dtypes.bfloat16 arrays when ml_dtypes is installed) or uint16 arrays
    holding the bf16 bit patterns (attnfuse.to_bf16 / from_bf16 convert).
    Results are numpy arrays (bf16 as uint16), or torch tensors (bf16 as
    torch.bfloat16) when an argument was a torch tensor; one result as an
    array, several as a tuple. Device tensors (CUDA) are refused: the CPU
    target reads host memory.

    KV caches are updated in place (unless compiled with
    in_place_caches=False): a cache that the function updates and returns
    (the `*_cache` arguments of the qkv_decode / cca_decode functions) is
    written through the caller's array, only at the new tokens' rows, and
    the corresponding result IS that argument object (`result is argument`);
    `result_arguments` maps each result to its argument (-1: a new array,
    as are the small `*_state` results of cca_decode).
    Such an argument must be a writable, C-contiguous, aligned array of the
    exact dtype (it is never copied) that shares no memory with another
    argument; `written_arguments` lists their indices. A failed run-time
    check (a position out of range) may leave a cache partly updated.

    attnfuse.compile makes them: handle is the extension's compiled
    function, names the argument names (argument_names). `arguments` and
    `results` are (dtype, shape) pairs with None for dynamic sizes."""

    def __init__(self, handle, names=None):
        self._handle = handle
        self.name = handle.name
        fix = lambda specs: [(t, tuple(None if d < 0 else d for d in s))  # noqa: E731
                             for t, s in specs]
        self.arguments = fix(handle.arguments)
        self.results = fix(handle.results)
        self.argument_names = names
        # Per result: the index of the argument it is (updated in place) or -1.
        self.result_arguments = list(handle.result_arguments)
        self.written_arguments = list(handle.written_arguments)
        self.hf_layers = None
        self.hf_kind = None

    def _describe(self, index):
        if self.argument_names and index < len(self.argument_names):
            return f"argument #{index} ({self.argument_names[index]!r})"
        return f"argument #{index}"

    def _check_shape(self, what, shape, actual):
        check_shape(self.name, what, shape, actual)

    def _convert(self, index, value, spec):
        if not isinstance(value, np.ndarray) and hasattr(value, "__dlpack__"):
            return self._convert_dlpack(index, value, spec)
        dtype, shape = spec
        what = self._describe(index)
        array = np.asarray(value)
        if dtype == "bf16" and bf16_dtype() is not None \
                and array.dtype == bf16_dtype():
            array = array.view(np.uint16)
        expected = np.dtype(_SPEC_DTYPES[dtype])
        if array.dtype != expected:
            hint = (" (bf16 arguments are uint16 bit patterns: use "
                    "attnfuse.to_bf16)" if dtype == "bf16" else "")
            raise ValueError(f"{what} of {self.name!r} is {dtype}: expected a "
                             f"{expected} array, got {array.dtype}{hint}")
        self._check_shape(what, shape, array.shape)
        if index in self.written_arguments:
            # Updated in place: a copy would leave the caller's cache stale.
            if array is not value and not (
                    isinstance(value, np.ndarray)
                    and np.shares_memory(array, value)):
                raise ValueError(
                    f"{what} of {self.name!r} is a cache updated in place: "
                    f"pass a numpy array (got {type(value).__name__})")
            flags = array.flags
            if not (flags.c_contiguous and flags.aligned and flags.writeable):
                raise ValueError(
                    f"{what} of {self.name!r} is a cache updated in place: "
                    f"it must be a writable, C-contiguous, aligned array "
                    f"(copy it with np.ascontiguousarray, or compile with "
                    f"in_place_caches=False)")
            return array
        # The compiled code reads dense, aligned rows; the extension takes
        # writable buffers only (the function never writes these arguments).
        # Copy strided, misaligned or read-only arrays rather than refuse them.
        return np.require(array, requirements=["C_CONTIGUOUS", "ALIGNED",
                                               "WRITEABLE"])

    def _convert_dlpack(self, index, value, spec):
        """A DLPack producer: checked through DLPack and passed as it is."""
        dtype, shape = spec
        what = self._describe(index)
        device = value.__dlpack_device__() if hasattr(
            value, "__dlpack_device__") else (_DLPACK_CPU, 0)
        if int(device[0]) != _DLPACK_CPU:
            name = _DLPACK_DEVICE_NAMES.get(int(device[0]), f"type {device[0]}")
            raise ValueError(
                f"{what} of {self.name!r} is in {name} device memory "
                f"(device {device[1]}): the CPU target reads host memory; "
                f"copy it to the host (tensor.cpu()) or compile for "
                f"target='sm_90a'")
        try:
            held, held_shape, _, _, contiguous, aligned = \
                _extension().inspect_array(value)
        except (TypeError, ValueError, RuntimeError) as error:
            raise ValueError(f"{what} of {self.name!r} cannot be read through "
                             f"DLPack: {error}") from None
        if held != dtype and not (dtype == "bf16" and held == "u16"):
            raise ValueError(f"{what} of {self.name!r} is {dtype}: expected a "
                             f"{dtype} tensor, got {held}")
        self._check_shape(what, shape, held_shape)
        if index in self.written_arguments and not (contiguous and aligned):
            raise ValueError(
                f"{what} of {self.name!r} is a cache updated in place: it "
                f"must be C-contiguous and aligned (or compile with "
                f"in_place_caches=False)")
        if not contiguous:
            if not hasattr(value, "contiguous"):
                raise ValueError(f"{what} of {self.name!r} is not C-contiguous")
            value = value.contiguous()  # torch: one copy, in fresh storage
        elif not aligned:
            if not hasattr(value, "clone"):
                raise ValueError(f"{what} of {self.name!r} is not aligned to "
                                 f"its element size")
            value = value.clone()  # torch: one copy, in aligned storage
        return value

    def __call__(self, *arrays):
        if len(arrays) != len(self.arguments):
            raise ValueError(f"{self.name!r} takes {len(self.arguments)} "
                             f"arguments, got {len(arrays)}")
        converted = [self._convert(i, a, spec) for i, (a, spec)
                     in enumerate(zip(arrays, self.arguments))]
        ext = _extension()
        try:
            results = self._handle(converted)
        except ext.Error as error:
            # "argument #1" -> "argument #1 ('k')" when the names are known.
            message = re.sub(r"argument #(\d+)(?! \()",
                             lambda m: self._describe(int(m.group(1))),
                             error.args[0])
            raise RuntimeError(message) from None
        torch_arguments = any(type(a).__module__.startswith("torch")
                              for a in arrays)
        # A result that is an argument updated in place is that very object.
        results = [arrays[r] if isinstance(r, int)
                   else _to_torch(r, spec[0]) if torch_arguments else r
                   for r, spec in zip(results, self.results)]
        return results[0] if len(results) == 1 else tuple(results)


_DLPACK_CPU = 1
_DLPACK_DEVICE_NAMES = {2: "CUDA", 3: "CUDA host", 4: "OpenCL", 7: "Vulkan",
                        8: "Metal", 10: "ROCm", 13: "CUDA managed",
                        14: "oneAPI"}


def _to_torch(array, dtype):
    """A numpy result as a torch tensor sharing its memory (bf16 results,
    uint16 bit patterns, become torch.bfloat16)."""
    import torch
    if dtype == "bf16":
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)


def _compile_sm90a(module, entry=None, output_dir=None, elem_type="bf16",
                   block_q=None, block_kv=None, stages=None, ptxas=None,
                   cubin=True,
                   programs=True, source_name="module.mlir"):
    if entry is not None:
        entry = _pick_entry(module, entry)
    names = {f: module.argument_names(f) for f in module.functions()}
    if elem_type not in ("bf16", "f16"):
        raise ValueError(f"elem_type must be bf16 or f16, got {elem_type!r}")
    for name, value in (("block_q", block_q), ("block_kv", block_kv),
                        ("stages", stages)):
        if value is None:  # the compiler's default
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if output_dir is None:
        output_dir = tempfile.mkdtemp(prefix="attnfuse-sm90a-")
    result = _call(module._handle.compile_sm90a, os.fspath(output_dir),
                   source_name, elem_type, block_q, block_kv, stages,
                   ptxas or "", bool(cubin), bool(programs))
    from .runtime import SM90aArtifacts
    return SM90aArtifacts(result["output_dir"], list(result["files"]),
                          list(result["warnings"]), entry=entry,
                          argument_names=names)
