"""Kernel bugs the emulator must catch: each test breaks the generated FlashAttention PTX in one
way a generator bug would, runs it, and expects a failure: the emulator's diagnostic (deadlock,
hazard) or numbers that miss the reference. The unmutated kernel passes in test_flash_attention.
"""
import glob
import os
import re

import numpy as np
import pytest

import emulator
import reference
from test_flash_attention import model

SHAPE = dict(hq=1, hk=1, d=64, s=130, t=130)


def run_mutated(mutate):
    art = emulator.compile_model(model(1, 1, 64, True, None, False, False), "fa_mutation")
    name = next(k for k in art.kernels if k.startswith("attn_fa"))
    ptx_path = os.path.join(art.output_dir, name + ".ptx")
    with open(ptx_path) as f:
        text = f.read()
    mutated = mutate(text)
    assert mutated != text, "the mutation did not apply"
    with open(ptx_path, "w") as f:
        f.write(mutated)
    rng = np.random.default_rng(7)
    s = t = SHAPE["s"]
    qb, q = emulator.bf16(rng.standard_normal((1, s, 1, 64)))
    kb, k = emulator.bf16(rng.standard_normal((1, t, 1, 64)))
    vb, v = emulator.bf16(rng.standard_normal((1, t, 1, 64)))
    dev = emulator.Device()
    tensors = {"query": dev.upload(qb, "bf16"), "key": dev.upload(kb, "bf16"),
               "value": dev.upload(vb, "bf16"), "output": dev.empty((1, s, 1, 64), "bf16")}
    try:
        art.launch(name, tensors, B=1, S=s, T=t)
    except emulator.runtime.AttnFuseRuntimeError as e:
        return "diagnostic", str(e)
    got = reference.from_bf16_bits(dev.download(tensors["output"])).astype(np.float64)
    ref = reference.sdpa(q, k, v, causal=True)
    ok = np.all(np.abs(got - ref) <= 2.0 ** -7 * np.abs(v).max() + 2.0 ** -8 * np.abs(ref))
    return ("pass" if ok else "wrong numbers"), ""


def rs_wgmma_lines(text):
    return [m for m in re.finditer(r"^wgmma\.mma_async[^\n]*\{[^}]*\}, \{([^}]*)\}, (%rd\d+), p, 1, 1, 1;$",
                                   text, re.M)]


def test_v_descriptor_transpose_flipped():
    def mutate(text):  # P.V reads V K-major instead of MN-major
        return re.sub(r"(\{[^}]*\}, %rd\d+, p, 1, 1, )1;", r"\g<1>0;", text)
    kind, msg = run_mutated(mutate)
    # Read K-major with the MN-major strides, V's descriptor walks past the V tile into shared
    # memory nothing wrote or a copy the consumer has not waited for wrote.
    assert kind == "diagnostic" and ("never-written" in msg or "nothing orders" in msg), (kind, msg)


def test_a_fragment_rows_shifted_by_8():
    def mutate(text):  # rows l/4 and l/4 + 8 of P swapped in every RS wgmma
        def swap(m):
            a = [x.strip() for x in m.group(1).split(",")]
            return m.group(0).replace("{" + m.group(1) + "}",
                                      "{" + ", ".join([a[1], a[0], a[3], a[2]]) + "}")
        return re.sub(r"\{(%r\d+, %r\d+, %r\d+, %r\d+)\}, %rd\d+, p, 1, 1, 1;", swap, text)
    kind, _ = run_mutated(mutate)
    assert kind == "wrong numbers", kind


def test_expect_tx_one_byte_short():
    def mutate(text):  # the K/V stage is armed for one byte less than TMA delivers
        lines = text.split("\n")
        idx = max(i for i, l in enumerate(lines) if "mbarrier.arrive.expect_tx" in l)
        reg = re.search(r"(%r\d+);", lines[idx]).group(1)
        lines.insert(idx, f"\tadd.s32 \t{reg}, {reg}, -1;")
        return "\n".join(lines)
    kind, msg = run_mutated(mutate)
    assert kind == "diagnostic" and "deadlock" in msg and "tx-count -1" in msg, (kind, msg)


def test_producer_waits_on_wrong_parity():
    def mutate(text):  # the producer (after setmaxnreg.dec) waits on the other phase parity
        head, sep, tail = text.partition("setmaxnreg.dec")
        def flip(m):
            return f"xor.b32 {m.group(2)}, {m.group(2)}, 1;\n{m.group(0)}"
        tail = re.sub(r"(mbarrier\.try_wait\.parity\.shared\.b64 P1, \[%r\d+\], )(%r\d+)",
                      flip, tail, count=1)
        return head + sep + tail
    kind, msg = run_mutated(mutate)
    assert kind == "diagnostic", (kind, msg)


def test_mbarrier_init_fence_dropped():
    def mutate(text):
        return re.sub(r"^\s*fence\.mbarrier_init[^\n]*\n", "", text, flags=re.M)
    kind, msg = run_mutated(mutate)
    assert kind == "diagnostic" and "fence.mbarrier_init" in msg, (kind, msg)
