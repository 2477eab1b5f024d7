#!/usr/bin/env python3
"""Every shipped example (or those named) end to end through its sm_90a device program on the
emulator, against the CPU path: the check CI runs for gpt300m_kv_gqa4 only (one call costs about
a minute of emulation for a 300M model, several for the 1.2B and ZAYA1 ones).

    ATTNFUSE_CUDA_DRIVER=build/lib/libattnfuse_cudasim.so PYTHONPATH=build/python_packages \\
        python3 cudasim/test/programs/run_examples.py [gpt300m_kv ...]
"""
import glob
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import attnfuse  # noqa: E402
import test_whole_models as T  # noqa: E402

EXAMPLES = os.path.join(HERE, "..", "..", "..", "examples")


def main(names):
    if not names:
        names = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(EXAMPLES, "*.mlir"))
                       if not p.endswith("_decode.mlir"))
    worst = 0.0
    for name in names:
        text = open(os.path.join(EXAMPLES, name + ".mlir")).read()
        module = attnfuse.parse(text)
        gpu = attnfuse.compile(module, target="sm_90a", cubin=False)
        cpu = attnfuse.compile(module)
        function = gpu.function("model")
        args = T.random_arguments(function, 2, 8, names=T.argument_names(text, "model"))
        start = time.time()
        got = gpu(*args)
        seconds = time.time() - start
        ref = cpu(*args)
        g = attnfuse.from_bf16(got).astype(np.float64)
        r = attnfuse.from_bf16(ref).astype(np.float64)
        err = np.abs(g - r).max() / np.abs(r).max()
        worst = max(worst, err)
        print(f"{name}: B 2 S 8, {function.launches} launches, emulated {seconds:.0f} s, "
              f"max|gpu - cpu| / max|cpu| = {err:.2e}", flush=True)
    return 0 if worst <= 2.0 ** -5 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
