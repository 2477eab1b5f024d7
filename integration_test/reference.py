"""Numpy reference of the attn dialect, written from docs/semantics.md.

Source of truth: docs/semantics.md (the exact semantics of every op) and the
op descriptions of include/attnfuse/Dialect/Attn/IR/AttnOps.td. Nothing here
is derived from the linalg lowering: every function follows the formulas of
docs/semantics.md directly and computes in float64 (inputs are widened first,
so bf16 inputs are exact).

Conventions (the notation of docs/semantics.md#conventions):
  x: [B, S, E]; weights in torch.nn.Linear layout [out, in] (y = x W^T + b);
  per-head tensors [B, S, H, d]; Hq query heads, Hk key/value heads,
  G = Hq / Hk; query head h reads KV head h // G (repeat_interleave).
"""

import numpy as np


def f64(a):
    return None if a is None else np.asarray(a, dtype=np.float64)


# ---------------------------------------------------------------------------
# bf16 helpers: numpy has no bfloat16, .npy files carry the bit patterns as
# uint16 ('<u2'), the upper half of the float32 encoding.
# ---------------------------------------------------------------------------


def to_bf16_bits(a):
    """Round float values to bf16 (nearest, ties to even); return uint16 bits."""
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounding = ((bits >> 16) & 1) + 0x7FFF
    return ((bits + rounding) >> 16).astype(np.uint16)


def from_bf16_bits(bits):
    """uint16 bf16 bit patterns -> float32 values."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


# ---------------------------------------------------------------------------
# Primitives
# ---------------------------------------------------------------------------


def linear(x, w, b=None):
    """torch.nn.Linear: x W^T + b with W [out, in]."""
    y = f64(x) @ f64(w).T
    if b is not None:
        y = y + f64(b)
    return y


def split_heads(t, d):
    """[B, S, H*d] -> [B, S, H, d]."""
    b, s, hd = t.shape
    return t.reshape(b, s, hd // d, d)


def merge_heads(t):
    """[B, S, H, d] -> [B, S, H*d]."""
    b, s, h, d = t.shape
    return t.reshape(b, s, h * d)


def _rotate_half(t, positions, theta, fraction):
    """NeoX / rotate-half RoPE of t [..., d] with `positions` broadcast
    against t's leading dimensions."""
    t = f64(t)
    d = t.shape[-1]
    r = int(round(fraction * d))
    if r == 0:
        return t.copy()
    half = r // 2
    freq = theta ** (-2.0 * np.arange(half) / r)  # [half]
    angle = np.asarray(positions, dtype=np.float64)[..., None] * freq
    cos, sin = np.cos(angle), np.sin(angle)
    x1 = t[..., :half]
    x2 = t[..., half:r]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin, t[..., r:]], axis=-1)


def rope(t, theta, fraction=1.0):
    """NeoX / rotate-half RoPE on the first r = fraction*d dims of each head.

    Dim i pairs with i + r/2 (i < r/2), frequency theta^(-2i/r), position =
    absolute token index along S. Dims past r pass through.
    """
    s = t.shape[1]
    return _rotate_half(t, np.arange(s)[None, :, None], theta, fraction)


def sdpa(q, k, v, bias=None, causal=False, window=None, scale=None,
         key_mask=None, positions=None):
    """Scaled dot-product attention with head sharing.

    q [B, S, Hq, d], k [B, T, Hk, d], v [B, T, Hk, dv] -> [B, S, Hq, dv].
    The queries are the last S of T positions: query i sits at p = i + T - S.
    causal keeps j <= p; window w keeps p - j < w; key_mask [B, T] keeps
    the keys j of sequence b with key_mask[b, j] != 0 (padding). bias is
    [S, T] or [Hq, S, T], added to the scaled logits before the mask. A
    fully masked row gives zeros. With positions [B], query i of sequence b
    sits at positions[b] + i instead (a decoder's queries over its cache).
    """
    q, k, v = f64(q), f64(k), f64(v)
    bsz, s, hq, d = q.shape
    t, hk = k.shape[1], k.shape[2]
    g = hq // hk
    if scale is None:
        scale = 1.0 / np.sqrt(d)
    kr = np.repeat(k, g, axis=2)  # head h -> kv head h // g
    vr = np.repeat(v, g, axis=2)
    logits = np.einsum("bihc,bjhc->bhij", q, kr) * scale
    if bias is not None:
        bias = f64(bias)
        logits = logits + (bias[None, None] if bias.ndim == 2 else bias[None])
    if positions is None:
        pos = np.broadcast_to(np.arange(s)[:, None] + (t - s), (bsz, s, 1))
    else:
        pos = np.asarray(positions, dtype=np.int64)[:, None, None] + np.arange(s)[None, :, None]
    j = np.arange(t)[None, None, :]
    keep = np.ones((bsz, s, t), dtype=bool)
    if causal:
        keep &= j <= pos
    if window is not None:
        keep &= (pos - j) < window
    keep = keep[:, None]
    if key_mask is not None:
        keep = keep & (np.asarray(key_mask) != 0)[:, None, None, :]
    logits = np.where(keep, logits, -np.inf)
    out = np.zeros((bsz, s, hq, v.shape[3]))
    row_max = logits.max(axis=-1, keepdims=True)
    live = np.isfinite(row_max)  # rows with at least one visible key
    safe_max = np.where(live, row_max, 0.0)
    p = np.where(live, np.exp(logits - safe_max), 0.0)
    denom = p.sum(axis=-1, keepdims=True)
    p = np.where(denom > 0, p / np.where(denom > 0, denom, 1.0), 0.0)
    out = np.einsum("bhij,bjhc->bihc", p, vr)
    return out


def sdpa_backward(q, k, v, do, keep, scale, output=None):
    """Gradients of o = sdpa(q, k, v) (scale, head sharing, no bias) with the mask `keep`
    [B, S, T] (True: query i sees key j), and the forward's row statistics.

    Returns (o, lse [B, S, Hq], delta [B, S, Hq], dq, dk, dv): delta = rowsum(do * output) is
    taken over `output` when given (the output as the forward stored it, which the backward
    reads) and over o otherwise, and enters dS = P (dP - delta). dk and dv sum over each
    group's query heads; a row without visible keys has lse -inf and no gradient.
    """
    q, k, v, do = f64(q), f64(k), f64(v), f64(do)
    hq, hk = q.shape[2], k.shape[2]
    g = hq // hk
    kr, vr = np.repeat(k, g, axis=2), np.repeat(v, g, axis=2)
    logits = np.einsum("bihc,bjhc->bhij", q, kr) * scale
    logits = np.where(np.asarray(keep)[:, None], logits, -np.inf)
    m = logits.max(-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(logits - m)
    den = e.sum(-1, keepdims=True)
    p = np.where(den > 0, e / np.where(den > 0, den, 1.0), 0.0)
    lse = np.where(den[..., 0] > 0, np.log(np.where(den > 0, den, 1.0))[..., 0] + m[..., 0],
                   -np.inf)
    o = np.einsum("bhij,bjhc->bihc", p, vr)
    delta = np.einsum("bihc,bihc->bhi", do, o if output is None else f64(output))
    dp = np.einsum("bihc,bjhc->bhij", do, vr)
    ds = p * (dp - delta[..., None])
    dq = np.einsum("bhij,bjhc->bihc", ds, kr) * scale
    dkr = np.einsum("bhij,bihc->bjhc", ds, q) * scale
    dvr = np.einsum("bhij,bihc->bjhc", p, do)

    def group(x):
        return x.reshape(x.shape[0], x.shape[1], hk, g, x.shape[3]).sum(3)
    return (o, lse.transpose(0, 2, 1), delta.transpose(0, 2, 1), dq, group(dkr),
            group(dvr))


def causal_conv1d(u, w, b, groups, padding):
    """Left-pad by `padding` zero steps, then valid grouped conv over time.

    u [B, S, C], w [C, C/groups, k]; tap 0 multiplies the oldest input.
    Output length S + padding - (k - 1).
    """
    u, w = f64(u), f64(w)
    bsz, s, c = u.shape
    k = w.shape[2]
    cg = c // groups
    up = np.concatenate([np.zeros((bsz, padding, c)), u], axis=1)
    tout = s + padding - (k - 1)
    out = np.zeros((bsz, tout, c))
    for ch in range(c):
        g0 = (ch // cg) * cg
        for tap in range(k):
            # out[:, t, ch] += sum_ci w[ch, ci, tap] * up[:, t + tap, g0 + ci]
            out[:, :, ch] += up[:, tap : tap + tout, g0 : g0 + cg] @ w[ch, :, tap]
    if b is not None:
        out += f64(b)
    return out


# ---------------------------------------------------------------------------
# Layers
# ---------------------------------------------------------------------------


def qkv_attention(x, mode, wk, wo, wq=None, wv=None, bq=None, bk=None, bv=None,
                  bo=None, logit_bias=None, num_heads=1, num_kv_heads=1,
                  head_dim=1, causal=False, window=None, rope_theta=None,
                  rope_fraction=1.0, scale=None):
    """docs/semantics.md#attnqkv_attention: projection sharing none, kv, qk, qkv.

    none: q = x Wq, k = x Wk, v = x Wv;   kv: v = k;   qk: q = k;
    qkv: q = v = k. With RoPE the scores use rope(q), rope(k); the values
    are always the un-rotated tensor (for kv: the un-rotated shared k).
    """
    d = head_dim
    k = split_heads(linear(x, wk, bk), d)
    q = k if mode in ("qk", "qkv") else split_heads(linear(x, wq, bq), d)
    v = k if mode in ("kv", "qkv") else split_heads(linear(x, wv, bv), d)
    if rope_theta is not None:
        qs, ks = rope(q, rope_theta, rope_fraction), rope(k, rope_theta, rope_fraction)
    else:
        qs, ks = q, k
    o = sdpa(qs, ks, v, bias=logit_bias, causal=causal, window=window, scale=scale)
    return linear(merge_heads(o), wo, bo)


def cca_qkv(x, wq, wk, wv, conv_dw_w, conv_dw_b, conv_g_w, conv_g_b, temp,
            num_heads, num_kv_heads, head_dim, kernels, wv_prev=None,
            qk_mean=False, value_shift=False, temperature="raw", eps=1e-12,
            rope_theta=None, rope_fraction=1.0, norm="sqrt_eps"):
    """docs/semantics.md#attncca, steps 1-6 (the prefill prologue): the latent
    attention inputs q [B, S, Hq, d], k and v [B, S, Hk, d]. norm:
    "sqrt_eps" divides each head by sqrt(|x|^2 + eps), "clamp_eps" by
    max(|x|, eps) (transformers' ZAYA)."""
    x = f64(x)
    hq, hk, d = num_heads, num_kv_heads, head_dim
    g = hq // hk
    lq, lk = hq * d, hk * d
    k0, k1 = kernels
    bsz, s, _ = x.shape

    # 1. Down-projections (no bias), u = concat(qr, kr).
    qr = linear(x, wq)  # [B, S, Lq]
    kr = linear(x, wk)  # [B, S, Lk]
    u = np.concatenate([qr, kr], axis=-1)

    # 2. Pad once by P = (k0-1) + (k1-1), depthwise valid conv, grouped valid
    #    conv (Hq + Hk groups of d channels).
    p = (k0 - 1) + (k1 - 1)
    m = causal_conv1d(u, conv_dw_w, conv_dw_b, groups=lq + lk, padding=p)
    c = causal_conv1d(m, conv_g_w, conv_g_b, groups=hq + hk, padding=0)
    assert c.shape[1] == s
    cq = split_heads(c[..., :lq], d)  # [B, S, Hq, d]
    ck = split_heads(c[..., lq:], d)  # [B, S, Hk, d]

    # 3. QK-mean residual from the pre-conv projections.
    qrh, krh = split_heads(qr, d), split_heads(kr, d)
    if qk_mean:
        q = np.empty_like(cq)
        for h in range(hq):
            q[:, :, h] = cq[:, :, h] + 0.5 * qrh[:, :, h] + 0.5 * krh[:, :, h // g]
        k = np.empty_like(ck)
        for j in range(hk):
            group_mean = qrh[:, :, j * g : (j + 1) * g].mean(axis=2)
            k[:, :, j] = ck[:, :, j] + 0.5 * group_mean + 0.5 * krh[:, :, j]
    else:
        q, k = cq, ck

    # 4. L2 norm to sqrt(d), key temperature.
    temp = f64(temp)
    tau = np.exp(np.clip(temp, 1e-7, 2.0)) if temperature == "clamped" else temp
    if norm == "clamp_eps":
        q = np.sqrt(d) * q / np.maximum(np.linalg.norm(q, axis=-1,
                                                       keepdims=True), eps)
        k = np.sqrt(d) * k / np.maximum(np.linalg.norm(k, axis=-1,
                                                       keepdims=True), eps)
    else:
        q = np.sqrt(d) * q / np.sqrt((q * q).sum(-1, keepdims=True) + eps)
        k = np.sqrt(d) * k / np.sqrt((k * k).sum(-1, keepdims=True) + eps)
    k = k * tau[None, None, :, None]

    # 5. Values, optionally shifted: concat(Wvc x_t, Wvp x_{t-1}), x_{-1} = 0.
    if value_shift:
        xprev = np.concatenate([np.zeros((bsz, 1, x.shape[2])), x[:, :-1]], axis=1)
        v = np.concatenate([linear(x, wv), linear(xprev, wv_prev)], axis=-1)
    else:
        v = linear(x, wv)
    v = split_heads(v, d)

    # 6. RoPE on q and k in latent space.
    if rope_theta is not None:
        q, k = rope(q, rope_theta, rope_fraction), rope(k, rope_theta, rope_fraction)
    return q, k, v


def cca(x, wq, wk, wv, conv_dw_w, conv_dw_b, conv_g_w, conv_g_b, temp, wo,
        num_heads, num_kv_heads, head_dim, kernels, wv_prev=None,
        qk_mean=False, value_shift=False, temperature="raw", eps=1e-12,
        causal=False, window=None, rope_theta=None, rope_fraction=1.0,
        norm="sqrt_eps", padding_mask=None):
    """docs/semantics.md#attncca: CCA / CCGQA (ZAYA1), steps 1-7, per token.
    padding_mask [B, S]: tokens with a zero are zero rows of x for every
    projection (and so for the convolutions and the delayed values) and
    keys nobody attends to."""
    if padding_mask is not None:
        x = f64(x) * (np.asarray(padding_mask) != 0)[:, :, None]
    q, k, v = cca_qkv(x, wq, wk, wv, conv_dw_w, conv_dw_b, conv_g_w, conv_g_b,
                      temp, num_heads, num_kv_heads, head_dim, kernels,
                      wv_prev=wv_prev, qk_mean=qk_mean, value_shift=value_shift,
                      temperature=temperature, eps=eps, rope_theta=rope_theta,
                      rope_fraction=rope_fraction, norm=norm)

    # 7. GQA softmax attention, scale 1/sqrt(d), up-projection.
    o = sdpa(q, k, v, causal=causal, window=window, key_mask=padding_mask)
    return linear(merge_heads(o), wo)


def flash_decode_reference(q, k_new, key_cache, positions, v_new=None, value_cache=None,
                           block_table=None, window=None, scale=None, query_rope=None,
                           key_rope=None):
    """One decode step (attn.flash_decode): cache write, then attention.

    q [B, 1, Hq, d], k_new [B, 1, Hk, d], v_new [B, 1, Hk, dv] or None (K=V:
    the values are the un-rotated cached keys). Contiguous caches [B, S, Hk, .];
    with block_table [B, M] they are pages [N, P, Hk, .] and token j of sequence
    b is cache[block_table[b, j // P], j % P]. positions[b] = p is where the new
    token goes; query head h attends to tokens lo..p of KV head h // G with
    lo = max(0, p - window + 1). query_rope / key_rope: (theta, fraction),
    applied at position p to the query and at position j to key j (scores only).
    Returns (o [B, 1, Hq, dv], updated key cache, updated value cache or None).
    """
    key_cache = f64(key_cache).copy()
    value_cache = None if value_cache is None else f64(value_cache).copy()
    q, k_new = f64(q), f64(k_new)
    batch, _, hq, d = q.shape
    hk = k_new.shape[2]
    group = hq // hk
    scale = 1.0 / np.sqrt(d) if scale is None else scale

    def slot(b, j):
        if block_table is None:
            return b, j
        page_size = key_cache.shape[1]
        return int(block_table[b, j // page_size]), j % page_size

    def rotate(rows, pos, rope_params):
        # rows [n, H, d] at positions pos [n].
        if rope_params is None:
            return rows
        theta, fraction = rope_params
        return rope_at(rows, pos, theta, fraction)

    dv = d if value_cache is None else value_cache.shape[3]
    out = np.zeros((batch, 1, hq, dv))
    for b in range(batch):
        p = int(positions[b])
        row, col = slot(b, p)
        key_cache[row, col] = k_new[b, 0]
        if value_cache is not None:
            value_cache[row, col] = f64(v_new)[b, 0]
        lo = 0 if window is None else max(0, p - window + 1)
        tokens = list(range(lo, p + 1))
        keys = np.stack([key_cache[slot(b, j)] for j in tokens])  # [n, Hk, d]
        values = keys if value_cache is None else np.stack(
            [value_cache[slot(b, j)] for j in tokens])
        rotated_keys = rotate(keys, tokens, key_rope)
        query = rotate(q[b, 0][None], [p], query_rope)[0]  # [Hq, d]
        for h in range(hq):
            scores = scale * rotated_keys[:, h // group] @ query[h]
            weights = np.exp(scores - scores.max())
            weights /= weights.sum()
            out[b, 0, h] = weights @ values[:, h // group]
    return out, key_cache, value_cache


def rope_from(t, positions, theta, fraction=1.0):
    """RoPE of t [B, S, H, d] with token s of sequence b at positions[b] + s."""
    s = t.shape[1]
    pos = np.asarray(positions, dtype=np.int64)[:, None, None] + np.arange(s)[None, :, None]
    return _rotate_half(t, pos, theta, fraction)


def cache_update(cache, new_rows, positions, lengths=None, block_table=None):
    """attn.cache_update: new_rows[b, t] written at position positions[b] + t
    of sequence b for t < clamp(lengths[b], 0, T). Contiguous caches are
    [B, capacity, Hk, d]; with block_table [B, M] the cache is pages
    [N, P, Hk, d] and position j of sequence b is cache[block_table[b, j // P],
    j % P]. Returns the updated copy."""
    out = np.array(cache, copy=True)
    batch, tokens = new_rows.shape[:2]
    for b in range(batch):
        real = tokens if lengths is None else min(max(int(lengths[b]), 0), tokens)
        for t in range(real):
            j = int(positions[b]) + t
            if block_table is None:
                out[b, j] = new_rows[b, t]
            else:
                page_size = cache.shape[1]
                out[int(block_table[b, j // page_size]), j % page_size] = new_rows[b, t]
    return out


def cache_gather(cache, block_table):
    """attn.cache_gather: [B, M * P, Hk, d] with row j of sequence b the cache
    row cache[block_table[b, j // P], j % P]; entries outside [0, N) give zero
    rows."""
    pages, page_size = cache.shape[:2]
    batch, width = block_table.shape
    out = np.zeros((batch, width * page_size) + cache.shape[2:], dtype=cache.dtype)
    for b in range(batch):
        for m in range(width):
            page = int(block_table[b, m])
            if 0 <= page < pages:
                out[b, m * page_size:(m + 1) * page_size] = cache[page]
    return out


def rope_at(t, positions, theta, fraction=1.0):
    """RoPE of per-sequence single tokens t [B, H, d] at positions [B]: the
    rotation `rope` applies at sequence index positions[b]."""
    return _rotate_half(t, np.asarray(positions)[:, None], theta, fraction)


def cca_decode_prologue(qr, kr, v_cur, conv_dw_w, conv_dw_b, conv_g_w, conv_g_b,
                        temp, conv_state, positions, num_heads, num_kv_heads,
                        head_dim, kernels, v_prev=None, shift_state=None,
                        qk_mean=False, value_shift=False, temperature="raw",
                        eps=1e-12, rope_theta=None, rope_fraction=1.0):
    """One CCA decode step (docs/semantics.md#attncca_decode_prologue), per
    sequence b with one new token: qr [B, 1, Lq], kr [B, 1, Lk], v_cur
    [B, 1, Lv] (Lv = Lk/2 with the value shift, else Lk), conv_state [B, P, C] (the last P
    pre-conv vectors u, oldest first), shift_state and v_prev [B, 1, Lk/2],
    positions [B] (RoPE only).

    Returns q [B, 1, Hq, d], k and v [B, 1, Hk, d], the new conv state (the
    last P rows of [conv_state | u_t]) and, with the value shift, the new
    shift state (v_prev).
    """
    hq, hk, d = num_heads, num_kv_heads, head_dim
    g = hq // hk
    lq = hq * d
    k0, k1 = kernels
    p = (k0 - 1) + (k1 - 1)
    u = np.concatenate([f64(qr)[:, 0], f64(kr)[:, 0]], axis=-1)  # [B, C]
    window = np.concatenate([f64(conv_state), u[:, None]], axis=1)  # [B, P+1, C]
    assert window.shape[1] == p + 1
    w_dw, b_dw = f64(conv_dw_w), f64(conv_dw_b)
    w_g, b_g = f64(conv_g_w), f64(conv_g_b)
    # Depthwise outputs at window rows k0-1 .. P (the k1 the grouped conv
    # reads, oldest first): m_s = b_dw + sum_i w_dw[:, 0, i] W[s - (k0-1) + i].
    m = []
    for s_ in range(k0 - 1, p + 1):
        acc = b_dw.copy()[None, :].repeat(u.shape[0], axis=0)
        for i in range(k0):
            acc = acc + w_dw[:, 0, i] * window[:, s_ - (k0 - 1) + i]
        m.append(acc)
    # Grouped conv: c[ch] = b_g[ch] + sum_t sum_e w_g[ch, e, t] m_t[head(ch) d + e].
    c = np.zeros_like(u) + b_g
    for ch in range(u.shape[1]):
        g0 = (ch // d) * d
        for t in range(k1):
            c[:, ch] += m[t][:, g0 : g0 + d] @ w_g[ch, :, t]
    cq = c[:, :lq].reshape(-1, hq, d)
    ck = c[:, lq:].reshape(-1, hk, d)
    qrh = u[:, :lq].reshape(-1, hq, d)
    krh = u[:, lq:].reshape(-1, hk, d)
    if qk_mean:
        q = cq + 0.5 * qrh + 0.5 * np.repeat(krh, g, axis=1)
        k = ck + 0.5 * qrh.reshape(-1, hk, g, d).mean(axis=2) + 0.5 * krh
    else:
        q, k = cq, ck
    temp = f64(temp)
    tau = np.exp(np.clip(temp, 1e-7, 2.0)) if temperature == "clamped" else temp
    q = np.sqrt(d) * q / np.sqrt((q * q).sum(-1, keepdims=True) + eps)
    k = np.sqrt(d) * k / np.sqrt((k * k).sum(-1, keepdims=True) + eps)
    k = k * tau[None, :, None]
    if rope_theta is not None:
        q = rope_at(q, positions, rope_theta, rope_fraction)
        k = rope_at(k, positions, rope_theta, rope_fraction)
    if value_shift:
        v = np.concatenate([f64(v_cur)[:, 0], f64(shift_state)[:, 0]], axis=-1)
    else:
        v = f64(v_cur)[:, 0]
    results = [q[:, None], k[:, None], v.reshape(-1, 1, hk, d), window[:, 1:]]
    if value_shift:
        results.append(f64(v_prev).copy())
    return tuple(results)
