"""attnfuse in PyTorch: compiled layers as torch custom ops, and drop-in
attention modules.

    import torch, attnfuse, attnfuse.torch
    layer = attnfuse.torch.compile_layer(attnfuse.cca(
        embed_dim=64, num_heads=4, num_kv_heads=2, head_dim=8))
    y = layer(x, *weights)          # torch.ops.attnfuse.<name>(x, *weights)

    attention = attnfuse.torch.CCAAttention.from_hf_config(zaya_config, 0)
    attention.load_state_dict(zaya_attention.state_dict())
    y, _ = attention(hidden_states)

compile_layer registers one function of an attnfuse.Module as the custom op
`attnfuse::<name>` (torch.library.custom_op): its arguments are the
function's, in order, its results the function's. On CPU tensors the op runs
the function JIT-compiled for the CPU (attnfuse.compile(module)); on CUDA
tensors it runs the callable that the GPU compiler returns for the module
(set_gpu_compiler; by default attnfuse.compile(module, target="sm_90a")).
A fake implementation computes the results' shapes and dtypes from the
function's signature, so torch.compile(fullgraph=True) and torch.export
capture the op as one node.

The ops are differentiable. The forward saves its inputs only (nothing
S x T); the backward calls a second op, `attnfuse::<name>_vjp`, the gradient
function that attnfuse.grad(module, entry) adds to the module (the
forward's arguments and one cotangent per result in, the gradient of every
floating-point argument out; integer arguments such as padding masks get
none), which recomputes what it needs of the forward. It is registered on
the first forward that records autograd, so torch.compile captures forward
and backward as one node each. The gradient op has no backward itself
(double backward is refused), and runs on CPU tensors, or on CUDA tensors
where the GPU compiler compiles it: the default one does for bf16/f16
QKVAttention and CCAAttention layers (head dims that are multiples of 16 up
to 128, with or without RoPE; for other layers it raises
NotImplementedError naming the op without an sm_90a kernel).

A layer also has a training forward (CompiledLayer.training_layer(), the op
`attnfuse::<name>_fwd`, from attnfuse.grad(module, entry, residuals=True)):
it returns the layer's results and, for every attention, its query, key,
value, output ([B, S, H, d] each) and the log-sum-exp of its rows
([B, S, Hq] f32) — the residuals, nothing S x T; it saves the inputs and
the residuals, and its backward `attnfuse::<name>_bwd` reads them instead
of recomputing the attention. QKVAttention and CCAAttention call it whenever
autograd records (CompiledLayer.call_for_training), the layer's own op
otherwise (inference keeps nothing).

QKVAttention (projection sharing none/kv/qk/qkv, GQA/MQA, RoPE, causal,
window) and CCAAttention (CCA/CCGQA with the parameters of transformers'
ZayaAttention) build their layer with attnfuse's builders, compile it once
per configuration and dtype (shared by every module of that configuration),
and call it through its custom op.

Importing this module needs torch; `import attnfuse` does not.
"""

import atexit
import hashlib
import re
import threading

try:
    import torch
except ImportError as error:  # noqa: F841 - re-raised with a hint
    raise ImportError("attnfuse.torch needs PyTorch: pip install torch") \
        from error
from torch import nn

from . import _api, builders

__all__ = ["CCAAttention", "CompiledLayer", "QKVAttention", "compile_layer",
           "gpu_compiler", "set_gpu_compiler"]

TORCH_DTYPES = {"f32": torch.float32, "f16": torch.float16,
                "bf16": torch.bfloat16, "f64": torch.float64,
                "i32": torch.int32, "i64": torch.int64}
_ELEMENT_TYPES = {dtype: name for name, dtype in TORCH_DTYPES.items()}
_ELEMENT_TYPES[torch.uint16] = "u16"
# The dtypes the layer modules compile for.
_MODULE_DTYPES = {torch.float32: "f32", torch.float16: "f16",
                  torch.bfloat16: "bf16"}


def _element_type(dtype):
    return _ELEMENT_TYPES.get(dtype, str(dtype).replace("torch.", ""))


# ---------------------------------------------------------------------------
# The GPU hook
# ---------------------------------------------------------------------------


def _default_gpu_compiler(module, entry):
    # The kernels' element type is the input's (bf16 unless f16).
    dtype = module.signature(entry)[0][0][0]
    options = {"elem_type": dtype} if dtype in ("bf16", "f16") else {}
    compiled = _api.compile(module, target="sm_90a", entry=entry, **options)
    if not callable(compiled):
        raise NotImplementedError(
            f"attnfuse.compile(module, target='sm_90a') returned "
            f"{type(compiled).__name__}, which cannot be called with torch "
            f"tensors, so this layer cannot run on CUDA tensors yet: move "
            f"the tensors to the CPU, or register a GPU compiler with "
            f"attnfuse.torch.set_gpu_compiler")
    return compiled


_gpu_compiler = _default_gpu_compiler


def set_gpu_compiler(compiler):
    """Sets how compiled layers run on CUDA tensors: compiler(module, entry)
    returns a callable that takes the function's arguments as torch CUDA
    tensors and returns its results (one tensor, or a tuple). None restores
    the default, attnfuse.compile(module, target="sm_90a", entry=entry)
    with the elem_type of the function's first argument (bf16 or f16).
    Layers ask for their GPU callable on their first CUDA call and keep it;
    returns the compiler that was set before."""
    global _gpu_compiler
    if compiler is not None and not callable(compiler):
        raise TypeError(f"compiler must be callable or None, got "
                        f"{type(compiler).__name__}")
    previous = _gpu_compiler
    _gpu_compiler = compiler or _default_gpu_compiler
    return previous


def gpu_compiler():
    """The GPU compiler set_gpu_compiler installed (or the default)."""
    return _gpu_compiler


# ---------------------------------------------------------------------------
# Compiled layers as custom ops
# ---------------------------------------------------------------------------


_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_layers = {}
_layers_lock = threading.RLock()


class CompiledLayer:
    """One function of an attnfuse.Module as the torch custom op
    `attnfuse::<name>` (see compile_layer).

    Calling the layer calls the op: torch tensors in the order of the
    function's arguments (argument_names), one tensor out, or a tuple for
    several results. `op` is the op (torch.ops.attnfuse.<name>),
    `qualname` its "attnfuse::<name>", `arguments` and `results` the
    function's [(element type, shape)] with None for a dynamic size.
    cpu_function() and gpu_function() compile on first use and keep what
    they compiled.

    The op is differentiable through gradient_layer(), the layer of the
    gradient function `<entry>_vjp` (see attnfuse.grad), whose own
    `forward` is this layer; a gradient layer has no backward.

    compile_layer makes them; its constructor arguments are module (the
    attnfuse.Module), entry (the function), name (the op's name), options
    (those of attnfuse.compile for the CPU target), result_shapes (see
    compile_layer), forward (for a gradient layer: the layer it is the
    gradient of) and training_of (for a training forward: the layer whose
    results, then residuals, it returns).
    """

    def __init__(self, module, entry, name, options, result_shapes,
                 forward=None, training_of=None):
        self.module = module
        self.entry = entry
        # The layer this one is the gradient function of, or None.
        self.forward = forward
        # The layer this one is the training forward of (its results, then
        # the residuals its gradient reads), or None.
        self.training_of = training_of
        self._gradient = None
        self._gradient_error = None
        self._training = None
        self._training_error = None
        self.arguments, self.results = module.signature(entry)
        names = module.argument_names(entry)
        if not names or len(names) != len(self.arguments) or not all(
                _IDENTIFIER.match(n) for n in names):
            names = [f"arg{i}" for i in range(len(self.arguments))]
        self.argument_names = list(names)
        self.options = dict(options)
        self._result_shapes = result_shapes
        self._result_sources = [self._result_source(i) for i in
                                range(len(self.results))]
        self._cpu = None
        self._gpu = None
        self._lock = threading.Lock()
        for index, (dtype, _shape) in enumerate(self.arguments):
            if dtype not in TORCH_DTYPES:
                raise ValueError(f"argument #{index} of {entry!r} is "
                                 f"{dtype}, which has no torch dtype")
        for index, (dtype, _shape) in enumerate(self.results):
            if dtype not in TORCH_DTYPES:
                raise ValueError(f"result #{index} of {entry!r} is {dtype}, "
                                 f"which has no torch dtype")
        self.name = name
        self.qualname = f"attnfuse::{name}"
        arguments = ", ".join(f"Tensor {n}" for n in self.argument_names)
        returns = ("Tensor" if len(self.results) == 1 else
                   "(" + ", ".join(["Tensor"] * len(self.results)) + ")")
        self.schema = f"({arguments}) -> {returns}"
        self._op = torch.library.custom_op(
            self.qualname, self._run, mutates_args=(), schema=self.schema)
        self._op.register_fake(self._fake)
        self._op.register_autograd(self._backward,
                                   setup_context=self._setup_context)
        self.op = getattr(torch.ops.attnfuse, name)

    def __repr__(self):
        return (f"<attnfuse.torch.CompiledLayer {self.qualname} "
                f"{self.schema}>")

    def __call__(self, *tensors):
        return self.op(*tensors)

    def _result_source(self, index):
        """[(argument index, dim)] giving each dynamic size of result
        `index` (from the first argument of the same type), or None when
        result_shapes computes the shape."""
        dtype, shape = self.results[index]
        if None not in shape:
            return []
        for arg, spec in enumerate(self.arguments):
            if spec == (dtype, shape):
                return [(arg, dim) for dim, size in enumerate(shape)
                        if size is None]
        if self._result_shapes is None:
            raise ValueError(
                f"result #{index} of {self.entry!r} has dynamic sizes "
                f"({_shape_text(shape)}) that no argument of the same type "
                f"determines: pass result_shapes, a function of the "
                f"arguments' shapes returning every result's shape")
        return None

    def _describe(self, index):
        return f"argument #{index} ({self.argument_names[index]!r})"

    def _check_cotangents(self, tensors):
        """A gradient layer's cotangents have the shapes of the forward's
        results for the forward's arguments (its first arguments); a
        training backward reads the residuals (the training forward's last
        results) before the cotangents of the layer's results."""
        count = len(self.forward.arguments)
        shapes = self.forward._shapes(tensors[:count])
        layer = self.forward.training_of
        if layer is None:
            expected = [(f"the cotangent of result #{index} of "
                         f"{self.forward.entry!r}", shape)
                        for index, shape in enumerate(shapes)]
        else:
            results = len(layer.results)
            expected = [(f"residual #{index} of {self.forward.entry!r} "
                         f"(its result #{results + index})", shape)
                        for index, shape in enumerate(shapes[results:])]
            expected += [(f"the cotangent of result #{index} of "
                          f"{layer.entry!r}", shape)
                         for index, shape in enumerate(shapes[:results])]
        for offset, (tensor, (what, shape)) in enumerate(
                zip(tensors[count:], expected)):
            if tuple(tensor.shape) != tuple(shape):
                raise ValueError(
                    f"{self._describe(count + offset)} of {self.entry!r} is "
                    f"{what}, which has shape {list(shape)} for these "
                    f"arguments: got {list(tensor.shape)}")

    def _check(self, tensors):
        """The argument checks of the CPU path, on torch tensors (shapes
        may be symbolic); -> the device of the arguments."""
        if len(tensors) != len(self.arguments):
            raise ValueError(f"{self.entry!r} takes {len(self.arguments)} "
                             f"arguments, got {len(tensors)}")
        device = None
        for index, (tensor, (dtype, shape)) in enumerate(
                zip(tensors, self.arguments)):
            what = self._describe(index)
            if not isinstance(tensor, torch.Tensor):
                raise TypeError(f"{what} of {self.entry!r} must be a torch "
                                f"tensor, got {type(tensor).__name__}")
            if tensor.dtype != TORCH_DTYPES[dtype]:
                raise ValueError(
                    f"{what} of {self.entry!r} is {dtype}: expected a "
                    f"{dtype} tensor, got {_element_type(tensor.dtype)}")
            _api.check_shape(self.entry, what, shape, tuple(tensor.shape))
            if device is None:
                device = tensor.device
            elif tensor.device != device:
                raise ValueError(f"{what} of {self.entry!r} is on "
                                 f"{tensor.device}, argument #0 on {device}: "
                                 f"every argument must be on one device")
        if self.forward is not None:
            self._check_cotangents(tensors)
        return device

    def _shapes(self, tensors):
        if self._result_shapes is not None and None in self._result_sources:
            shapes = [tuple(s) for s in self._result_shapes(
                [tuple(t.shape) for t in tensors])]
            if len(shapes) != len(self.results):
                raise ValueError(f"result_shapes returned {len(shapes)} "
                                 f"shapes for {len(self.results)} results")
            return shapes
        shapes = []
        for (_dtype, shape), source in zip(self.results, self._result_sources):
            dims = list(shape)
            for arg, dim in source:
                dims[dim] = tensors[arg].shape[dim]
            shapes.append(tuple(dims))
        return shapes

    def _fake(self, *tensors):
        device = self._check(tensors)
        outputs = [tensors[0].new_empty(shape, dtype=TORCH_DTYPES[dtype],
                                        device=device)
                   for shape, (dtype, _) in zip(self._shapes(tensors),
                                                self.results)]
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def _run(self, *tensors):
        device = self._check(tensors)
        if device.type == "cpu":
            outputs = self.cpu_function()(*tensors)
        elif device.type == "cuda":
            outputs = self.gpu_function()(*tensors)
        else:
            raise ValueError(f"argument #0 of {self.entry!r} is on "
                             f"{device}: attnfuse layers run on CPU and CUDA "
                             f"tensors")
        if isinstance(outputs, torch.Tensor):
            outputs = (outputs,)
        outputs = tuple(outputs)
        if len(outputs) != len(self.results):
            raise RuntimeError(f"{self.qualname} computed {len(outputs)} "
                               f"results, its function has "
                               f"{len(self.results)}")
        return outputs[0] if len(outputs) == 1 else outputs

    def _setup_context(self, ctx, inputs, output):
        if self.forward is not None:
            return
        if self.training_of is not None:
            # The inputs and the residuals (nothing S x T).
            outputs = output if isinstance(output, tuple) else (output,)
            ctx.num_inputs = len(inputs)
            ctx.save_for_backward(
                *inputs, *outputs[len(self.training_of.results):])
            return
        # Registers the gradient op now, outside the traced backward (under
        # torch.compile this runs while AOTAutograd traces the op).
        self._gradient_or_error()
        ctx.save_for_backward(*inputs)

    def _cotangents(self, grads, inputs):
        """One cotangent per result of this layer (zeros for an unused
        one), contiguous, in the result's dtype."""
        shapes = None
        cotangents = []
        for index, (grad, (dtype, _)) in enumerate(zip(grads, self.results)):
            if grad is None:  # an unused result
                if shapes is None:
                    shapes = self._shapes(inputs)
                grad = inputs[0].new_zeros(shapes[index],
                                           dtype=TORCH_DTYPES[dtype])
            else:
                grad = _as(grad, TORCH_DTYPES[dtype]).contiguous()
            cotangents.append(grad)
        return cotangents

    def _argument_gradients(self, outputs):
        """The gradient op's outputs as autograd's tuple: one per argument,
        None for an integer one."""
        if isinstance(outputs, torch.Tensor):
            outputs = (outputs,)
        outputs = iter(outputs)
        return tuple(next(outputs) if _is_floating(dtype) else None
                     for dtype, _ in self.arguments)

    def _backward(self, ctx, *grads):
        if self.forward is not None:
            raise NotImplementedError(
                f"double backward through {self.forward.qualname} is not "
                f"supported: its gradient op {self.qualname} has no backward")
        if self.training_of is not None:
            # The residuals are internal (the layer returns its results
            # only): their gradients are not used.
            saved = ctx.saved_tensors
            inputs, residuals = saved[:ctx.num_inputs], saved[ctx.num_inputs:]
            layer = self.training_of
            cotangents = layer._cotangents(grads[:len(layer.results)], inputs)
            return layer._argument_gradients(
                self._training_backward.op(*inputs, *residuals, *cotangents))
        gradient = self._gradient
        if gradient is None:
            raise NotImplementedError(
                f"{self.qualname} has no backward: differentiating "
                f"{self.entry!r} failed: {self._gradient_error}") \
                from self._gradient_error
        inputs = ctx.saved_tensors
        return self._argument_gradients(
            gradient.op(*inputs, *self._cotangents(grads, inputs)))

    def _gradient_or_error(self):
        with _layers_lock:
            if self._gradient is None and self._gradient_error is None:
                try:
                    self._gradient = self._gradient_layer()
                except Exception as error:  # raised by the backward
                    self._gradient_error = error
            return self._gradient

    def _gradient_layer(self):
        module = _api.grad(self.module, self.entry)
        entry = f"{self.entry}_vjp"
        if entry not in module.functions():
            raise ValueError(f"attnfuse.grad gave no function {entry!r}")
        arguments, results = module.signature(entry)
        expected = self.arguments + self.results
        floating = [spec for spec in self.arguments if _is_floating(spec[0])]
        if arguments != expected or results != floating:
            raise ValueError(
                f"{entry!r} has the signature {_signature_text(arguments)} "
                f"-> {_signature_text(results)}; the gradient of "
                f"{self.entry!r} needs {_signature_text(expected)} -> "
                f"{_signature_text(floating)}")
        if not module.argument_names(entry):
            cotangents = (["d_out"] if len(self.results) == 1 else
                          [f"d_out{i}" for i in range(len(self.results))])
            module._argument_names[entry] = (self.argument_names
                                             + cotangents)
        return _register(module, entry, f"{self.name}_vjp", self.options,
                         None, forward=self)

    def training_layer(self):
        """The training forward of this layer: the CompiledLayer of
        `<entry>_fwd` of attnfuse.grad(module, entry, residuals=True) (the
        op `<qualname>_fwd`), whose results are this layer's followed by
        every attention's query, key, value, output and row log-sum-exp
        (the residuals), and whose backward
        is the op `<qualname>_bwd` (`<entry>_bwd`: the arguments, the
        residuals and the cotangents in; the gradient of every
        floating-point argument out), which reads the residuals instead of
        recomputing the attention. The modules call it when autograd
        records (see call_for_training). Built on first use; raises what
        building it raised (then the layer's own op, whose backward
        recomputes the forward, is what trains)."""
        if self.forward is not None or self.training_of is not None:
            raise NotImplementedError(
                f"{self.qualname} is a gradient or training op: it has no "
                f"training forward")
        with _layers_lock:
            if self._training is None and self._training_error is None:
                try:
                    self._training = self._training_layers()
                except Exception as error:  # raised again below
                    self._training_error = error
        if self._training is None:
            raise self._training_error
        return self._training

    def call_for_training(self, *tensors):
        """The layer's results through its training forward when autograd
        records (grad mode on and a tensor that requires grad) and the
        layer has one, else through its op: the same values either way."""
        if torch.is_grad_enabled() and any(
                isinstance(t, torch.Tensor) and t.requires_grad
                for t in tensors):
            try:
                training = self.training_layer()
            except Exception:  # no training forward: the op trains
                training = None
            if training is not None:
                outputs = training.op(*tensors)
                count = len(self.results)
                return outputs[0] if count == 1 else tuple(outputs[:count])
        return self.op(*tensors)

    def _training_layers(self):
        module = _api.grad(self.module, self.entry, residuals=True)
        forward_entry, backward_entry = (f"{self.entry}_fwd",
                                         f"{self.entry}_bwd")
        arguments, results = module.signature(forward_entry)
        if (arguments != self.arguments
                or results[:len(self.results)] != self.results):
            raise ValueError(
                f"{forward_entry!r} has the signature "
                f"{_signature_text(arguments)} -> {_signature_text(results)}")
        residuals = results[len(self.results):]
        if not residuals:
            raise ValueError(f"{self.entry!r} has no attention: nothing to "
                             f"keep for its backward")
        # A residual's dynamic sizes are the first argument's (the batch and
        # sequence of the input [B, S, E] for the attention outputs
        # [B, S, H, d]).
        first = self.arguments[0][1]
        for index, (_dtype, shape) in enumerate(residuals):
            for dim, size in enumerate(shape):
                if size is None and (dim >= len(first)
                                     or first[dim] is not None):
                    raise ValueError(
                        f"residual #{index} of {forward_entry!r} has shape "
                        f"{_shape_text(shape)}: its dynamic dimension {dim} "
                        f"is not one of argument #0's")

        def shapes(argument_shapes):
            sized = [_Sized(shape) for shape in argument_shapes]
            return list(self._shapes(sized)) + [
                tuple(argument_shapes[0][dim] if size is None else size
                      for dim, size in enumerate(shape))
                for _dtype, shape in residuals]

        names = module.argument_names(forward_entry)
        if not names:
            module._argument_names[forward_entry] = list(self.argument_names)
            cotangents = (["d_out"] if len(self.results) == 1 else
                          [f"d_out{i}" for i in range(len(self.results))])
            module._argument_names[backward_entry] = (
                self.argument_names
                + [f"residual{i}" for i in range(len(residuals))]
                + cotangents)
        forward = _register(module, forward_entry, f"{self.name}_fwd",
                            self.options, shapes, training_of=self)
        forward._training_backward = _register(
            module, backward_entry, f"{self.name}_bwd", self.options, None,
            forward=forward)
        return forward

    def gradient_layer(self):
        """The CompiledLayer of the gradient function (`<entry>_vjp` of
        attnfuse.grad(module, entry), the op `<qualname>_vjp`): the
        function's arguments followed by one cotangent per result, in
        their types; the gradient of every floating-point argument out, in
        argument order. Built on first use (the first forward that records
        autograd builds it too); raises what differentiating the function
        raised. A gradient layer has none."""
        if self.forward is not None:
            raise NotImplementedError(
                f"double backward through {self.forward.qualname} is not "
                f"supported: its gradient op {self.qualname} has no backward")
        gradient = self._gradient_or_error()
        if gradient is None:
            raise self._gradient_error
        return gradient

    def cpu_function(self):
        """The function JIT-compiled for the CPU (attnfuse.CpuFunction)."""
        with self._lock:
            if self._cpu is None:
                # Torch's threads run between the op's calls: ours sleep
                # when a loop ends rather than spin against them.
                options = dict({"wait_policy": "passive"}, **self.options)
                self._cpu = _api.compile(self.module, target="cpu",
                                         entry=self.entry, **options)
            return self._cpu

    def gpu_function(self):
        """The GPU callable of the layer, from the GPU compiler
        (set_gpu_compiler)."""
        with self._lock:
            if self._gpu is None:
                try:
                    gpu = _gpu_compiler(self.module, self.entry)
                except _api.MLIRError as error:
                    # A backward whose ops lack sm_90a kernels (head dim 256):
                    # say which, and what to do instead.
                    if self.forward is None \
                            or _gpu_compiler is not _default_gpu_compiler:
                        raise
                    raise NotImplementedError(
                        f"{self.qualname} (the backward of "
                        f"{self.forward.qualname}) cannot run on CUDA "
                        f"tensors yet: {error}. Train with CPU tensors, or "
                        f"register a GPU compiler that compiles "
                        f"{self.entry!r} with "
                        f"attnfuse.torch.set_gpu_compiler") from error
                if not callable(gpu):
                    raise TypeError(f"the GPU compiler returned "
                                    f"{type(gpu).__name__}, not a callable")
                self._gpu = gpu
            return self._gpu


def _shape_text(shape):
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def _signature_text(specs):
    return "(" + ", ".join(f"{dtype}{_shape_text(shape)}"
                           for dtype, shape in specs) + ")"


def _is_floating(dtype):
    return TORCH_DTYPES[dtype].is_floating_point


_BUILDERS = {"cca": _api.cca, "qkv_attention": _api.qkv_attention}


def compile_layer(module, *, entry=None, name=None, result_shapes=None,
                  **options):
    """A function of `module` as a torch custom op; returns the
    CompiledLayer (call it, or its `.op`, with torch tensors).

    module: an attnfuse.Module, or a builder configuration: a dict with
    "kind" ("cca" or "qkv_attention") and the keyword arguments of
    attnfuse.cca / attnfuse.qkv_attention. entry: the function (default:
    the only one, else `model`). name: the op's name in the attnfuse
    namespace (default: the function's name and a hash of the module text
    and options, the same in every process, so an exported program finds
    its op again once the same layer is compiled). options: those of
    attnfuse.compile(module, target="cpu") (fused, block_q, ...);
    wait_policy defaults to "passive" here (torch's threads run between
    the op's calls).
    result_shapes: for results whose dynamic sizes no argument of the same
    type gives, a function from the arguments' shapes to every result's
    shape.

    Compiling the same module text with the same entry, options and name
    again returns the same CompiledLayer (one op); a name already taken by
    another layer is refused. The CPU code is JIT-compiled on the first CPU
    call. The op's backward is the op `<name>_vjp` (gradient_layer()),
    compiled with the same options.
    """
    if isinstance(module, dict):
        config = dict(module)
        kind = config.pop("kind", None)
        if kind not in _BUILDERS:
            raise ValueError(f"module: a builder configuration needs 'kind' "
                             f"set to {' or '.join(map(repr, _BUILDERS))}, "
                             f"got {kind!r}")
        module = _BUILDERS[kind](**config)
    if not isinstance(module, _api.Module):
        raise TypeError(f"module must be an attnfuse.Module or a builder "
                        f"configuration dict, got {type(module).__name__}")
    entry = _api._pick_entry(module, entry)
    if name is not None and (not isinstance(name, str)
                             or not _IDENTIFIER.match(name)):
        raise ValueError(f"name must be an identifier, got {name!r}")
    if result_shapes is not None and not callable(result_shapes):
        raise TypeError(f"result_shapes must be callable, got "
                        f"{type(result_shapes).__name__}")
    return _register(module, entry, name, options, result_shapes)


class _Sized:
    """Stands for a tensor where only its shape is read."""

    def __init__(self, shape):
        self.shape = tuple(shape)


def _register(module, entry, name, options, result_shapes, forward=None,
              training_of=None):
    key = (str(module), entry, tuple(sorted(options.items())))
    if name is None:
        digest = hashlib.sha1(repr(key).encode()).hexdigest()[:12]
        name = f"{re.sub(r'[^A-Za-z0-9_]', '_', entry)}_{digest}"
    key += (name,)
    with _layers_lock:
        layer = _layers.get(key)
        if layer is not None:
            return layer
        if any(other.name == name for other in _layers.values()):
            raise ValueError(f"name: an op attnfuse::{name} exists already "
                             f"(for another layer)")
        layer = CompiledLayer(module, entry, name, options, result_shapes,
                              forward, training_of)
        _layers[key] = layer
        return layer


@atexit.register
def _release_compiled_code():
    """torch's op registry keeps every layer until the interpreter is torn
    down, after the extension: drop the extension's objects first."""
    with _layers_lock:
        for layer in _layers.values():
            layer.module = layer._cpu = layer._gpu = None
            layer._gradient_error = None  # its traceback holds modules


# The layer modules look their op up by configuration. Under torch.compile
# the lookup runs once while tracing (its result is a constant: the op's
# name), so building and registering a new layer does not break the graph.
_module_layers = {}


def _module_layer(kind, config):
    with _layers_lock:
        layer = _module_layers.get((kind, config))
        if layer is None:
            layer = compile_layer({"kind": kind, **dict(config)})
            _module_layers[(kind, config)] = layer
        return layer


@torch.compiler.assume_constant_result
def _module_op_name(kind, config):
    return _module_layer(kind, config).name


def _module_op(kind, config):
    return getattr(torch.ops.attnfuse, _module_op_name(kind, config))


@torch.compiler.assume_constant_result
def _module_training_op_name(kind, config):
    """The name of the training forward op of the module layer, or "" when
    it has none (its own op then trains)."""
    try:
        return _module_layer(kind, config).training_layer().name
    except Exception:  # no training forward: the op trains
        return ""


def _module_call(kind, config, *tensors):
    """The module layer's result: through its training forward when autograd
    records (CompiledLayer.call_for_training), else through its op."""
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        name = _module_training_op_name(kind, config)
        if name:
            return getattr(torch.ops.attnfuse, name)(*tensors)[0]
    return _module_op(kind, config)(*tensors)


def _compute_dtype(x, what):
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{what} must be a torch tensor, got "
                        f"{type(x).__name__}")
    if x.dtype not in _MODULE_DTYPES:
        raise ValueError(f"{what} must be float32, float16 or bfloat16, got "
                         f"{x.dtype}")
    if x.dim() != 3:
        raise ValueError(f"{what} must have shape [batch, seq, embed_dim], "
                         f"got {list(x.shape)}")
    return _MODULE_DTYPES[x.dtype]


def _as(tensor, dtype):
    return tensor if tensor.dtype == dtype else tensor.to(dtype)


def _decode_config(module, element, how_to_index):
    """The decode builder's configuration of a layer module that runs with
    a cache: its own, for `element`, without `causal` (decoding is)."""
    if module.layer_idx is None:
        raise ValueError(
            f"past_key_values: this {type(module).__name__} has no "
            f"layer_idx, the index of its state in the cache ({how_to_index})")
    config = dict(module._config, dtype=element)
    if not config.pop("causal"):
        raise ValueError("past_key_values: a decoder's cache needs a causal "
                         "layer (causal=False)")
    return config


# ---------------------------------------------------------------------------
# Projection sharing
# ---------------------------------------------------------------------------


class QKVAttention(nn.Module):
    """Self-attention with projection sharing (attn.qkv_attention).

    sharing: "none" (q, k, v), "kv" (the value is the key: K=V), "qk" (the
    query is the key), "qkv" (one projection). Parameters are those of a
    plain attention, as the sharing keeps them: q_proj (none, kv), k_proj,
    v_proj (none, qk) and o_proj, torch.nn.Linear each (bias=True adds
    their biases). num_kv_heads < num_heads is GQA (1: MQA); qk and qkv
    need num_kv_heads == num_heads. causal (default True), window (sliding
    window), rope_theta and rope_fraction (NeoX RoPE on the first
    rope_fraction * head_dim dims of each head, positions 0..S-1), scale
    (default 1/sqrt(head_dim)).

    forward(x [B, S, embed_dim], logit_bias=None) -> [B, S, embed_dim] in
    x's dtype (float32, float16 or bfloat16; parameters of another dtype
    are cast). logit_bias: an additive bias of the scaled logits before the
    causal / window masking and the softmax, `[S, S]` (every head: the
    projection-sharing paper's positional bias P) or `[num_heads, S, S]`;
    it is cast to x's dtype and receives a gradient when it requires one.
    past_key_values: None, or an attnfuse.generation.AttnFuseCache (CPU
    tensors, no autograd): x holds the next tokens of the sequences the
    cache holds at `layer_idx`, through the attn.qkv_decode functions
    (the cache is updated in place; K=V modes keep one tensor);
    attention_mask [B, S] (nonzero for a real token) then pads prompts of
    different lengths on the left. Without a cache every token is real.
    The layer is compiled once per configuration and dtype; CPU tensors
    run the CPU JIT, CUDA tensors the GPU compiler's callable (see
    set_gpu_compiler). Differentiable: gradients reach x and every
    parameter through the op's gradient op (CPU tensors; see
    CompiledLayer.gradient_layer).

    layer_idx: the index of this layer's state in a cache; device, dtype:
    where and in which dtype the parameters are created (as for
    torch.nn.Linear).
    """

    def __init__(self, embed_dim, num_heads, num_kv_heads=None,
                 head_dim=None, sharing="none", bias=False, causal=True,
                 window=None, rope_theta=None, rope_fraction=1.0, scale=None,
                 layer_idx=None, device=None, dtype=None):
        super().__init__()
        # The index of this layer's state in a cache (past_key_values).
        self.layer_idx = layer_idx
        # The builder checks the configuration and names what is wrong.
        config = dict(embed_dim=embed_dim, num_heads=num_heads,
                      num_kv_heads=num_kv_heads, head_dim=head_dim,
                      sharing=sharing, biases=bool(bias), causal=bool(causal),
                      window=window, rope_theta=rope_theta,
                      rope_fraction=rope_fraction, scale=scale)
        builders.qkv_attention_text(**config)
        num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        head_dim = embed_dim // num_heads if head_dim is None else head_dim
        config.update(num_kv_heads=num_kv_heads, head_dim=head_dim)
        self._config = tuple(sorted(config.items()))
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.num_kv_heads, self.head_dim = num_kv_heads, head_dim
        self.sharing = sharing
        q_width, k_width = num_heads * head_dim, num_kv_heads * head_dim
        factory = dict(device=device, dtype=dtype, bias=bool(bias))
        if sharing in ("none", "kv"):
            self.q_proj = nn.Linear(embed_dim, q_width, **factory)
        self.k_proj = nn.Linear(embed_dim, k_width, **factory)
        if sharing in ("none", "qk"):
            self.v_proj = nn.Linear(embed_dim, k_width, **factory)
        self.o_proj = nn.Linear(q_width, embed_dim, **factory)

    def extra_repr(self):
        """The configuration, as print(module) shows it."""
        return ", ".join(f"{k}={v!r}" for k, v in self._config
                         if k not in ("embed_dim",))

    def _weights(self, dtype):
        """The layer's weight arguments in the builder's order."""
        projections = {"q": "q_proj", "k": "k_proj", "v": "v_proj",
                       "o": "o_proj"}
        kept = [p for p in "qkvo" if hasattr(self, projections[p])]
        weights = [getattr(self, projections[p]).weight for p in kept]
        if dict(self._config)["biases"]:
            weights += [getattr(self, projections[p]).bias for p in kept]
        return [_as(w, dtype) for w in weights]

    def _logit_bias_kind(self, logit_bias, x):
        """The builder's logit_bias option for this bias of x's logits."""
        if not isinstance(logit_bias, torch.Tensor):
            raise TypeError(f"logit_bias must be None or a torch tensor, got "
                            f"{type(logit_bias).__name__}")
        if not logit_bias.is_floating_point():
            raise ValueError(f"logit_bias must be a floating-point tensor, "
                             f"got {logit_bias.dtype}")
        seq = x.shape[1]
        expected = {2: ("shared", [seq, seq]),
                    3: ("per_head", [self.num_heads, seq, seq])}
        kind, shape = expected.get(logit_bias.dim(), (None, None))
        if kind is None or list(logit_bias.shape) != shape:
            raise ValueError(
                f"logit_bias must have shape [S, S] (every head) or "
                f"[num_heads, S, S] = [{self.num_heads}, S, S], with S = "
                f"{seq} the length of x: got {list(logit_bias.shape)}")
        if logit_bias.device != x.device:
            raise ValueError(f"logit_bias is on {logit_bias.device}, x on "
                             f"{x.device}")
        return kind

    def _cached_forward(self, x, past_key_values, attention_mask, element):
        from . import generation
        config = _decode_config(self, element, "pass layer_idx=")
        if attention_mask is not None and (
                not isinstance(attention_mask, torch.Tensor)
                or list(attention_mask.shape) != list(x.shape[:2])):
            got = (list(attention_mask.shape)
                   if isinstance(attention_mask, torch.Tensor)
                   else type(attention_mask).__name__)
            raise ValueError(f"attention_mask must be a [batch, seq] = "
                             f"{list(x.shape[:2])} padding mask, got {got}")
        y, _, _ = generation.cached_call(
            "qkv", tuple(sorted(config.items())), ("qkv", self._config),
            past_key_values, self.layer_idx, x, self._weights(x.dtype),
            attention_mask)
        return y

    def forward(self, x, logit_bias=None, past_key_values=None,
                attention_mask=None):
        """The layer's output `[B, S, embed_dim]` in x's dtype.

        x: `[B, S, embed_dim]` (float32, float16 or bfloat16); logit_bias:
        None, `[S, S]` or `[num_heads, S, S]`, added to the scaled logits;
        past_key_values: None or an attnfuse.generation.AttnFuseCache whose
        sequences x continues (no logit_bias then); attention_mask: with a
        cache, `[B, S]` nonzero for real tokens (left padding); without a
        cache it must be None."""
        element = _compute_dtype(x, "x")
        if past_key_values is not None:
            if logit_bias is not None:
                raise ValueError("logit_bias: the decode functions of a "
                                 "cache take no logit bias")
            return self._cached_forward(x, past_key_values, attention_mask,
                                        element)
        if attention_mask is not None:
            raise ValueError("attention_mask: without past_key_values every "
                             "token of x is real (attn.qkv_attention has no "
                             "padding mask)")
        config = dict(self._config, dtype=element)
        tensors = [x, *self._weights(x.dtype)]
        if logit_bias is not None:
            config["logit_bias"] = self._logit_bias_kind(logit_bias, x)
            tensors.append(_as(logit_bias, x.dtype))
        return _module_call("qkv_attention", tuple(sorted(config.items())),
                            *tensors)


# ---------------------------------------------------------------------------
# CCA / CCGQA with transformers' ZayaAttention parameters
# ---------------------------------------------------------------------------


class _CCAProjection(nn.Module):
    """The parameters of transformers' ZayaCCAProjection (no forward: the
    compiled layer computes with them)."""

    def __init__(self, embed_dim, num_heads, num_kv_heads, head_dim, kernels,
                 value_shift, device, dtype):
        super().__init__()
        q_width, k_width = num_heads * head_dim, num_kv_heads * head_dim
        factory = dict(device=device, dtype=dtype)
        self.q_proj = nn.Linear(embed_dim, q_width, bias=False, **factory)
        self.k_proj = nn.Linear(embed_dim, k_width, bias=False, **factory)
        v_width = k_width // 2 if value_shift else k_width
        self.v_proj_current = nn.Linear(embed_dim, v_width, bias=False,
                                        **factory)
        if value_shift:
            self.v_proj_delayed = nn.Linear(embed_dim, v_width, bias=False,
                                            **factory)
        channels = q_width + k_width
        self.conv_qk_depthwise = nn.Conv1d(channels, channels, kernels[0],
                                           groups=channels, **factory)
        self.conv_qk_grouped = nn.Conv1d(channels, channels, kernels[1],
                                         groups=num_heads + num_kv_heads,
                                         **factory)


class _QKNorm(nn.Module):
    def __init__(self, num_kv_heads, device, dtype):
        super().__init__()
        self.temp = nn.Parameter(torch.zeros(num_kv_heads, device=device,
                                             dtype=dtype))


class CCAAttention(nn.Module):
    """Compressed Convolutional Attention (attn.cca): CCA when num_heads ==
    num_kv_heads, CCGQA otherwise, with the parameters and the call of
    transformers' ZayaAttention, so a ZayaAttention's state_dict loads as it
    is (qkv_proj.{q_proj, k_proj, v_proj_current, v_proj_delayed,
    conv_qk_depthwise, conv_qk_grouped}, qk_norm.temp, o_proj).

    The defaults are transformers' ZAYA numerics: qk_mean, value_shift, the
    raw learned key temperature, each head divided by max(|x|, eps) with
    eps the machine epsilon of the input dtype (norm="clamp_eps",
    eps=None), causal. temperature="clamped", norm="sqrt_eps" and an
    explicit eps select the IR's other forms. window: sliding window;
    rope_theta / rope_fraction: RoPE on the first rope_fraction * head_dim
    dims of each head at positions 0..S-1. from_hf_config(config,
    layer_idx) reads them from a ZAYA config as ZayaAttention(config,
    layer_idx) does.

    embed_dim, num_heads, num_kv_heads, head_dim: the width, query heads,
    key/value heads (default num_heads) and head size (default embed_dim //
    num_heads); conv_kernel_sizes: the two causal convolutions' kernel
    sizes; layer_idx: the index of this layer's state in a cache; device,
    dtype: where and in which dtype the parameters are created.

    forward(hidden_states, attention_mask=None, past_key_values=None,
    position_embeddings=None) -> (output, None), as ZayaAttention.
    attention_mask: None, a 2-D [B, S] padding mask (nonzero for a real
    token), or transformers' mask dict, whose "conv" entry (the 2-D
    padding mask, or None) is read: padded tokens are zeroed before the
    projections and masked as keys. The causal and sliding-window masking
    is the layer's own (the dict's 4-D "causal" mask is not read).
    position_embeddings: ZAYA's (cos, sin); the layer rotates at its
    tokens' positions itself (0..S-1, or after the tokens a cache holds),
    and checks (outside torch.compile) that the given ones are those.
    past_key_values: None, or an attnfuse.generation.AttnFuseCache (CPU
    tensors): the layer continues the sequences it holds at `layer_idx`
    (set by from_hf_config) through the attn.cca_decode functions and
    updates it in place, so transformers' generate() runs with
    past_key_values=AttnFuseCache.for_model(model, max_length); padding
    then goes on the left. Differentiable (CPU tensors): gradients
    reach hidden_states and every parameter, qk_norm.temp and the
    convolutions' biases included, as through ZayaAttention.
    """

    def __init__(self, embed_dim, num_heads, num_kv_heads=None,
                 head_dim=None, conv_kernel_sizes=(2, 2), window=None,
                 rope_theta=None, rope_fraction=1.0, qk_mean=True,
                 value_shift=True, temperature="raw", norm="clamp_eps",
                 eps=None, causal=True, layer_idx=None, device=None,
                 dtype=None):
        super().__init__()
        # The index of this layer's state in a cache (past_key_values).
        self.layer_idx = layer_idx
        config = dict(embed_dim=embed_dim, num_heads=num_heads,
                      num_kv_heads=num_kv_heads, head_dim=head_dim,
                      conv_kernel_sizes=tuple(conv_kernel_sizes),
                      window=window, rope_theta=rope_theta,
                      rope_fraction=rope_fraction, qk_mean=bool(qk_mean),
                      value_shift=bool(value_shift), temperature=temperature,
                      norm=norm, eps=eps, causal=bool(causal))
        builders.cca_text(**config)
        num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        head_dim = embed_dim // num_heads if head_dim is None else head_dim
        config.update(num_kv_heads=num_kv_heads, head_dim=head_dim)
        self._config = tuple(sorted(config.items()))
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.num_kv_heads, self.head_dim = num_kv_heads, head_dim
        self.window, self.rope_theta = window, rope_theta
        self.rope_fraction = rope_fraction
        # The RoPE frequencies of the position_embeddings check, made once.
        self._inv_freq = None
        # ZayaAttention's order: o_proj, qkv_proj, qk_norm.
        self.o_proj = nn.Linear(num_heads * head_dim, embed_dim, bias=False,
                                device=device, dtype=dtype)
        self.qkv_proj = _CCAProjection(embed_dim, num_heads, num_kv_heads,
                                       head_dim, config["conv_kernel_sizes"],
                                       value_shift, device, dtype)
        self.qk_norm = _QKNorm(num_kv_heads, device, dtype)

    @classmethod
    def from_hf_config(cls, config, layer_idx=0, device=None, dtype=None):
        """The attention of layer `layer_idx` of a ZAYA config (a
        transformers ZayaConfig, a dict or the path of a config.json),
        read by attnfuse's importer: its window and RoPE theta follow the
        layer's type. device, dtype: where and in which dtype the
        parameters are created."""
        from .importer import config_from_hf
        if hasattr(config, "to_dict") and not isinstance(config, dict):
            config = config.to_dict()
        kind, kwargs, source = config_from_hf(config, "f32")
        if kind != "cca":
            raise ValueError(f"config: {source} is not a ZAYA config")
        count = kwargs["num_layers"]
        if isinstance(layer_idx, bool) or not isinstance(layer_idx, int) \
                or not 0 <= layer_idx < count:
            raise ValueError(f"layer_idx must be an attention layer index in "
                             f"[0, {count}), got {layer_idx!r}")

        def pick(value):
            return value[layer_idx] if isinstance(value, list) else value

        return cls(kwargs["embed_dim"], kwargs["num_heads"],
                   kwargs["num_kv_heads"], kwargs["head_dim"],
                   conv_kernel_sizes=kwargs["conv_kernel_sizes"],
                   window=pick(kwargs["window"]),
                   rope_theta=pick(kwargs["rope_theta"]),
                   rope_fraction=kwargs["rope_fraction"],
                   qk_mean=kwargs["qk_mean"],
                   value_shift=kwargs["value_shift"],
                   temperature=kwargs["temperature"], norm=kwargs["norm"],
                   causal=kwargs["causal"], layer_idx=layer_idx,
                   device=device, dtype=dtype)

    def extra_repr(self):
        """The configuration, as print(module) shows it."""
        return ", ".join(f"{k}={v!r}" for k, v in self._config
                         if k != "embed_dim")

    def _weights(self, dtype):
        p = self.qkv_proj
        weights = [p.q_proj.weight, p.k_proj.weight, p.v_proj_current.weight]
        if hasattr(p, "v_proj_delayed"):
            weights.append(p.v_proj_delayed.weight)
        weights += [p.conv_qk_depthwise.weight, p.conv_qk_depthwise.bias,
                    p.conv_qk_grouped.weight, p.conv_qk_grouped.bias,
                    self.qk_norm.temp, self.o_proj.weight]
        return [_as(w, dtype) for w in weights]

    def _padding_mask(self, attention_mask, x):
        if attention_mask is None:
            return None
        if isinstance(attention_mask, dict):
            attention_mask = attention_mask.get("conv")
            if attention_mask is None:
                return None
        if not isinstance(attention_mask, torch.Tensor) \
                or attention_mask.dim() != 2:
            shape = (list(attention_mask.shape)
                     if isinstance(attention_mask, torch.Tensor)
                     else type(attention_mask).__name__)
            raise ValueError(
                f"attention_mask must be None, a [batch, seq] padding mask "
                f"or transformers' mask dict, got {shape} (the causal and "
                f"window masks are the layer's own)")
        if attention_mask.dtype != torch.int64:
            attention_mask = attention_mask.to(torch.int64)
        return attention_mask

    def _check_position_embeddings(self, position_embeddings, x,
                                   positions=None):
        """position_embeddings must rotate at the layer's own positions:
        0..S-1, or `positions` [B, S] (tokens after a cache's; negative at
        padding, which is not compared)."""
        if position_embeddings is None or torch.compiler.is_compiling():
            return
        cos, sin = position_embeddings
        seq = x.shape[1]
        rotated = int(self.rope_fraction * self.head_dim) \
            if self.rope_theta is not None else 0
        if rotated == 0:
            raise ValueError("position_embeddings: this layer has no RoPE "
                             "(rope_theta=None), but they were given")
        if positions is None:
            positions = torch.arange(seq)[None, :]
            where = f"positions 0..{seq - 1}"
        else:
            real = positions[positions >= 0]
            where = (f"the positions after the cached tokens "
                     f"({int(real.min())}..{int(real.max())})"
                     if real.numel() else "no real position")
        positions = positions.to("cpu", torch.float64)
        if self._inv_freq is None:
            self._inv_freq = 1.0 / (self.rope_theta ** (
                torch.arange(0, rotated, 2, dtype=torch.float64) / rotated))
        freqs = positions[..., None] * self._inv_freq
        angles = torch.cat([freqs, freqs], dim=-1)  # [B or 1, S, rotated]
        tolerance = 1e-4 if cos.dtype in (torch.float32, torch.float64) \
            else 2e-2
        # One token per sequence (a decode step): cos alone, as both come
        # from one rotary embedding at the same positions.
        pairs = [("cos", cos, angles.cos())]
        if seq > 1:
            pairs.append(("sin", sin, angles.sin()))
        for name, given, expected in pairs:
            given = given.detach().to("cpu", torch.float64)
            matches = given.shape[-2:] == expected.shape[-2:]
            if matches:
                given, expected = torch.broadcast_tensors(given, expected)
                compared = (positions >= 0).expand(given.shape[:-1])
                matches = torch.allclose(given[compared], expected[compared],
                                         atol=tolerance, rtol=0)
            if not matches:
                raise ValueError(
                    f"position_embeddings: {name} is not RoPE at {where} "
                    f"with theta {self.rope_theta} on {rotated} of "
                    f"{self.head_dim} dims (shape {list(given.shape)}); "
                    f"this layer rotates at those positions only")

    @staticmethod
    def _with_default_eps(config):
        """config with clamp_eps's default eps: transformers'
        torch.finfo(dtype).eps of the activations (config["dtype"])."""
        if config["norm"] == "clamp_eps" and config["eps"] is None:
            config["eps"] = builders.MACHINE_EPS[config["dtype"]]
        return config

    def _cached_forward(self, hidden_states, mask, past_key_values,
                        position_embeddings, element):
        """The output continuing the sequences of past_key_values (an
        attnfuse.generation.AttnFuseCache), through attn.cca_decode."""
        from . import generation
        config = self._with_default_eps(_decode_config(
            self, element,
            "from_hf_config(config, layer_idx) sets it; else pass layer_idx="))
        y, start, real = generation.cached_call(
            "cca", tuple(sorted(config.items())), ("cca", self._config),
            past_key_values, self.layer_idx, hidden_states,
            self._weights(hidden_states.dtype), mask)
        if position_embeddings is not None:
            # Token i of sequence b sits at start[b] + i - (its left padding).
            seq = hidden_states.shape[1]
            index = torch.arange(seq)[None, :] - (seq - real.long())[:, None]
            positions = torch.where(index >= 0, start.long()[:, None] + index,
                                    -1)
            self._check_position_embeddings(position_embeddings,
                                            hidden_states, positions)
        return y

    def forward(self, hidden_states, attention_mask=None,
                past_key_values=None, position_embeddings=None, **kwargs):
        """(output, None), as ZayaAttention: the output `[B, S, embed_dim]`
        in hidden_states' dtype.

        hidden_states: `[B, S, embed_dim]`; attention_mask: None, a `[B, S]`
        padding mask (nonzero for a real token) or transformers' mask dict
        (its "conv" entry is read); past_key_values: None or an
        attnfuse.generation.AttnFuseCache to continue; position_embeddings:
        ZAYA's (cos, sin), checked against the layer's own RoPE. Other
        keyword arguments of a transformers layer call are ignored."""
        element = _compute_dtype(hidden_states, "hidden_states")
        mask = self._padding_mask(attention_mask, hidden_states)
        if past_key_values is not None:
            return self._cached_forward(hidden_states, mask, past_key_values,
                                        position_embeddings, element), None
        self._check_position_embeddings(position_embeddings, hidden_states)
        config = tuple(sorted(self._with_default_eps(dict(
            self._config, dtype=element,
            padding_mask=mask is not None)).items()))
        weights = self._weights(hidden_states.dtype)
        if mask is None:
            return _module_call("cca", config, hidden_states, *weights), None
        return _module_call("cca", config, hidden_states, mask,
                            *weights), None


def swap_zaya_attention(model, copy=True):
    """A transformers ZAYA model (ZayaForCausalLM or ZayaModel) with every
    ZayaAttention replaced by CCAAttention.from_hf_config(config, i) holding
    the same parameters (load_state_dict, strict): a deep copy of `model`,
    or `model` itself with copy=False. Its forward then runs AttnFuse's
    layers; generate() with an attnfuse.generation.AttnFuseCache."""
    import copy as copy_module
    if copy:
        model = copy_module.deepcopy(model)
    body = getattr(model, "model", model)
    blocks = getattr(body, "layers", None)
    if blocks is None or not all(hasattr(b, "self_attn") for b in blocks):
        raise TypeError(f"model: a transformers ZAYA model (its .model.layers"
                        f"[i].self_attn), got {type(model).__name__}")
    for index, block in enumerate(blocks):
        like = next(block.self_attn.parameters())
        attention = CCAAttention.from_hf_config(
            model.config, index, device=like.device, dtype=like.dtype)
        attention.load_state_dict(block.self_attn.state_dict())
        block.self_attn = attention
    return model

