"""Float64 PyTorch reference of the attn layer ops, for the gradient checks.

The forward of `attn.qkv_attention` and `attn.cca` (and stacks of them with
residuals), written as plain differentiable torch code from the semantics
(docs/semantics.md, the spec of the attention variants), so that torch's
autograd of it is an independent reference for the vector-Jacobian products
that `attn-differentiate` builds. Nothing here comes from a lowering of the
dialect, nor from reference.py (numpy, no autograd), which it agrees with.

The models take the arguments of the functions the builders
(`attnfuse.qkv_attention`, `attnfuse.cca`, builders.py) write, as a dict
keyed by the builder's argument names ("x", "mask", "l0_wq", ...), and the
builder's keyword arguments as the configuration, with the builders'
defaults (causal, QK-mean and value shift on, residuals for stacks).

Conventions (docs/semantics.md#conventions): x [B, S, E]; weights in the
torch.nn.Linear layout [out, in], y = x W^T + b; per-head tensors
[B, S, H, d]; query head h reads key/value head h // G, G = Hq / Hk.
"""

import math

import torch
import torch.nn.functional as F

DTYPE = torch.float64


# ---------------------------------------------------------------------------
# Pieces
# ---------------------------------------------------------------------------


def linear(x, w, b=None):
    """torch.nn.Linear: x W^T + b with W [out, in]."""
    y = torch.matmul(x, w.transpose(0, 1))
    return y if b is None else y + b


def split_heads(t, d):
    """[B, S, H*d] -> [B, S, H, d]: channel h*d + i is head h, dim i."""
    b, s, hd = t.shape
    return t.reshape(b, s, hd // d, d)


def merge_heads(t):
    """[B, S, H, d] -> [B, S, H*d]."""
    b, s, h, d = t.shape
    return t.reshape(b, s, h * d)


def rope(t, theta, fraction=1.0):
    """NeoX / rotate-half RoPE of t [B, S, H, d], token s at position s.

    The first r = fraction * d dims rotate: dim i pairs with i + r/2,
    angle = s * theta^(-2i/r) (i < r/2, computed in float64); dims past r
    pass through.
    """
    s, d = t.shape[1], t.shape[-1]
    r = int(round(fraction * d))
    if r == 0:
        return t
    half = r // 2
    freq = theta ** (-2.0 * torch.arange(half, dtype=DTYPE) / r)
    angle = torch.arange(s, dtype=DTYPE)[:, None] * freq  # [S, r/2]
    cos = torch.cos(angle)[None, :, None, :].to(t.dtype)
    sin = torch.sin(angle)[None, :, None, :].to(t.dtype)
    x1, x2, rest = t[..., :half], t[..., half:r], t[..., r:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin, rest], dim=-1)


def attention(q, k, v, causal=False, window=None, scale=None, key_mask=None,
              bias=None):
    """Softmax attention with head sharing, query i at position i.

    q [B, S, Hq, d], k [B, S, Hk, d], v [B, S, Hk, dv] -> [B, S, Hq, dv].
    bias ([S, S] or [Hq, S, S]) is added to the scaled logits of every batch
    entry (and head).
    Key j is visible to query i when (causal: j <= i), (window w: i - j < w)
    and (key_mask [B, S]: key_mask[b, j] != 0). A row without a visible key
    is zero (and passes no gradient), never NaN.
    """
    bsz, s, hq, d = q.shape
    g = hq // k.shape[2]
    if scale is None:
        scale = 1.0 / math.sqrt(d)
    kr = k.repeat_interleave(g, dim=2)  # query head h -> KV head h // g
    vr = v.repeat_interleave(g, dim=2)
    logits = torch.einsum("bihc,bjhc->bhij", q, kr) * scale
    if bias is not None:
        logits = logits + bias  # [S, S] or [Hq, S, S] against [B, Hq, S, S]
    i = torch.arange(s)[:, None]
    j = torch.arange(s)[None, :]
    keep = torch.ones(s, s, dtype=torch.bool)
    if causal:
        keep = keep & (j <= i)
    if window is not None:
        keep = keep & (i - j < window)
    keep = keep[None, None].expand(bsz, 1, s, s)
    if key_mask is not None:
        keep = keep & (key_mask != 0)[:, None, None, :]
    logits = logits.masked_fill(~keep, float("-inf"))
    # The softmax is shift invariant: the row maximum is a constant for
    # autograd. Rows with no visible key use 0 and end up all zero.
    row_max = logits.detach().amax(dim=-1, keepdim=True)
    row_max = torch.where(torch.isfinite(row_max), row_max,
                          torch.zeros_like(row_max))
    p = torch.exp(logits - row_max)
    denom = p.sum(dim=-1, keepdim=True)
    p = p / torch.where(denom > 0, denom, torch.ones_like(denom))
    return torch.einsum("bhij,bjhc->bihc", p, vr)


def causal_conv1d(u, w, b, groups, padding):
    """PyTorch Conv1d over time after `padding` zero rows in front.

    u [B, S, C] time-major, w [C, C/groups, k] (tap 0 multiplies the oldest
    input); output [B, S + padding - (k-1), C].
    """
    up = F.pad(u.transpose(1, 2), (padding, 0))
    return F.conv1d(up, w, b, groups=groups).transpose(1, 2)


# ---------------------------------------------------------------------------
# Layers
# ---------------------------------------------------------------------------


def qkv_layer(x, p, *, sharing="none", num_heads, num_kv_heads, head_dim,
              causal=True, window=None, rope_theta=None, rope_fraction=1.0,
              scale=None):
    """One attn.qkv_attention. p: the layer's weights by short name ("wq",
    "wk", "wv", "wo", "bq", "bk", "bv", "bo", "logit_bias"; absent ones are
    None).

    none: q = x Wq, k = x Wk, v = x Wv; kv: v = k; qk: q = k; qkv: q = v = k.
    RoPE rotates the query and key for the scores only: the value of kv and
    qkv is the un-rotated shared tensor.
    """
    d = head_dim
    k = split_heads(linear(x, p["wk"], p.get("bk")), d)
    q = k if sharing in ("qk", "qkv") else split_heads(
        linear(x, p["wq"], p.get("bq")), d)
    v = k if sharing in ("kv", "qkv") else split_heads(
        linear(x, p["wv"], p.get("bv")), d)
    if rope_theta is not None:
        q, k = rope(q, rope_theta, rope_fraction), rope(k, rope_theta,
                                                          rope_fraction)
    o = attention(q, k, v, causal=causal, window=window, scale=scale,
                  bias=p.get("logit_bias"))
    return linear(merge_heads(o), p["wo"], p.get("bo"))


def head_norm(t, eps, norm):
    """t / n(t) per head: n = sqrt(|t|^2 + eps) ("sqrt_eps") or
    max(|t|, eps) = sqrt(max(|t|^2, eps^2)) ("clamp_eps"; where the clamp
    is active the norm is a constant, as torch's clamp_min)."""
    squares = (t * t).sum(dim=-1, keepdim=True)
    if norm == "clamp_eps":
        return t / torch.sqrt(torch.clamp_min(squares, eps * eps))
    return t / torch.sqrt(squares + eps)


def cca_layer(x, p, *, num_heads, num_kv_heads, head_dim,
              conv_kernel_sizes=(2, 2), qk_mean=True, value_shift=True,
              temperature="raw", norm=None, eps=None, causal=True,
              window=None, rope_theta=None, rope_fraction=1.0, mask=None):
    """One attn.cca (CCA, or CCGQA when num_heads > num_kv_heads). p: the
    layer's weights by short name ("wq", "wk", "wv", "wv_prev", "conv_dw_w",
    "conv_dw_b", "conv_g_w", "conv_g_b", "temp", "wo"). mask [B, S]: the
    padding mask (zero: a padded token)."""
    hq, hk, d = num_heads, num_kv_heads, head_dim
    g = hq // hk
    lq, lk = hq * d, hk * d
    k0, k1 = conv_kernel_sizes
    eps = 1e-12 if eps is None else eps
    norm = norm or "sqrt_eps"
    if mask is not None:
        # Padded tokens are zero rows for every projection.
        x = x * (mask != 0)[:, :, None].to(x.dtype)

    # 1. Bias-free down-projections, u = [qr | kr].
    qr = linear(x, p["wq"])
    kr = linear(x, p["wk"])
    u = torch.cat([qr, kr], dim=-1)

    # 2. One left padding of P rows, then a depthwise and a grouped
    #    convolution, both unpadded; the depthwise bias lands on padded rows.
    pad = (k0 - 1) + (k1 - 1)
    m = causal_conv1d(u, p["conv_dw_w"], p["conv_dw_b"], groups=lq + lk,
                      padding=pad)
    c = causal_conv1d(m, p["conv_g_w"], p["conv_g_b"], groups=hq + hk,
                      padding=0)
    cq, ck = split_heads(c[..., :lq], d), split_heads(c[..., lq:], d)

    # 3. QK-mean from the pre-convolution projections.
    if qk_mean:
        qrh, krh = split_heads(qr, d), split_heads(kr, d)
        q = cq + 0.5 * qrh + 0.5 * krh.repeat_interleave(g, dim=2)
        group_mean = qrh.reshape(*qrh.shape[:2], hk, g, d).mean(dim=3)
        k = ck + 0.5 * group_mean + 0.5 * krh
    else:
        q, k = cq, ck

    # 4. Heads normalized to sqrt(d); keys times the temperature.
    temp = p["temp"]
    tau = torch.exp(torch.clamp(temp, 1e-7, 2.0)) if temperature == "clamped" \
        else temp
    q = math.sqrt(d) * head_norm(q, eps, norm)
    k = math.sqrt(d) * head_norm(k, eps, norm) * tau[None, None, :, None]

    # 5. Values: [x_t Wv^T | x_{t-1} Wv_prev^T] with x_{-1} = 0.
    if value_shift:
        previous = F.pad(x, (0, 0, 1, 0))[:, :-1]
        v = torch.cat([linear(x, p["wv"]), linear(previous, p["wv_prev"])],
                      dim=-1)
    else:
        v = linear(x, p["wv"])
    v = split_heads(v, d)

    # 6. RoPE on the normalized query and key.
    if rope_theta is not None:
        q, k = rope(q, rope_theta, rope_fraction), rope(k, rope_theta,
                                                          rope_fraction)

    # 7. Attention at scale 1/sqrt(d) (padded tokens are no keys), then the
    #    bias-free up-projection.
    o = attention(q, k, v, causal=causal, window=window, key_mask=mask)
    return linear(merge_heads(o), p["wo"])


# ---------------------------------------------------------------------------
# Models: the builders' functions
# ---------------------------------------------------------------------------

# Builder options that do not change the math.
_LAYOUT_OPTIONS = ("dtype", "batch", "seq", "name", "header")


def _per_layer(value, num_layers):
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value] * num_layers


def _layer_params(args, index):
    prefix = f"l{index}_"
    return {name[len(prefix):]: value for name, value in args.items()
            if name.startswith(prefix)}


def _stack(args, config, layer, mask=None):
    config = {k: v for k, v in config.items() if k not in _LAYOUT_OPTIONS}
    num_layers = config.pop("num_layers", 1)
    residual = config.pop("residual", None)
    if residual is None:
        residual = num_layers > 1
    windows = _per_layer(config.pop("window", None), num_layers)
    thetas = _per_layer(config.pop("rope_theta", None), num_layers)
    h = args["x"]
    for i in range(num_layers):
        y = layer(h, _layer_params(args, i), window=windows[i],
                  rope_theta=thetas[i], **config,
                  **({} if mask is None else {"mask": mask}))
        h = h + y if residual else y
    return h


def qkv_model(args, **config):
    """The function of `attnfuse.qkv_attention(**config)`: args maps its
    argument names to float64 tensors."""
    config = dict(config)
    config.pop("biases", None)  # the weights present say it
    config.pop("logit_bias", None)
    embed = config.pop("embed_dim")
    if config.get("num_kv_heads") is None:
        config["num_kv_heads"] = config["num_heads"]
    if config.get("head_dim") is None:
        config["head_dim"] = embed // config["num_heads"]
    return _stack(args, config, qkv_layer)


def cca_model(args, **config):
    """The function of `attnfuse.cca(**config)`: args maps its argument
    names ("x", "mask" with a padding mask, "l0_wq", ...) to tensors (the
    mask an integer tensor)."""
    config = dict(config)
    embed = config.pop("embed_dim")
    padding_mask = config.pop("padding_mask", False)
    if config.get("num_kv_heads") is None:
        config["num_kv_heads"] = config["num_heads"]
    if config.get("head_dim") is None:
        config["head_dim"] = embed // config["num_heads"]
    mask = args["mask"] if padding_mask else None
    return _stack(args, config, cca_layer, mask=mask)


def model(kind, args, **config):
    """qkv_model ("qkv") or cca_model ("cca")."""
    return {"qkv": qkv_model, "cca": cca_model}[kind](args, **config)
