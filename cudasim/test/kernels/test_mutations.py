"""Kernel bugs the emulator must catch. Each mutation breaks one shipped kernel's PTX at one point,
the way a generator bug would (a barrier dropped or given too few threads, a fence dropped or
moved past its barrier, a stage released before the wgmma that reads it retires, a wait on the
wrong group or parity, a bulk store never committed or waited for, a descriptor field, an offset
or a shuffle distance changed), runs a kernel test on the mutated kernel and expects it caught:
by an emulator diagnostic (a race, an async hazard, a deadlock, an out-of-bounds access) or by
numbers that miss the test's reference. The unmutated kernels pass in the other test files.

Every class of the emulator's checks has mutations here, in every kernel kind; the summary
("mutations caught: N of M") is printed at the end of the run.
"""
import re

import numpy as np
import pytest

import emulator
import reference
import test_cache_kernels
import test_cca_decode_prologue
import test_cca_prologue
import test_flash_attention
import test_flash_attention_grad
import test_flash_decode
import test_projection
import test_rope
import test_sdpa
import test_weight_grad

RESULTS = {}


# ---------------------------------------------------------------- the tests the mutants run

def flash():
    """FlashAttention d64, causal, S = T = 130: three key tiles through two stages, so a stage is
    refilled while the consumer works, and the output tile leaves by TMA store."""
    art = emulator.compile_model(test_flash_attention.model(1, 1, 64, True, None, False, False),
                                 "fa_mutation")
    name = next(k for k in art.kernels if k.startswith("attn_fa"))
    rng = np.random.default_rng(7)
    s = 130
    qb, q = emulator.bf16(rng.standard_normal((1, s, 1, 64)))
    kb, k = emulator.bf16(rng.standard_normal((1, s, 1, 64)))
    vb, v = emulator.bf16(rng.standard_normal((1, s, 1, 64)))
    dev = emulator.Device()
    tensors = {"query": dev.upload(qb, "bf16"), "key": dev.upload(kb, "bf16"),
               "value": dev.upload(vb, "bf16"), "output": dev.empty((1, s, 1, 64), "bf16")}
    art.launch(name, tensors, B=1, S=s, T=s)
    got = reference.from_bf16_bits(dev.download(tensors["output"])).astype(np.float64)
    ref = reference.sdpa(q, k, v, causal=True)
    assert np.all(np.abs(got - ref) <= 2.0 ** -7 * np.abs(v).max() + 2.0 ** -8 * np.abs(ref))


def flash_grad():
    """The flash backward, MHA d64, S = T = 130: each dK/dV consumer stages three query tiles'
    row statistics in its shared buffers, alternating between the two."""
    test_flash_attention_grad.check(*test_flash_attention_grad.run_grad(
        hq=1, hk=1, d=64, s=130, t=130, seed=11))


def bias_grad():
    """The column-sum kernel (a bias gradient) over 200 tokens: 8 warps' partial sums meet in
    shared memory."""
    test_weight_grad.check(*test_weight_grad.run_bias_grad(256, 200, 1.0, False))


def weight_grad_split():
    """A GQA K/V weight's gradient (256 x 1024: 16 tiles) split 8 ways over 1100 tokens: each
    split's f32 partials, then the combine kernel's ordered sum."""
    test_weight_grad.check(*test_weight_grad.run_weight_grad(1024, 256, 1100, False, splits=8))


def projection():
    """The projection GEMM over K = 512: eight K tiles through the stage ring (refilled), bias,
    TMA-store epilogue."""
    test_projection.check(*test_projection.run_projection(
        k=512, n=128, d=64, rope=False, bias=True, batch=1, seq=130, seed=3))


def cca_prologue():
    test_cca_prologue.test_ccgqa_plain_k3()


def cca_decode_prologue():
    test_cca_decode_prologue.test_ccgqa_decode_step()


def flash_decode():
    test_flash_decode.test_decode_keqv_gqa4([5, 270])


def sdpa():
    test_sdpa.test_causal_self_attention_odd_lengths_mqa()


def rope():
    test_rope.test_rope_partial_rotation()


def cache_update():
    test_cache_kernels.test_update_contiguous_prefill_odd_lengths()


def cache_gather():
    test_cache_kernels.test_gather_odd_page_shape()


# ---------------------------------------------------------------- mutation helpers

def lines_matching(text, pattern):
    lines = text.split("\n")
    return lines, [i for i, l in enumerate(lines) if re.search(pattern, l)]


def drop(pattern, nth=0):
    """Removes the nth line matching pattern."""
    def mutate(text):
        lines, hits = lines_matching(text, pattern)
        del lines[hits[nth]]
        return "\n".join(lines)
    return mutate


def sub(pattern, repl, nth=0):
    """Rewrites the nth line matching pattern with re.sub(pattern, repl)."""
    def mutate(text):
        lines, hits = lines_matching(text, pattern)
        i = hits[nth]
        lines[i] = re.sub(pattern, repl, lines[i], count=1)
        return "\n".join(lines)
    return mutate


def hoist(pattern, above, nth=0):
    """Moves the nth line matching pattern above the closest preceding line matching above."""
    def mutate(text):
        lines, hits = lines_matching(text, pattern)
        i = hits[nth]
        j = max(k for k in range(i) if re.search(above, lines[k]))
        lines.insert(j, lines.pop(i))
        return "\n".join(lines)
    return mutate


def sink(pattern, below, nth=0):
    """Moves the nth line matching pattern below the closest following line matching below."""
    def mutate(text):
        lines, hits = lines_matching(text, pattern)
        i = hits[nth]
        j = min(k for k in range(i + 1, len(lines)) if re.search(below, lines[k]))
        lines.insert(j, lines.pop(i))
        return "\n".join(lines)
    return mutate


def after(marker, mutate):
    """Applies mutate to the text after the first occurrence of marker."""
    def wrapped(text):
        head, sep, tail = text.partition(marker)
        return head + sep + mutate(tail)
    return wrapped


def flip_wait_parity(nth=0):
    """The nth mbarrier parity wait waits on the other phase parity (an xor of its register)."""
    def mutate(text):
        pattern = r"mbarrier\.try_wait\.parity\.shared\.b64 P1, \[%r\d+\], (%r\d+)"
        hits = list(re.finditer(pattern, text))
        m = hits[nth]
        reg = m.group(1)
        return text[:m.start()] + f"xor.b32 {reg}, {reg}, 1;\n" + text[m.start():]
    return mutate


def skip_wait(nth=0):
    """The nth mbarrier wait in an inline-asm loop returns at once."""
    def mutate(text):
        hits = list(re.finditer(r"mbarrier\.try_wait\.parity\.shared\.b64 P1, [^;]*;", text))
        m = hits[nth]
        return text[:m.start()] + "setp.eq.u32 P1, 0, 0;" + text[m.end():]
    return mutate


def expect_tx_short(nth=-1):
    """The nth mbarrier.arrive.expect_tx arms its barrier for one byte less."""
    def mutate(text):
        lines, hits = lines_matching(text, r"mbarrier\.arrive\.expect_tx")
        i = hits[nth]
        reg = re.search(r"(%r\d+);", lines[i]).group(1)
        lines.insert(i, f"\tadd.s32 \t{reg}, {reg}, -1;")
        return "\n".join(lines)
    return mutate


def descriptor_field(old_bits, new_bits):
    """Every wgmma descriptor constant with the template old_bits gets new_bits instead."""
    def mutate(text):
        def fix(m):
            v = int(m.group(0))
            return str((v & ~old_bits) | new_bits) if v & old_bits == old_bits else m.group(0)
        return re.sub(r"\b4611686\d{12}\b", fix, text)
    return mutate


def swap_fragment_rows(text):
    """Rows l/4 and l/4 + 8 of P swapped in every register-form wgmma."""
    def swap(m):
        a = [x.strip() for x in m.group(1).split(",")]
        return m.group(0).replace("{" + m.group(1) + "}", "{" + ", ".join([a[1], a[0], a[3], a[2]]) + "}")
    return re.sub(r"\{(%r\d+, %r\d+, %r\d+, %r\d+)\}, %rd\d+, p, 1, 1, 1;", swap, text)


SBO_1024, SBO_512 = 64 << 32, 32 << 32
SWIZZLE_128B, SWIZZLE_64B = 1 << 62, 2 << 62

# (name, class, kernel (name prefix), test, mutation)
MUTATIONS = [
    # FlashAttention: warp-specialized TMA + wgmma, online softmax, TMA-store epilogue.
    ("fa_v_descriptor_transposed", "layout", "attn_fa", flash,
     lambda t: re.sub(r"(\{[^}]*\}, %rd\d+, p, 1, 1, )1;", r"\g<1>0;", t)),
    ("fa_p_fragment_rows_swapped", "layout", "attn_fa", flash, swap_fragment_rows),
    ("fa_descriptor_sbo_halved", "layout", "attn_fa", flash,
     descriptor_field(SBO_1024, SBO_512)),
    ("fa_expect_tx_one_byte_short", "async ordering", "attn_fa", flash, expect_tx_short()),
    ("fa_producer_waits_wrong_parity", "synchronization", "attn_fa", flash,
     after("setmaxnreg.dec", flip_wait_parity(0))),
    ("fa_producer_skips_empty_wait", "synchronization", "attn_fa", flash,
     after("setmaxnreg.dec", skip_wait(0))),
    ("fa_consumer_skips_query_wait", "synchronization", "attn_fa", flash,
     after("setmaxnreg.inc", skip_wait(0))),
    ("fa_consumer_waits_wrong_parity", "synchronization", "attn_fa", flash,
     after("setmaxnreg.inc", flip_wait_parity(0))),
    ("fa_stage_released_before_wait_group", "async ordering", "attn_fa", flash,
     hoist(r"mbarrier\.arrive\.shared\.b64", r"wgmma\.wait_group")),
    ("fa_wait_group_leaves_one_in_flight", "group waits", "attn_fa", flash,
     sub(r"wgmma\.wait_group\.sync\.aligned \t0;", "wgmma.wait_group.sync.aligned \t1;", 1)),
    ("fa_wgmma_fence_dropped", "fences", "attn_fa", flash,
     drop(r"wgmma\.fence\.sync\.aligned", 0)),
    ("fa_mbarrier_init_fence_dropped", "fences", "attn_fa", flash,
     drop(r"fence\.mbarrier_init")),
    ("fa_barrier_after_mbarrier_init_dropped", "synchronization", "attn_fa", flash,
     drop(r"bar\.sync \t0;")),
    ("fa_store_proxy_fence_dropped", "fences", "attn_fa", flash,
     drop(r"fence\.proxy\.async\.shared::cta")),
    ("fa_store_proxy_fence_after_barrier", "fences", "attn_fa", flash,
     sink(r"fence\.proxy\.async\.shared::cta", r"bar\.sync")),
    ("fa_store_barrier_dropped", "synchronization", "attn_fa", flash,
     drop(r"bar\.sync \t1, 128;")),
    ("fa_store_barrier_count_too_small", "barrier counts", "attn_fa", flash,
     sub(r"bar\.sync \t1, 128;", "bar.sync \t1, 64;")),
    ("fa_bulk_store_never_committed", "group waits", "attn_fa", flash,
     drop(r"cp\.async\.bulk\.commit_group")),
    ("fa_bulk_store_never_waited", "group waits", "attn_fa", flash,
     drop(r"cp\.async\.bulk\.wait_group\.read")),
    # The flash backward's dK/dV kernel: lse and D staged through shared memory per query tile.
    ("dkv_row_stats_barrier_dropped", "synchronization", "attn_fa_dkv", flash_grad,
     drop(r"bar\.sync \t1, 128;", 0)),
    # The bias gradient's column sums: the partial sums cross warps through shared memory.
    ("colsum_barrier_dropped", "synchronization", "attn_wgrad_colsum", bias_grad,
     drop(r"bar\.sync", 0)),
    ("colsum_row_stride", "addressing", "attn_wgrad_colsum", bias_grad,
     sub(r"shl\.b32 \t(%r\d+), (%r\d+), 8;", r"shl.b32 \t\1, \2, 7;", 1)),
    # The weight gradient split over the tokens: grid z picks the share and the partial tile;
    # the combine kernel reads split z's partials z * out * in floats along.
    ("wgrad_split_ignores_ctaid_z", "addressing", "attn_wgrad", weight_grad_split,
     sub(r"mov\.u32 \t(%r\d+), %ctaid\.z;", r"mov.u32 \t\1, 0;")),
    ("wgrad_combine_split_stride", "addressing", "attn_wgrad_combine", weight_grad_split,
     sub(r"\[(%rd\d+)\+1048576\]", r"[\1+1048560]")),
    # The projection GEMM: producer warp, consumer warpgroup, four-stage ring.
    ("gemm_stage_released_before_wait_group", "async ordering", "attn_gemm", projection,
     hoist(r"mbarrier\.arrive\.shared\.b64", r"wgmma\.wait_group")),
    ("gemm_last_wait_group_dropped", "group waits", "attn_gemm", projection,
     lambda t: re.sub(r"\n\twgmma\.wait_group\.sync\.aligned \t0;", "", t)),
    ("gemm_consumer_waits_wrong_parity", "synchronization", "attn_gemm", projection,
     after("setmaxnreg.inc", flip_wait_parity(1))),
    ("gemm_producer_skips_empty_wait", "synchronization", "attn_gemm", projection,
     after("setmaxnreg.dec", skip_wait(4))),
    ("gemm_first_wgmma_fence_dropped", "fences", "attn_gemm", projection,
     drop(r"wgmma\.fence\.sync\.aligned", 0)),
    ("gemm_descriptor_swizzle_64b", "layout", "attn_gemm", projection,
     descriptor_field(SWIZZLE_128B, SWIZZLE_64B)),
    ("gemm_store_proxy_fence_dropped", "fences", "attn_gemm", projection,
     drop(r"fence\.proxy\.async\.shared::cta")),
    ("gemm_store_barrier_dropped", "synchronization", "attn_gemm", projection,
     drop(r"bar\.sync \t2, 128;")),
    ("gemm_bulk_store_never_waited", "group waits", "attn_gemm", projection,
     drop(r"cp\.async\.bulk\.wait_group\.read")),
    ("gemm_stage_released_a_group_early", "group waits", "attn_gemm", projection,
     sub(r"wgmma\.wait_group\.sync\.aligned \t1;", "wgmma.wait_group.sync.aligned \t2;")),
    ("gemm_mbarrier_init_count", "barrier counts", "attn_gemm", projection,
     sub(r"(mbarrier\.init\.shared\.b64 \t\[%rd4\+163840\]), (%r\d+);", r"\1, 2;")),
    # The CCA prologue: TMA + wgmma down-projection, convolutions and norms through shared memory.
    ("cca_prologue_barrier_after_mbarrier_init_dropped", "synchronization", "attn_cca_prologue",
     cca_prologue, drop(r"bar\.sync", 0)),
    ("cca_prologue_barrier_dropped_1", "synchronization", "attn_cca_prologue", cca_prologue,
     drop(r"bar\.sync", 1)),
    ("cca_prologue_barrier_dropped_2", "synchronization", "attn_cca_prologue", cca_prologue,
     drop(r"bar\.sync", 2)),
    ("cca_prologue_barrier_dropped_4", "synchronization", "attn_cca_prologue", cca_prologue,
     drop(r"bar\.sync", 4)),
    ("cca_prologue_barrier_dropped_5", "synchronization", "attn_cca_prologue", cca_prologue,
     drop(r"bar\.sync", 5)),
    ("cca_prologue_wait_group_dropped", "group waits", "attn_cca_prologue", cca_prologue,
     drop(r"wgmma\.wait_group")),
    ("cca_prologue_waits_wrong_parity", "synchronization", "attn_cca_prologue", cca_prologue,
     flip_wait_parity(0)),
    ("cca_prologue_shuffle_distance", "addressing", "attn_cca_prologue", cca_prologue,
     sub(r"(shfl\.sync\.bfly\.b32 \t%r\d+, %r\d+, )1,", r"\g<1>2,")),
    # The CCA decode prologue: GEMV convolution and norms, no TMA.
    ("cca_decode_barrier_dropped", "synchronization", "attn_cca_decode_prologue",
     cca_decode_prologue, drop(r"bar\.sync", 0)),
    ("cca_decode_shuffle_distance", "addressing", "attn_cca_decode_prologue",
     cca_decode_prologue, sub(r"(shfl\.sync\.bfly\.b32 \t%r\d+, %r\d+, )16,", r"\g<1>8,")),
    # Split-KV decode: bulk copies of the cache into shared memory, then the combine.
    ("decode_expect_tx_one_byte_short", "async ordering", "attn_flash_decode", flash_decode,
     expect_tx_short(0)),
    ("decode_skips_cache_wait", "synchronization", "attn_flash_decode", flash_decode,
     skip_wait(0)),
    ("decode_barrier_dropped", "synchronization", "attn_flash_decode", flash_decode,
     drop(r"bar\.sync", 1)),
    ("decode_combine_output_row_stride", "addressing", "attn_flash_decode_combine",
     flash_decode, sub(r"shl\.b32 \t(%r\d+), (%r\d+), 6;", r"shl.b32 \t\1, \2, 5;")),
    # SDPA (arbitrary masks and positions), RoPE, the cache kernels.
    ("sdpa_barrier_dropped", "synchronization", "attn_sdpa", sdpa, drop(r"bar\.sync", 0)),
    ("rope_rotation_sign", "addressing", "attn_rope", rope, sub(r"\bsub\.rn\.f32", "add.rn.f32")),
    ("cache_update_row_offset", "addressing", "attn_cache_update", cache_update,
     sub(r"shl\.b64 \t(%rd\d+), (%rd\d+), 8;", r"shl.b64 \t\1, \2, 7;")),
    ("cache_gather_page_stride", "addressing", "attn_cache_gather", cache_gather,
     sub(r"mul\.wide\.s32 \t(%rd\d+), (%r\d+), 120;", r"mul.wide.s32 \t\1, \2, 96;")),
]


@pytest.mark.parametrize("name,cls,kernel,test,mutation", MUTATIONS,
                         ids=[m[0] for m in MUTATIONS])
def test_mutation_is_caught(name, cls, kernel, test, mutation):
    def apply(kernel_name, text):  # the kernel named `kernel`, or `kernel`_bf16...
        ours = kernel_name == kernel or kernel_name.startswith(kernel + "_bf16")
        return mutation(text) if ours else text
    outcome, detail = "missed", ""
    with emulator.mutate_ptx(apply) as hits:
        try:
            test()
        except emulator.runtime.AttnFuseRuntimeError as e:
            outcome, detail = "diagnostic", str(e)
        except AssertionError as e:
            outcome, detail = "wrong numbers", str(e)
    assert hits, f"the mutation changed no {kernel}* kernel"
    RESULTS[name] = (cls, outcome, detail)
    assert outcome != "missed", f"{name} ({cls}) passed the test"


def summary():
    """Lines for the end of the run: per mutation, how it was caught; then the catch rate."""
    if not RESULTS:
        return []
    out = []
    for name, (cls, outcome, detail) in RESULTS.items():
        first = re.sub(r"\s+", " ", detail)
        first = first[first.find("cudasim:"):] if "cudasim:" in first else first
        out.append(f"{name:40s} {cls:16s} {outcome:14s} {first[:160]}")
    caught = sum(o != "missed" for _, o, _ in RESULTS.values())
    out.append(f"mutations caught: {caught} of {len(RESULTS)}")
    return out
