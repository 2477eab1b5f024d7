#!/usr/bin/env python3
"""Static sm_90a check of every kernel AttnFuse emits (ctest: sm90a/ptxas-matrix).

Builds a matrix of attention layers (head dim 64, 96, 128 and 256; GQA group 1, 4, 8;
causal or not; K=V on or off; plus key-RoPE K=V layers and flash kernels with
a key mask), compiles them and the
example models with `attnfuse-compile --target=sm_90a --no-cubin`, assembles
every kernel's PTX with `ptxas -arch=sm_90a -v`, and FAILS on

  * a ptxas error (for instance an unresolved libdevice call),
  * any spill store / spill load bytes or a non-zero stack frame,
  * a `wgmma ... serialized` warning (C7515) or any other ptxas warning,
  * a flash-attention or GEMM kernel without wgmma, cp.async.bulk.tensor,
    mbarrier try_wait and setmaxnreg in its PTX (the attn.cca_prologue
    kernels, which are not warp-specialized: without the first three; the
    attn.cca_decode_prologue kernels, a GEMV: without 16-byte vector loads
    of the conv weights, ld.global.v4).

A decode matrix covers attn.flash_decode (split and combine kernels): head
dim 64, 96, 128 and 256, group 1, 4, 8, 16, K=V and separate K/V, contiguous and paged
caches, key RoPE on load, bf16 (and three f16 configurations); its kernels
must use cp.async.bulk and
mbarrier try_wait (no wgmma: decode is bandwidth-bound) and, like all others,
assemble without spills or warnings.

A backward matrix covers attn.flash_attention_grad (its dQ and dK/dV
kernels): head dims 64, 96 and 128, K=V or not, group 1, 4, 8, causal or
not, block_q 64 and 128, and a key mask, and attn.fused_weight_grad (the
weight-gradient GEMM, from zero and into an init, split over the tokens with its
combine kernel or not); like the forward kernels
they must use wgmma, cp.async.bulk.tensor, mbarrier try_wait and setmaxnreg.
It also holds attn.rope_grad (SIMT, like attn.rope: 16-byte loads) and attn.causal_conv1d with
attn.causal_conv1d_grad (SIMT, the depthwise and narrow grouped convolutions that attn-fuse leaves
as they are), attn.qk_mean and attn.value_shift with their gradients (SIMT).

A second matrix covers attn.cca_prologue (CCA / CCGQA prologue): the ZAYA1
shape (E 2048, Hq 8, Hk 2, d 128, conv 2/2, every toggle), head dim 64,
conv kernels 3/3, the toggles off, and two with a padding mask. A third covers attn.cca_decode_prologue
(one decode step): the ZAYA1 shape and CCA with Hq = Hk = 4, d 64, with and
without the value shift, QK-mean and RoPE, conv kernels 2/2 and 3/2, bf16 and
(two of them) f16.

It writes registers / shared memory / spills per kernel to a markdown table
(bench/ptxas-sm90a.md). With nvdisasm available (CUDA toolkit or the
nvidia-cuda-nvdisasm wheel) the table also gives the HGMMA count and the
highest register index in the SASS, which shows the consumer warpgroups'
real register use after setmaxnreg (ptxas -v reports the launch allocation).

Exit status: 0 pass, 1 fail, 77 skipped (no ptxas).
"""

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys

# The forward kernel computes on 64-column slabs: 96 (zero-filled to 128 in
# shared memory) and 256 (64-key tiles) exercise both ends of its plan.
MATRIX_HEAD_DIMS = (64, 96, 128, 256)
GRAD_HEAD_DIMS = (64, 96, 128)
MATRIX_GROUPS = (1, 4, 8)


def layer_function(name, E, hq, hk, d, sharing, causal, rope):
    attrs = f"num_heads = {hq} : i64, num_kv_heads = {hk} : i64, head_dim = {d} : i64"
    if causal:
        attrs += ", causal"
    if rope:
        attrs += ", rope = #attn.rope<theta = 10000.0>"
    lq, lk = hq * d, hk * d
    weights = ["wq", "wk"] + (["wv"] if sharing == "none" else [])
    shapes = {"wq": f"{lq}x{E}", "wk": f"{lk}x{E}", "wv": f"{lk}x{E}"}
    args = ", ".join(f"%{w}: tensor<{shapes[w]}xbf16>" for w in weights)
    uses = " ".join(f"{w}(%{w})" for w in weights)
    types = ", ".join(f"tensor<{shapes[w]}xbf16>" for w in weights)
    return (
        f"func.func @{name}(%x: tensor<?x?x{E}xbf16>, {args}, "
        f"%wo: tensor<{E}x{lq}xbf16>) -> tensor<?x?x{E}xbf16> {{\n"
        f"  %y = attn.qkv_attention <{sharing}> %x {uses} wo(%wo) {{{attrs}}}\n"
        f"      : (tensor<?x?x{E}xbf16>, {types}, tensor<{E}x{lq}xbf16>) "
        f"-> tensor<?x?x{E}xbf16>\n"
        f"  return %y : tensor<?x?x{E}xbf16>\n}}\n")


def matrix_model():
    """One module with a function per configuration; returns (text, rows)."""
    funcs, configs = [], []
    for d in MATRIX_HEAD_DIMS:
        hq = 16 if d == 64 else 8
        E = 1024
        for g in MATRIX_GROUPS:
            for causal in (False, True):
                for kv in (False, True):
                    name = f"d{d}_g{g}_{'causal' if causal else 'full'}_{'keqv' if kv else 'kv2'}"
                    funcs.append(layer_function(name, E, hq, hq // g, d,
                                                "kv" if kv else "none", causal, False))
                    configs.append(dict(name=name, d=d, g=g, causal=causal, kv=kv, rope=False))
            # The paper's Q-K=V with RoPE on load (un-rotated cache).
            name = f"d{d}_g{g}_causal_keqv_rope"
            funcs.append(layer_function(name, E, hq, hq // g, d, "kv", True, True))
            configs.append(dict(name=name, d=d, g=g, causal=True, kv=True, rope=True))
        # A padded batch: the key mask read per score column (i64 as torch's
        # attention_mask), G = 4, causal, separate K and V.
        name = f"d{d}_g4_causal_kv2_keymask"
        funcs.append(key_mask_function(name, hq, hq // 4, d))
        configs.append(dict(name=name, d=d, g=4, causal=True, kv=False, rope=False,
                            mask=True))
    return "\n".join(funcs), configs


def key_mask_function(name, hq, hk, d):
    """attn.flash_attention with an i64 key mask, the tiles attn-fuse chooses for
    attnfuse-compile (128 x 128)."""
    q, kv = f"tensor<?x?x{hq}x{d}xbf16>", f"tensor<?x?x{hk}x{d}xbf16>"
    return (
        f"func.func @{name}(%q: {q}, %k: {kv}, %v: {kv}, %m: tensor<?x?xi64>) -> {q} {{\n"
        f"  %c0 = arith.constant 0 : index\n"
        f"  %c1 = arith.constant 1 : index\n"
        f"  %b = tensor.dim %q, %c0 : {q}\n"
        f"  %s = tensor.dim %q, %c1 : {q}\n"
        f"  %init = tensor.empty(%b, %s) : {q}\n"
        f"  %o = attn.flash_attention %q, %k, %v key_mask(%m) outs(%init)\n"
        f"      {{block_q = 128 : i64, block_kv = 128 : i64, causal}}\n"
        f"      : ({q}, {kv}, {kv}, tensor<?x?xi64>, {q}) -> {q}\n"
        f"  return %o : {q}\n}}\n")


def grad_function(name, hq, hk, d, causal, keqv, block_q, mask=None):
    """attn.flash_attention_grad (the dQ and dK/dV kernels) with the forward's lse."""
    q, kv = f"tensor<?x?x{hq}x{d}xbf16>", f"tensor<?x?x{hk}x{d}xbf16>"
    lse = f"tensor<?x?x{hq}xf32>"
    kv_args, kv_use, kv_types = (f"%k: {kv}", "%k", kv) if keqv else (
        f"%k: {kv}, %v: {kv}", "%k, %v", f"{kv}, {kv}")
    mask_arg = f", %m: tensor<?x?x{mask}>" if mask else ""
    mask_use = " key_mask(%m)" if mask else ""
    mask_ty = f", tensor<?x?x{mask}>" if mask else ""
    outs, results, names = ("%dq0, %dk0", f"{q}, {kv}", "%dq, %dk") if keqv else (
        "%dq0, %dk0, %dk0", f"{q}, {kv}, {kv}", "%dq, %dk, %dv")
    attrs = f"block_q = {block_q} : i64, block_kv = 64 : i64" + (", causal" if causal else "")
    return (
        f"func.func @{name}(%q: {q}, {kv_args}, %o: {q}, %do: {q}{mask_arg}, %l: {lse})"
        f" -> ({results}) {{\n"
        f"  %c0 = arith.constant 0 : index\n"
        f"  %c1 = arith.constant 1 : index\n"
        f"  %b = tensor.dim %q, %c0 : {q}\n"
        f"  %s = tensor.dim %q, %c1 : {q}\n"
        f"  %t = tensor.dim %k, %c1 : {kv}\n"
        f"  %dq0 = tensor.empty(%b, %s) : {q}\n"
        f"  %dk0 = tensor.empty(%b, %t) : {kv}\n"
        f"  {names} = attn.flash_attention_grad %q, {kv_use}, %o, %do{mask_use} lse(%l)\n"
        f"      outs({outs}) {{{attrs}}}\n"
        f"      : ({q}, {kv_types}, {q}, {q}{mask_ty}, {lse}, {results}) -> ({results})\n"
        f"  return {names} : {results}\n}}\n")


def grad_model():
    """The backward kernels: head dim 64, 96 and 128, group 1, 4, 8, causal or not, K=V
    or not (alternating), block_q 64 and 128, and a key mask."""
    funcs, configs = [], []
    for d in GRAD_HEAD_DIMS:
        hq = 16 if d == 64 else 8
        for i, g in enumerate(MATRIX_GROUPS):
            for causal in (False, True):
                keqv = (i + causal) % 2 == 1
                block_q = 128 if causal else 64
                name = f"grad_d{d}_g{g}_{'causal' if causal else 'full'}_{'keqv' if keqv else 'kv2'}"
                funcs.append(grad_function(name, hq, hq // g, d, causal, keqv, block_q))
                configs.append(dict(name=name))
        name = f"grad_d{d}_g4_causal_keymask"
        funcs.append(grad_function(name, hq, hq // 4, d, True, False, 128, mask="i64"))
        configs.append(dict(name=name))
    for h, d, fraction in ((8, 128, 1.0), (4, 64, 0.5)):
        name = f"rope_grad_h{h}_d{d}"
        t = f"tensor<?x?x{h}x{d}xbf16>"
        funcs.append(
            f"func.func @{name}(%g: {t}) -> {t} {{\n"
            f"  %r = attn.rope_grad %g {{rope = #attn.rope<theta = 10000.0, "
            f"fraction = {fraction}>}} : {t}\n"
            f"  return %r : {t}\n}}\n")
        configs.append(dict(name=name, kinds=["rope_grad"]))
    for channels, width, taps, padding in CONV_CONFIGS:
        name = f"conv_c{channels}_g{width}_k{taps}_p{padding}"
        x = f"tensor<?x?x{channels}xbf16>"
        w = f"tensor<{channels}x{width}x{taps}xbf16>"
        b = f"tensor<{channels}xbf16>"
        funcs.append(
            f"func.func @{name}(%x: {x}, %w: {w}, %b: {b}) -> {x} {{\n"
            f"  %y = attn.causal_conv1d %x, %w, %b {{groups = {channels // width} : i64, "
            f"padding = {padding} : i64}} : ({x}, {w}, {b}) -> {x}\n"
            f"  return %y : {x}\n}}\n")
        configs.append(dict(name=name, kinds=["causal_conv1d"]))
        grad = f"conv_grad_c{channels}_g{width}_k{taps}_p{padding}"
        funcs.append(
            f"func.func @{grad}(%x: {x}, %w: {w}, %dy: {x}) -> ({x}, {w}, {b}) {{\n"
            f"  %dx, %dw, %db = attn.causal_conv1d_grad %x, %w, %dy {{groups = "
            f"{channels // width} : i64, padding = {padding} : i64}} : ({x}, {w}, {x}) "
            f"-> ({x}, {w}, {b})\n"
            f"  return %dx, %dw, %db : {x}, {w}, {b}\n}}\n")
        configs.append(dict(name=grad, kinds=["causal_conv1d_input_grad",
                                              "causal_conv1d_weight_grad",
                                              "causal_conv1d_weight_sum"]))
    for hq, hk, d in ((8, 2, 128), (4, 4, 64)):
        q, k = f"tensor<?x?x{hq}x{d}xbf16>", f"tensor<?x?x{hk}x{d}xbf16>"
        name = f"qk_mean_h{hq}_k{hk}_d{d}"
        funcs.append(
            f"func.func @{name}(%qc: {q}, %kc: {k}, %qr: {q}, %kr: {k}) -> ({q}, {k}) {{\n"
            f"  %q, %k = attn.qk_mean %qc, %kc, %qr, %kr : {q}, {k}\n"
            f"  %dq, %dk = attn.qk_mean_grad %q, %k : {q}, {k}\n"
            f"  return %dq, %dk : {q}, {k}\n}}\n")
        configs.append(dict(name=name, kinds=["qk_mean", "qk_mean_grad"]))
    for c in (128, 640):
        narrow, wide = f"tensor<?x?x{c}xbf16>", f"tensor<?x?x{2 * c}xbf16>"
        name = f"value_shift_c{c}"
        funcs.append(
            f"func.func @{name}(%c: {narrow}, %p: {narrow}) -> ({narrow}, {narrow}) {{\n"
            f"  %v = attn.value_shift %c, %p : ({narrow}, {narrow}) -> {wide}\n"
            f"  %dc, %dp = attn.value_shift_grad %v : ({wide}) -> ({narrow}, {narrow})\n"
            f"  return %dc, %dp : {narrow}, {narrow}\n}}\n")
        configs.append(dict(name=name, kinds=["value_shift", "value_shift_grad"]))
    for hq, hk, d, zaya in ((8, 2, 128, True), (4, 4, 64, False)):
        q, k, t = (f"tensor<?x?x{hq}x{d}xbf16>", f"tensor<?x?x{hk}x{d}xbf16>",
                   f"tensor<{hk}xbf16>")
        attrs = ("{temperature = #attn.temperature<clamped>, norm = #attn.norm<clamp_eps>, "
                 "eps = 1.1920929e-07 : f64}" if zaya else "")
        name = f"qk_norm_h{hq}_k{hk}_d{d}"
        funcs.append(
            f"func.func @{name}(%q: {q}, %k: {k}, %t: {t}, %dq: {q}, %dk: {k}) "
            f"-> ({q}, {k}, {q}, {k}, {t}) {{\n"
            f"  %qn, %kn = attn.qk_norm %q, %k, %t {attrs} : {q}, {k}, {t}\n"
            f"  %gq, %gk, %gt = attn.qk_norm_grad %q, %k, %t, %dq, %dk {attrs} : {q}, {k}, {t}\n"
            f"  return %qn, %kn, %gq, %gk, %gt : {q}, {k}, {q}, {k}, {t}\n}}\n")
        configs.append(dict(name=name, kinds=["qk_norm", "qk_norm_grad", "qk_norm_grad_temp"]))
    # Column copies (they lower inside device programs: a value-shift gradient makes one)
    # and the token mask of a padded batch.
    q, k, qk = "tensor<?x?x1024xbf16>", "tensor<?x?x256xbf16>", "tensor<?x?x1280xbf16>"
    half, m = "tensor<?x?x640xbf16>", "tensor<?x?xi64>"
    funcs.append(
        f"func.func @columns(%q: {q}, %k: {k}, %m: {m}) -> ({k}, {half}) {{\n"
        f"  %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n"
        f"  %qk = tensor.concat dim(2) %q, %k : ({q}, {k}) -> {qk}\n"
        f"  %qkm = attn.mask_tokens %qk, %m : {qk}, {m}\n"
        f"  %dc, %dp = attn.value_shift_grad %qkm : ({qk}) -> ({half}, {half})\n"
        f"  %b = tensor.dim %qk, %c0 : {qk}\n  %s = tensor.dim %qk, %c1 : {qk}\n"
        f"  %kp = tensor.extract_slice %qk[0, 0, 1024] [%b, %s, 256] [1, 1, 1] : {qk} to {k}\n"
        f"  return %kp, %dc : {k}, {half}\n}}\n")
    configs.append(dict(name="columns", kinds=["concat", "mask_tokens", "slice",
                                               "value_shift_grad"]))
    for inputs, outputs, with_init in WEIGHT_GRAD_CONFIGS:
        name = f"wgrad_in{inputs}_out{outputs}{'_acc' if with_init else ''}"
        funcs.append(weight_grad_function(name, inputs, outputs, with_init))
        tiles = -(-inputs // 128) * -(-outputs // 128)
        kinds = (["weight_grad_colsum"] if inputs == 1 else
                 ["weight_grad_combine", "weight_grad_gemm"] if 2 * tiles < 132 else
                 ["weight_grad_gemm"])
        configs.append(dict(name=name, kinds=kinds))
    for outputs in BIAS_GRAD_CONFIGS:
        name = f"bias_grad_out{outputs}"
        funcs.append(bias_grad_function(name, outputs))
        configs.append(dict(name=name, kinds=["weight_grad_colsum"]))
    return "\n".join(funcs), configs


# attn.causal_conv1d configurations (channels, channels per group, k, padding): ZAYA1's
# depthwise and grouped convolutions (the sm_90a pipeline keeps grouped ones whole) and a
# narrow grouped one.
CONV_CONFIGS = ((1280, 1, 2, 1), (1280, 128, 2, 0), (256, 8, 3, 2))
# attn.fused_weight_grad configurations: (in, out, reads a non-zero init). One input
# feature read per token is the column-sum kernel. Fewer than 66 dW tiles of 128 x 128 split
# over the tokens (the GEMM into f32 partials, then the combine kernel): all but the 4096 x
# 1024 one.
WEIGHT_GRAD_CONFIGS = ((1024, 1024, False), (2048, 256, False), (1024, 512, True),
                       (4096, 1024, True), (1, 4096, True))
# Bias gradients as attn-fuse forms them (X a fill of ones): out features.
BIAS_GRAD_CONFIGS = (4096, 1000)


def bias_grad_function(name, outputs):
    """attn.fused_weight_grad of a fill of ones [T, 1] from zero: the column-sum kernel."""
    dy, db = f"tensor<?x{outputs}xbf16>", f"tensor<{outputs}x1xbf16>"
    return (
        f"func.func @{name}(%dy: {dy}) -> {db} {{\n"
        f"  %c0 = arith.constant 0 : index\n"
        f"  %t = tensor.dim %dy, %c0 : {dy}\n"
        f"  %one = arith.constant 1.0 : bf16\n"
        f"  %xe = tensor.empty(%t) : tensor<?x1xbf16>\n"
        f"  %x = linalg.fill ins(%one : bf16) outs(%xe : tensor<?x1xbf16>) -> tensor<?x1xbf16>\n"
        f"  %zero = arith.constant 0.0 : bf16\n"
        f"  %e = tensor.empty() : {db}\n"
        f"  %init = linalg.fill ins(%zero : bf16) outs(%e : {db}) -> {db}\n"
        f"  %db = attn.fused_weight_grad %x, %dy outs(%init)\n"
        f"      {{block_m = 64 : i64, block_n = 64 : i64, block_k = 64 : i64}}\n"
        f"      : (tensor<?x1xbf16>, {dy}, {db}) -> {db}\n"
        f"  return %db : {db}\n}}\n")


def weight_grad_function(name, inputs, outputs, with_init):
    """attn.fused_weight_grad from zero (attn-fuse's form) or into an init."""
    x, dy, dw = (f"tensor<?x{inputs}xbf16>", f"tensor<?x{outputs}xbf16>",
                 f"tensor<{outputs}x{inputs}xbf16>")
    init_arg = f", %init: {dw}" if with_init else ""
    zero = "" if with_init else (
        f"  %c0f = arith.constant 0.0 : bf16\n"
        f"  %empty = tensor.empty() : {dw}\n"
        f"  %init = linalg.fill ins(%c0f : bf16) outs(%empty : {dw}) -> {dw}\n")
    return (
        f"func.func @{name}(%x: {x}, %dy: {dy}{init_arg}) -> {dw} {{\n{zero}"
        f"  %dw = attn.fused_weight_grad %x, %dy outs(%init)\n"
        f"      {{block_m = 64 : i64, block_n = 64 : i64, block_k = 64 : i64}}\n"
        f"      : ({x}, {dy}, {dw}) -> {dw}\n"
        f"  return %dw : {dw}\n}}\n")


# attn.cca_prologue configurations: (name, E, Hq, Hk, d, k0, k1, toggles,
# padding mask type or None).
CCA_CONFIGS = (
    ("zaya1", 2048, 8, 2, 128, 2, 2, True, None),
    ("d128_k3", 2048, 8, 2, 128, 3, 3, True, None),
    ("d64_k2", 1024, 16, 2, 64, 2, 2, True, None),
    ("d64_k3", 1024, 16, 4, 64, 3, 3, True, None),
    ("d128_plain", 2048, 8, 2, 128, 2, 2, False, None),
    ("d64_mha_plain", 1024, 8, 8, 64, 3, 3, False, None),
    # One KV head: the value shift splits it (two half-head value loads).
    ("d128_mqa", 2048, 4, 1, 128, 2, 2, True, None),
    ("zaya1_mask", 2048, 8, 2, 128, 2, 2, True, "i64"),
    ("d64_k3_mask", 1024, 16, 4, 64, 3, 3, True, "i32"),
)


def cca_function(name, E, hq, hk, d, k0, k1, toggles, mask=None):
    lq, lk = hq * d, hk * d
    c = lq + lk
    vrows = lk // 2 if toggles else lk
    attrs = (f"num_heads = {hq} : i64, num_kv_heads = {hk} : i64, head_dim = {d} : i64, "
             f"conv_kernel_sizes = array<i64: {k0}, {k1}>, block_s = 64 : i64")
    if toggles:
        attrs += (", qk_mean, value_shift, temperature = #attn.temperature<clamped>, "
                  "rope = #attn.rope<theta = 10000.0, fraction = 0.5>")
    ops = [("x", f"?x?x{E}"), ("wq", f"{lq}x{E}"), ("wk", f"{lk}x{E}"), ("wv", f"{vrows}x{E}")]
    if toggles:
        ops.append(("wvp", f"{vrows}x{E}"))
    ops += [("dw", f"{c}x1x{k0}"), ("dwb", f"{c}"), ("gw", f"{c}x{d}x{k1}"), ("gwb", f"{c}"),
            ("temp", f"{hk}")]
    args = ", ".join(f"%{n}: tensor<{t}xbf16>" for n, t in ops)
    types = ", ".join(f"tensor<{t}xbf16>" for _, t in ops)
    masked = ""
    if mask:
        args += f", %m: tensor<?x?x{mask}>"
        types += f", tensor<?x?x{mask}>"
        masked = " padding_mask(%m)"
    results = (f"tensor<?x?x{hq}x{d}xbf16>, tensor<?x?x{hk}x{d}xbf16>, "
               f"tensor<?x?x{hk}x{d}xbf16>")
    vprev = " wv_prev(%wvp)" if toggles else ""
    inits = "".join(
        f"  %init{i} = tensor.empty(%batch, %seq) : {t}\n"
        for i, t in enumerate([f"tensor<?x?x{hq}x{d}xbf16>", f"tensor<?x?x{hk}x{d}xbf16>",
                               f"tensor<?x?x{hk}x{d}xbf16>"]))
    return (
        f"func.func @cca_{name}({args}) -> ({results}) {{\n"
        f"  %c0 = arith.constant 0 : index\n"
        f"  %c1 = arith.constant 1 : index\n"
        f"  %batch = tensor.dim %x, %c0 : tensor<?x?x{E}xbf16>\n"
        f"  %seq = tensor.dim %x, %c1 : tensor<?x?x{E}xbf16>\n"
        f"{inits}"
        f"  %q, %k, %v = attn.cca_prologue %x wq(%wq) wk(%wk) wv(%wv){vprev} "
        f"conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp){masked} "
        f"outs(%init0, %init1, %init2) {{{attrs}}}\n"
        f"      : ({types}, {results}) -> ({results})\n"
        f"  return %q, %k, %v : {results}\n}}\n")


def cca_model():
    funcs, configs = [], []
    for name, E, hq, hk, d, k0, k1, toggles, mask in CCA_CONFIGS:
        funcs.append(cca_function(name, E, hq, hk, d, k0, k1, toggles, mask))
        configs.append(dict(name=f"cca_{name}", E=E, hq=hq, hk=hk, d=d, k=(k0, k1),
                            toggles=toggles, mask=mask))
    return "\n".join(funcs), configs


# attn.cca_decode_prologue configurations: (name, Hq, Hk, d, k0, k1, qk_mean,
# value_shift, rope); rope also switches the clamped temperature on.
DECODE_CONFIGS = (
    ("zaya1", 8, 2, 128, 2, 2, True, True, True),
    ("zaya1_shift_only", 8, 2, 128, 2, 2, False, True, False),
    ("zaya1_plain", 8, 2, 128, 2, 2, False, False, False),
    ("zaya1_k3", 8, 2, 128, 3, 2, True, True, True),
    ("cca_d64", 4, 4, 64, 2, 2, True, True, True),
    ("cca_d64_mean_rope", 4, 4, 64, 2, 2, True, False, True),
    ("cca_d64_plain", 4, 4, 64, 2, 2, False, False, False),
)
# Compiled a second time with --elem-type=f16 (f16 tensors).
DECODE_F16_CONFIGS = ("zaya1", "cca_d64")


def decode_function(name, hq, hk, d, k0, k1, qk_mean, value_shift, rope, elem="bf16"):
    lq, lk = hq * d, hk * d
    c, p = lq + lk, (k0 - 1) + (k1 - 1)
    lv = lk // 2 if value_shift else lk
    attrs = (f"num_heads = {hq} : i64, num_kv_heads = {hk} : i64, head_dim = {d} : i64, "
             f"conv_kernel_sizes = array<i64: {k0}, {k1}>")
    if qk_mean:
        attrs += ", qk_mean"
    if value_shift:
        attrs += ", value_shift"
    if rope:
        attrs += (", temperature = #attn.temperature<clamped>, "
                  "rope = #attn.rope<theta = 10000.0, fraction = 0.5>")
    ops = [("qr", f"?x1x{lq}xbf16"), ("kr", f"?x1x{lk}xbf16"), ("vc", f"?x1x{lv}xbf16")]
    if value_shift:
        ops.append(("vp", f"?x1x{lk // 2}xbf16"))
    ops += [("dw", f"{c}x1x{k0}xbf16"), ("dwb", f"{c}xbf16"), ("gw", f"{c}x{d}x{k1}xbf16"),
            ("gwb", f"{c}xbf16"), ("temp", f"{hk}xbf16"), ("cs", f"?x{p}x{c}xbf16")]
    if value_shift:
        ops.append(("ss", f"?x1x{lk // 2}xbf16"))
    ops.append(("pos", "?xi32"))
    results = [f"?x1x{hq}x{d}xbf16", f"?x1x{hk}x{d}xbf16", f"?x1x{hk}x{d}xbf16",
               f"?x{p}x{c}xbf16"] + ([f"?x1x{lk // 2}xbf16"] if value_shift else [])
    args = ", ".join(f"%{n}: tensor<{t}>" for n, t in ops)
    # The outputs' inits precede the states among the operands.
    operand_types = [t for _, t in ops]
    state = [n for n, _ in ops].index("cs")
    operand_types[state:state] = results[:3]
    types = ", ".join(f"tensor<{t}>" for t in operand_types)
    inits = "".join(f"  %init{i} = tensor.empty(%batch) : tensor<{t}>\n"
                    for i, t in enumerate(results[:3]))
    rtypes = ", ".join(f"tensor<{t}>" for t in results)
    names = ", ".join(f"%r{i}" for i in range(len(results)))
    vp = ", %vp" if value_shift else ""
    ss = " shift_state(%ss)" if value_shift else ""
    return (
        f"func.func @decode_{name}({args.replace('bf16', elem)}) -> "
        f"({rtypes.replace('bf16', elem)}) {{\n"
        f"  %c0 = arith.constant 0 : index\n"
        f"  %batch = tensor.dim %qr, %c0 : tensor<{ops[0][1]}>\n"
        f"{inits}".replace('bf16', elem) +
        f"  {names} = attn.cca_decode_prologue %qr, %kr, %vc{vp} conv_dw(%dw, %dwb) "
        f"conv_g(%gw, %gwb) temp(%temp) outs(%init0, %init1, %init2) conv_state(%cs){ss} "
        f"positions(%pos) {{{attrs}}}\n"
        f"      : ({types.replace('bf16', elem)}) -> ({rtypes.replace('bf16', elem)})\n"
        f"  return {names} : {rtypes.replace('bf16', elem)}\n}}\n")


def decode_model(elem="bf16"):
    funcs, configs = [], []
    for name, hq, hk, d, k0, k1, qk_mean, value_shift, rope in DECODE_CONFIGS:
        if elem != "bf16" and name not in DECODE_F16_CONFIGS:
            continue
        funcs.append(decode_function(name, hq, hk, d, k0, k1, qk_mean, value_shift, rope,
                                     elem))
        configs.append(dict(name=f"decode_{name}", hq=hq, hk=hk, d=d, k=(k0, k1),
                            qk_mean=qk_mean, value_shift=value_shift, rope=rope,
                            elem=elem, model=f"decode_matrix_{elem}"))
    return "\n".join(funcs), configs


FLASH_DECODE_HEAD_DIMS = (64, 96, 128, 256)
FLASH_DECODE_GROUPS = (1, 4, 8, 16)


def flash_decode_function(name, hq, hk, d, kv, paged, rope, elem="bf16"):
    """One attn.flash_decode step; returns its function text."""
    cache = f"?x64x{hk}x{d}" if paged else f"?x?x{hk}x{d}"
    args = [("q", f"?x1x{hq}x{d}"), ("k", f"?x1x{hk}x{d}")]
    if not kv:
        args.append(("v", f"?x1x{hk}x{d}"))
    args.append(("kc", cache))
    if not kv:
        args.append(("vc", cache))
    args.append(("pos", "?"))
    if paged:
        args.append(("bt", "?x?"))
    def t(name, shape):
        return f"tensor<{shape}x{'i32' if name in ('pos', 'bt') else elem}>"
    params = ", ".join(f"%{n}: {t(n, s)}" for n, s in args)
    results = ([f"tensor<?x1x{hq}x{d}x{elem}>", t("kc", cache)]
               + ([] if kv else [t("vc", cache)]))
    # The output's init follows the new rows among the operands.
    operand_types = [t(n, s) for n, s in args]
    operand_types.insert(2 if kv else 3, results[0])
    types = ", ".join(operand_types)
    names = ["%o", "%kc2"] + ([] if kv else ["%vc2"])
    attrs = "block_kv = 64 : i64"
    if rope:
        attrs += ", query_rope = #attn.rope<theta = 10000.0>, key_rope = #attn.rope<theta = 10000.0>"
    new = "%q, %k" + ("" if kv else ", %v")
    caches = "%kc" + ("" if kv else ", %vc")
    table = " block_table(%bt)" if paged else ""
    return (f"func.func @{name}({params}) -> ({', '.join(results)}) {{\n"
            f"  %c0 = arith.constant 0 : index\n"
            f"  %batch = tensor.dim %q, %c0 : {t('q', args[0][1])}\n"
            f"  %init = tensor.empty(%batch) : {results[0]}\n"
            f"  {', '.join(names)} = attn.flash_decode {new} outs(%init) cache({caches}) "
            f"positions(%pos){table}"
            f" {{{attrs}}}\n      : ({types}) -> ({', '.join(results)})\n"
            f"  return {', '.join(names)} : {', '.join(results)}\n}}\n")


def flash_decode_model():
    funcs, configs = [], []
    for d in FLASH_DECODE_HEAD_DIMS:
        for g in FLASH_DECODE_GROUPS:
            hk = 2 if g == 16 else 8
            for kv in (True, False):
                for paged in (False, True):
                    name = (f"decode_d{d}_g{g}_{'keqv' if kv else 'kv2'}_"
                            f"{'paged' if paged else 'contig'}")
                    funcs.append(flash_decode_function(name, g * hk, hk, d, kv, paged, False))
                    configs.append(dict(name=name, d=d, g=g, kv=kv, paged=paged, rope=False))
            name = f"decode_d{d}_g{g}_keqv_contig_rope"
            funcs.append(flash_decode_function(name, g * hk, hk, d, True, False, True))
            configs.append(dict(name=name, d=d, g=g, kv=True, paged=False, rope=True))
    return "\n".join(funcs), configs


def flash_decode_f16_model():
    """A few f16 decode steps (compiled with --elem-type=f16)."""
    funcs, configs = [], []
    for d, g, kv, paged, rope in ((128, 4, True, False, True), (128, 8, False, True, False),
                                  (64, 16, True, True, False)):
        hk = 2 if g == 16 else 8
        name = (f"decode_f16_d{d}_g{g}_{'keqv' if kv else 'kv2'}_{'paged' if paged else 'contig'}"
                f"{'_rope' if rope else ''}")
        funcs.append(flash_decode_function(name, g * hk, hk, d, kv, paged, rope, elem="f16"))
        configs.append(dict(name=name, d=d, g=g, kv=kv, paged=paged, rope=rope, elem="f16",
                            model="flash_decode_matrix_f16"))
    return "\n".join(funcs), configs


def find_tool(name, explicit, extra):
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    found = shutil.which(name)
    if found:
        return found
    for c in extra:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


# Kernels without tensor cores or TMA.
SIMT_KINDS = ("elementwise", "cache_update", "cache_gather", "rope", "rope_grad", "sdpa",
              "weight_grad_colsum", "weight_grad_combine", "causal_conv1d",
              "causal_conv1d_input_grad", "causal_conv1d_weight_grad",
              "causal_conv1d_weight_sum", "qk_mean",
              "qk_mean_grad", "value_shift", "value_shift_grad", "qk_norm", "qk_norm_grad",
              "qk_norm_grad_temp", "concat", "slice", "mask_tokens")


def find_nvdisasm():
    extra = [os.path.join(os.environ.get("CUDA_HOME", ""), "bin", "nvdisasm"),
             "/usr/local/cuda/bin/nvdisasm"]
    try:  # the nvidia-cuda-nvdisasm wheel
        import importlib.util
        spec = importlib.util.find_spec("nvidia")
        if spec and spec.submodule_search_locations:
            for root in spec.submodule_search_locations:
                extra += glob.glob(os.path.join(root, "*", "bin", "nvdisasm"))
                extra += glob.glob(os.path.join(root, "cuda_nvdisasm", "bin", "nvdisasm"))
    except Exception:
        pass
    return find_tool("nvdisasm", None, extra)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


PTXAS_USED = re.compile(r"Used (\d+) registers(?:, used (\d+) barriers)?")
PTXAS_SPILL = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
PTXAS_SMEM = re.compile(r"(\d+) bytes smem")
SASS_REG = re.compile(r"\bR(\d+)\b")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--compile", required=True, help="attnfuse-compile")
    ap.add_argument("--work", required=True, help="scratch directory")
    ap.add_argument("--markdown", required=True, help="table to write")
    ap.add_argument("--examples", help="directory of example models to include")
    ap.add_argument("--ptxas", help="ptxas (default: PATH, $CUDA_HOME/bin, /usr/local/cuda/bin)")
    args = ap.parse_args()

    ptxas = find_tool("ptxas", args.ptxas,
                      [os.path.join(os.environ.get("CUDA_HOME", ""), "bin", "ptxas"),
                       "/usr/local/cuda/bin/ptxas"])
    if not ptxas:
        print("SKIP: ptxas not found (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin)")
        return 77
    nvdisasm = find_nvdisasm()
    version = run([ptxas, "--version"]).stdout.strip().splitlines()[-1]

    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    failures = []

    # Compile the matrix and the examples.
    models = []
    text, configs = matrix_model()
    matrix_path = os.path.join(args.work, "matrix.mlir")
    with open(matrix_path, "w") as f:
        f.write(text)
    models.append(("matrix", matrix_path, []))
    cca_text, cca_configs = cca_model()
    cca_path = os.path.join(args.work, "cca_matrix.mlir")
    with open(cca_path, "w") as f:
        f.write(cca_text)
    models.append(("cca_matrix", cca_path, []))
    decode_configs = []
    for elem in ("bf16", "f16"):
        decode_text, configs_elem = decode_model(elem)
        decode_configs += configs_elem
        decode_path = os.path.join(args.work, f"decode_matrix_{elem}.mlir")
        with open(decode_path, "w") as f:
            f.write(decode_text)
        models.append((f"decode_matrix_{elem}", decode_path, [f"--elem-type={elem}"]))
    grad_text, grad_configs = grad_model()
    grad_path = os.path.join(args.work, "grad_matrix.mlir")
    with open(grad_path, "w") as f:
        f.write(grad_text)
    models.append(("grad_matrix", grad_path, []))
    flash_decode_text, flash_decode_configs = flash_decode_model()
    flash_decode_path = os.path.join(args.work, "flash_decode_matrix.mlir")
    with open(flash_decode_path, "w") as f:
        f.write(flash_decode_text)
    models.append(("flash_decode_matrix", flash_decode_path, []))
    f16_text, f16_configs = flash_decode_f16_model()
    f16_path = os.path.join(args.work, "flash_decode_matrix_f16.mlir")
    with open(f16_path, "w") as f:
        f.write(f16_text)
    models.append(("flash_decode_matrix_f16", f16_path, ["--elem-type=f16"]))
    flash_decode_configs += f16_configs
    # The kernel matrices are launched kernel by kernel (no device programs:
    # a lone decode prologue has no cache to size its RoPE tables by); the
    # examples compile whole, programs included.
    models = [(m, p, o + ["--no-programs"]) for m, p, o in models]
    if args.examples:
        for path in sorted(glob.glob(os.path.join(args.examples, "*.mlir"))):
            models.append((os.path.splitext(os.path.basename(path))[0], path, []))

    kernels = {}  # name -> dict(kind, config, smem, sources, ptx)
    launches = {}  # (model, function) -> [kernel names]
    for model, path, options in models:
        out = os.path.join(args.work, model)
        r = run([args.compile, path, "--target=sm_90a", "-o", out, "--no-cubin", *options])
        if r.returncode != 0:
            failures.append(f"{model}: attnfuse-compile failed:\n{r.stderr}")
            continue
        with open(os.path.join(out, "manifest.json")) as f:
            manifest = json.load(f)
        # Kernel names are unique within a model only: another model's kernel
        # of the same name but another configuration (say f16) is kept apart.
        keys = {}
        for k in manifest["kernels"]:
            key = k["name"]
            if key in kernels and kernels[key]["config"] != k.get("config", {}):
                key = f"{k['name']} ({model})"
            keys[k["name"]] = key
            entry = kernels.setdefault(key, dict(
                kind=k.get("kind", "?"), config=k.get("config", {}),
                smem=k.get("dynamic_smem_bytes", 0), block=k.get("block", []),
                ptx=os.path.join(out, k["ptx"]), sources=[]))
            entry["sources"].append(model)
        for l in manifest["launches"]:
            launches.setdefault((model, l["function"]), []).append(keys[l["kernel"]])

    for c in configs:
        names = [k for k in launches.get(("matrix", c["name"]), [])
                 if kernels[k]["kind"] == "flash_attention"]
        if len(names) != 1:
            failures.append(f"matrix {c['name']}: expected one flash_attention kernel, got {names}")
        c["kernel"] = names[0] if names else None
    for c in grad_configs:
        kinds = sorted(kernels[k]["kind"] for k in launches.get(("grad_matrix", c["name"]), []))
        expected = c.get("kinds", ["flash_attention_grad_dkv", "flash_attention_grad_dq"])
        if kinds != expected:
            failures.append(f"grad matrix {c['name']}: expected kernels {expected}, "
                            f"got {kinds}")
    for c in cca_configs:
        names = [k for k in launches.get(("cca_matrix", c["name"]), [])
                 if kernels[k]["kind"] == "cca_prologue"]
        if len(names) != 1:
            failures.append(f"cca matrix {c['name']}: expected one cca_prologue kernel, got {names}")
        c["kernel"] = names[0] if names else None
    for c in decode_configs:
        names = [k for k in launches.get((c["model"], c["name"]), [])
                 if kernels[k]["kind"] == "cca_decode_prologue"]
        if len(names) != 1:
            failures.append(f"decode matrix {c['name']}: expected one cca_decode_prologue "
                            f"kernel, got {names}")
        c["kernel"] = names[0] if names else None

    for c in flash_decode_configs:
        names = [k for k in launches.get((c.get("model", "flash_decode_matrix"), c["name"]),
                                         [])]
        kinds = sorted(kernels[k]["kind"] for k in names)
        if kinds != ["flash_decode_combine", "flash_decode_split"]:
            failures.append(f"flash decode matrix {c['name']}: expected a split and a combine "
                            f"kernel, got {names}")
        c["kernels"] = names

    # Assemble every kernel; parse the resource report.
    for name, k in sorted(kernels.items()):
        cubin = os.path.splitext(k["ptx"])[0] + ".cubin"
        r = run([ptxas, "-arch=sm_90a", "-O3", "-v", k["ptx"], "-o", cubin])
        log = r.stdout + r.stderr
        k["log"] = log
        if r.returncode != 0:
            failures.append(f"{name}: ptxas failed:\n{log}")
            k.update(registers="-", spills="-", stack="-", barriers="-")
            continue
        used = PTXAS_USED.search(log)
        spill = PTXAS_SPILL.search(log)
        smem = PTXAS_SMEM.search(log)
        k["registers"] = int(used.group(1)) if used else -1
        k["barriers"] = int(used.group(2)) if used and used.group(2) else 0
        k["static_smem"] = int(smem.group(1)) if smem else 0
        if spill:
            k["stack"], st, ld = (int(x) for x in spill.groups())
            k["spills"] = st + ld
        else:
            k["stack"], k["spills"] = -1, -1
        if k["spills"] != 0 or k["stack"] != 0:
            failures.append(f"{name}: {k['spills']} spill bytes, {k['stack']} bytes stack frame")
        for line in log.splitlines():
            if "C7515" in line or "serialized" in line:
                failures.append(f"{name}: {line.strip()}")
            elif "warning" in line.lower():
                failures.append(f"{name}: ptxas warning: {line.strip()}")
        k["notes"] = sorted({m for m in re.findall(r"\((C\d{4})\)", log)})
        with open(k["ptx"]) as f:
            ptx = f.read()
        if k["kind"] == "cca_decode_prologue":
            required = ["ld.global.v4"]
        else:
            required = ["wgmma.mma_async", "cp.async.bulk.tensor", "mbarrier.try_wait"]
        if k["kind"] not in ("cca_prologue", "cca_decode_prologue", "flash_decode_split",
                             "flash_decode_combine"):
            required.append("setmaxnreg")
        if k["kind"] == "flash_decode_split":
            required = ["cp.async.bulk.shared::cluster.global", "mbarrier.try_wait"]
        elif k["kind"] == "flash_decode_combine":
            required = []
        elif k["kind"] in SIMT_KINDS:
            # SIMT kernels (residual adds, the decode primitives, bias gradients): 16-byte
            # loads (a bias of an odd width reads 2-byte columns).
            required = ["ld.global.v4"] if k["config"].get("columns_per_thread", 8) == 8 else []
            if k["kind"].startswith(("causal_conv1d", "qk_mean", "qk_norm",
                                     "value_shift")):
                # One element per load: a thread's channel, a group's input, a lane's
                # element of a head row.
                required = []
        missing = [s for s in required if s not in ptx]
        if missing:
            failures.append(f"{name}: PTX lacks {missing}")
        # SASS: tensor-core instructions and the real register use.
        k["hgmma"], k["sass_regs"] = "n/a", "n/a"
        if nvdisasm:
            d = run([nvdisasm, "-c", cubin])
            if d.returncode == 0:
                sass = d.stdout
                k["hgmma"] = sass.count("HGMMA")
                regs = [int(x) for x in SASS_REG.findall(sass)]
                k["sass_regs"] = max(regs) + 1 if regs else 0
                if re.search(r"\b(LDL|STL)\b", sass):
                    failures.append(f"{name}: local memory (LDL/STL) in SASS")
                if k["hgmma"] == 0 and not k["kind"].startswith("flash_decode") \
                        and k["kind"] not in SIMT_KINDS + ("cca_decode_prologue",):
                    failures.append(f"{name}: no HGMMA in SASS")

    # The table.
    lines = []
    lines.append("# sm_90a kernels: ptxas resource report\n")
    lines.append("Generated by `test/Target/sm90a/ptxas_matrix.py` (ctest `sm90a/ptxas-matrix`); "
                 "do not edit by hand.\n")
    lines.append(f"Assembler: `{os.path.basename(ptxas)} -arch=sm_90a -O3 -v`, {version}. "
                 "Static figures only: nothing here ran on a GPU, and nothing here says the "
                 "kernels compute the right numbers (that needs the device check).\n")
    lines.append("* **regs (ptxas)**: the per-thread allocation at launch (`Used N registers`); "
                 "the warp-specialized kernels then move registers from the producer to the "
                 "consumer warpgroups with `setmaxnreg` (**setmaxnreg p/c**).")
    if nvdisasm:
        lines.append("* **SASS regs**: highest register index + 1 in the `nvdisasm` listing, i.e. the "
                     "real use of the widest warpgroup (consumer); **HGMMA**: tensor-core "
                     "instructions in the SASS.")
    else:
        lines.append("* SASS columns are `n/a`: nvdisasm was not found when the table was written.")
    lines.append("* **spill**: spill store + load bytes; **stack**: stack frame bytes. The test "
                 "fails on any non-zero value and on any C7515 `wgmma ... serialized` warning; "
                 "C7519/C7517 (warpgroup.arrive/wait injected) are informational.")
    lines.append("* **smem**: dynamic shared memory per CTA (bytes, including 1 KiB alignment "
                 "slack), from the manifest.\n")

    lines.append("## Flash attention matrix\n")
    lines.append("| d | G | causal | K=V | key RoPE | key mask | kernel | block | regs (ptxas) | setmaxnreg p/c | SASS regs | HGMMA | spill | stack | smem |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for c in configs:
        k = kernels.get(c["kernel"] or "", {})
        cfg = k.get("config", {})
        lines.append(
            f"| {c['d']} | {c['g']} | {'yes' if c['causal'] else 'no'} | {'yes' if c['kv'] else 'no'} "
            f"| {'yes' if c['rope'] else 'no'} | {'i64' if c.get('mask') else 'no'} "
            f"| `{c['kernel']}` | {k.get('block', ['?'])[0]} "
            f"| {k.get('registers', '-')} | {cfg.get('producer_registers', '?')}/{cfg.get('consumer_registers', '?')} "
            f"| {k.get('sass_regs', '-')} | {k.get('hgmma', '-')} | {k.get('spills', '-')} "
            f"| {k.get('stack', '-')} | {k.get('smem', '-')} |")

    lines.append("\n## CCA prologue matrix (attn.cca_prologue)\n")
    lines.append("Toggles: qk_mean, value_shift, clamped temperature, RoPE on half of each "
                 "head; 'off': none of them. One CTA of 256 threads per (64 tokens, KV group, "
                 "batch), not warp-specialized (no setmaxnreg).\n")
    lines.append("| E | Hq | Hk | d | conv | toggles | padding mask | kernel | block | regs (ptxas) | SASS regs | HGMMA | spill | stack | smem |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for c in cca_configs:
        k = kernels.get(c["kernel"] or "", {})
        lines.append(
            f"| {c['E']} | {c['hq']} | {c['hk']} | {c['d']} | {c['k'][0]}/{c['k'][1]} "
            f"| {'all' if c['toggles'] else 'off'} | {c['mask'] or 'no'} | `{c['kernel']}` "
            f"| {k.get('block', ['?'])[0]} "
            f"| {k.get('registers', '-')} | {k.get('sass_regs', '-')} | {k.get('hgmma', '-')} "
            f"| {k.get('spills', '-')} | {k.get('stack', '-')} | {k.get('smem', '-')} |")

    lines.append("\n## CCA decode prologue matrix (attn.cca_decode_prologue)\n")
    lines.append("One decode step: one CTA of 256 threads per (head, sequence), the grouped "
                 "conv as a GEMV with 16-byte weight loads (no TMA, no wgmma). RoPE (half of "
                 "each head) comes with the clamped temperature.\n")
    lines.append("| Hq | Hk | d | conv | qk_mean | value_shift | RoPE | elem | kernel | block | regs (ptxas) | SASS regs | spill | stack | smem |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    yn = lambda v: "yes" if v else "no"  # noqa: E731
    for c in decode_configs:
        k = kernels.get(c["kernel"] or "", {})
        lines.append(
            f"| {c['hq']} | {c['hk']} | {c['d']} | {c['k'][0]}/{c['k'][1]} | {yn(c['qk_mean'])} "
            f"| {yn(c['value_shift'])} | {yn(c['rope'])} | {c['elem']} | `{c['kernel']}` "
            f"| {k.get('block', ['?'])[0]} | {k.get('registers', '-')} | {k.get('sass_regs', '-')} "
            f"| {k.get('spills', '-')} | {k.get('stack', '-')} | {k.get('smem', '-')} |")
    lines.append("\n## Decode matrix (attn.flash_decode)\n")
    lines.append("block_kv 64; Hk 8 (2 for G = 16). Split kernel: 128 threads per (split, "
                 "KV head, sequence), key rows streamed with 1-D cp.async.bulk into a ring of "
                 "stages; combine kernel: value_dim threads per (query head, sequence).\n")
    lines.append("| elem | d | G | K=V | paged | RoPE | split kernel | regs | spill | stack | smem | stages | combine regs | combine spill |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for c in flash_decode_configs:
        split = next((kernels[n] for n in c["kernels"]
                      if kernels[n]["kind"] == "flash_decode_split"), {})
        combine = next((kernels[n] for n in c["kernels"]
                        if kernels[n]["kind"] == "flash_decode_combine"), {})
        split_name = next((n for n in c["kernels"]
                           if kernels[n]["kind"] == "flash_decode_split"), "-")
        lines.append(
            f"| {c.get('elem', 'bf16')} | {c['d']} | {c['g']} | {'yes' if c['kv'] else 'no'} "
            f"| {'yes' if c['paged'] else 'no'} "
            f"| {'yes' if c['rope'] else 'no'} | `{split_name}` | {split.get('registers', '-')} "
            f"| {split.get('spills', '-')} | {split.get('stack', '-')} | {split.get('smem', '-')} "
            f"| {split.get('config', {}).get('stages', '?')} | {combine.get('registers', '-')} "
            f"| {combine.get('spills', '-')} |")

    lines.append("\n## All kernels (matrix and examples/)\n")
    lines.append("| kernel | kind | block | regs (ptxas) | setmaxnreg p/c | SASS regs | HGMMA | spill | stack | smem | barriers | ptxas notes | from |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, k in sorted(kernels.items()):
        cfg = k.get("config", {})
        sources = sorted(set(k["sources"]))
        shown = ", ".join(sources[:3]) + (f" (+{len(sources) - 3})" if len(sources) > 3 else "")
        lines.append(
            f"| `{name}` | {k['kind']} | {k.get('block', ['?'])[0]} | {k.get('registers', '-')} "
            f"| {cfg.get('producer_registers', '?')}/{cfg.get('consumer_registers', '?')} "
            f"| {k.get('sass_regs', '-')} | {k.get('hgmma', '-')} | {k.get('spills', '-')} "
            f"| {k.get('stack', '-')} | {k['smem']} | {k.get('barriers', '-')} "
            f"| {' '.join(k.get('notes', [])) or '-'} | {shown} |")
    lines.append("")
    lines.append(f"Result: {len(kernels)} kernels, "
                 f"{'all assembled with 0 spills and no C7515' if not failures else str(len(failures)) + ' failure(s)'}.")

    os.makedirs(os.path.dirname(os.path.abspath(args.markdown)), exist_ok=True)
    with open(args.markdown, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {args.markdown} ({len(kernels)} kernels)")

    if failures:
        print("FAIL:")
        for f_ in failures:
            print("  " + f_)
        print(f"0 passed, {len(failures)} failed")
        return 1
    print(f"{len(kernels)} passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
