#!/usr/bin/env python3
"""First-contact ladder: one launch per step, simplest first, each under its own timeout.

Run by `scripts/device-check.sh run DIR OUT` before the benchmarks, and in CI on the emulator
(`scripts/device-check.sh emulate DIR OUT ladder`, ctest `cudasim/device-check/ladder`), so
every step's result on the emulator is known before a GPU runs it. The steps, in order:

  env                  driver version and device; for every kernel of every manifest the cubin
                       and the PTX loaded on their own (cuModuleLoadData: is the cubin usable,
                       does the PTX JIT), the runtime's load, and every tensor map encoded
                       (cuTensorMapEncodeTiled with the runtime's arguments, no launch)
  gemm_permutation     a projection GEMM whose weight rows are one-hot (a permutation of the
                       inputs) with integer inputs and bias: the output is exact
  flash_pv_d64/_d128   FlashAttention with Q = 0: uniform weights, so O[m] is the mean of V over
                       the keys m sees (the P.V half and the row sum alone)
  flash_qk_*           random Q/K/V over three KV tiles, partial tiles, S != T
  flash_qkv_shared_*, flash_qk_shared_*
                       the sharing modes qkv (K=V kernel) and qk: the query buffer is the key
  example_s1/..., example_s200/...
                       every distinct projection GEMM and FlashAttention kernel of the prepared
                       layers at S = 1 and S = 200 (kernels with identical PTX run once)
  flash_grad_s1/..., flash_grad_s200/...
                       the attention backward of each prepared backward variant: the dQ
                       kernel (dQ and D = rowsum(dO * O)), then the dK/dV kernel, against
                       reference.sdpa_backward (float64), at S = T = 1 and at
                       S = 150, T = 200 (causal over the last 150 of 200 positions)
  decode/...           flash_decode split + combine (two launches) at 300 cached tokens
  cca_prologue_s1/..., cca_prologue_s200/...
                       the CCA prologue of each CCA layer

Expected outputs come from integration_test/reference.py (numpy, float64, written from the
semantics, not from the kernels) on the same bf16 inputs. Tolerances (|got - ref| per element):
exact for the permutation GEMM; FlashAttention and decode 2^-7 max|v| + 2^-8 |ref| (P rounded
to bf16 before P.V, the row sum from the unrounded p, the output rounded once); projection GEMM
2^-8 |ref| + 2^-9 max|ref of the row| (f32 accumulation, one bf16 rounding); CCA prologue 2^-6
max|ref of the row| + 2^-8 |ref| (the projections rounded to bf16 before the convolutions);
flash with Q = 0: 2^-8 |ref| + (T + 4) 2^-22 max|v| (P = 1 and the row sum are exact; f32
sums, one bf16 rounding, whose half-ulp bound is reached, so err/tol near 1 is normal there).
Each step prints PASS/FAIL with its worst error and the tolerance at that element.

Buffers are numpy arrays copied to and from device memory through the runtime's memory API
(afr_mem_alloc / afr_memcpy_*), which a GPU and the emulator both implement: no torch needed.
Steps run in a worker process; the parent kills it when a step overruns its timeout (a hang),
records TIMEOUT and starts a new worker at the next step; a worker that crashes or whose step
hit a CUDA error (the context is lost) is replaced the same way. The ladder stops early only
when no context can be created. Results: OUT/ladder.json (rewritten after every step).

usage: ladder.py --dir DIR --lib libattnfuse_runtime.so --out OUT [--budget S]
                 [--step-timeout S] [--env-timeout S] [--expected ladder.json] [--only REGEX]
"""
import argparse
import datetime
import hashlib
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE_SIZES = (1, 200)
DECODE_CAPACITY, DECODE_POSITIONS = 300, (299, 63, 130)


# ------------------------------------------------------------------------------- plan

def load_kernels(d):
    """[(variant, manifest path, kernel doc, sha256 of its PTX)] of every compiled variant."""
    out = []
    names = []
    path = os.path.join(d, "variants.json")
    if os.path.exists(path):
        names += [v["name"] for v in json.load(open(path)) if v.get("compiled")]
    path = os.path.join(d, "decode_variants.json")
    if os.path.exists(path):
        names += [v["name"] for v in json.load(open(path))]
    for name in names:
        man = os.path.join(d, "kernels", name, "manifest.json")
        if not os.path.exists(man):
            continue
        for k in json.load(open(man))["kernels"]:
            ptx = os.path.join(d, "kernels", name, k.get("ptx", ""))
            sha = hashlib.sha256(open(ptx, "rb").read()).hexdigest() if os.path.isfile(ptx) \
                else k["name"] + "@" + name
            out.append((name, man, k, sha))
    return out


def plan(d, step_timeout, env_timeout):
    kernels = load_kernels(d)
    steps = [dict(name="env", kind="env", timeout=env_timeout)]

    def step(name, kind, entry, **kw):
        variant, man, k, _ = entry
        steps.append(dict(name=name, kind=kind, timeout=step_timeout, variant=variant,
                          manifest=man, kernel=k["name"], **kw))

    def no_rope(k):
        c = k["config"]
        return not (c.get("rope_dims") or c.get("query_rope_dims") or c.get("key_rope_dims"))

    gemms = [e for e in kernels if e[2]["kind"] == "projection_gemm" and no_rope(e[2])]
    flashes = [e for e in kernels if e[2]["kind"] == "flash_attention" and no_rope(e[2])]
    # A square GEMM with bias (a true permutation), the smallest one.
    with_bias = sorted([e for e in gemms if e[2]["config"].get("bias")] or gemms,
                       key=lambda e: (e[2]["config"]["in_features"] !=
                                      e[2]["config"]["out_features"],
                                      e[2]["config"]["in_features"] *
                                      e[2]["config"]["out_features"]))
    if with_bias:
        step("gemm_permutation", "gemm_permutation", with_bias[0], B=2, S=200)
    by_dim = {}
    for e in flashes:
        by_dim.setdefault(e[2]["config"]["head_dim"], e)
    for dim in (64, 128):
        if dim in by_dim:
            step(f"flash_pv_d{dim}", "flash_pv", by_dim[dim], B=2, S=200, T=200)
    if 64 in by_dim:
        kv = by_dim[64][2]["config"]["block_kv"]
        step("flash_qk_3tiles_d64", "flash_random", by_dim[64], B=1, S=3 * kv, T=3 * kv)
    if 128 in by_dim:
        step("flash_qk_partial_d128", "flash_random", by_dim[128], B=1, S=300, T=300)
    if 64 in by_dim:
        step("flash_qk_s_ne_t_d64", "flash_random", by_dim[64], B=1, S=100, T=300)
    # Sharing modes qkv and qk (gpt300m_qkv, gpt300m_qk): the query buffer is the key buffer.
    for mode, keqv in (("qkv", True), ("qk", False)):
        same = [e for e in flashes if bool(e[2]["config"].get("key_is_value")) == keqv
                and e[2]["config"]["num_heads"] == e[2]["config"]["num_kv_heads"]]
        if same:
            d = same[0][2]["config"]["head_dim"]
            step(f"flash_{mode}_shared_d{d}", "flash_shared", same[0], B=1, S=200, T=200)

    seen = {}
    unique = []
    for e in gemms + flashes:
        if e[3] not in seen:
            seen[e[3]] = e
            unique.append(e)
    for s in EXAMPLE_SIZES:
        for e in unique:
            kind = "example_gemm" if e[2]["kind"] == "projection_gemm" else "example_flash"
            step(f"example_s{s}/{e[2]['name']}@{e[0]}", kind, e, B=1, S=s, T=s)
    # The backward of each prepared attention-backward variant: one query row (every key tile
    # past the diagonal masked) and partial tiles with S != T.
    for e in kernels:
        if e[2]["kind"] == "flash_attention_grad_dq":
            step(f"flash_grad_s1/{e[0]}", "flash_grad", e, B=2, S=1, T=1)
            step(f"flash_grad_s200/{e[0]}", "flash_grad", e, B=1, S=150, T=200)
    for e in kernels:
        if e[2]["kind"] == "flash_decode_split":
            step(f"decode/{e[0]}", "decode", e, B=len(DECODE_POSITIONS), S=DECODE_CAPACITY)
    for s in EXAMPLE_SIZES:
        for e in kernels:
            if e[2]["kind"] == "cca_prologue":
                step(f"cca_prologue_s{s}/{e[0]}", "cca_prologue", e, B=1, S=s)
    return steps


# ------------------------------------------------------------------------------- worker

class Failure(Exception):
    pass


def worker(args):
    import numpy as np
    sys.path[:0] = [HERE, os.path.join(HERE, "..", "..", "integration_test")]
    import afr_ctypes as afr
    import reference

    progress = open(args.progress, "a", buffering=1)

    def emit(**event):
        progress.write(json.dumps(event) + "\n")
        progress.flush()
        os.fsync(progress.fileno())

    steps = json.load(open(args.steps))
    emit(event="worker_start")
    rt = afr.Runtime(args.lib)
    try:
        driver = afr.Driver()
        cc = rt.create_context(0)
    except Exception as e:
        emit(event="fatal", error=f"no context: {type(e).__name__}: {e}")
        return 4
    mirror = afr.HostMirror(rt)
    manifests = {}

    def manifest(path):
        if path not in manifests:
            manifests[path] = rt.load_manifest(path)
        return manifests[path]

    def bf16(a):
        bits = reference.to_bf16_bits(np.asarray(a, dtype=np.float32))
        return bits, reference.from_bf16_bits(bits).astype(np.float64)

    def shape_of(t, B, S, T):
        return tuple(rt.eval_expr(e, B, S, T) for e in t["shape"])

    def launch(man, name, B, S, T, buffers):
        """buffers: {tensor name: (numpy array, dtype name)}; copies back into the arrays."""
        idx = man.index(name)
        kernel = man.load(idx)
        named = [(n, afr.HostArray(a, dt)) for n, (a, dt) in buffers.items()]
        tensors = mirror.make_tensors(named)
        try:
            kernel.launch(B, S, T, tensors, 0)
        finally:
            tensors.free()

    def outputs(kdoc, B, S, T, buffers):
        for t in kdoc["tensors"]:
            if t["operand"] < 0 and t["name"] not in buffers:
                # All-ones bytes (NaN in bf16 and f32): an unwritten output cannot pass.
                shape = shape_of(t, B, S, T)
                if t["name"] == "workspace":
                    buffers[t["name"]] = (np.full(shape, np.nan, np.float32), "f32")
                else:
                    buffers[t["name"]] = (np.full(shape, 0xFFFF, np.uint16), "bf16")

    def rope_tables(kdoc, B, S, T, buffers):
        for table in kdoc.get("rope_tables", []):
            rows = rt.eval_expr(table["shape"][0], B, S, T)
            i = np.arange(table["rotated_dims"] // 2)
            angle = np.arange(rows)[:, None] * \
                float(table["theta"]) ** (-2.0 * i / table["rotated_dims"])[None, :]
            a = np.cos(angle) if "cos" in table["param"] else np.sin(angle)
            buffers[table["param"]] = (np.ascontiguousarray(a.astype(np.float32)), "f32")

    def compare(got, ref, tol, what=""):
        got = np.asarray(got, np.float64)
        tol = np.broadcast_to(tol, ref.shape)
        finite = bool(np.all(np.isfinite(got)))
        err = np.abs(got - ref)
        err = np.where(np.isfinite(err), err, np.inf)
        worst = np.unravel_index(int(np.argmax(err)), err.shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(tol > 0, err / tol, np.where(err > 0, np.inf, 0.0))
        bad = int(np.count_nonzero(err > tol))
        r = dict(max_err=float(err.max()), tol_at_max=float(tol[worst]),
                 worst_err_over_tol=float(ratio.max()), bad=bad, total=int(err.size),
                 finite=finite, worst_index=[int(i) for i in worst])
        if what:
            r = {f"{what}_{k}": v for k, v in r.items()}
        return r

    def verdict(*parts):
        res = {}
        ok = True
        for p in parts:
            res.update(p)
            ok = ok and all(v == 0 for k, v in p.items() if k.endswith("bad")) and \
                all(v for k, v in p.items() if k.endswith("finite"))
        res["status"] = "PASS" if ok else "FAIL"
        return res

    # ---- env: no launch
    def run_env(st):
        res = dict(driver_library=driver.path, driver_version=driver.version(),
                   device=driver.device_name(0), compute_capability=cc, kernels=[])
        ok = True
        done = {}
        for variant, path, kdoc, sha in load_kernels(args.dir):
            kdir = os.path.dirname(path)
            entry = dict(variant=variant, kernel=kdoc["name"])
            if sha in done:
                entry.update(done[sha], same_ptx_as=done[sha]["first"])
            else:
                for key in ("cubin", "ptx"):
                    f = kdoc.get(key)
                    if not f or not os.path.isfile(os.path.join(kdir, f)):
                        entry[key] = "absent"
                        continue
                    image = open(os.path.join(kdir, f), "rb").read()
                    if key == "ptx":
                        image += b"\0"
                    t0 = time.time()
                    good, why = driver.load_module(image)
                    entry[key] = "ok" if good else why
                    entry[key + "_load_s"] = round(time.time() - t0, 3)
                done[sha] = dict(cubin=entry["cubin"], ptx=entry["ptx"],
                                 first=f"{kdoc['name']}@{variant}")
            man = manifest(path)
            idx = man.index(kdoc["name"])
            try:
                man.load(idx)
                entry["runtime_load"] = "ok"
            except afr.AfrError as e:
                entry["runtime_load"] = str(e)
                ok = False
            # Tensor maps at a size with partial tiles; decode kernels at its capacity.
            B, S, T = (3, DECODE_CAPACITY, 1) if kdoc["kind"].startswith("flash_decode") \
                else (1, 200, 200)
            bufs = {}
            for t in kdoc["tensors"]:
                dt = t.get("dtype") or {"positions": "i32", "block_table": "i32"}.get(
                    t["name"], "f32" if t["name"] == "workspace" else "bf16")
                np_dt = {"i32": np.int32, "i64": np.int64, "f32": np.float32,
                         "bf16": np.uint16}[dt]
                bufs[t["name"]] = (np.zeros(shape_of(t, B, S, T), np_dt), dt)
            rope_tables(kdoc, B, S, T, bufs)
            named = [(n, afr.HostArray(a, dt)) for n, (a, dt) in bufs.items()]
            tensors = mirror.make_tensors(named)
            encodes = []
            try:
                for p in man.tma_params(idx, B, S, T, tensors):
                    why = driver.encode_tensor_map(p)
                    encodes.append(f"{p.param.decode()}: {why or 'ok'}")
                    ok = ok and not why
            except afr.AfrError as e:
                encodes.append(f"afr_tma_encode_params: {e}")
                ok = False
            finally:
                tensors.free()
            entry["tensor_maps"] = encodes
            if entry["ptx"] != "ok" and entry["cubin"] != "ok":
                ok = False
            res["kernels"].append(entry)
        loads = res["kernels"]
        res["summary"] = (
            f"{res['device']} (cc {cc}), driver {res['driver_version']}; "
            f"{len(loads)} kernels: cubin ok {sum(e['cubin'] == 'ok' for e in loads)}, "
            f"PTX JIT ok {sum(e['ptx'] == 'ok' for e in loads)}, runtime load ok "
            f"{sum(e['runtime_load'] == 'ok' for e in loads)}; tensor maps encoded "
            f"{sum(x.endswith(': ok') for e in loads for x in e['tensor_maps'])} of "
            f"{sum(len(e['tensor_maps']) for e in loads)}")
        res["status"] = "PASS" if ok else "FAIL"
        return res

    def kernel_of(st):
        man = manifest(st["manifest"])
        kdoc = next(k for k in man.kernels() if k["name"] == st["kernel"])
        return man, kdoc

    # ---- projection GEMM
    def run_gemm(st, permutation):
        man, kdoc = kernel_of(st)
        cfg = kdoc["config"]
        B, S = st["B"], st["S"]
        K, N = cfg["in_features"], cfg["out_features"]
        rng = np.random.default_rng(7)
        bufs, vals = {}, {}
        if permutation:
            # Integers |x| <= 100 and |b| <= 100: x_j + b_n is exact in bf16 (< 256).
            x = rng.integers(-100, 101, (B, S, K)).astype(np.float64)
            sel = rng.permutation(max(N, K))[:N] % K
            w = np.zeros((N, K))
            w[np.arange(N), sel] = 1.0
            b = rng.integers(-100, 101, N).astype(np.float64)
        else:
            x = rng.standard_normal((B, S, K))
            w = rng.standard_normal((N, K)) / np.sqrt(K)
            b = rng.standard_normal(N) * 0.5
        for name, a in (("input", x), ("weight", w), ("bias", b)):
            if any(t["name"] == name for t in kdoc["tensors"]):
                bits, vals[name] = bf16(a)
                bufs[name] = (bits, "bf16")
        outputs(kdoc, B, S, S, bufs)
        launch(man, kdoc["name"], B, S, S, bufs)
        got = reference.from_bf16_bits(bufs["output"][0]).astype(np.float64)
        ref = reference.linear(vals["input"], vals["weight"], vals.get("bias"))
        if permutation:
            tol = np.zeros_like(ref)
        else:
            tol = 2.0 ** -8 * np.abs(ref) + 2.0 ** -9 * np.abs(ref).max(axis=-1, keepdims=True)
        return verdict(compare(got, ref, tol))

    # ---- FlashAttention
    def run_flash(st, zero_q, shared=False):
        man, kdoc = kernel_of(st)
        cfg = kdoc["config"]
        B, S, T = st["B"], st["S"], st["T"]
        hq, hk = cfg["num_heads"], cfg["num_kv_heads"]
        d, dv = cfg["head_dim"], cfg.get("value_dim", cfg["head_dim"])
        rng = np.random.default_rng(11 + S + T)
        qb, q = bf16(np.zeros((B, S, hq, d)) if zero_q else rng.standard_normal((B, S, hq, d)))
        kb, k = bf16(rng.standard_normal((B, T, hk, d)))
        if shared:  # one buffer bound as query and key: one device copy (HostMirror)
            qb, q = kb, k
        bufs = {"query": (qb, "bf16"), "key": (kb, "bf16")}
        if cfg.get("key_is_value"):
            v = k
        else:
            vb, v = bf16(rng.standard_normal((B, T, hk, dv)))
            bufs["value"] = (vb, "bf16")
        outputs(kdoc, B, S, T, bufs)
        launch(man, kdoc["name"], B, S, T, bufs)
        got = reference.from_bf16_bits(bufs["output"][0]).astype(np.float64)
        vmax = np.abs(v).max()
        window = cfg.get("window")
        if zero_q:
            # Uniform weights: the mean of V over the keys query m sees (written out here,
            # not through sdpa).
            g = hq // hk
            ref = np.zeros((B, S, hq, dv))
            csum = np.cumsum(v, axis=1)  # [B, T, Hk, dv]
            for m in range(S):
                p = m + T - S
                hi = p if cfg.get("causal") else T - 1
                lo = max(0, p - window + 1) if window else 0
                if hi < lo:
                    continue
                total = csum[:, hi] - (csum[:, lo - 1] if lo > 0 else 0)
                ref[:, m] = np.repeat(total / (hi - lo + 1), g, axis=1)
            # P = 1 and the row sum are exact; the sum of up to T values in f32 and the
            # division add T + 4 f32 rounding errors at most (2^-22 each: the tensor cores may
            # truncate, and rcp.approx has an ulp); the bf16 rounding of O is at most
            # 2^-8 |O| (half an ulp), a bound that round-to-nearest reaches: err/tol near 1 is
            # normal here.
            tol = 2.0 ** -8 * np.abs(ref) + (T + 4) * 2.0 ** -22 * vmax
        else:
            ref = reference.sdpa(q, k, v, causal=bool(cfg.get("causal")), window=window,
                                 scale=float(cfg["scale"]))
            tol = 2.0 ** -7 * vmax + 2.0 ** -8 * np.abs(ref)
        return verdict(compare(got, ref, tol))

    # ---- the attention backward: the dQ kernel (dQ and D), then the dK/dV kernel
    def run_flash_grad(st):
        man, kdoc = kernel_of(st)  # the dQ kernel; its launch names the dK/dV kernel
        dkv = next(k for k in man.kernels() if k["name"] == kdoc["then"])
        cfg = kdoc["config"]
        B, S, T = st["B"], st["S"], st["T"]
        hq, hk, d = cfg["num_heads"], cfg["num_kv_heads"], cfg["head_dim"]
        keqv = bool(cfg.get("key_is_value"))
        causal = bool(cfg.get("causal"))
        scale = float(cfg["scale"])
        rng = np.random.default_rng(13 + S + T)
        qb, q = bf16(rng.standard_normal((B, S, hq, d)))
        kb, k = bf16(rng.standard_normal((B, T, hk, d)))
        vb, v = (kb, k) if keqv else bf16(rng.standard_normal((B, T, hk, d)))
        dob, do = bf16(rng.standard_normal((B, S, hq, d)))
        # The forward in float64 (integration_test/reference.py), O rounded to bf16 as the
        # forward kernel stores it, then the backward over that O (D reads it).
        keep = np.ones((B, S, T), bool)
        if causal:
            keep &= np.arange(T)[None, None, :] <= np.arange(S)[None, :, None] + (T - S)
        o, lse, *_ = reference.sdpa_backward(q, k, v, do, keep, scale)
        ob, o = bf16(o)
        _, _, delta, dq_ref, dk_ref, dv_ref = reference.sdpa_backward(q, k, v, do, keep, scale,
                                                                      output=o)
        if keqv:
            dk_ref = dk_ref + dv_ref
        bufs = {"query": (qb, "bf16"), "key": (kb, "bf16"), "output": (ob, "bf16"),
                "output_grad": (dob, "bf16"),
                "lse": (np.ascontiguousarray(lse.astype(np.float32)), "f32")}
        if not keqv:
            bufs["value"] = (vb, "bf16")
        bufs["delta"] = (np.full((B, S, hq), np.nan, np.float32), "f32")
        for kernel in (kdoc, dkv):  # each launch binds the tensors its kernel names
            outputs(kernel, B, S, T, bufs)
            names = {t["name"] for t in kernel["tensors"]}
            launch(man, kernel["name"], B, S, T,
                   {n: b for n, b in bufs.items() if n in names})
        # P and dS go through bf16 as wgmma operands, the sums are f32, each gradient is
        # rounded once: as the emulator's kernel tests, 2^-6 of the gradient's largest
        # magnitude (at least 2^-4) plus 2^-7 of the element.
        parts = [compare(bufs["delta"][0], delta,
                         2.0 ** -7 * np.abs(delta).max() + 2.0 ** -7 * np.abs(delta), "delta")]
        grads = [("query_grad", dq_ref), ("key_grad", dk_ref)]
        if not keqv:
            grads.append(("value_grad", dv_ref))
        for name, ref in grads:
            got = reference.from_bf16_bits(bufs[name][0]).astype(np.float64)
            tol = 2.0 ** -6 * max(np.abs(ref).max(), 2.0 ** -4) + 2.0 ** -7 * np.abs(ref)
            parts.append(compare(got, ref, tol, name))
        return verdict(*parts)

    # ---- flash_decode split + combine
    def run_decode(st):
        man, kdoc = kernel_of(st)
        combine = next(k for k in man.kernels() if k["kind"] == "flash_decode_combine")
        cfg = kdoc["config"]
        B, S = st["B"], st["S"]
        hq, hk, d = cfg["num_heads"], cfg["num_kv_heads"], cfg["head_dim"]
        dv = cfg.get("value_dim", d)
        if cfg.get("query_rope_dims") or cfg.get("key_rope_dims") or cfg.get("paged"):
            raise Failure("RoPE / paged decode kernels are not in the ladder")
        rng = np.random.default_rng(5)
        qb, q = bf16(rng.standard_normal((B, 1, hq, d)))
        kb, kn = bf16(rng.standard_normal((B, 1, hk, d)))
        cb, c = bf16(rng.standard_normal((B, S, hk, d)))
        pos = np.array(DECODE_POSITIONS[:B], dtype=np.int32)
        bufs = {"query": (qb, "bf16"), "key_new": (kb, "bf16"), "key_cache": (cb, "bf16"),
                "positions": (pos, "i32")}
        v_new = vc = None
        if not cfg.get("key_is_value"):
            vb, v_new = bf16(rng.standard_normal((B, 1, hk, dv)))
            vcb, vc = bf16(rng.standard_normal((B, S, hk, dv)))
            bufs["value_new"] = (vb, "bf16")
            bufs["value_cache"] = (vcb, "bf16")
        outputs(kdoc, B, S, 1, bufs)
        launch(man, kdoc["name"], B, S, 1, bufs)
        cbufs = {"workspace": bufs["workspace"]}
        outputs(combine, B, S, 1, cbufs)
        launch(man, combine["name"], B, S, 1, cbufs)
        got = reference.from_bf16_bits(cbufs["output"][0]).astype(np.float64)
        ref, ref_kc, ref_vc = reference.flash_decode_reference(
            q, kn, c, pos, v_new=v_new, value_cache=vc, scale=float(cfg["scale"]),
            window=cfg.get("window"))
        vmax = max(np.abs(c).max(), np.abs(kn).max()) if vc is None else \
            max(np.abs(vc).max(), np.abs(v_new).max())
        parts = [compare(got, ref, 2.0 ** -7 * vmax + 2.0 ** -8 * np.abs(ref)),
                 compare(reference.from_bf16_bits(bufs["key_cache"][0]), ref_kc, 0.0,
                         "key_cache")]
        if vc is not None:
            parts.append(compare(reference.from_bf16_bits(bufs["value_cache"][0]), ref_vc,
                                 0.0, "value_cache"))
        return verdict(*parts)

    # ---- CCA prologue
    def run_cca(st):
        man, kdoc = kernel_of(st)
        cfg = kdoc["config"]
        B, S = st["B"], st["S"]
        hq, hk, d, e = cfg["num_heads"], cfg["num_kv_heads"], cfg["head_dim"], cfg["width"]
        k0, k1 = cfg["conv_kernel_sizes"]
        shapes = {t["name"]: shape_of(t, B, S, S) for t in kdoc["tensors"]}
        rng = np.random.default_rng(3 + S)
        scale = {"input": 1.0, "wq": e ** -0.5, "wk": e ** -0.5, "wv": e ** -0.5,
                 "wv_prev": e ** -0.5, "conv_dw_weight": 0.5, "conv_dw_bias": 0.1,
                 "conv_g_weight": (d * k1) ** -0.5, "conv_g_bias": 0.1}
        bufs, vals = {}, {}
        for name, f in scale.items():
            if name in shapes:
                bits, vals[name] = bf16(rng.standard_normal(shapes[name]) * f)
                bufs[name] = (bits, "bf16")
        bits, vals["temp"] = bf16(rng.uniform(0.2, 1.5, shapes["temp"]))
        bufs["temp"] = (bits, "bf16")
        rope_tables(kdoc, B, S, S, bufs)
        outputs(kdoc, B, S, S, bufs)
        launch(man, kdoc["name"], B, S, S, bufs)
        tables = kdoc.get("rope_tables", [])
        ref = reference.cca_qkv(
            vals["input"], vals["wq"], vals["wk"], vals["wv"], vals["conv_dw_weight"],
            vals["conv_dw_bias"], vals["conv_g_weight"], vals["conv_g_bias"], vals["temp"],
            hq, hk, d, (k0, k1), wv_prev=vals.get("wv_prev"), qk_mean=bool(cfg.get("qk_mean")),
            value_shift=bool(cfg.get("value_shift")), temperature=cfg.get("temperature", "raw"),
            eps=float(cfg.get("eps", 1e-12)),
            rope_theta=float(tables[0]["theta"]) if tables else None,
            rope_fraction=tables[0]["rotated_dims"] / d if tables else 1.0,
            norm=cfg.get("norm", "sqrt_eps"))
        parts = []
        for name, r in zip(("query", "key", "value"), ref):
            g = reference.from_bf16_bits(bufs[name][0]).astype(np.float64)
            tol = 2.0 ** -6 * np.abs(r).max(axis=-1, keepdims=True) + 2.0 ** -8 * np.abs(r)
            parts.append(compare(g, r, tol, name))
        return verdict(*parts)

    runners = {
        "env": run_env,
        "gemm_permutation": lambda st: run_gemm(st, True),
        "example_gemm": lambda st: run_gemm(st, False),
        "flash_pv": lambda st: run_flash(st, True),
        "flash_random": lambda st: run_flash(st, False),
        "example_flash": lambda st: run_flash(st, False),
        "flash_shared": lambda st: run_flash(st, False, shared=True),
        "flash_grad": run_flash_grad,
        "decode": run_decode,
        "cca_prologue": run_cca,
    }
    for st in steps:
        emit(event="start", step=st["name"])
        t0 = time.time()
        lost = False
        try:
            res = runners[st["kind"]](st)
        except afr.AfrError as e:
            res = dict(status="ERROR", error=str(e)[:2000])
            lost = e.status == 7  # AFR_ERR_CUDA: the context may be unusable
        except Exception as e:
            res = dict(status="ERROR", error=f"{type(e).__name__}: {e}"[:2000])
        res["seconds"] = round(time.time() - t0, 2)
        emit(event="end", step=st["name"], result=res)
        if lost:
            return 3  # a fresh process (and context) for the next step
    return 0


# ------------------------------------------------------------------------------- parent

def describe(st, res, expected):
    status = res.get("status", "?")
    if st["kind"] == "env":
        text = res.get("summary") or res.get("error", "")
    elif "error" in res:
        text = res["error"].splitlines()[0][:300] if res["error"] else ""
    else:
        keys = sorted(k for k in res if k.endswith("max_err"))
        items = []
        for k in keys:
            pre = k[:-len("max_err")]
            tol = res[pre + "tol_at_max"]
            ratio = res[pre + "worst_err_over_tol"]
            items.append(f"{pre.rstrip('_') or 'max'} err {res[k]:.3g} "
                         + ("(exact)" if tol == 0 and res[k] == 0 else
                            f"(tol there {tol:.3g}, worst err/tol {ratio:.2f}, "
                            f"{res[pre + 'bad']} of {res[pre + 'total']} off)"))
        text = "; ".join(items)
    where = f" [{st['kernel']} B={st.get('B')} S={st.get('S')}" + \
        (f" T={st['T']}" if "T" in st else "") + "]" if "kernel" in st else ""
    exp = ""
    if expected is not None:
        e = expected.get(st["name"], {})
        errs = [v for k, v in e.items() if k.endswith("max_err") and isinstance(v, float)]
        exp = f"  (emulator: {e.get('status', 'no result')}" + \
            (f", max err {max(errs):.3g}" if errs else "") + ")"
    return f"{status:7} {st['name']}{where}  {text}  {res.get('seconds', 0):.1f} s{exp}"


def parent(args):
    steps = plan(args.dir, args.step_timeout, args.env_timeout)
    if args.only:
        steps = [s for s in steps if re.search(args.only, s["name"])]
    os.makedirs(args.out, exist_ok=True)
    expected = None
    if args.expected and os.path.exists(args.expected):
        expected = {s["step"]["name"]: s["result"]
                    for s in json.load(open(args.expected))["steps"]}
    progress = os.path.join(args.out, "ladder-progress.jsonl")
    open(progress, "w").close()
    results = {}
    start = time.time()
    doc = dict(date=datetime.datetime.now(datetime.timezone.utc).isoformat(),
               driver=os.environ.get("ATTNFUSE_CUDA_DRIVER") or "libcuda.so.1", steps=[])

    def save():
        doc["elapsed_s"] = round(time.time() - start, 1)
        doc["steps"] = [dict(step=s, result=results[s["name"]]) for s in steps
                        if s["name"] in results]
        counts = {}
        for s in doc["steps"]:
            counts[s["result"]["status"]] = counts.get(s["result"]["status"], 0) + 1
        doc["counts"] = counts
        with open(os.path.join(args.out, "ladder.json"), "w") as f:
            json.dump(doc, f, indent=2)

    print(f"== first-contact ladder: {len(steps)} steps, budget {args.budget:.0f} s", flush=True)
    todo = list(steps)
    fatal = None
    while todo and fatal is None:
        if time.time() - start > args.budget:
            break
        steps_file = os.path.join(args.out, "ladder-steps.json")
        json.dump(todo, open(steps_file, "w"))
        pos = os.path.getsize(progress)
        proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker",
                                 "--dir", args.dir, "--lib", args.lib, "--steps", steps_file,
                                 "--progress", progress])
        current, began, started = None, time.time(), False
        killed = None
        while True:
            rc = proc.poll()
            with open(progress) as f:
                f.seek(pos)
                chunk = f.read()
            complete = chunk[:chunk.rfind("\n") + 1]
            pos += len(complete.encode())
            for line in complete.splitlines():
                ev = json.loads(line)
                if ev["event"] == "worker_start":
                    started = True
                elif ev["event"] == "start":
                    current = next(s for s in todo if s["name"] == ev["step"])
                    began = time.time()
                elif ev["event"] == "end":
                    st = next(s for s in todo if s["name"] == ev["step"])
                    results[st["name"]] = ev["result"]
                    todo.remove(st)
                    current, began = None, time.time()
                    print(describe(st, ev["result"], expected), flush=True)
                    save()
                elif ev["event"] == "fatal":
                    fatal = ev["error"]
            if rc is not None:
                break
            limit = current["timeout"] if current else args.startup_timeout
            if time.time() - began > limit:
                killed = (f"TIMEOUT after {limit:.0f} s" if current else
                          f"worker start-up took over {limit:.0f} s")
            elif time.time() - start > args.budget + (current or {}).get("timeout", 0):
                killed = "ladder budget exhausted"
            if killed:
                proc.kill()
                proc.wait()
                break
            time.sleep(0.05)
        if current is not None:
            status = "TIMEOUT" if killed else "CRASH"
            res = dict(status=status, error=killed or f"worker exited with code {proc.returncode}",
                       seconds=round(time.time() - began, 1))
            results[current["name"]] = res
            todo.remove(current)
            print(describe(current, res, expected), flush=True)
            save()
        elif killed and not started:
            fatal = killed
        elif proc.returncode not in (0, 3) and fatal is None:
            fatal = f"worker exited with code {proc.returncode} outside a step"
    for st in todo:
        results[st["name"]] = dict(status="NOT RUN", error=fatal or "ladder budget exhausted")
    if fatal:
        doc["fatal"] = fatal
        print(f"ladder stopped: {fatal}", flush=True)
    save()
    counts = doc["counts"]
    print(f"== ladder: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) +
          f" of {len(steps)} steps in {doc['elapsed_s']:.1f} s; "
          f"{os.path.join(args.out, 'ladder.json')}", flush=True)
    return 0 if counts.get("PASS", 0) == len(steps) else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dir", required=True, help="the prepared directory")
    p.add_argument("--lib", required=True, help="libattnfuse_runtime.so")
    p.add_argument("--out", help="output directory (ladder.json)")
    p.add_argument("--budget", type=float, default=150.0,
                   help="seconds after which no further step starts")
    p.add_argument("--step-timeout", type=float, default=30.0, help="seconds per launch step")
    p.add_argument("--env-timeout", type=float, default=180.0,
                   help="seconds for the env step (loads and JITs every kernel)")
    p.add_argument("--startup-timeout", type=float, default=60.0,
                   help="seconds a worker may take to start (import, context)")
    p.add_argument("--expected", help="a ladder.json to print next to the results "
                   "(the emulator's, written by the prepare half)")
    p.add_argument("--only", help="run only the steps whose name matches this regex")
    p.add_argument("--worker", action="store_true")
    p.add_argument("--steps")
    p.add_argument("--progress")
    args = p.parse_args()
    if args.worker:
        return worker(args)
    if not args.out:
        p.error("--out is required")
    return parent(args)


if __name__ == "__main__":
    sys.exit(main())
