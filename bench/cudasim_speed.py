#!/usr/bin/env python3
"""Emulator speed: thread-instructions per second of the sm_90a kernels on libattnfuse_cudasim.so
(one PTX instruction executed by one thread counts once; wgmma and TMA count once per thread that
issues them, however much work they do).

usage: python3 bench/cudasim_speed.py --build build
"""
import argparse
import ctypes
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    os.environ["ATTNFUSE_COMPILE"] = os.path.join(build, "bin", "attnfuse-compile")
    os.environ["ATTNFUSE_RUNTIME_LIB"] = os.path.join(build, "lib", "libattnfuse_runtime.so")
    sim = os.path.join(build, "lib", "libattnfuse_cudasim.so")
    os.environ["ATTNFUSE_CUDA_DRIVER"] = sim
    sys.path[:0] = [os.path.join(ROOT, "cudasim", "test", "kernels"),
                    os.path.join(ROOT, "integration_test")]
    import test_cca_prologue
    import test_flash_attention
    import test_projection

    lib = ctypes.CDLL(sim)
    lib.cudasimStats.argtypes = [ctypes.POINTER(ctypes.c_ulonglong), ctypes.POINTER(ctypes.c_double)]
    runs = [
        ("projection GEMM K=256 N=256, S=256", lambda: test_projection.run_projection(
            k=256, n=256, d=64, rope=True, bias=True, batch=1, seq=256)),
        ("FlashAttention d64 causal, S=T=256, 2 heads", lambda: test_flash_attention.run_flash(
            hq=2, hk=2, d=64, s=256, t=256, causal=True)),
        ("FlashAttention d128, S=T=128", lambda: test_flash_attention.run_flash(
            hq=1, hk=1, d=128, s=128, t=128)),
        ("CCA prologue E=128 Hq=4 Hk=2 d64, S=128", lambda: test_cca_prologue.run_cca(
            128, (2, 2), extras=True)),
    ]
    print("| kernel | thread-instructions | emulation s | M thread-instr/s |")
    print("|---|---|---|---|")
    for name, fn in runs:
        i0, s0 = ctypes.c_ulonglong(), ctypes.c_double()
        lib.cudasimStats(ctypes.byref(i0), ctypes.byref(s0))
        fn()
        i1, s1 = ctypes.c_ulonglong(), ctypes.c_double()
        lib.cudasimStats(ctypes.byref(i1), ctypes.byref(s1))
        n, s = i1.value - i0.value, s1.value - s0.value
        print(f"| {name} | {n} | {s:.2f} | {n / s / 1e6:.2f} |")


if __name__ == "__main__":
    main()
