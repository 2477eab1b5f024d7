#!/usr/bin/env python3
"""AttnFuse device check: numerics and timing of the compiled sm_90a kernels on a GPU.

Run by `scripts/device-check.sh run DIR OUT` (it builds the runtime first). Two roles:

* parent (default): runs a worker process over the variants of DIR/variants.json, restarts it
  after a crash or a hang (no progress for --stall-seconds: the watchdog kills it, the variant in
  progress is recorded as hung, the next one starts), stops at --deadline, then writes
  OUT/results-<date>-<gpu>.json and, when matplotlib is importable, the PNG chart.
* worker (--worker): imports torch, loads each variant's manifest through the runtime's C API
  (ctypes), and for every kernel
    - numerics: bf16 inputs, f32 PyTorch reference of the same math, max abs / relative error
      (and, for attention, the error of torch SDPA in bf16 against the same reference, as the
      level bf16 arithmetic reaches); output buffers start as NaN so unwritten rows fail;
    - timing: CUDA events, warm-up then the median of >= 20 launches, at sequence 1k, 4k, 16k
      with the batch chosen for 32k tokens per launch (attention also times
      torch.nn.functional.scaled_dot_product_attention with the cuDNN and the flash backends on
      the same shapes; the projection GEMM is timed against torch.nn.functional.linear);
    - the attention backward (a flash_attention_grad_dq kernel and the dK/dV kernel its launch
      names, launched back to back): dQ, dK, dV against float32 autograd through the written-out
      forward, and the two launches timed as one step, in TFLOP/s by FlashAttention's count
      (2.5 times the forward's), next to torch SDPA's backward (the gradient of one forward's
      output, cuDNN and flash backends) on the same inputs.
  It appends one JSON line per event to a progress file that the parent reads.

Without a CUDA device in torch but with a driver the runtime can load (the emulator:
ATTNFUSE_CUDA_DRIVER=libattnfuse_cudasim.so), the worker runs the same kernels on CPU tensors
that afr_ctypes.HostMirror copies to and from device memory through the runtime's memory API,
at the small shapes HOST_NUMERICS_SHAPES, numerics only (an emulator has no timings).
`scripts/device-check.sh emulate DIR OUT bench` does that in CI.
"""
import argparse
import datetime
import json
import math
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SEQS = (1024, 4096, 16384)
TOKENS_PER_LAUNCH = 32768
GEMM_SEQ = 4096
WARMUP, ITERS, REPEAT = 3, 20, 5  # median of 20 samples, each the mean of 5 launches
# (B, S, T) of the numerics checks: tails that are not tile multiples, S < T (causal offset).
NUMERICS_SHAPES = ((2, 1000, 1000), (1, 4096, 4096), (1, 384, 1000))
# With host arrays (the emulator: seconds per launch): partial tiles, three KV tiles, S < T.
HOST_NUMERICS_SHAPES = ((2, 70, 70), (1, 384, 384), (1, 100, 300))


# ------------------------------------------------------------------------------- worker

def worker(args):
    import torch
    import torch.nn.functional as F
    sys.path.insert(0, HERE)
    import afr_ctypes as afr

    progress = open(args.progress, "a", buffering=1)

    def emit(**event):
        progress.write(json.dumps(event) + "\n")
        progress.flush()
        os.fsync(progress.fileno())

    global SEQS, NUMERICS_SHAPES, TOKENS_PER_LAUNCH, GEMM_SEQ
    dry = args.dry_run_cpu
    host = not dry and not torch.cuda.is_available()
    rt = afr.Runtime(args.lib)
    make_tensors = afr.make_tensors
    if host:
        # No CUDA device in torch: CPU tensors, copied through the runtime's memory API to
        # whatever driver it loads (the emulator), numerics only.
        cc = rt.create_context(0)
        make_tensors = afr.HostMirror(rt).make_tensors
        NUMERICS_SHAPES = HOST_NUMERICS_SHAPES
        dev = torch.device("cpu")
        emit(event="env", gpu=afr.Driver().device_name(0) or "unknown", compute_capability=cc,
             torch=torch.__version__, host_arrays=True,
             driver=os.environ.get("ATTNFUSE_CUDA_DRIVER") or "libcuda.so.1",
             note="torch has no CUDA device: host arrays through afr_mem_alloc/afr_memcpy_*; "
                  "no timings")
    elif dry:
        # Plumbing check without a GPU: the real runtime library parses the manifests and
        # validates the (CPU) buffers; the "kernel" writes the reference result.
        SEQS, NUMERICS_SHAPES, TOKENS_PER_LAUNCH, GEMM_SEQ = (
            (128, 256), ((2, 200, 200), (1, 256, 256), (1, 96, 200)), 512, 256)
        dev = torch.device("cpu")
        emit(event="env", gpu="cpu-dry-run", torch=torch.__version__)
    else:
        dev = torch.device("cuda", 0)
        torch.zeros(1, device=dev)  # creates the primary context the runtime retains
        cc = rt.create_context(0)
        props = torch.cuda.get_device_properties(0)
        emit(event="env", gpu=torch.cuda.get_device_name(0), compute_capability=cc,
             sm_count=props.multi_processor_count, torch=torch.__version__,
             cuda=torch.version.cuda, cudnn=torch.backends.cudnn.version())

    def sync():
        if not dry and not host:
            torch.cuda.synchronize()

    def stream():
        return 0 if dry or host else torch.cuda.current_stream().cuda_stream

    def median_ms(fn):
        if dry:
            times = []
            for _ in range(ITERS):
                t0 = time.perf_counter()
                fn()
                times.append((time.perf_counter() - t0) * 1e3)
            return sorted(times)[len(times) // 2]
        for _ in range(WARMUP):
            fn()
        sync()
        # Each sample times REPEAT back-to-back launches, so the GPU queue stays full and the
        # host-side launch cost (ctypes, descriptor encoding) is hidden as in real use.
        events = []
        for _ in range(ITERS):
            s = torch.cuda.Event(enable_timing=True)
            e = torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(REPEAT):
                fn()
            e.record()
            events.append((s, e))
        sync()
        times = sorted(s.elapsed_time(e) / REPEAT for s, e in events)
        return times[len(times) // 2]

    def errors(out, ref):
        out = out.float()
        diff = (out - ref).abs()
        finite = bool(torch.isfinite(out).all())
        max_abs = float(diff.max()) if finite else float("inf")
        scale = float(ref.abs().max())
        rel_l2 = float((out - ref).norm() / ref.norm()) if finite else float("inf")
        # The error of merely rounding the exact result to bf16: the floor any bf16 output has.
        rounding = float((ref - ref.bfloat16().float()).abs().max())
        return dict(finite=finite, max_abs=max_abs, max_rel=max_abs / max(scale, 1e-30),
                    rel_l2=rel_l2, ref_max_abs=scale, bf16_rounding_max_abs=rounding)

    def shape_of(expr_list, B, S, T):
        env = {"B": B, "S": S, "T": T, "ceil_div": lambda a, b: -(-a // b),
               "__builtins__": {}}
        return [int(e) if isinstance(e, int) else int(eval(e, env)) for e in expr_list]

    # ---- flash attention
    def fa_inputs(kdoc, B, S, T):
        cfg = kdoc["config"]
        ts = {}
        for t in kdoc["tensors"]:
            shape = shape_of(t["shape"], B, S, T)
            if t["operand"] < 0:
                ts[t["name"]] = torch.full(shape, float("nan"), dtype=torch.bfloat16, device=dev)
            else:
                ts[t["name"]] = torch.randn(shape, dtype=torch.bfloat16, device=dev)
        q, k = ts["query"], ts["key"]
        v = k if cfg.get("key_is_value") else ts["value"]
        return ts, q, k, v

    def fa_reference(q, k, v, cfg):
        B, S, H, _ = q.shape
        T, Hk = k.shape[1], k.shape[2]
        G = H // Hk
        scale = float(cfg["scale"])
        out = torch.empty(B, S, H, v.shape[3], dtype=torch.float32, device=dev)
        rows = torch.arange(S, device=dev)[:, None]
        cols = torch.arange(T, device=dev)[None, :]
        mask = cols > rows + (T - S)  # causal, bottom-right aligned (the kernel's convention)
        for b in range(B):
            for h in range(H):
                s = (q[b, :, h].float() @ k[b, :, h // G].float().T) * scale
                if cfg.get("causal"):
                    s = s.masked_fill(mask, float("-inf"))
                out[b, :, h] = torch.softmax(s, dim=-1) @ v[b, :, h // G].float()
        return out

    def sdpa(q, k, v, cfg, backend):
        """SDPA on [B,H,S,d] views; returns (callable, note)."""
        from torch.nn.attention import SDPBackend, sdpa_kernel
        H, Hk = q.shape[2], k.shape[2]
        qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        be = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}[backend]
        causal = bool(cfg.get("causal"))
        scale = float(cfg["scale"])
        if q.shape[1] != k.shape[1] and causal:
            # torch's is_causal is top-left aligned; the kernel's mask is bottom-right.
            return None, "S != T causal: not comparable"

        def call(kk, vv, gqa):
            extra = {"enable_gqa": True} if gqa else {}  # older torch has no enable_gqa
            with sdpa_kernel(be):
                return F.scaled_dot_product_attention(qt, kk, vv, is_causal=causal, scale=scale,
                                                      **extra)
        note = ""
        if H != Hk:
            try:
                call(kt, vt, True)
                sync()
                return (lambda: call(kt, vt, True)), "enable_gqa"
            except Exception as e:  # backend without native GQA: expand K/V beforehand
                note = f"GQA expanded (enable_gqa failed: {str(e).splitlines()[0][:120]})"
                kt = kt.repeat_interleave(H // Hk, dim=1)
                vt = kt if v is k else vt.repeat_interleave(H // Hk, dim=1)
        call(kt, vt, False)
        sync()
        return (lambda: call(kt, vt, False)), note

    def time_sdpa(entry, flops, timed):
        """entry's sdpa_<backend>_* for the cuDNN and flash backends (timed(backend) gives the
        callable and a note) and vs_cudnn."""
        for backend in ("cudnn", "flash"):
            try:
                fn, note = timed(backend)
                ms = median_ms(fn)
                entry[f"sdpa_{backend}_ms"] = ms
                entry[f"sdpa_{backend}_tflops"] = flops / ms / 1e9
                if note:
                    entry[f"sdpa_{backend}_note"] = note
            except Exception as e:
                entry[f"sdpa_{backend}_error"] = str(e).splitlines()[0][:300]
        if "attnfuse_ms" in entry and "sdpa_cudnn_ms" in entry:
            entry["vs_cudnn"] = entry["sdpa_cudnn_ms"] / entry["attnfuse_ms"]

    def fa_flops(B, S, T, H, d, dv, causal):
        f = 2.0 * B * H * S * T * (d + dv)
        if causal and S == T:
            f *= (S + 1) / (2.0 * S)
        return f

    def run_fa(man, idx, kdoc, kernel, res):
        cfg = kdoc["config"]
        if cfg.get("query_rope_dims") or cfg.get("key_rope_dims"):
            res["skipped"] = "RoPE-on-load tables are not generated by the device check yet"
            return
        H, d, dv = cfg["num_heads"], cfg["head_dim"], cfg.get("value_dim", cfg["head_dim"])
        res["numerics"] = []
        for (B, S, T) in NUMERICS_SHAPES:
            emit(event="progress", step=f"{kdoc['name']} numerics B={B} S={S} T={T}")
            torch.manual_seed(1234)
            ts, q, k, v = fa_inputs(kdoc, B, S, T)
            entry = dict(B=B, S=S, T=T)
            try:
                kernel.launch(B, S, T, make_tensors(list(ts.items())), stream())
                sync()
                ref = fa_reference(q, k, v, cfg)
                entry.update(errors(ts["output"], ref))
                try:
                    fn, note = sdpa(q, k, v, cfg, "flash") if not host else (None, "")
                    if fn is not None:
                        entry["sdpa_bf16"] = errors(fn().transpose(1, 2), ref)
                except Exception as e:
                    entry["sdpa_bf16_error"] = str(e).splitlines()[0][:300]
                # Pass: within 4x of what bf16 SDPA (or plain rounding) reaches.
                base = max(entry.get("sdpa_bf16", {}).get("max_abs", 0.0),
                           entry["bf16_rounding_max_abs"])
                entry["pass"] = bool(entry["finite"] and entry["rel_l2"] <= 1e-2 and
                                     entry["max_abs"] <= max(4 * base, 1e-2))
            except Exception as e:
                entry["error"] = str(e)
                entry["pass"] = False
            res["numerics"].append(entry)
            emit(event="progress", step=f"numerics done: {json.dumps(entry)}")
            del ts, q, k, v
        res["timing"] = []
        if host:
            res["timing_skipped"] = "host arrays (no CUDA device in torch): no timings"
            return
        for S in SEQS:
            B = max(1, TOKENS_PER_LAUNCH // S)
            T = S
            emit(event="progress", step=f"{kdoc['name']} timing B={B} S={S}")
            torch.manual_seed(0)
            ts, q, k, v = fa_inputs(kdoc, B, S, T)
            flops = fa_flops(B, S, T, H, d, dv, bool(cfg.get("causal")))
            entry = dict(B=B, S=S, T=T, flops=flops)
            tensors = make_tensors(list(ts.items()))
            try:
                ms = median_ms(lambda: kernel.launch(B, S, T, tensors, stream()))
                entry["attnfuse_ms"] = ms
                entry["attnfuse_tflops"] = flops / ms / 1e9
            except Exception as e:
                entry["attnfuse_error"] = str(e)
            time_sdpa(entry, flops, lambda backend: sdpa(q, k, v, cfg, backend))
            res["timing"].append(entry)
            emit(event="progress", step=f"timing done: {json.dumps(entry)}")
            del ts, q, k, v, tensors
            if not dry:
                torch.cuda.empty_cache()

    # ---- the attention backward: the dQ kernel (dQ and D = rowsum(dO * O)), then dK/dV
    def grad_inputs(kdoc, dkv_doc, B, S, T):
        """Random Q, K, V, dO (bf16); O and the lse from a float32 forward; NaN outputs."""
        cfg = kdoc["config"]
        H, Hk, d = cfg["num_heads"], cfg["num_kv_heads"], cfg["head_dim"]
        keqv = bool(cfg.get("key_is_value"))
        q = torch.randn(B, S, H, d, dtype=torch.bfloat16, device=dev)
        k = torch.randn(B, T, Hk, d, dtype=torch.bfloat16, device=dev)
        v = k if keqv else torch.randn(B, T, Hk, d, dtype=torch.bfloat16, device=dev)
        do = torch.randn(B, S, H, d, dtype=torch.bfloat16, device=dev)
        with torch.no_grad():
            logits = grad_logits(q.float(), k.float(), cfg)
            lse = torch.logsumexp(logits, dim=-1)  # [B, H, S]
            o = torch.softmax(logits, dim=-1) @ v.float().repeat_interleave(
                H // Hk, dim=2).transpose(1, 2)
        nan = dict(dtype=torch.bfloat16, device=dev)
        ts = dict(query=q, key=k, output=o.transpose(1, 2).contiguous().bfloat16(),
                  output_grad=do, lse=lse.transpose(1, 2).contiguous(),
                  delta=torch.full((B, S, H), float("nan"), device=dev),
                  query_grad=torch.full((B, S, H, d), float("nan"), **nan),
                  key_grad=torch.full((B, T, Hk, d), float("nan"), **nan))
        if not keqv:
            ts["value"] = v
            ts["value_grad"] = torch.full((B, T, Hk, d), float("nan"), **nan)
        # Each launch binds the tensors its kernel names (D is the dQ kernel's result and the
        # dK/dV kernel's operand: with host arrays, bind the second after the first ran).
        def bind(doc):
            return make_tensors([(t["name"], ts[t["name"]]) for t in doc["tensors"]])
        return ts, bind, (q, k, v, do)

    def grad_logits(q, k, cfg):
        """[B, H, S, T] scaled logits, causal bottom-right aligned (the kernels' convention)."""
        H, Hk = q.shape[2], k.shape[2]
        S, T = q.shape[1], k.shape[1]
        kr = k.repeat_interleave(H // Hk, dim=2)
        logits = torch.einsum("bihc,bjhc->bhij", q, kr) * float(cfg["scale"])
        if cfg.get("causal"):
            mask = torch.arange(T, device=dev)[None, :] > \
                torch.arange(S, device=dev)[:, None] + (T - S)
            logits = logits.masked_fill(mask, float("-inf"))
        return logits

    def grad_reference(q, k, v, do, cfg, keqv):
        """dQ, dK(+dV for K=V), dV by float32 autograd through the written-out forward."""
        H, Hk = q.shape[2], k.shape[2]
        qf = q.float().requires_grad_()
        kf = k.float().requires_grad_()
        vf = kf if keqv else v.float().requires_grad_()
        p = torch.softmax(grad_logits(qf, kf, cfg), dim=-1)
        o = (p @ vf.repeat_interleave(H // Hk, dim=2).transpose(1, 2)).transpose(1, 2)
        wrt = (qf, kf) if keqv else (qf, kf, vf)
        return torch.autograd.grad(o, wrt, do.float())

    def grad_flops(B, S, T, H, d, causal):
        # FlashAttention's count: the backward is 2.5 times the forward's 4 B H S T d (5
        # products against 2; the kernels here recompute S and dP in both, 7 products).
        return 2.5 * fa_flops(B, S, T, H, d, d, causal)

    def run_fa_grad(man, idx, kdoc, kernel, res):
        cfg = kdoc["config"]
        if dry:
            res["skipped"] = "no dry-run reference for the backward"
            return
        dkv_idx = man.index(kdoc["then"])
        dkv_doc = man.kernels()[dkv_idx]
        dkv = man.load(dkv_idx)
        res["then"] = dkv_doc["name"]
        H, d = cfg["num_heads"], cfg["head_dim"]
        keqv, causal = bool(cfg.get("key_is_value")), bool(cfg.get("causal"))
        names = ["query_grad", "key_grad"] + ([] if keqv else ["value_grad"])

        def both(B, S, T, dq_tensors, dkv_tensors):
            kernel.launch(B, S, T, dq_tensors, stream())
            dkv.launch(B, S, T, dkv_tensors, stream())

        res["numerics"] = []
        for (B, S, T) in (NUMERICS_SHAPES[0], NUMERICS_SHAPES[2]):
            emit(event="progress", step=f"{kdoc['name']} numerics B={B} S={S} T={T}")
            torch.manual_seed(4321)
            entry = dict(B=B, S=S, T=T)
            try:
                ts, bind, (q, k, v, do) = grad_inputs(kdoc, dkv_doc, B, S, T)
                kernel.launch(B, S, T, bind(kdoc), stream())
                dkv.launch(B, S, T, bind(dkv_doc), stream())
                sync()
                refs = grad_reference(q, k, v, do, cfg, keqv)
                # Pass: every gradient within 2e-2 relative L2 of float32 autograd (P and dS
                # go through bf16 as wgmma operands; each gradient is rounded once).
                ok = True
                for name, ref in zip(names, refs):
                    entry[name] = errors(ts[name], ref)
                    ok = ok and entry[name]["finite"] and entry[name]["rel_l2"] <= 2e-2
                entry["pass"] = bool(ok)
            except Exception as e:
                entry["error"] = str(e)
                entry["pass"] = False
            res["numerics"].append(entry)
            emit(event="progress", step=f"numerics done: {json.dumps(entry)}")
        res["timing"] = []
        if host:
            res["timing_skipped"] = "host arrays (no CUDA device in torch): no timings"
            return
        for S in SEQS:
            B = max(1, TOKENS_PER_LAUNCH // S)
            emit(event="progress", step=f"{kdoc['name']} backward timing B={B} S={S}")
            torch.manual_seed(0)
            ts, bind, (q, k, v, do) = grad_inputs(kdoc, dkv_doc, B, S, S)
            dq_t, dkv_t = bind(kdoc), bind(dkv_doc)
            flops = grad_flops(B, S, S, H, d, causal)
            entry = dict(B=B, S=S, T=S, flops=flops)
            try:
                ms = median_ms(lambda: both(B, S, S, dq_t, dkv_t))
                entry["attnfuse_ms"], entry["attnfuse_tflops"] = ms, flops / ms / 1e9
            except Exception as e:
                entry["attnfuse_error"] = str(e)
            def sdpa_backward(backend):
                """torch's SDPA backward on the same inputs: the forward once, then the
                gradient of its output (timed)."""
                qg, kg = q.detach().requires_grad_(), k.detach().requires_grad_()
                vg = kg if keqv else v.detach().requires_grad_()
                fn, note = sdpa(qg, kg, vg, cfg, backend)
                out, grad = fn(), do.transpose(1, 2)
                wrt = (qg, kg) if keqv else (qg, kg, vg)
                return (lambda: torch.autograd.grad(out, wrt, grad, retain_graph=True)), note

            time_sdpa(entry, flops, sdpa_backward)
            res["timing"].append(entry)
            emit(event="progress", step=f"timing done: {json.dumps(entry)}")
            del ts, dq_t, dkv_t, q, k, v, do
            torch.cuda.empty_cache()

    # ---- projection GEMM
    def run_gemm(man, idx, kdoc, kernel, res):
        cfg = kdoc["config"]
        if cfg.get("rope_dims"):
            res["skipped"] = "RoPE epilogue tables are not generated by the device check yet"
            return
        K, N = cfg["in_features"], cfg["out_features"]

        def inputs(B, S):
            ts = {}
            for t in kdoc["tensors"]:
                shape = shape_of(t["shape"], B, S, S)
                if t["operand"] < 0:
                    ts[t["name"]] = torch.full(shape, float("nan"), dtype=torch.bfloat16,
                                               device=dev)
                elif t["role"] == "weight":
                    ts[t["name"]] = (torch.randn(shape, device=dev) / math.sqrt(K)).bfloat16()
                else:
                    ts[t["name"]] = torch.randn(shape, dtype=torch.bfloat16, device=dev)
            return ts

        res["numerics"] = []
        for (B, S, _) in NUMERICS_SHAPES[:2]:
            emit(event="progress", step=f"{kdoc['name']} numerics B={B} S={S}")
            torch.manual_seed(1234)
            ts = inputs(B, S)
            entry = dict(B=B, S=S)
            try:
                kernel.launch(B, S, S, make_tensors(list(ts.items())), stream())
                sync()
                ref = ts["input"].float() @ ts["weight"].float().T
                if "bias" in ts:
                    ref = ref + ts["bias"].float()
                entry.update(errors(ts["output"], ref))
                lin = F.linear(ts["input"], ts["weight"], ts.get("bias"))
                entry["torch_linear_bf16"] = errors(lin, ref)
                base = max(entry["torch_linear_bf16"]["max_abs"], entry["bf16_rounding_max_abs"])
                entry["pass"] = bool(entry["finite"] and entry["rel_l2"] <= 1e-2 and
                                     entry["max_abs"] <= max(4 * base, 1e-2))
            except Exception as e:
                entry["error"] = str(e)
                entry["pass"] = False
            res["numerics"].append(entry)
            emit(event="progress", step=f"numerics done: {json.dumps(entry)}")
        res["timing"] = []
        if host:
            res["timing_skipped"] = "host arrays (no CUDA device in torch): no timings"
            return
        S = GEMM_SEQ
        B = max(1, TOKENS_PER_LAUNCH // S)
        emit(event="progress", step=f"{kdoc['name']} timing B={B} S={S}")
        ts = inputs(B, S)
        flops = 2.0 * B * S * K * N
        entry = dict(B=B, S=S, flops=flops)
        tensors = make_tensors(list(ts.items()))
        try:
            ms = median_ms(lambda: kernel.launch(B, S, S, tensors, stream()))
            entry["attnfuse_ms"], entry["attnfuse_tflops"] = ms, flops / ms / 1e9
        except Exception as e:
            entry["attnfuse_error"] = str(e)
        try:
            ms = median_ms(lambda: F.linear(ts["input"], ts["weight"], ts.get("bias")))
            entry["torch_linear_ms"], entry["torch_linear_tflops"] = ms, flops / ms / 1e9
        except Exception as e:
            entry["torch_linear_error"] = str(e)
        res["timing"].append(entry)

    class DryKernel:
        def __init__(self, man, idx, kdoc):
            self.man, self.idx, self.kdoc = man, idx, kdoc

        def launch(self, B, S, T, tensors, _stream):
            self.man.validate(self.idx, B, S, T, tensors)
            names = [t.name.decode() for t in tensors[0]]
            ts = dict(zip(names, tensors[1][:len(names)]))
            cfg = self.kdoc["config"]
            if self.kdoc["kind"] == "flash_attention":
                v = ts["key"] if cfg.get("key_is_value") else ts["value"]
                ts["output"].copy_(fa_reference(ts["query"], ts["key"], v, cfg))
            else:
                y = ts["input"].float() @ ts["weight"].float().T
                if "bias" in ts:
                    y = y + ts["bias"].float()
                ts["output"].copy_(y)

    for name in args.variants.split(","):
        emit(event="start_variant", variant=name)
        path = os.path.join(args.dir, "kernels", name, "manifest.json")
        try:
            man = rt.load_manifest(path)
        except Exception as e:
            emit(event="kernel", variant=name, result=dict(error=f"manifest: {e}"))
            emit(event="end_variant", variant=name)
            continue
        for idx, kdoc in enumerate(man.kernels()):
            res = dict(name=kdoc["name"], kind=kdoc["kind"], config=kdoc["config"],
                       grid=[g["expr"] for g in kdoc["grid"]], block=kdoc["block"],
                       dynamic_smem_bytes=kdoc["dynamic_smem_bytes"])
            emit(event="progress", step=f"{name}: load {kdoc['name']}")
            try:
                kernel = DryKernel(man, idx, kdoc) if dry else man.load(idx)
            except Exception as e:
                res["error"] = f"load: {e}"
                emit(event="kernel", variant=name, result=res)
                continue
            try:
                if kdoc["kind"] == "flash_attention":
                    run_fa(man, idx, kdoc, kernel, res)
                elif kdoc["kind"] in ("projection_gemm", "project"):
                    run_gemm(man, idx, kdoc, kernel, res)
                elif kdoc["kind"] == "flash_attention_grad_dq":
                    run_fa_grad(man, idx, kdoc, kernel, res)
                elif kdoc["kind"] == "flash_attention_grad_dkv":
                    res["skipped"] = "runs with its dQ kernel (flash_attention_grad_dq)"
                else:
                    res["skipped"] = f"no reference for kernel kind '{kdoc['kind']}'"
            except Exception as e:
                res["error"] = f"{type(e).__name__}: {e}"
            emit(event="kernel", variant=name, result=res)
            # A kernel that faulted poisons the context: stop here, the parent restarts.
            try:
                sync()
            except Exception as e:
                emit(event="fatal", variant=name, error=str(e))
                return 3
        emit(event="end_variant", variant=name)
    return 0


# ------------------------------------------------------------------------------- parent

def parent(args):
    with open(os.path.join(args.dir, "variants.json")) as f:
        variants = json.load(f)
    todo = [v["name"] for v in variants if v.get("compiled")
            and (not args.only or re.search(args.only, v["name"]))]
    results = {v["name"]: dict(variant=v, kernels=[], status="not run") for v in variants}
    for v in variants:
        if not v.get("compiled"):
            results[v["name"]]["status"] = "not compiled: " + v.get("compile_error", "?")
    ran = list(todo)
    env = {}
    os.makedirs(args.out, exist_ok=True)
    progress_path = os.path.join(args.out, "progress.jsonl")
    open(progress_path, "w").close()
    start = time.time()
    while todo and time.time() - start < args.deadline:
        pos = os.path.getsize(progress_path)
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--dir", args.dir,
               "--lib", args.lib, "--progress", progress_path, "--variants", ",".join(todo)]
        if args.dry_run_cpu:
            cmd.append("--dry-run-cpu")
        proc = subprocess.Popen(cmd)
        last = time.time()
        current = None
        killed = None
        last_step = ""

        while True:
            rc = proc.poll()
            with open(progress_path) as f:
                f.seek(pos)
                chunk = f.read()
            if chunk:
                complete = chunk[:chunk.rfind("\n") + 1]
                pos += len(complete.encode())
                for line in complete.splitlines():
                    ev = json.loads(line)
                    last = time.time()
                    kind = ev["event"]
                    if kind == "env":
                        env = ev
                    elif kind == "start_variant":
                        current = ev["variant"]
                        results[current]["status"] = "running"
                    elif kind == "kernel":
                        results[ev["variant"]]["kernels"].append(ev["result"])
                    elif kind == "end_variant":
                        results[ev["variant"]]["status"] = "done"
                        todo.remove(ev["variant"])
                        current = None
                    elif kind == "fatal":
                        results[ev["variant"]]["fatal"] = ev["error"]
                    elif kind == "progress":
                        last_step = ev["step"]
                        print(f"  [{time.time() - start:6.1f}s] {ev['step'][:160]}", flush=True)
            if rc is not None:
                break
            if time.time() - last > args.stall_seconds:
                killed = f"no progress for {args.stall_seconds} s (hang?)"
            elif time.time() - start > args.deadline:
                killed = f"overall deadline of {args.deadline} s reached"
            if killed:
                proc.kill()
                proc.wait()
                break
            time.sleep(0.2)
        if current is not None:
            reason = killed or f"worker exited with code {proc.returncode}"
            results[current]["status"] = "aborted: " + reason
            results[current]["last_step"] = last_step[:500]
            todo.remove(current)
            print(f"variant {current}: {reason}", flush=True)
        elif proc.returncode not in (0, None) and not killed:
            print(f"worker exited with code {proc.returncode} outside a variant; stopping",
                  flush=True)
            break
    for name in todo:
        if results[name]["status"] in ("not run", "running"):
            results[name]["status"] = "not run: deadline"

    gpu = env.get("gpu", "unknown-gpu")
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    tag = f"{date}-{re.sub(r'[^A-Za-z0-9]+', '-', gpu).strip('-')}"
    summary = []
    for name, r in results.items():
        for k in r["kernels"]:
            num = k.get("numerics", [])
            ok = all(e.get("pass") for e in num) if num else None  # None: not checked
            for t in k.get("timing", []):
                summary.append(dict(variant=name, kernel=k["name"], kind=k["kind"],
                                    numerics_pass=ok, B=t["B"], S=t["S"],
                                    attnfuse_tflops=t.get("attnfuse_tflops"),
                                    sdpa_cudnn_tflops=t.get("sdpa_cudnn_tflops"),
                                    sdpa_flash_tflops=t.get("sdpa_flash_tflops"),
                                    torch_linear_tflops=t.get("torch_linear_tflops"),
                                    vs_cudnn=t.get("vs_cudnn")))
            if not k.get("timing"):
                summary.append(dict(variant=name, kernel=k["name"], kind=k["kind"],
                                    numerics_pass=ok, error=k.get("error") or k.get("skipped")
                                    or k.get("timing_skipped")))
    doc = dict(date=datetime.datetime.now(datetime.timezone.utc).isoformat(), env=env,
               ctest=args.ctest_summary, elapsed_s=round(time.time() - start, 1),
               settings=dict(seqs=SEQS, tokens_per_launch=TOKENS_PER_LAUNCH, warmup=WARMUP,
                             iters=ITERS, launches_per_sample=REPEAT, numerics_shapes=NUMERICS_SHAPES),
               summary=summary, variants=list(results.values()))
    path = os.path.join(args.out, f"results-{tag}.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=2)
    print(f"wrote {path}")
    print_table(summary)
    chart(summary, os.path.join(args.out, f"results-{tag}.png"), gpu)
    if args.require_pass:
        failed = [f"{name}: {r['status']}" for name, r in results.items()
                  if name in ran and r["status"] != "done"]
        for name, r in results.items():
            for k in r["kernels"]:
                if k.get("error") or any(not e.get("pass") for e in k.get("numerics", [])):
                    failed.append(f"{name}/{k['name']}: " +
                                  (k.get("error") or "numerics " + ", ".join(
                                      f"S={e['S']} {'ok' if e.get('pass') else 'FAIL'}"
                                      for e in k["numerics"])))
        checked = sum(len(k.get("numerics", [])) for r in results.values() for k in r["kernels"])
        print(f"numerics: {checked} checks in {len(ran)} variants; " +
              ("all pass" if not failed and checked else "FAILED: " + "; ".join(failed)))
        return 0 if not failed and checked else 1
    return 0


def fmt(x, spec="7.1f"):
    return format(x, spec) if isinstance(x, (int, float)) else "      -"


def passed(flag):
    return "-" if flag is None else ("ok" if flag else "FAIL")


def print_table(summary):
    print(f"{'variant':18} {'kind':24} {'S':>6} {'B':>3} {'num':>4} {'ours':>7} "
          f"{'cuDNN':>7} {'flash':>7} {'linear':>7} {'vs cuDNN':>8}  (TFLOP/s)")
    for s in summary:
        if "S" not in s:
            print(f"{s['variant']:18} {s['kind'][:24]:24} {'':>6} {'':>3} "
                  f"{passed(s['numerics_pass']):>4}  {str(s.get('error'))[:60]}")
            continue
        print(f"{s['variant']:18} {s['kind'][:24]:24} {s['S']:6d} {s['B']:3d} "
              f"{passed(s['numerics_pass']):>4} {fmt(s['attnfuse_tflops'])} "
              f"{fmt(s['sdpa_cudnn_tflops'])} {fmt(s['sdpa_flash_tflops'])} "
              f"{fmt(s['torch_linear_tflops'])} {fmt(s['vs_cudnn'], '8.2f')}")


def chart(summary, path, gpu):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception:
        print("matplotlib is not available: chart skipped")
        return
    fa = [s for s in summary if s["kind"] == "flash_attention" and "S" in s]
    if not fa:
        print("no attention timings: chart skipped")
        return
    seqs = sorted({s["S"] for s in fa})
    fig, axes = plt.subplots(len(seqs), 1, figsize=(12, 3.6 * len(seqs)), squeeze=False)
    for ax, S in zip(axes[:, 0], seqs):
        rows = [s for s in fa if s["S"] == S]
        names = [s["variant"] + (" (num FAIL)" if s["numerics_pass"] is False else "")
                 for s in rows]
        x = range(len(rows))
        w = 0.27
        for off, key, label in ((-w, "attnfuse_tflops", "AttnFuse"),
                                (0, "sdpa_cudnn_tflops", "SDPA cuDNN"),
                                (w, "sdpa_flash_tflops", "SDPA flash")):
            ax.bar([i + off for i in x], [s.get(key) or 0 for s in rows], w, label=label)
        ax.set_xticks(list(x))
        ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
        ax.set_ylabel("TFLOP/s")
        ax.set_title(f"causal bf16 attention, S = T = {S}, B = {rows[0]['B']} ({gpu})")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dir", required=True, help="the prepared directory")
    p.add_argument("--lib", required=True, help="libattnfuse_runtime.so")
    p.add_argument("--out", help="output directory (parent)")
    p.add_argument("--deadline", type=float, default=220.0, help="seconds for all variants")
    p.add_argument("--stall-seconds", type=float, default=25.0,
                   help="kill the worker after this long without progress (a hung kernel)")
    p.add_argument("--ctest-summary", default="")
    p.add_argument("--worker", action="store_true")
    p.add_argument("--dry-run-cpu", action="store_true",
                   help="no GPU: check the plumbing on the CPU (the kernels are not run)")
    p.add_argument("--variants", default="")
    p.add_argument("--only", help="run only the variants whose name matches this regex")
    p.add_argument("--require-pass", action="store_true",
                   help="exit 1 unless every numerics check of the variants run passes")
    p.add_argument("--progress", default="")
    args = p.parse_args()
    if args.worker:
        return worker(args)
    if not args.out:
        p.error("--out is required")
    return parent(args)


if __name__ == "__main__":
    sys.exit(main())
