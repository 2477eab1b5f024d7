"""Hugging Face safetensors checkpoints -> the arguments of a compiled layer.

    layer = attnfuse.from_hf_config("ckpt/config.json", dtype="f32")
    run = attnfuse.compile(layer, target="cpu")
    weights = attnfuse.load_hf_weights(run, "ckpt")   # {argument: array}
    y = run(x, *weights.values())

`path` is a model.safetensors file, a sharded checkpoint's
model.safetensors.index.json, or a folder holding either. The files are read
with numpy alone (bf16 tensors become uint16 bit patterns, the form that
attnfuse's bf16 arguments take), so the loader needs neither torch nor the
`safetensors` package.

Names: argument `l{i}_{weight}` of the function reads
`model.layers.{n}.self_attn.{NAME}`, where n is the checkpoint block of
attention layer i (from_hf_config records it: block i, or 2 i in the legacy
ZAYA form whose attention and MoE blocks alternate) and NAME is, for
`attn.cca` (transformers' ZAYA):

    wq -> qkv_proj.q_proj.weight              [Lq, E]
    wk -> qkv_proj.k_proj.weight              [Lk, E]
    wv -> qkv_proj.v_proj_current.weight      [Lk/2, E]
    wv_prev -> qkv_proj.v_proj_delayed.weight [Lk/2, E]
    conv_dw_w, conv_dw_b -> qkv_proj.conv_qk_depthwise.weight, .bias
                                              [C, 1, k0], [C] (torch Conv1d)
    conv_g_w, conv_g_b -> qkv_proj.conv_qk_grouped.weight, .bias
                                              [C, d, k1], [C]
    temp -> qk_norm.temp                      [Hk]
    wo -> o_proj.weight                       [E, Lq]

and for `attn.qkv_attention`: {q,k,v,o}_proj.weight and .bias (torch
Linear layout [out, in]). A checkpoint in Zyphra's Megatron-style naming
(ZAYA1-base and the -legacy repos: qkv.linear_q.weight, qkv.val_proj1.weight,
qkv.conv_qk.0.weight, qkv.temp, ...; CCA_MEGATRON_NAMES) is read with those
names: load_hf_weights picks the naming of the first layer's `wq`.

Every tensor of the checkpoint under the attention blocks' `self_attn.`
must be used, and every argument found with its exact shape: a missing,
extra or mis-shaped tensor raises ValueError naming it (with the expected
and the found shape). Tensors outside `self_attn` (embeddings, norms, MoE)
are not read.
"""

import json
import os
import re
import struct

import numpy as np

from .bf16 import from_bf16, to_bf16

CCA_NAMES = {
    "wq": "qkv_proj.q_proj.weight",
    "wk": "qkv_proj.k_proj.weight",
    "wv": "qkv_proj.v_proj_current.weight",
    "wv_prev": "qkv_proj.v_proj_delayed.weight",
    "conv_dw_w": "qkv_proj.conv_qk_depthwise.weight",
    "conv_dw_b": "qkv_proj.conv_qk_depthwise.bias",
    "conv_g_w": "qkv_proj.conv_qk_grouped.weight",
    "conv_g_b": "qkv_proj.conv_qk_grouped.bias",
    "temp": "qk_norm.temp",
    "wo": "o_proj.weight",
}
# The same tensors in Zyphra's Megatron-style checkpoints.
CCA_MEGATRON_NAMES = {
    "wq": "qkv.linear_q.weight",
    "wk": "qkv.linear_k.weight",
    "wv": "qkv.val_proj1.weight",
    "wv_prev": "qkv.val_proj2.weight",
    "conv_dw_w": "qkv.conv_qk.0.weight",
    "conv_dw_b": "qkv.conv_qk.0.bias",
    "conv_g_w": "qkv.conv_qk.1.weight",
    "conv_g_b": "qkv.conv_qk.1.bias",
    "temp": "qkv.temp",
    "wo": "o_proj.weight",
}
QKV_NAMES = {f"{kind}{p}": f"{p}_proj.{'weight' if kind == 'w' else 'bias'}"
             for kind in ("w", "b") for p in "qkvo"}

_DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16,
           "BF16": np.uint16, "I64": np.int64, "I32": np.int32,
           "I16": np.int16, "I8": np.int8, "U8": np.uint8}
_ARGUMENT = re.compile(r"^l(\d+)_(\w+)$")


class SafetensorsFile:
    """One .safetensors file: its tensor table, tensors read on demand.

    path: the file. `tensors` maps each name to its table entry (dtype,
    shape, data offsets); ValueError when the file is not safetensors."""

    def __init__(self, path):
        self.path = os.fspath(path)
        with open(self.path, "rb") as f:
            head = f.read(8)
            if len(head) != 8:
                raise ValueError(f"{self.path}: not a safetensors file (too "
                                 f"short)")
            (size,) = struct.unpack("<Q", head)
            if size > os.path.getsize(self.path) - 8:
                raise ValueError(f"{self.path}: not a safetensors file "
                                 f"(header size {size} past the end)")
            try:
                header = json.loads(f.read(size))
            except (UnicodeDecodeError, json.JSONDecodeError) as error:
                raise ValueError(f"{self.path}: not a safetensors file "
                                 f"({error})") from None
        header.pop("__metadata__", None)
        self.data_start = 8 + size
        self.tensors = header

    def dtype(self, name):
        """The safetensors dtype ("F32", "BF16", ...) of tensor `name`."""
        return self.tensors[name]["dtype"]

    def shape(self, name):
        """The shape of tensor `name`, as a tuple."""
        return tuple(self.tensors[name]["shape"])

    def read(self, name):
        """Tensor `name` as a numpy array (BF16: uint16 bit patterns);
        ValueError for a dtype it cannot read."""
        entry = self.tensors[name]
        if entry["dtype"] not in _DTYPES:
            raise ValueError(f"{self.path}: tensor {name!r} has dtype "
                             f"{entry['dtype']}, which is not supported")
        dtype = np.dtype(_DTYPES[entry["dtype"]]).newbyteorder("<")
        begin, end = entry["data_offsets"]
        count = int(np.prod(entry["shape"], dtype=np.int64))
        if end - begin != count * dtype.itemsize:
            raise ValueError(f"{self.path}: tensor {name!r} holds "
                             f"{end - begin} bytes for shape "
                             f"{entry['shape']} of {entry['dtype']}")
        with open(self.path, "rb") as f:
            f.seek(self.data_start + begin)
            data = f.read(end - begin)
        return np.frombuffer(data, dtype=dtype).astype(
            dtype.newbyteorder("="), copy=True).reshape(entry["shape"])


class Checkpoint:
    """The tensors of a single-file or sharded safetensors checkpoint.

    path: a `.safetensors` file, a sharded checkpoint's
    `model.safetensors.index.json`, or a folder holding either; ValueError
    when there is none or the index is malformed."""

    def __init__(self, path):
        path = os.fspath(path)
        if os.path.isdir(path):
            for name in ("model.safetensors.index.json", "model.safetensors"):
                if os.path.exists(os.path.join(path, name)):
                    path = os.path.join(path, name)
                    break
            else:
                raise ValueError(f"{path}: no model.safetensors or "
                                 f"model.safetensors.index.json in the "
                                 f"folder")
        self.path = path
        self._files = {}
        self._where = {}
        if path.endswith(".json"):
            with open(path, encoding="utf-8") as f:
                try:
                    index = json.load(f)
                except json.JSONDecodeError as error:
                    raise ValueError(f"{path}: not valid JSON: {error}") \
                        from None
            weight_map = index.get("weight_map") if isinstance(index, dict) \
                else None
            if not isinstance(weight_map, dict):
                raise ValueError(f"{path}: no 'weight_map' object")
            folder = os.path.dirname(path)
            for tensor, shard in weight_map.items():
                self._where[tensor] = os.path.join(folder, shard)
        else:
            shard = self._file(path)
            for tensor in shard.tensors:
                self._where[tensor] = path

    def _file(self, path):
        if path not in self._files:
            if not os.path.exists(path):
                raise ValueError(f"{self.path}: shard {path} does not exist")
            self._files[path] = SafetensorsFile(path)
        return self._files[path]

    def names(self):
        """The names of every tensor of the checkpoint."""
        return list(self._where)

    def shape(self, name):
        """The shape of tensor `name` (ValueError when the index puts it in
        a shard that does not hold it)."""
        shard = self._file(self._where[name])
        if name not in shard.tensors:
            raise ValueError(f"{self.path}: the index puts {name!r} in "
                             f"{shard.path}, which does not hold it")
        return shard.shape(name)

    def read(self, name):
        """(safetensors dtype, numpy array) of tensor `name`."""
        shard = self._file(self._where[name])
        self.shape(name)
        return shard.dtype(name), shard.read(name)


def _convert(dtype, array, want):
    """A checkpoint tensor in the function's element type."""
    if dtype == "BF16":
        if want == "bf16":
            return array
        array = from_bf16(array)
    if want == "bf16":
        return to_bf16(np.asarray(array, np.float32))
    return np.asarray(array, {"f32": np.float32, "f16": np.float16,
                              "f64": np.float64}[want])


def _target(module_or_compiled, function):
    """(argument names, [(dtype, shape)], hf block per layer, names map)."""
    from . import _api
    if isinstance(module_or_compiled, _api.CpuFunction):
        names = module_or_compiled.argument_names
        specs = module_or_compiled.arguments
        hf_layers = getattr(module_or_compiled, "hf_layers", None)
        kind = getattr(module_or_compiled, "hf_kind", None)
    elif isinstance(module_or_compiled, _api.Module):
        function = function or _api._pick_entry(module_or_compiled, None)
        names = module_or_compiled.argument_names(function)
        specs = module_or_compiled.signature(function)[0]
        hf_layers = getattr(module_or_compiled, "hf_layers", {}).get(function)
        kind = getattr(module_or_compiled, "hf_kind", None)
    else:
        raise TypeError(f"load_hf_weights takes an attnfuse.Module or a "
                        f"compiled CpuFunction, got "
                        f"{type(module_or_compiled).__name__}")
    if not names:
        raise ValueError("the function's argument names are unknown: build "
                         "it with attnfuse.from_hf_config or the attnfuse "
                         "builders")
    if kind is None:
        kind = "cca" if any(n.endswith("_conv_dw_w") for n in names) \
            else "qkv_attention"
    return names, specs, hf_layers, CCA_NAMES if kind == "cca" else QKV_NAMES


def hf_weight_names(module_or_compiled, function=None, megatron=False):
    """{argument name: checkpoint tensor name} of every weight argument
    (megatron: a CCA layer's names in Zyphra's Megatron-style checkpoints).

    module_or_compiled: a Module from from_hf_config, or its CpuFunction;
    function: the Module's function (default: the only one, else
    `model`)."""
    names, _specs, hf_layers, table = _target(module_or_compiled, function)
    if megatron:
        if table is not CCA_NAMES:
            raise ValueError("megatron names exist for attn.cca (ZAYA) "
                             "layers only")
        table = CCA_MEGATRON_NAMES
    mapping = {}
    for name in names:
        match = _ARGUMENT.match(name)
        if not match:
            continue
        layer, weight = int(match.group(1)), match.group(2)
        if weight not in table:
            raise ValueError(f"argument {name!r} has no Hugging Face name")
        block = hf_layers[layer] if hf_layers else layer
        mapping[name] = f"model.layers.{block}.self_attn.{table[weight]}"
    return mapping


def load_hf_weights(module_or_compiled, path, function=None):
    """{argument name: numpy array} for every weight argument of the
    function (every argument but `x`), read from the safetensors checkpoint
    at `path` and converted to the function's element type; see the module
    docstring for the names. ValueError for a missing, extra or mis-shaped
    tensor.

    module_or_compiled: a Module from from_hf_config, or its CpuFunction;
    path: a `.safetensors` file, a `model.safetensors.index.json` or their
    folder; function: the Module's function (default: the only one, else
    `model`)."""
    names, specs, _hf_layers, table = _target(module_or_compiled, function)
    checkpoint = Checkpoint(path)
    available = set(checkpoint.names())
    mapping = hf_weight_names(module_or_compiled, function)
    if table is CCA_NAMES:
        megatron = hf_weight_names(module_or_compiled, function,
                                   megatron=True)
        first = next((a for a in mapping if a.endswith("_wq")), None)
        if first and mapping[first] not in available and \
                megatron[first] in available:
            mapping = megatron
    spec_of = dict(zip(names, specs))

    missing = [f"{tensor} (for argument {arg!r}, shape "
               f"{list(spec_of[arg][1])})"
               for arg, tensor in mapping.items() if tensor not in available]
    if missing:
        raise ValueError(f"{checkpoint.path}: missing tensor"
                         f"{'s' if len(missing) > 1 else ''}: "
                         + "; ".join(missing))
    blocks = sorted({t.split(".self_attn.")[0] + ".self_attn."
                     for t in mapping.values()})
    wanted = set(mapping.values())
    extra = sorted(t for t in available
                   if any(t.startswith(b) for b in blocks)
                   and t not in wanted)
    if extra:
        raise ValueError(f"{checkpoint.path}: tensor"
                         f"{'s' if len(extra) > 1 else ''} the layer does not "
                         f"use: {', '.join(extra)} (a bias or a weight that "
                         f"attn IR of this config has no argument for)")
    for arg, tensor in mapping.items():
        want = tuple(spec_of[arg][1])
        found = checkpoint.shape(tensor)
        if found != want:
            raise ValueError(f"{checkpoint.path}: tensor {tensor} (argument "
                             f"{arg!r}) has shape {list(found)}, expected "
                             f"{list(want)}")
    weights = {}
    for arg, tensor in mapping.items():
        dtype, array = checkpoint.read(tensor)
        if dtype not in ("F32", "F16", "BF16", "F64"):
            raise ValueError(f"{checkpoint.path}: tensor {tensor} is "
                             f"{dtype}, expected a float tensor")
        weights[arg] = _convert(dtype, array, spec_of[arg][0])
    return weights


def save_safetensors(path, tensors, metadata=None):
    """Writes {name: numpy array} as one .safetensors file (f32, f16, f64,
    int32, int64, and uint16 arrays written as BF16 bit patterns).

    path: the file to write; tensors: {name: array}; metadata: an optional
    {str: str} stored as the file's `__metadata__`."""
    kinds = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16",
             np.dtype(np.float64): "F64", np.dtype(np.uint16): "BF16",
             np.dtype(np.int32): "I32", np.dtype(np.int64): "I64"}
    header, blobs, offset = {}, [], 0
    for name, array in tensors.items():
        array = np.ascontiguousarray(array)
        if array.dtype not in kinds:
            raise ValueError(f"tensor {name!r}: dtype {array.dtype} cannot be "
                             f"written")
        data = array.astype(array.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": kinds[array.dtype],
                        "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = dict(metadata)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for data in blobs:
            f.write(data)
