#!/usr/bin/env python3
"""AttnFuse device check, decode part: the attn.flash_decode kernels (split + combine).

Run by `scripts/device-check.sh run DIR OUT` after device_bench.py. For every decode variant
of DIR/decode_variants.json (GQA 32/8 heads x 128, bf16, K=V and separate K/V; prepared by
`scripts/device-check.sh prepare`) and every context length x batch of CONTEXTS x BATCHES:

* allocates a contiguous cache [B, S, Hk, d] holding S = context tokens per sequence, the new
  token at position S - 1 (so every sequence attends to exactly `context` live tokens);
  shapes whose buffers do not fit in free GPU memory are skipped with the reason printed;
* launches the split kernel, then the combine kernel, through the runtime's C API (ctypes),
  with the workspace the manifest sizes;
* numerics (contexts <= NUMERICS_MAX_CONTEXT): the output against a float32 torch reference
  over the live tokens, and the cache row the kernel wrote against key_new / value_new;
* timing: CUDA events around split + combine, median of ITERS samples;
  achieved GB/s = bytes the cache really holds for the live tokens / time, and the fraction of
  HBM_GBPS (4.8 TB/s, H200);
* the same shapes with torch.nn.functional.scaled_dot_product_attention (enable_gqa; K/V in
  torch's [B, Hk, S, d] layout, a copy made before timing) and, when importable,
  flash_attn.flash_attn_with_kvcache (the cache layout as ours, cache_seqlens = context).

Writes OUT/decode-<date>-<gpu>.json and .md. `--dry-run` (no GPU, no torch: numpy) checks the
plumbing: manifests, launch dimensions, workspace size and buffer validation through the real
runtime library, the byte accounting and the report; the kernels are not run and its times
are numpy's.

Without a CUDA device in torch (or without torch) but with a driver the runtime can load (the
emulator: ATTNFUSE_CUDA_DRIVER=libattnfuse_cudasim.so), the kernels do run: numpy buffers are
copied to and from device memory through the runtime's memory API (afr_ctypes.HostMirror), at
HOST_CONTEXTS x HOST_BATCHES, numerics against the numpy reference, no timings.
"""
import argparse
import ctypes
import datetime
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import afr_ctypes as afr  # noqa: E402

CONTEXTS = (4096, 32768, 131072)
BATCHES = (1, 16, 64)
HOST_CONTEXTS, HOST_BATCHES = (200, 520), (1, 3)  # 1 to 3 splits
HBM_GBPS = 4800.0  # H200
NUMERICS_MAX_CONTEXT = 32768
WARMUP, ITERS = 3, 20
MEMORY_HEADROOM = 0.85  # use at most this fraction of the free memory


def bind_extra(lib):
    lib.afr_eval_expr.restype = ctypes.c_int
    lib.afr_eval_expr.argtypes = [ctypes.c_char_p, ctypes.POINTER(afr.Sizes),
                                  ctypes.POINTER(ctypes.c_int64)]
    lib.afr_kernel_workspace_bytes.restype = ctypes.c_int
    lib.afr_kernel_workspace_bytes.argtypes = [ctypes.c_void_p, ctypes.c_int,
                                               ctypes.POINTER(afr.Sizes),
                                               ctypes.POINTER(ctypes.c_int64)]


def eval_expr(rt, expr, sizes):
    if isinstance(expr, int):
        return expr
    value = ctypes.c_int64()
    rt._check(rt.lib.afr_eval_expr(str(expr).encode(), ctypes.byref(sizes), ctypes.byref(value)))
    return value.value


def tensor_array(named):
    """named: [(name, pointer, dtype name, shape)] (contiguous) -> ctypes array + keepalive."""
    arr = (afr.Tensor * len(named))()
    keep = []
    for j, (name, ptr, dtype, shape) in enumerate(named):
        b = name.encode()
        keep.append(b)
        arr[j].name = b
        arr[j].data = ptr
        arr[j].dtype = afr.DTYPE[dtype]
        arr[j].rank = len(shape)
        stride = 1
        for d in reversed(range(len(shape))):
            arr[j].shape[d] = shape[d]
            arr[j].strides[d] = stride
            stride *= shape[d]
    return arr, keep


class Backend:
    """Buffers and timing: torch on the GPU ("cuda"); numpy buffers with the kernels run
    through the runtime's memory API ("host": the emulator), or not run at all ("dry")."""

    def __init__(self, mode, rt=None):
        self.mode = mode
        self.dry = mode == "dry"
        self.host = mode == "host"
        self.numpy = mode in ("dry", "host")
        if self.numpy:
            import numpy as np
            self.np = np
            self.rng = np.random.default_rng(0)
            self.name = "cpu-dry-run"
            if self.host:
                self.mirror = afr.HostMirror(rt)
                self.name = afr.Driver().device_name(0) or "host-arrays"
        else:
            import torch
            self.torch = torch
            self.dev = torch.device("cuda", 0)
            torch.zeros(1, device=self.dev)
            self.name = torch.cuda.get_device_name(0)

    def free_bytes(self):
        if self.numpy:
            return 1 << 34
        free, _ = self.torch.cuda.mem_get_info()
        return free

    def randn(self, shape, dtype="bf16"):
        if self.numpy:
            a = self.rng.standard_normal(shape).astype(self.np.float32)
            return a if dtype == "f32" else (a.view(self.np.uint32) >> 16).astype(self.np.uint16)
        t = self.torch
        return t.randn(shape, device=self.dev, dtype=t.bfloat16 if dtype == "bf16" else t.float32)

    def empty(self, shape, dtype):
        if self.host:  # all-ones bytes (NaN): unwritten outputs cannot pass
            return self.np.full(shape, 0xFFFF, self.np.uint16) if dtype == "bf16" else \
                self.np.full(shape, self.np.nan, self.np.float32)
        if self.dry:
            return self.np.zeros(shape, dtype={"bf16": self.np.uint16, "f32": self.np.float32,
                                               "i32": self.np.int32}[dtype])
        t = self.torch
        return t.full(shape, float("nan"), device=self.dev,
                      dtype={"bf16": t.bfloat16, "f32": t.float32}[dtype])

    def full_i32(self, shape, value):
        if self.numpy:
            return self.np.full(shape, value, dtype=self.np.int32)
        return self.torch.full(shape, value, dtype=self.torch.int32, device=self.dev)

    def ptr(self, buf):
        return buf.ctypes.data if self.numpy else buf.data_ptr()

    def sync(self):
        if not self.numpy:
            self.torch.cuda.synchronize()

    def stream(self):
        return 0 if self.numpy else self.torch.cuda.current_stream().cuda_stream

    def median_ms(self, fn):
        if self.numpy:
            times = []
            for _ in range(3):
                t0 = time.perf_counter()
                fn()
                times.append((time.perf_counter() - t0) * 1e3)
            return sorted(times)[1]
        for _ in range(WARMUP):
            fn()
        self.sync()
        events = []
        for _ in range(ITERS):
            s = self.torch.cuda.Event(enable_timing=True)
            e = self.torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            events.append((s, e))
        self.sync()
        times = sorted(s.elapsed_time(e) for s, e in events)
        return times[len(times) // 2]


def reference(backend, q, k_new, v_new, kc, vc, ctx, scale):
    """float32 attention of the query over the ctx live tokens (the last is the new token)."""
    if backend.numpy:
        np = backend.np

        def f32(a):
            return (a.astype(np.uint32) << 16).view(np.float32)
        keys = f32(kc[:, :ctx]).copy()
        keys[:, ctx - 1] = f32(k_new[:, 0])
        values = keys if vc is None else f32(vc[:, :ctx]).copy()
        if vc is not None:
            values[:, ctx - 1] = f32(v_new[:, 0])
        B, _, H, d = q.shape
        G = H // keys.shape[2]
        qf = f32(q[:, 0])  # [B, H, d]
        kx = np.repeat(keys, G, axis=2)  # [B, ctx, H, d]
        vx = np.repeat(values, G, axis=2)
        s = np.einsum("bhd,bthd->bht", qf, kx) * scale
        w = np.exp(s - s.max(-1, keepdims=True))
        w /= w.sum(-1, keepdims=True)
        return np.einsum("bht,bthd->bhd", w, vx)[:, None]
    t = backend.torch
    keys = kc[:, :ctx].float().clone()
    keys[:, ctx - 1] = k_new[:, 0].float()
    values = keys if vc is None else vc[:, :ctx].float().clone()
    if vc is not None:
        values[:, ctx - 1] = v_new[:, 0].float()
    B, _, H, d = q.shape
    G = H // keys.shape[2]
    out = t.empty(B, 1, H, values.shape[3], device=q.device)
    for b in range(B):  # one sequence at a time keeps the f32 copies small
        kb = keys[b].repeat_interleave(G, dim=1).transpose(0, 1)  # [H, ctx, d]
        vb = values[b].repeat_interleave(G, dim=1).transpose(0, 1)
        s = t.einsum("hd,htd->ht", q[b, 0].float(), kb) * scale
        out[b, 0] = t.einsum("ht,htd->hd", t.softmax(s, dim=-1), vb)
    return out


def to_f32(backend, a):
    if backend.numpy:
        np = backend.np
        return (a.astype(np.uint32) << 16).view(np.float32) if a.dtype == np.uint16 else a
    return a.float()


def run_shape(rt, man, split_idx, combine_idx, kdoc, backend, ctx, B, flash_attn, log):
    cfg = kdoc["config"]
    hq, hk, d, dv = cfg["num_heads"], cfg["num_kv_heads"], cfg["head_dim"], cfg["value_dim"]
    kv = cfg["key_is_value"]
    entry = dict(context=ctx, B=B, key_is_value=kv)
    sizes = afr.Sizes(B, ctx, 1)
    ws_bytes = ctypes.c_int64()
    rt._check(rt.lib.afr_kernel_workspace_bytes(man.handle, split_idx, ctypes.byref(sizes),
                                                ctypes.byref(ws_bytes)))
    cache_bytes = B * ctx * hk * (d + (0 if kv else dv)) * 2
    live_bytes = cache_bytes  # every sequence holds `ctx` live tokens
    # Ours: the cache(s) + workspace; SDPA needs its own K/V copy in [B, Hk, S, d].
    need = cache_bytes + ws_bytes.value + (cache_bytes if not backend.numpy else 0)
    entry.update(cache_bytes=cache_bytes, live_bytes=live_bytes,
                 workspace_bytes=ws_bytes.value)
    free = backend.free_bytes()
    if need > MEMORY_HEADROOM * free:
        entry["skipped"] = (f"needs {need / 2**30:.1f} GiB (cache, workspace, SDPA copy), "
                            f"{free / 2**30:.1f} GiB free")
        log(f"  skip context={ctx} B={B}: {entry['skipped']}")
        return entry

    ws_shape = None
    for t in kdoc["tensors"]:
        if t["name"] == "workspace":
            ws_shape = [eval_expr(rt, e, sizes) for e in t["shape"]]
    entry["num_splits"] = ws_shape[2]
    grid, block, smem = man.launch_dims(split_idx, B, ctx, 1)
    entry["grid"], entry["block"], entry["smem"] = grid, block, smem

    q = backend.randn((B, 1, hq, d))
    k_new = backend.randn((B, 1, hk, d))
    v_new = None if kv else backend.randn((B, 1, hk, dv))
    kc = backend.randn((B, ctx, hk, d))
    vc = None if kv else backend.randn((B, ctx, hk, dv))
    pos = backend.full_i32((B,), ctx - 1)
    ws = backend.empty(ws_shape, "f32")
    out = backend.empty((B, 1, hq, dv), "bf16")
    split_buffers = [("query", q, "bf16", (B, 1, hq, d)),
                     ("key_new", k_new, "bf16", (B, 1, hk, d)),
                     ("key_cache", kc, "bf16", (B, ctx, hk, d)),
                     ("positions", pos, "i32", (B,)),
                     ("workspace", ws, "f32", tuple(ws_shape))]
    if not kv:
        split_buffers += [("value_new", v_new, "bf16", (B, 1, hk, dv)),
                          ("value_cache", vc, "bf16", (B, ctx, hk, dv))]
    combine_buffers = [("workspace", ws, "f32", tuple(ws_shape)),
                       ("output", out, "bf16", (B, 1, hq, dv))]
    split_args = tensor_array([(n, backend.ptr(b), dt, shp) for n, b, dt, shp in split_buffers])
    combine_args = tensor_array([(n, backend.ptr(b), dt, shp)
                                 for n, b, dt, shp in combine_buffers])
    man.validate(split_idx, B, ctx, 1, split_args)
    man.validate(combine_idx, B, ctx, 1, combine_args)
    scale = float(cfg["scale"])

    if backend.dry:
        def step():
            # The plumbing only: the reference stands in for the kernels.
            o = reference(backend, q, k_new, v_new, kc, vc, ctx, scale)
            out[...] = (o.astype(backend.np.float32).view(backend.np.uint32) >> 16)
            kc[:, ctx - 1] = k_new[:, 0]
            if not kv:
                vc[:, ctx - 1] = v_new[:, 0]
    elif backend.host:
        split_kernel = man.load(split_idx)
        combine_kernel = man.load(combine_idx)

        def step():
            # Device copies made per launch: the combine reads the workspace the split wrote
            # (copied back into ws by the first launch).
            for kernel, buffers in ((split_kernel, split_buffers),
                                    (combine_kernel, combine_buffers)):
                args = backend.mirror.make_tensors([(n, afr.HostArray(b, dt))
                                                    for n, b, dt, _ in buffers])
                try:
                    kernel.launch(B, ctx, 1, args, 0)
                finally:
                    args.free()
    else:
        split_kernel = man.load(split_idx)
        combine_kernel = man.load(combine_idx)
        stream = backend.stream()

        def step():
            split_kernel.launch(B, ctx, 1, split_args, stream)
            combine_kernel.launch(B, ctx, 1, combine_args, stream)

    if ctx <= NUMERICS_MAX_CONTEXT:
        step()
        backend.sync()
        ref = reference(backend, q, k_new, v_new, kc, vc, ctx, scale)
        got = to_f32(backend, out)
        if backend.numpy:
            np = backend.np
            finite = bool(np.isfinite(got).all())
            diff = float(np.abs(got - ref).max()) if finite else float("inf")
            scale_ref = float(np.abs(ref).max())
            written = bool((kc[:, ctx - 1] == k_new[:, 0]).all())
            if not kv:
                written = written and bool((vc[:, ctx - 1] == v_new[:, 0]).all())
        else:
            diff = float((got - ref).abs().max())
            finite = bool(backend.torch.isfinite(got).all())
            scale_ref = float(ref.abs().max())
            written = bool((kc[:, ctx - 1] == k_new[:, 0]).all())
            if not kv:
                written = written and bool((vc[:, ctx - 1] == v_new[:, 0]).all())
        # bf16 output of an f32-accumulated average of bf16 values: a few bf16 ulps.
        entry["numerics"] = dict(max_abs=diff, ref_max_abs=scale_ref, finite=finite,
                                 cache_row_written=written,
                                 passed=finite and written and diff <= 2e-2 * max(scale_ref, 1.0))
    if backend.host:
        entry["timing"] = "skipped: host arrays on a driver without timings (the emulator)"
        log(f"  context={ctx:6d} B={B:2d}: " + (
            f"numerics {'ok' if entry['numerics']['passed'] else 'FAIL'} "
            f"(max abs {entry['numerics']['max_abs']:.3g}, {entry['num_splits']} splits)"
            if "numerics" in entry else "no numerics"))
        return entry
    ms = backend.median_ms(step)
    entry["attnfuse_ms"] = ms
    entry["attnfuse_gbps"] = live_bytes / ms / 1e6
    entry["attnfuse_hbm_fraction"] = entry["attnfuse_gbps"] / HBM_GBPS

    if not backend.numpy:
        t = backend.torch
        F = t.nn.functional
        try:
            kt = kc.transpose(1, 2).contiguous()  # [B, Hk, S, d]
            vt = kt if kv else vc.transpose(1, 2).contiguous()
            qt = q.transpose(1, 2)  # [B, Hq, 1, d]
            fn = lambda: F.scaled_dot_product_attention(qt, kt, vt, scale=scale, enable_gqa=True)  # noqa: E731
            sdpa_out = fn().transpose(1, 2)
            entry["sdpa_max_abs_vs_ref"] = float((sdpa_out.float() - ref).abs().max()) \
                if ctx <= NUMERICS_MAX_CONTEXT else None
            ms = backend.median_ms(fn)
            entry["sdpa_ms"], entry["sdpa_gbps"] = ms, live_bytes / ms / 1e6
            del kt, vt
        except Exception as e:
            entry["sdpa_error"] = str(e).splitlines()[0][:300]
        if flash_attn is not None:
            try:
                seqlens = t.full((B,), ctx, dtype=t.int32, device=q.device)
                fn = lambda: flash_attn(q, kc, kc if kv else vc, cache_seqlens=seqlens,  # noqa: E731
                                        softmax_scale=scale)
                ms = backend.median_ms(fn)
                entry["flash_attn_ms"], entry["flash_attn_gbps"] = ms, live_bytes / ms / 1e6
            except Exception as e:
                entry["flash_attn_error"] = str(e).splitlines()[0][:300]
        del q, k_new, v_new, kc, vc, ws, out
        t.cuda.empty_cache()
    log(f"  context={ctx:6d} B={B:2d}: {entry['attnfuse_gbps']:8.1f} GB/s "
        f"({100 * entry['attnfuse_hbm_fraction']:.1f}% of {HBM_GBPS:.0f})"
        + (f", SDPA {entry['sdpa_gbps']:.1f} GB/s" if "sdpa_gbps" in entry else "")
        + (f", flash_attn {entry['flash_attn_gbps']:.1f} GB/s" if "flash_attn_gbps" in entry
           else "")
        + (f", numerics {'ok' if entry['numerics']['passed'] else 'FAIL'} "
           f"(max abs {entry['numerics']['max_abs']:.3g})" if "numerics" in entry else ""))
    return entry


def markdown(doc):
    lines = [f"# Decode (attn.flash_decode) on {doc['gpu']}\n",
             f"{doc['date']}; bytes = what the cache holds for the live tokens "
             f"(B x context x Hk x (d [+ dv]) x 2); % of {HBM_GBPS:.0f} GB/s.\n",
             ("**Dry run**: no GPU; the kernels did not run (a numpy reference stood in for "
              "them), so the times and the numerics column only show that the plumbing works.\n"
              if doc["dry_run"] else ""),
             ("**Host arrays** (no CUDA device in torch; the driver is "
              f"{doc.get('driver')}): the kernels ran on copies of numpy buffers made through "
              "the runtime's memory API; numerics only, no timings.\n"
              if doc.get("mode") == "host" else ""),
             "| variant | context | B | splits | ours ms | ours GB/s | % HBM | SDPA GB/s | "
             "flash_attn GB/s | numerics |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for v in doc["variants"]:
        for e in v["shapes"]:
            if "skipped" in e or "error" in e:
                lines.append(f"| {v['name']} | {e['context']} | {e['B']} | - | - | - | - | - | - | "
                             f"{e.get('skipped') or e.get('error')} |")
                continue

            def num(key, spec=".1f"):
                return format(e[key], spec) if isinstance(e.get(key), (int, float)) else "-"
            n = e.get("numerics")
            if "timing" in e:  # host arrays: numerics only
                lines.append(f"| {v['name']} | {e['context']} | {e['B']} | {e['num_splits']} "
                             f"| - | - | - | - | - | "
                             f"{('ok' if n['passed'] else 'FAIL') + ' ' + format(n['max_abs'], '.2g') if n else '-'} |")
                continue
            lines.append(
                f"| {v['name']} | {e['context']} | {e['B']} | {e['num_splits']} "
                f"| {num('attnfuse_ms', '.4f')} | {num('attnfuse_gbps')} "
                f"| {100 * e['attnfuse_hbm_fraction']:.1f} | {num('sdpa_gbps')} "
                f"| {num('flash_attn_gbps')} "
                f"| {('ok' if n['passed'] else 'FAIL') + ' ' + format(n['max_abs'], '.2g') if n else '-'} |")
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dir", required=True, help="the prepared directory")
    p.add_argument("--lib", required=True, help="libattnfuse_runtime.so")
    p.add_argument("--out", required=True)
    p.add_argument("--deadline", type=float, default=120.0, help="seconds for all shapes")
    p.add_argument("--dry-run", action="store_true",
                   help="no GPU: numpy buffers, the kernels are not run")
    p.add_argument("--require-pass", action="store_true",
                   help="exit 1 unless every numerics check passes")
    args = p.parse_args()
    start = time.time()
    global CONTEXTS, BATCHES
    mode = "dry" if args.dry_run else "cuda"
    if not args.dry_run:
        try:
            import torch
            if not torch.cuda.is_available():
                mode = "host"
        except ImportError:
            mode = "host"
    if args.dry_run:
        CONTEXTS, BATCHES = (256, 1024), (1, 4)
    elif mode == "host":
        CONTEXTS, BATCHES = HOST_CONTEXTS, HOST_BATCHES
    rt = afr.Runtime(args.lib)
    bind_extra(rt.lib)
    if not args.dry_run:
        rt.create_context(0)
    backend = Backend(mode, rt)
    flash_attn = None
    if mode == "cuda":
        try:
            from flash_attn import flash_attn_with_kvcache as flash_attn
        except Exception as e:
            print(f"flash_attn not importable ({str(e).splitlines()[0][:120]}): SDPA only")

    with open(os.path.join(args.dir, "decode_variants.json")) as f:
        variants = json.load(f)
    os.makedirs(args.out, exist_ok=True)
    doc = dict(date=datetime.datetime.now(datetime.timezone.utc).isoformat(), gpu=backend.name,
               hbm_gbps=HBM_GBPS, contexts=CONTEXTS, batches=BATCHES, dry_run=args.dry_run,
               mode=mode, driver=os.environ.get("ATTNFUSE_CUDA_DRIVER") or "libcuda.so.1",
               variants=[])
    for v in variants:
        entry = dict(name=v["name"], description=v["description"], shapes=[])
        doc["variants"].append(entry)
        print(f"== {v['name']}: {v['description']}", flush=True)
        man = rt.load_manifest(os.path.join(args.dir, "kernels", v["name"], "manifest.json"))
        kinds = {k["kind"]: (man.index(k["name"]), k) for k in man.kernels()}
        split_idx, kdoc = kinds["flash_decode_split"]
        combine_idx, _ = kinds["flash_decode_combine"]
        for ctx in CONTEXTS:
            for B in BATCHES:
                if time.time() - start > args.deadline:
                    entry["shapes"].append(dict(context=ctx, B=B, skipped="deadline"))
                    continue
                try:
                    entry["shapes"].append(run_shape(rt, man, split_idx, combine_idx, kdoc,
                                                     backend, ctx, B, flash_attn,
                                                     lambda s: print(s, flush=True)))
                except Exception as e:
                    print(f"  context={ctx} B={B}: {type(e).__name__}: {e}", flush=True)
                    entry["shapes"].append(dict(context=ctx, B=B,
                                                error=f"{type(e).__name__}: {e}"[:300]))
    tag = (datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d") + "-" +
           re.sub(r"[^A-Za-z0-9]+", "-", backend.name).strip("-"))
    with open(os.path.join(args.out, f"decode-{tag}.json"), "w") as f:
        json.dump(doc, f, indent=2)
    text = markdown(doc)
    with open(os.path.join(args.out, f"decode-{tag}.md"), "w") as f:
        f.write(text)
    print(text)
    print(f"wrote {args.out}/decode-{tag}.json and .md in {time.time() - start:.1f} s")
    if args.require_pass:
        shapes = [e for v in doc["variants"] for e in v["shapes"]]
        bad = [f"{v['name']} context={e['context']} B={e['B']}: "
               + (e.get("error") or e.get("skipped") or "numerics FAIL")
               for v in doc["variants"] for e in v["shapes"]
               if not e.get("numerics", {}).get("passed")]
        print(f"numerics: {len(shapes) - len(bad)} of {len(shapes)} shapes pass"
              + ("" if not bad else "; " + "; ".join(bad)))
        return 0 if shapes and not bad else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
