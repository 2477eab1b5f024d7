#!/usr/bin/env python3
"""Writes the example models of AttnFuse into this folder.

Each model is one `func.func @model` that takes the input
`%x : tensor<?x?xExbf16>` (batch and sequence dynamic) and every layer's
weights as arguments (torch.nn.Linear layout `[out, in]`), runs its attention
layers with a residual after each (`%h = arith.addf %h_prev, %y`) and returns
the last hidden state. Only the attention layers are modelled: embeddings,
norms and MLPs do not change the attention cost that `attn-cost-report`
prices.

Usage:
    python3 examples/generate.py           # (re)write every example
    python3 examples/generate.py --check   # exit 1 if a file is out of date

Standard library only; the output is deterministic.
"""

import argparse
import os
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
ELEM = "bf16"

PAPER = ('"Do Transformers Need Three Projections?" (Kayyam, Madan Gopal, '
         'Lewis, ICML 2026, arXiv 2606.04032)')
CCA_PAPER = ('Compressed Convolutional Attention (Figliolia et al., Zyphra, '
             'arXiv 2510.04476)')

# The paper's name of each sharing mode (spec section 1).
PAPER_NAME = {"none": "QKV", "kv": "Q-K=V", "qk": "Q=K-V", "qkv": "Q=K=V"}


def tensor(*shape):
    dims = "x".join("?" if d is None else str(d) for d in shape)
    return f"tensor<{dims}x{ELEM}>"


def type_list(types):
    """`: (t0, t1, ...)` over as many lines as it takes to stay narrow."""
    lines, line = [], "      : ("
    for i, ty in enumerate(types):
        item = ty + (", " if i + 1 < len(types) else ")")
        if len(line) + len(item.rstrip()) > 80 and not line.endswith("("):
            lines.append(line.rstrip())
            line = "         "
        line += item
    lines.append(line)
    return lines


def qkv_layer(index, sharing, width, heads, kv_heads, head_dim, causal,
              bias):
    """Arguments and body of one `attn.qkv_attention` layer.

    Returns (args, lines): args is a list of (name, type) function arguments,
    lines the op and the residual add, reading `%h{index-1}` (or `%x`) and
    defining `%h{index}`.
    """
    q_width, k_width = heads * head_dim, kv_heads * head_dim
    has_q = sharing in ("none", "kv")
    has_v = sharing in ("none", "qk")
    p = f"%l{index}_"
    args = []
    if has_q:
        args.append((p + "wq", tensor(q_width, width)))
    args.append((p + "wk", tensor(k_width, width)))
    if has_v:
        args.append((p + "wv", tensor(k_width, width)))
    args.append((p + "wo", tensor(width, q_width)))
    if bias:
        if has_q:
            args.append((p + "bq", tensor(q_width)))
        args.append((p + "bk", tensor(k_width)))
        if has_v:
            args.append((p + "bv", tensor(k_width)))
        args.append((p + "bo", tensor(width)))

    prev = "%x" if index == 0 else f"%h{index - 1}"
    # Operands in the order of the op's assembly format (and of `args`).
    weights = " ".join(f"{name[len(p):]}({name})" for name, _ in args
                       if name[len(p)] == "w")
    biases = " ".join(f"{name[len(p):]}({name})" for name, _ in args
                      if name[len(p)] == "b")
    attrs = [f"num_heads = {heads} : i64", f"num_kv_heads = {kv_heads} : i64",
             f"head_dim = {head_dim} : i64"]
    if causal:
        attrs.append("causal")
    x_type = tensor(None, None, width)
    lines = [
        f"  // layer {index}",
        f"  %y{index} = attn.qkv_attention <{sharing}> {prev} {weights}",
        *([f"      {biases}"] if biases else []),
        f"      {{{', '.join(attrs[:3])},",
        f"       {', '.join(attrs[3:])}}}",
        *type_list([x_type] + [t for _, t in args]),
        f"      -> {x_type}",
        f"  %h{index} = arith.addf {prev}, %y{index} : {x_type}",
    ]
    return args, lines


def cca_layer(index, width, heads, kv_heads, head_dim, kernels, rope_theta,
              rope_fraction, causal):
    """One `attn.cca` layer (CCGQA with qk-mean, value shift and clamped
    temperature), as in qkv_layer."""
    lq, lk = heads * head_dim, kv_heads * head_dim
    channels = lq + lk
    p = f"%l{index}_"
    args = [
        (p + "wq", tensor(lq, width)),
        (p + "wk", tensor(lk, width)),
        (p + "wv", tensor(lk // 2, width)),
        (p + "wv_prev", tensor(lk // 2, width)),
        (p + "conv_dw_w", tensor(channels, 1, kernels[0])),
        (p + "conv_dw_b", tensor(channels)),
        (p + "conv_g_w", tensor(channels, head_dim, kernels[1])),
        (p + "conv_g_b", tensor(channels)),
        (p + "temp", tensor(kv_heads)),
        (p + "wo", tensor(width, lq)),
    ]
    prev = "%x" if index == 0 else f"%h{index - 1}"
    a = [name for name, _ in args]
    operands = (f"wq({a[0]}) wk({a[1]}) wv({a[2]}) wv_prev({a[3]})\n"
                f"      conv_dw({a[4]}, {a[5]}) conv_g({a[6]}, {a[7]})\n"
                f"      temp({a[8]}) wo({a[9]})")
    attrs = (f"num_heads = {heads} : i64, num_kv_heads = {kv_heads} : i64, "
             f"head_dim = {head_dim} : i64,\n"
             f"       conv_kernel_sizes = array<i64: {kernels[0]}, "
             f"{kernels[1]}>, qk_mean, value_shift,\n"
             f"       temperature = #attn.temperature<clamped>"
             f"{', causal' if causal else ''},\n"
             f"       rope = #attn.rope<theta = {rope_theta:.1f}, "
             f"fraction = {rope_fraction}>")
    x_type = tensor(None, None, width)
    lines = [
        f"  // layer {index}",
        f"  %y{index} = attn.cca {prev} {operands}",
        f"      {{{attrs}}}",
        *type_list([x_type] + [t for _, t in args]),
        f"      -> {x_type}",
        f"  %h{index} = arith.addf {prev}, %y{index} : {x_type}",
    ]
    return args, lines


def module(header, layers, width):
    """The text of one example: header comment lines, then `@model`."""
    args = [("%x", tensor(None, None, width))]
    body = []
    for index, (layer_args, layer_lines) in enumerate(layers):
        args.append((f"// layer {index}", None))
        args += layer_args
        body += layer_lines
    out = []
    for line in header:
        out += [f"// {part}" for part in textwrap.wrap(line, 76)] or ["//"]
    out.append("")
    out.append("func.func @model(")
    for i, (name, ty) in enumerate(args):
        if ty is None:
            out.append(f"    {name}")
        else:
            out.append(f"    {name}: {ty}{',' if i + 1 < len(args) else ')'}")
    out.append(f"    -> {tensor(None, None, width)} {{")
    out += body
    out.append(f"  return %h{len(layers) - 1} : {tensor(None, None, width)}")
    out.append("}")
    return "\n".join(out) + "\n"


GENERATED = ("Generated by `python3 examples/generate.py`; do not edit by "
             "hand.")


def gpt(name, title, sharing, num_layers, width, heads, kv_heads, head_dim,
        bias, notes):
    attn = (f"attn.qkv_attention <{sharing}> ({PAPER_NAME[sharing]}): "
            f"E {width}, {heads} query heads x {head_dim}, "
            f"{kv_heads} KV head{'s' if kv_heads > 1 else ''}, causal, "
            f"no RoPE, {'biases on all projections' if bias else 'no biases'}.")
    header = [
        f"{name}: {title}",
        f"{num_layers} layers of {attn}",
        *notes,
        "Only the attention layers, each with a residual; the learned",
        "absolute position embeddings and the MLPs are left out.",
        "",
        GENERATED,
    ]
    layers = [qkv_layer(i, sharing, width, heads, kv_heads, head_dim,
                        causal=True, bias=bias)
              for i in range(num_layers)]
    return module(header, layers, width)


def gpt300m(sharing, kv_heads, title):
    cache = "Hk d" if sharing in ("kv", "qkv") else "2 Hk d"
    notes = [f"Paper: {PAPER}, 300M configuration.",
             f"Caches {cache} = "
             f"{(1 if sharing in ('kv', 'qkv') else 2) * kv_heads * 64} "
             f"values per token and layer (MHA: 2048)."]
    return gpt(f"gpt300m_{title}", f"the paper's 300M model, "
               f"{PAPER_NAME[sharing]}"
               + ("" if kv_heads == 16 else
                  f" with {'MQA' if kv_heads == 1 else f'GQA-{kv_heads}'}"),
               sharing, 20, 1024, 16, kv_heads, 64, True, notes)


# ZAYA1: the CCGQA attention of Zyphra's ZAYA1-8B (Hugging Face transformers
# `ZayaConfig`: hidden 2048, 8 heads, 2 KV heads, head_dim 128, cca_time0/1
# 2 and 2, num_hidden_layers 40, every decoder layer one CCA block and one
# MoE block).
ZAYA1_LAYERS = 40


def zaya1():
    width, heads, kv_heads, head_dim = 2048, 8, 2, 128
    header = [
        "zaya1_ccgqa: a ZAYA1-shaped CCGQA stack, "
        f"{ZAYA1_LAYERS} layers of attn.cca.",
        f"{CCA_PAPER}; shapes of ZAYA1-8B (Hugging Face transformers",
        f"ZayaConfig: {ZAYA1_LAYERS} decoder layers, each one CCA block).",
        f"E {width}, {heads} query heads, {kv_heads} KV heads (CCGQA, G 4), "
        f"head_dim {head_dim}:",
        f"Lq {heads * head_dim}, Lk {kv_heads * head_dim}, "
        "conv kernels [2, 2], qk_mean, value_shift,",
        "clamped temperature, causal, RoPE theta 1e4 on half of each head.",
        f"Caches 2 Lk = {2 * kv_heads * head_dim} values per token and layer "
        "(16-head MHA: 4096) plus",
        "P (Lq + Lk) + Lk/2 = 2 * 1280 + 128 = 2688 state values per sequence "
        "and layer.",
        "Only the attention layers, each with a residual; the MoE blocks, "
        "norms and",
        "residual scaling are left out.",
        "",
        GENERATED,
    ]
    layers = [cca_layer(i, width, heads, kv_heads, head_dim, (2, 2), 10000.0,
                        0.5, causal=True)
              for i in range(ZAYA1_LAYERS)]
    return module(header, layers, width)


def gpt1b2(sharing, kv_heads, name, title, notes):
    return gpt(name, title, sharing, 22, 2048, 32, kv_heads, 64, True,
               [f"Paper: {PAPER}, 1.2B configuration.", *notes])


def examples():
    return {
        "gpt300m_none.mlir": gpt300m("none", 16, "none"),
        "gpt300m_kv.mlir": gpt300m("kv", 16, "kv"),
        "gpt300m_qk.mlir": gpt300m("qk", 16, "qk"),
        "gpt300m_qkv.mlir": gpt300m("qkv", 16, "qkv"),
        "gpt300m_kv_gqa4.mlir": gpt300m("kv", 4, "kv_gqa4"),
        "gpt300m_kv_mqa.mlir": gpt300m("kv", 1, "kv_mqa"),
        "gpt1b2_kv_mqa.mlir": gpt1b2(
            "kv", 1, "gpt1b2_kv_mqa", "the paper's 1.2B K=V+MQA model",
            ["Caches Hk d = 64 values per token and layer (MHA: 4096): "
             "64x smaller."]),
        "gpt1b2_mha.mlir": gpt1b2(
            "none", 32, "gpt1b2_mha",
            "the 1.2B configuration as plain MHA (the baseline)",
            ["Caches 2 Hk d = 4096 values per token and layer."]),
        "zaya1_ccgqa.mlir": zaya1(),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="only compare; exit 1 if a file differs")
    opts = parser.parse_args()
    stale = []
    for name, text in examples().items():
        path = os.path.join(HERE, name)
        if opts.check:
            try:
                with open(path, encoding="utf-8") as f:
                    if f.read() != text:
                        stale.append(name)
            except FileNotFoundError:
                stale.append(name)
            continue
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        print(f"wrote examples/{name}")
    if stale:
        print("out of date: " + ", ".join(stale)
              + " (run python3 examples/generate.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
