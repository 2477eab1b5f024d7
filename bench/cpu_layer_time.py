#!/usr/bin/env python3
"""Times one CPU layer (or the ZAYA1 example's compile) with the attnfuse
package on PYTHONPATH: for comparing two builds call by call, interleaved in
one session (an A/B on a noisy machine).

    PYTHONPATH=build/python_packages python3 bench/cpu_layer_time.py kv 2048 1 3
    PYTHONPATH=other/build/python_packages python3 bench/cpu_layer_time.py kv 2048 1 3
    PYTHONPATH=build/python_packages python3 bench/cpu_layer_time.py compile 0 1 2

Arguments: case (kv: bench/cpu_layers.py's kv-gqa4 layer, cca: its ZAYA1
CCGQA layer, compile: attnfuse.compile of examples/zaya1_ccgqa.mlir), S,
threads, number of timed calls. Prints every call's time and the median.
"""

import os
import sys
import time

import numpy as np

import attnfuse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cpu_layers  # noqa: E402
from cpu_vs_torch import random_args  # noqa: E402


def main():
    case, seq, threads, runs = (sys.argv[1], int(sys.argv[2]), int(sys.argv[3]),
                                int(sys.argv[4]))
    if case == "compile":
        with open(os.path.join(HERE, "..", "examples", "zaya1_ccgqa.mlir")) as f:
            module = attnfuse.parse(f.read())
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            attnfuse.compile(module)
            times.append(time.perf_counter() - start)
        print("compile zaya1_ccgqa.mlir s", " ".join(f"{t:.2f}" for t in times))
        return
    if case not in ("kv", "cca"):
        sys.exit(f"unknown case {case!r} (kv, cca, compile)")
    rng = np.random.default_rng(0)
    module = attnfuse.parse(cpu_layers.kv_layer() if case == "kv"
                            else cpu_layers.cca_layer())
    args = random_args(attnfuse.compile(module, runtime_checks=False, opt_level=0),
                       rng, seq)
    if case == "cca":
        args[9] = rng.uniform(0.2, 1.5, args[9].shape).astype(np.float32)  # temp
    layer = attnfuse.compile(module, runtime_checks=False, opt_level=3,
                             num_threads=threads)
    layer(*args)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        layer(*args)
        times.append(time.perf_counter() - start)
    print(case, "S", seq, "threads", threads, "ms",
          " ".join(f"{t * 1e3:.1f}" for t in times),
          "median", f"{np.median(times) * 1e3:.1f}")


if __name__ == "__main__":
    main()
