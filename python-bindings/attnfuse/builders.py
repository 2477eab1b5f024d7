"""attn IR text from layer configurations (standard library only).

The one implementation of AttnFuse's layer and model text: the
`attnfuse.qkv_attention` / `attnfuse.cca` builders parse what these functions
write, and `examples/generate.py` writes the example models with them.

A model is one `func.func @NAME` that takes the input `%x : [B, S, E]`
(batch and sequence dynamic unless given) and every layer's weights
(torch.nn.Linear layout `[out, in]`) as arguments, named `l{i}_{weight}`,
runs the layers in order and returns the last hidden state. With
`residual`, each layer adds its input: `%h{i} = arith.addf %h{i-1}, %y{i}`.
A CCA model built with a padding mask also takes `%mask : [B, S]` (i32 or
i64, nonzero for a real token) right after `%x`, read by every layer.
"""

import textwrap

DTYPES = ("f32", "f16", "bf16")
SHARING_MODES = ("none", "kv", "qk", "qkv")
TEMPERATURES = ("raw", "clamped")
# Element types of a padding mask (the CPU JIT passes i32 and i64 arrays).
MASK_DTYPES = ("i32", "i64")
# How eps enters CCA's per-head L2 norm: sqrt(|x|^2 + eps) (the IR's
# default) or max(|x|, eps) (Hugging Face transformers' ZAYA).
NORMS = ("sqrt_eps", "clamp_eps")
# transformers' ZAYA norm eps: torch.finfo(dtype).eps of the activations.
MACHINE_EPS = {"f32": 2.0 ** -23, "f16": 2.0 ** -10, "bf16": 2.0 ** -7}


def tensor(shape, dtype):
    """The MLIR tensor type of `shape` (a sequence of sizes; None marks a
    dynamic dimension) and element type `dtype` ("f32", "bf16", ...), e.g.
    tensor((None, 8, 64), "f32") -> "tensor<?x8x64xf32>"."""
    dims = "x".join("?" if d is None else str(d) for d in shape)
    return f"tensor<{dims}x{dtype}>"


def type_list(types):
    """`: (t0, t1, ...)` over as many lines as it takes to stay narrow.

    types: the type strings. Returns the list of lines."""
    lines, line = [], "      : ("
    for i, ty in enumerate(types):
        item = ty + (", " if i + 1 < len(types) else ")")
        if len(line) + len(item.rstrip()) > 80 and not line.endswith("("):
            lines.append(line.rstrip())
            line = "         "
        line += item
    lines.append(line)
    return lines


def float_text(value):
    """An MLIR float literal that parses back to exactly `float(value)`:
    Python's shortest round-trip repr, with the '.' MLIR requires
    (1e-05 -> 1.0e-05, 5000000.0 stays)."""
    number = float(value)
    if number != number or number in (float("inf"), float("-inf")):
        raise ValueError(f"{value!r} is not a finite number")
    text = repr(number)
    if "." not in text:
        mantissa, _, exponent = text.partition("e")
        text = f"{mantissa}.0" + (f"e{exponent}" if exponent else "")
    return text


def rope_attr(theta, fraction):
    """The `#attn.rope<theta = ..., fraction = ...>` attribute text of RoPE
    with base `theta` on the first `fraction` of each head."""
    return (f"#attn.rope<theta = {float_text(theta)}, "
            f"fraction = {float_text(fraction)}>")


def _attr_block(lines):
    """`{a, b,\\n c}`: one attribute dictionary over several lines."""
    return "{" + ",\n ".join(", ".join(items) for items in lines if items) + "}"


def _layer_lines(index, op_head, operand_lines, attrs, arg_types, x_type,
                 residual):
    prev = "%x" if index == 0 else f"%h{index - 1}"
    out = f"%y{index}" if residual else f"%h{index}"
    lines = [f"  // layer {index}", f"  {out} = {op_head.format(prev=prev)}"
             + (f" {operand_lines[0]}" if operand_lines else "")]
    lines += [f"      {extra}" for extra in operand_lines[1:]]
    lines += [f"      {line}" for line in attrs.split("\n")]
    lines += type_list([x_type] + arg_types)
    lines.append(f"      -> {x_type}")
    if residual:
        lines.append(f"  %h{index} = arith.addf {prev}, %y{index} : {x_type}")
    return lines


def qkv_layer(index, sharing, width, heads, kv_heads, head_dim, causal,
              bias, dtype="bf16", window=None, rope=None, scale=None,
              batch=None, seq=None, residual=True, logit_bias=None):
    """Arguments and body of one `attn.qkv_attention` layer.

    index: the layer's number (its arguments are named `l{index}_...`);
    sharing: "none", "kv", "qk" or "qkv"; width: the model width E; heads,
    kv_heads, head_dim: query heads, key/value heads and head size; causal:
    the causal mask; bias: projection biases; dtype: the element type;
    window: a sliding window or None; rope: None or (theta, fraction);
    scale: the logit scale or None (1/sqrt(head_dim)); batch, seq: static
    sizes or None; residual: add the layer's input to its output;
    logit_bias: None, "shared" (an `[S, S]` argument added to every head's
    logits) or "per_head" (`[num_heads, S, S]`).

    Returns (args, lines): args is a list of (name, type) function arguments,
    lines the op (and the residual add), reading `%h{index-1}` (or `%x`) and
    defining `%h{index}`.
    """
    q_width, k_width = heads * head_dim, kv_heads * head_dim
    has_q = sharing in ("none", "kv")
    has_v = sharing in ("none", "qk")
    p = f"%l{index}_"
    args = []
    if has_q:
        args.append((p + "wq", tensor((q_width, width), dtype)))
    args.append((p + "wk", tensor((k_width, width), dtype)))
    if has_v:
        args.append((p + "wv", tensor((k_width, width), dtype)))
    args.append((p + "wo", tensor((width, q_width), dtype)))
    if bias:
        if has_q:
            args.append((p + "bq", tensor((q_width,), dtype)))
        args.append((p + "bk", tensor((k_width,), dtype)))
        if has_v:
            args.append((p + "bv", tensor((k_width,), dtype)))
        args.append((p + "bo", tensor((width,), dtype)))

    # Operands in the order of the op's assembly format (and of `args`).
    weights = " ".join(f"{name[len(p):]}({name})" for name, _ in args
                       if name[len(p)] == "w")
    biases = " ".join(f"{name[len(p):]}({name})" for name, _ in args
                      if name[len(p)] == "b")
    if logit_bias is not None:
        shape = (seq, seq) if logit_bias == "shared" else (heads, seq, seq)
        args.append((p + "logit_bias", tensor(shape, dtype)))
        biases = " ".join(filter(None, [biases,
                                        f"logit_bias({p}logit_bias)"]))
    first = [f"num_heads = {heads} : i64", f"num_kv_heads = {kv_heads} : i64",
             f"head_dim = {head_dim} : i64"]
    rest = []
    if causal:
        rest.append("causal")
    if window is not None:
        rest.append(f"window = {window} : i64")
    if rope is not None:
        rest.append(f"rope = {rope_attr(*rope)}")
    if scale is not None:
        rest.append(f"scale = {float_text(scale)} : f64")
    x_type = tensor((batch, seq, width), dtype)
    lines = _layer_lines(index, f"attn.qkv_attention <{sharing}> {{prev}}",
                         [weights] + ([biases] if biases else []),
                         _attr_block([first, rest]), [t for _, t in args],
                         x_type, residual)
    return args, lines


def _cca_parts(index, width, heads, kv_heads, head_dim, kernels, rope_theta,
               rope_fraction, causal, dtype, qk_mean, value_shift, temperature,
               window, norm=None, eps=None):
    """(args, operand lines, attribute groups) of one CCA layer."""
    lq, lk = heads * head_dim, kv_heads * head_dim
    channels = lq + lk
    p = f"%l{index}_"
    v_rows = lk // 2 if value_shift else lk
    args = [(p + "wq", tensor((lq, width), dtype)),
            (p + "wk", tensor((lk, width), dtype)),
            (p + "wv", tensor((v_rows, width), dtype))]
    if value_shift:
        args.append((p + "wv_prev", tensor((lk // 2, width), dtype)))
    args += [
        (p + "conv_dw_w", tensor((channels, 1, kernels[0]), dtype)),
        (p + "conv_dw_b", tensor((channels,), dtype)),
        (p + "conv_g_w", tensor((channels, head_dim, kernels[1]), dtype)),
        (p + "conv_g_b", tensor((channels,), dtype)),
        (p + "temp", tensor((kv_heads,), dtype)),
        (p + "wo", tensor((width, lq), dtype)),
    ]
    a = {name[len(p):]: name for name, _ in args}
    operands = [f"wq({a['wq']}) wk({a['wk']}) wv({a['wv']})"
                + (f" wv_prev({a['wv_prev']})" if value_shift else ""),
                f"conv_dw({a['conv_dw_w']}, {a['conv_dw_b']}) "
                f"conv_g({a['conv_g_w']}, {a['conv_g_b']})",
                f"temp({a['temp']}) wo({a['wo']})"]
    attrs = [[f"num_heads = {heads} : i64", f"num_kv_heads = {kv_heads} : i64",
              f"head_dim = {head_dim} : i64"],
             [f"conv_kernel_sizes = array<i64: {kernels[0]}, {kernels[1]}>"]
             + (["qk_mean"] if qk_mean else [])
             + (["value_shift"] if value_shift else []),
             [f"temperature = #attn.temperature<{temperature}>"],
             ([f"norm = #attn.norm<{norm}>"] if norm is not None else [])
             + ([f"eps = {float_text(eps)} : f64"] if eps is not None else []),
             (["causal"] if causal else [])
             + ([f"window = {window} : i64"] if window is not None else []),
             [f"rope = {rope_attr(rope_theta, rope_fraction)}"]
             if rope_theta is not None else []]
    return args, operands, attrs


def cca_layer(index, width, heads, kv_heads, head_dim, kernels, rope_theta,
              rope_fraction, causal, dtype="bf16", qk_mean=True,
              value_shift=True, temperature="raw", window=None,
              batch=None, seq=None, residual=True, norm=None, eps=None,
              mask_dtype=None):
    """One `attn.cca` layer, as in qkv_layer (rope_theta None: no RoPE).

    index, width, heads, kv_heads, head_dim, causal, dtype, window, batch,
    seq, residual: as in qkv_layer; kernels: the two convolution kernel
    sizes; rope_fraction: the rotated fraction of each head; qk_mean,
    value_shift: the CCA toggles; temperature: "raw" or "clamped"; norm,
    eps: the head norm ("sqrt_eps" or "clamp_eps", None for the IR's
    default) and its eps.

    The defaults are CCGQA as in ZAYA1 (Hugging Face transformers' `zaya`):
    qk-mean, value shift, and the keys multiplied by the raw learned
    `temp` ("clamped": exp(clamp(temp, 1e-7, 2)), for checkpoints trained
    with that form). mask_dtype ("i32" or "i64") makes the layer read the
    function's `%mask` as its padding_mask."""
    args, operands, attrs = _cca_parts(index, width, heads, kv_heads, head_dim,
                                       kernels, rope_theta, rope_fraction,
                                       causal, dtype, qk_mean, value_shift,
                                       temperature, window, norm, eps)
    x_type = tensor((batch, seq, width), dtype)
    types = [t for _, t in args]
    if mask_dtype is not None:
        operands[-1] += " padding_mask(%mask)"
        types.append(tensor((batch, seq), mask_dtype))
    lines = _layer_lines(index, "attn.cca {prev}", operands,
                         _attr_block(attrs), types, x_type, residual)
    return args, lines


def module(header, layers, width, dtype="bf16", name="model", batch=None,
           seq=None, mask_dtype=None):
    """The text of one model: header comment lines, then `@name` (taking
    `%mask` after `%x` with a mask_dtype).

    header: comment lines; layers: the (args, lines) of qkv_layer /
    cca_layer per layer; width: the model width; dtype: the element type of
    `%x`; batch, seq: static sizes or None."""
    x_type = tensor((batch, seq, width), dtype)
    args = [("%x", x_type)]
    if mask_dtype is not None:
        args.append(("%mask", tensor((batch, seq), mask_dtype)))
    body = []
    for index, (layer_args, layer_lines) in enumerate(layers):
        args.append((f"// layer {index}", None))
        args += layer_args
        body += layer_lines
    out = []
    for line in header:
        out += [f"// {part}" for part in textwrap.wrap(line, 76)] or ["//"]
    if header:
        out.append("")
    out.append(f"func.func @{name}(")
    for i, (arg, ty) in enumerate(args):
        if ty is None:
            out.append(f"    {arg}")
        else:
            out.append(f"    {arg}: {ty}{',' if i + 1 < len(args) else ')'}")
    out.append(f"    -> {x_type} {{")
    out += body
    out.append(f"  return %h{len(layers) - 1} : {x_type}")
    out.append("}")
    return "\n".join(out) + "\n"


def argument_names(layers, mask=False):
    """Names of the model function's arguments, in order (without `%`).

    layers: the (args, lines) of each layer; mask: whether `mask` follows
    `x`."""
    names = ["x"] + (["mask"] if mask else [])
    for layer_args, _ in layers:
        names += [arg[1:] for arg, _ in layer_args]
    return names


# ---------------------------------------------------------------------------
# Checked configurations
# ---------------------------------------------------------------------------


def _positive_int(name, value, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


def _per_layer(name, value, num_layers):
    """A per-layer setting (window, rope_theta): one value for every layer,
    or a list or tuple with one entry per layer. -> list of num_layers
    values."""
    if isinstance(value, (list, tuple)):
        if len(value) != num_layers:
            raise ValueError(f"{name} has {len(value)} entries, one per "
                             f"layer, but num_layers is {num_layers}")
        return list(value)
    return [value] * num_layers


def _common(embed_dim, num_heads, num_kv_heads, head_dim, dtype, batch, seq,
            num_layers, window, rope_theta, rope_fraction):
    _positive_int("embed_dim", embed_dim)
    _positive_int("num_heads", num_heads)
    if num_kv_heads is None:
        num_kv_heads = num_heads
    _positive_int("num_kv_heads", num_kv_heads)
    if num_heads % num_kv_heads:
        raise ValueError(f"num_heads ({num_heads}) must be a multiple of "
                         f"num_kv_heads ({num_kv_heads})")
    if head_dim is None:
        if embed_dim % num_heads:
            raise ValueError(f"head_dim is not given and embed_dim "
                             f"({embed_dim}) is not a multiple of num_heads "
                             f"({num_heads})")
        head_dim = embed_dim // num_heads
    _positive_int("head_dim", head_dim)
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got "
                         f"{dtype!r}")
    _positive_int("batch", batch, allow_none=True)
    _positive_int("seq", seq, allow_none=True)
    _positive_int("num_layers", num_layers)
    for value in _per_layer("window", window, num_layers):
        _positive_int("window", value, allow_none=True)
    thetas = _per_layer("rope_theta", rope_theta, num_layers)
    for theta in thetas:
        if theta is not None and (isinstance(theta, bool) or not isinstance(
                theta, (int, float)) or not 0 < theta < float("inf")):
            raise ValueError(f"rope_theta must be a positive number, got "
                             f"{theta!r}")
    if any(theta is not None for theta in thetas):
        if isinstance(rope_fraction, bool) or not isinstance(
                rope_fraction, (int, float)) or not 0 < rope_fraction <= 1:
            raise ValueError(f"rope_fraction must be in (0, 1], got "
                             f"{rope_fraction!r}")
        rotated = rope_fraction * head_dim
        if rotated != int(rotated) or int(rotated) % 2:
            raise ValueError(
                f"rope_fraction * head_dim = {rope_fraction} * {head_dim} "
                f"must be an even integer (RoPE rotates pairs of dims)")
    return num_kv_heads, head_dim


def _check_sharing_mode(sharing):
    if sharing not in SHARING_MODES:
        raise ValueError(f"sharing must be one of {', '.join(SHARING_MODES)}, "
                         f"got {sharing!r}")


def _check_query_is_key(sharing, num_heads, num_kv_heads):
    """qk and qkv use the key as the query: one head count."""
    if sharing in ("qk", "qkv") and num_heads != num_kv_heads:
        raise ValueError(
            f"sharing={sharing!r} uses the key projection as the query, so "
            f"num_heads ({num_heads}) must equal num_kv_heads "
            f"({num_kv_heads})")


def _check_cca_toggles(conv_kernel_sizes, temperature, norm=None, eps=None):
    """-> the two conv kernel sizes as a tuple."""
    kernels = tuple(conv_kernel_sizes)
    if len(kernels) != 2:
        raise ValueError(f"conv_kernel_sizes must be two kernel sizes, got "
                         f"{conv_kernel_sizes!r}")
    for k in kernels:
        _positive_int("conv_kernel_sizes", k)
    if temperature not in TEMPERATURES:
        raise ValueError(f"temperature must be one of "
                         f"{', '.join(TEMPERATURES)}, got {temperature!r}")
    if norm is not None and norm not in NORMS:
        raise ValueError(f"norm must be one of {', '.join(NORMS)}, got "
                         f"{norm!r}")
    if eps is not None and (isinstance(eps, bool) or not isinstance(
            eps, (int, float)) or not 0 < eps < float("inf")):
        raise ValueError(f"eps must be a positive number, got {eps!r}")
    return kernels


def qkv_attention_text(*, embed_dim, num_heads, sharing="none",
                       num_kv_heads=None, head_dim=None, causal=True,
                       window=None, rope_theta=None, rope_fraction=1.0,
                       scale=None, biases=False, dtype="f32", batch=None,
                       seq=None, num_layers=1, residual=None, name="model",
                       header=(), logit_bias=None):
    """(text, argument names) of a stack of `attn.qkv_attention` layers.

    embed_dim, num_heads: the model width and the query heads; sharing:
    "none", "kv", "qk" or "qkv"; num_kv_heads: key/value heads (default
    num_heads; fewer is GQA, 1 MQA); head_dim: default embed_dim //
    num_heads; causal: the causal mask (default True); rope_fraction: the
    rotated fraction of each head (1.0); scale: the logit scale (default
    1/sqrt(head_dim)); biases: projection biases; dtype: "f32", "f16" or
    "bf16"; batch, seq: static sizes (default dynamic); num_layers: the
    number of layers; name: the function's name; header: comment lines
    written before it.

    Raises ValueError naming the parameter for an invalid configuration.
    logit_bias: None, "shared" (each layer takes an additive `[S, S]` bias
    of its logits, the paper's P) or "per_head" (`[num_heads, S, S]`).
    window and rope_theta are one value for every layer or a list with one
    entry per layer (None: no window / no RoPE in that layer). residual
    defaults to True for stacks (num_layers > 1), False for one
    layer.
    """
    _check_sharing_mode(sharing)
    num_kv_heads, head_dim = _common(embed_dim, num_heads, num_kv_heads,
                                     head_dim, dtype, batch, seq, num_layers,
                                     window, rope_theta, rope_fraction)
    _check_query_is_key(sharing, num_heads, num_kv_heads)
    if scale is not None and (isinstance(scale, bool) or not isinstance(
            scale, (int, float)) or scale <= 0):
        raise ValueError(f"scale must be a positive number, got {scale!r}")
    if logit_bias not in (None, "shared", "per_head"):
        raise ValueError(f"logit_bias must be None, 'shared' or 'per_head', "
                         f"got {logit_bias!r}")
    if residual is None:
        residual = num_layers > 1
    windows = _per_layer("window", window, num_layers)
    thetas = _per_layer("rope_theta", rope_theta, num_layers)
    layers = [qkv_layer(i, sharing, embed_dim, num_heads, num_kv_heads,
                        head_dim, causal, biases, dtype=dtype,
                        window=windows[i],
                        rope=None if thetas[i] is None
                        else (thetas[i], rope_fraction),
                        scale=scale, batch=batch, seq=seq, residual=residual,
                        logit_bias=logit_bias)
              for i in range(num_layers)]
    return (module(list(header), layers, embed_dim, dtype, name, batch, seq),
            argument_names(layers))


def cca_text(*, embed_dim, num_heads, num_kv_heads=None, head_dim=None,
             conv_kernel_sizes=(2, 2), qk_mean=True, value_shift=True,
             temperature="raw", norm=None, eps=None, causal=True,
             window=None,
             rope_theta=None, rope_fraction=1.0, dtype="f32", batch=None,
             seq=None, num_layers=1, residual=None, name="model", header=(),
             padding_mask=False):
    """(text, argument names) of a stack of `attn.cca` layers (CCA when
    num_heads == num_kv_heads, CCGQA otherwise); see qkv_attention_text for
    embed_dim, num_heads, num_kv_heads, head_dim, causal, window,
    rope_theta, rope_fraction, dtype, batch, seq, num_layers, residual, name
    and header. conv_kernel_sizes: the two causal convolutions' kernel
    sizes (default (2, 2)); qk_mean, value_shift: the CCA toggles (default
    True).
    temperature: "raw" (default, as Hugging Face transformers' ZAYA: keys
    times the learned temp) or "clamped" (exp(clamp(temp, 1e-7, 2))).
    norm and eps: how each head's L2 norm avoids zero, "sqrt_eps"
    (sqrt(|x|^2 + eps), the IR's default, eps 1e-12) or "clamp_eps"
    (max(|x|, eps), as transformers with eps = MACHINE_EPS[dtype]); None
    leaves the IR's default. padding_mask: False (default), True (an i64
    mask, as a torch attention_mask) or "i32"/"i64": the function takes
    `mask [B, S]` after `x` (nonzero for a real token) and every layer
    zeroes the padded tokens before its projections and masks them as
    keys, so a padded batch gives its real tokens the unpadded results."""
    num_kv_heads, head_dim = _common(embed_dim, num_heads, num_kv_heads,
                                     head_dim, dtype, batch, seq, num_layers,
                                     window, rope_theta, rope_fraction)
    kernels = _check_cca_toggles(conv_kernel_sizes, temperature, norm, eps)
    if value_shift and (num_kv_heads * head_dim) % 2:
        raise ValueError(
            f"value_shift splits the values in halves, so num_kv_heads * "
            f"head_dim ({num_kv_heads * head_dim}) must be even")
    if residual is None:
        residual = num_layers > 1
    mask_dtype = _mask_dtype(padding_mask)
    windows = _per_layer("window", window, num_layers)
    thetas = _per_layer("rope_theta", rope_theta, num_layers)
    layers = [cca_layer(i, embed_dim, num_heads, num_kv_heads, head_dim,
                        kernels, thetas[i], rope_fraction, causal,
                        dtype=dtype, qk_mean=qk_mean, value_shift=value_shift,
                        temperature=temperature, norm=norm, eps=eps,
                        window=windows[i],
                        batch=batch, seq=seq, residual=residual,
                        mask_dtype=mask_dtype)
              for i in range(num_layers)]
    return (module(list(header), layers, embed_dim, dtype, name, batch, seq,
                   mask_dtype),
            argument_names(layers, mask=mask_dtype is not None))


def _mask_dtype(padding_mask):
    """The mask element type of cca_text's padding_mask option, or None."""
    if padding_mask is False or padding_mask is None:
        return None
    if padding_mask is True:
        return "i64"
    if padding_mask in MASK_DTYPES:
        return padding_mask
    raise ValueError(f"padding_mask must be False, True or one of "
                     f"{', '.join(MASK_DTYPES)}, got {padding_mask!r}")


# ---------------------------------------------------------------------------
# Decode over a KV cache
# ---------------------------------------------------------------------------


def _cache_shape(kv_heads, head_dim, capacity, page_size, num_pages, batch):
    """A contiguous [B, capacity, Hk, d] or paged [pages, page, Hk, d] cache."""
    if page_size is None:
        return (batch, capacity, kv_heads, head_dim)
    return (num_pages, page_size, kv_heads, head_dim)


def _decode_module(kind, layer_args, layer_states, op_lines, *, width, dtype,
                   batch, paged, header, residual):
    """The @prefill (T tokens, lengths) and @step (one token) functions of a
    decode stack. layer_args[i]: weights of layer i as (name, type);
    layer_states[i]: its caches and states as (name, type); op_lines(i, x,
    tail): the op text of layer i reading `x`, with `tail` the positions,
    lengths and block table clause."""
    out = [f"// {part}" for line in header for part in textwrap.wrap(line, 76)]
    if out:
        out.append("")
    names = {}
    for function, seq in (("prefill", None), ("step", 1)):
        x_type = tensor((batch, seq, width), dtype)
        args = [("%x", x_type)]
        for weights, states in zip(layer_args, layer_states):
            args += weights + states
        args.append(("%positions", tensor((batch,), "i32")))
        if function == "prefill":
            args.append(("%lengths", tensor((batch,), "i32")))
        if paged:
            args.append(("%block_table", tensor((batch, None), "i32")))
        tail = "positions(%positions)" + (
            " lengths(%lengths)" if function == "prefill" else "") + (
            " block_table(%block_table)" if paged else "")
        results = [x_type] + [t for states in layer_states for _, t in states]
        body, returned = [], []
        prev = "%x"
        for i, states in enumerate(layer_states):
            outs = [f"%y{i}"] + [f"{n}_out" for n, _ in states]
            weight_types = [t for _, t in layer_args[i]]
            state_types = [t for _, t in states]
            operand_types = [x_type] + weight_types + state_types + [
                tensor((batch,), "i32")] * (2 if function == "prefill" else 1) + (
                [tensor((batch, None), "i32")] if paged else [])
            body.append(f"  // layer {i}")
            body.append(f"  {', '.join(outs)} = {op_lines(i, prev, tail)}")
            body += type_list(operand_types)
            body.append(f"      -> ({', '.join([x_type] + state_types)})")
            if residual:
                body.append(f"  %h{i} = arith.addf {prev}, %y{i} : {x_type}")
                prev = f"%h{i}"
            else:
                prev = f"%y{i}"
            returned += outs[1:]
        out.append(f"func.func @{function}(")
        for j, (arg, ty) in enumerate(args):
            out.append(f"    {arg}: {ty}{',' if j + 1 < len(args) else ')'}")
        out.append(f"    -> ({', '.join(results)}) {{")
        out += body
        out.append(f"  return {', '.join([prev] + returned)}")
        out.append(f"      : {', '.join(results)}")
        out.append("}")
        out.append("")
        names[function] = [a[1:] for a, _ in args]
    return "\n".join(out), names


def _decode_common(capacity, page_size, num_pages):
    if page_size is None:
        if num_pages is not None:
            raise ValueError("num_pages is given without page_size")
        _positive_int("capacity", capacity)
        return False
    _positive_int("page_size", page_size)
    _positive_int("num_pages", num_pages)
    if capacity is not None:
        raise ValueError("capacity is for contiguous caches; a paged cache "
                         "holds num_pages pages of page_size tokens")
    return True


def qkv_decode_text(*, embed_dim, num_heads, sharing="none", num_kv_heads=None,
                    head_dim=None, window=None, rope_theta=None,
                    rope_fraction=1.0, scale=None, biases=False, dtype="f32",
                    batch=None, capacity=None, page_size=None, num_pages=None,
                    num_layers=1, residual=None, header=()):
    """(text, {function: argument names}) of a stack of `attn.qkv_decode`
    layers: @prefill (prompts padded to T tokens, lengths) and @step (one
    token per sequence), each returning the output and every layer's updated
    cache. Caches are contiguous `[B, capacity, Hk, d]`, or paged with
    page_size and num_pages (and a block table argument). K=V modes (kv, qkv)
    cache one tensor per layer.

    embed_dim, num_heads, sharing, num_kv_heads, head_dim, window,
    rope_theta, rope_fraction, scale, biases, dtype, batch, num_layers,
    residual, header: as in qkv_attention_text (the layers are causal);
    capacity: the tokens a contiguous cache holds per sequence; page_size,
    num_pages: the pages of a paged cache instead."""
    _check_sharing_mode(sharing)
    num_kv_heads, head_dim = _common(embed_dim, num_heads, num_kv_heads,
                                     head_dim, dtype, batch, None, num_layers,
                                     window, rope_theta, rope_fraction)
    _check_query_is_key(sharing, num_heads, num_kv_heads)
    paged = _decode_common(capacity, page_size, num_pages)
    if residual is None:
        residual = num_layers > 1
    windows = _per_layer("window", window, num_layers)
    thetas = _per_layer("rope_theta", rope_theta, num_layers)
    cache = tensor(_cache_shape(num_kv_heads, head_dim, capacity, page_size,
                                num_pages, batch), dtype)
    layer_args, layer_states, ops = [], [], []
    for i in range(num_layers):
        args, _ = qkv_layer(i, sharing, embed_dim, num_heads, num_kv_heads,
                            head_dim, True, biases, dtype=dtype)
        p = f"%l{i}_"
        states = ([(p + "kv_cache", cache)] if sharing in ("kv", "qkv")
                  else [(p + "k_cache", cache), (p + "v_cache", cache)])
        weights = " ".join(f"{n[len(p):]}({n})" for n, _ in args if n[len(p)] == "w")
        biases_text = " ".join(f"{n[len(p):]}({n})" for n, _ in args
                               if n[len(p)] == "b")
        attrs = [f"num_heads = {num_heads} : i64",
                 f"num_kv_heads = {num_kv_heads} : i64",
                 f"head_dim = {head_dim} : i64"]
        if windows[i] is not None:
            attrs.append(f"window = {windows[i]} : i64")
        if thetas[i] is not None:
            attrs.append(f"rope = {rope_attr(thetas[i], rope_fraction)}")
        if scale is not None:
            attrs.append(f"scale = {float_text(scale)} : f64")
        caches = ", ".join(n for n, _ in states)
        ops.append((weights, biases_text, caches, attrs))
        layer_args.append(args)
        layer_states.append(states)

    def op_lines(i, x, tail):
        weights, biases_text, caches, attrs = ops[i]
        return (f"attn.qkv_decode <{sharing}> {x} {weights}"
                + (f" {biases_text}" if biases_text else "")
                + f"\n      cache({caches}) {tail}\n      {{{', '.join(attrs)}}}")

    return _decode_module("qkv", layer_args, layer_states, op_lines,
                          width=embed_dim, dtype=dtype, batch=batch,
                          paged=paged, header=list(header), residual=residual)


def cca_decode_text(*, embed_dim, num_heads, num_kv_heads=None, head_dim=None,
                    conv_kernel_sizes=(2, 2), qk_mean=True, value_shift=True,
                    temperature="raw", norm=None, eps=None, window=None,
                    rope_theta=None,
                    rope_fraction=1.0, dtype="f32", batch=None, capacity=None,
                    page_size=None, num_pages=None, num_layers=1,
                    residual=None, header=()):
    """As qkv_decode_text for `attn.cca_decode`: each layer also takes and
    returns its conv state `[B, P, C]` and, with value_shift, its shift state
    `[B, 1, Lk/2]` (zeros before the first token).

    embed_dim, num_heads, num_kv_heads, head_dim, conv_kernel_sizes,
    qk_mean, value_shift, temperature, norm, eps, window, rope_theta,
    rope_fraction, dtype, batch, num_layers, residual, header: as in
    cca_text; capacity or page_size and num_pages: as in qkv_decode_text."""
    num_kv_heads, head_dim = _common(embed_dim, num_heads, num_kv_heads,
                                     head_dim, dtype, batch, None, num_layers,
                                     window, rope_theta, rope_fraction)
    kernels = _check_cca_toggles(conv_kernel_sizes, temperature, norm, eps)
    lk = num_kv_heads * head_dim
    if value_shift and lk % 2:
        raise ValueError(
            f"value_shift splits the values in halves, so num_kv_heads * "
            f"head_dim ({lk}) must be even")
    paged = _decode_common(capacity, page_size, num_pages)
    if residual is None:
        residual = num_layers > 1
    cache = tensor(_cache_shape(num_kv_heads, head_dim, capacity, page_size,
                                num_pages, batch), dtype)
    channels = (num_heads + num_kv_heads) * head_dim
    rows = kernels[0] - 1 + kernels[1] - 1
    windows = _per_layer("window", window, num_layers)
    thetas = _per_layer("rope_theta", rope_theta, num_layers)
    layer_args, layer_states, ops = [], [], []
    for i in range(num_layers):
        args, operand_lines, attrs = _cca_parts(
            i, embed_dim, num_heads, num_kv_heads, head_dim, kernels,
            thetas[i], rope_fraction, False, dtype, qk_mean, value_shift,
            temperature, windows[i], norm, eps)
        p = f"%l{i}_"
        states = [(p + "k_cache", cache), (p + "v_cache", cache),
                  (p + "conv_state", tensor((batch, rows, channels), dtype))]
        if value_shift:
            states.append((p + "shift_state", tensor((batch, 1, lk // 2), dtype)))
        attr_text = "{" + ", ".join(item for group in attrs for item in group) + "}"
        ops.append((operand_lines, attr_text, states))
        layer_args.append(args)
        layer_states.append(states)

    def op_lines(i, x, tail):
        operand_lines, attr_text, states = ops[i]
        state_clause = (f"cache({states[0][0]}, {states[1][0]}) "
                        f"conv_state({states[2][0]})"
                        + (f" shift_state({states[3][0]})" if len(states) > 3 else ""))
        return (f"attn.cca_decode {x} {operand_lines[0]}\n      "
                + "\n      ".join(operand_lines[1:])
                + f"\n      {state_clause}\n      {tail}\n      {attr_text}")

    return _decode_module("cca", layer_args, layer_states, op_lines,
                          width=embed_dim, dtype=dtype, batch=batch,
                          paged=paged, header=list(header), residual=residual)
