"""The first-contact ladder (scripts/device/ladder.py) reports what goes wrong: on a prepared
directory with one layer (mha_d64), a FlashAttention kernel broken the way a generator bug would
break it must give FAIL (wrong numbers) or ERROR (the emulator's diagnostic) on the steps that run
it while the GEMM steps still pass, and a step that overruns its timeout must be recorded as
TIMEOUT with the ladder going on to the next step. The unbroken ladder runs in
cudasim/device-check/ladder.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import pytest

import emulator

LADDER = os.path.join(emulator.REPO, "scripts", "device", "ladder.py")


@pytest.fixture(scope="module")
def prepared():
    """A directory as scripts/device-check.sh prepare-emulator writes it, for mha_d64 only."""
    emulator.require_env()
    work = tempfile.mkdtemp(prefix="cudasim-ladder-")
    env = dict(os.environ, DEVICE_CHECK_VARIANTS="^mha_d64$", ATTNFUSE_PYTHON=sys.executable)
    r = subprocess.run(["bash", os.path.join(emulator.REPO, "scripts", "device-check.sh"),
                        "prepare-emulator", work], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    yield work
    shutil.rmtree(work, True)


def ladder(d, out, *extra):
    r = subprocess.run([sys.executable, LADDER, "--dir", d, "--lib",
                        os.environ["ATTNFUSE_RUNTIME_LIB"], "--out", out, "--step-timeout", "600",
                        *extra], capture_output=True, text=True)
    doc = json.load(open(os.path.join(out, "ladder.json")))
    return r, {s["step"]["name"]: s["result"] for s in doc["steps"]}


def broken_copy(prepared, mutate, tmp_path):
    d = str(tmp_path / "prepared")
    shutil.copytree(prepared, d)
    kdir = os.path.join(d, "kernels", "mha_d64")
    ptx = next(f for f in os.listdir(kdir) if f.startswith("attn_fa") and f.endswith(".ptx"))
    text = open(os.path.join(kdir, ptx)).read()
    mutated = mutate(text)
    assert mutated != text, "the mutation did not apply"
    open(os.path.join(kdir, ptx), "w").write(mutated)
    return d


def test_plan_covers_the_layer(prepared, tmp_path):
    out = str(tmp_path)
    r, res = ladder(prepared, out, "--only", "^(env|gemm_permutation|flash_pv_d64)$")
    assert r.returncode == 0, r.stdout + r.stderr
    assert set(res) == {"env", "gemm_permutation", "flash_pv_d64"}
    assert all(x["status"] == "PASS" for x in res.values()), res
    assert res["gemm_permutation"]["max_err"] == 0.0
    assert "PASS    gemm_permutation" in r.stdout and "max err 0 (exact)" in r.stdout
    # A GPU run prints each step next to the emulator's result (prepare records it).
    r2, _ = ladder(prepared, str(tmp_path / "again"), "--only", "^gemm_permutation$",
                   "--expected", os.path.join(out, "ladder.json"))
    assert re.search(r"PASS\s+gemm_permutation .*\(emulator: PASS, max err 0\)", r2.stdout), \
        r2.stdout


def test_p_fragment_rows_shifted_fail(prepared, tmp_path):
    def mutate(text):  # rows l/4 and l/4 + 8 of P swapped in every RS wgmma (P.V)
        def swap(m):
            a = [x.strip() for x in m.group(1).split(",")]
            return m.group(0).replace("{" + m.group(1) + "}",
                                      "{" + ", ".join([a[1], a[0], a[3], a[2]]) + "}")
        return re.sub(r"\{(%r\d+, %r\d+, %r\d+, %r\d+)\}, %rd\d+, p, 1, 1, 1;", swap, text)
    d = broken_copy(prepared, mutate, tmp_path)
    r, res = ladder(d, str(tmp_path / "out"), "--only",
                    "^(gemm_permutation|flash_pv_d64|flash_qk_3tiles_d64)$")
    assert r.returncode == 1, r.stdout
    assert res["gemm_permutation"]["status"] == "PASS"
    for step in ("flash_pv_d64", "flash_qk_3tiles_d64"):
        assert res[step]["status"] == "FAIL", res[step]
        assert res[step]["bad"] > 0 and res[step]["worst_err_over_tol"] > 1
        assert re.search(rf"FAIL\s+{step} .*max err", r.stdout), r.stdout


def test_deadlock_is_an_error_and_the_ladder_goes_on(prepared, tmp_path):
    def mutate(text):  # the K/V stage is armed for one byte less than TMA delivers
        lines = text.split("\n")
        idx = max(i for i, l in enumerate(lines) if "mbarrier.arrive.expect_tx" in l)
        reg = re.search(r"(%r\d+);", lines[idx]).group(1)
        lines.insert(idx, f"\tadd.s32 \t{reg}, {reg}, -1;")
        return "\n".join(lines)
    d = broken_copy(prepared, mutate, tmp_path)
    r, res = ladder(d, str(tmp_path / "out"), "--only", "^(flash_pv_d64|example_s1/attn_gemm.*)$")
    assert r.returncode == 1, r.stdout
    assert res["flash_pv_d64"]["status"] == "ERROR", res["flash_pv_d64"]
    assert "deadlock" in res["flash_pv_d64"]["error"]
    gemm = [k for k in res if k.startswith("example_s1/attn_gemm")]
    assert gemm and all(res[k]["status"] == "PASS" for k in gemm), res


def test_timeouts_are_recorded_and_the_ladder_goes_on(prepared, tmp_path):
    out = str(tmp_path)
    # 0.2 s is far below what the emulator needs for these launches: each step is killed in
    # turn, and a fresh worker starts the next one.
    r = subprocess.run([sys.executable, LADDER, "--dir", prepared, "--lib",
                        os.environ["ATTNFUSE_RUNTIME_LIB"], "--out", out, "--step-timeout", "0.2",
                        "--only", "^(env|flash_qk_3tiles_d64|flash_qk_s_ne_t_d64)$"],
                       capture_output=True, text=True)
    res = {s["step"]["name"]: s["result"]
           for s in json.load(open(os.path.join(out, "ladder.json")))["steps"]}
    assert r.returncode == 1
    assert res["env"]["status"] == "PASS", res["env"]  # env has its own, longer timeout
    for step in ("flash_qk_3tiles_d64", "flash_qk_s_ne_t_d64"):
        assert res[step]["status"] == "TIMEOUT", res
        assert re.search(rf"TIMEOUT\s+{step}", r.stdout), r.stdout
