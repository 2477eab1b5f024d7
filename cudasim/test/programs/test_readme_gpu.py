"""The GPU examples of docs/runtime.md are examples/python/gpu_zaya_stack.py and
gpu_kv_decode.py, copied exactly, and they run (here on the emulator, with CPU
tensors)."""
import os
import re
import subprocess
import sys

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def test_gpu_example_is_in_the_runtime_guide_and_runs():
    pytest.importorskip("torch")
    path = os.path.join(REPO, "examples", "python", "gpu_zaya_stack.py")
    code = open(path).read()
    code = code[code.index("import torch"):]
    page = open(os.path.join(REPO, "docs", "runtime.md")).read()
    blocks = re.findall(r"```python\n(.*?)```", page, re.S)
    assert code in blocks, "docs/runtime.md's GPU example differs from " + path
    proc = subprocess.run([sys.executable, path], capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr
    assert "(2, 64, 256) torch.bfloat16" in proc.stdout
    assert "'launches_per_call': 8" in proc.stdout
    assert "max difference to the CPU path" in proc.stdout


def test_gpu_decode_example_is_in_the_runtime_guide_and_runs():
    pytest.importorskip("torch")
    path = os.path.join(REPO, "examples", "python", "gpu_kv_decode.py")
    code = open(path).read()
    code = code[code.index("import torch"):]
    page = open(os.path.join(REPO, "docs", "runtime.md")).read()
    blocks = re.findall(r"```python\n(.*?)```", page, re.S)
    assert code in blocks, "docs/runtime.md's GPU decode example differs from " + path
    proc = subprocess.run([sys.executable, path], capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr
    assert "launches per step; max difference to the CPU path over 4 steps" in proc.stdout
