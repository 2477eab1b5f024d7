"""The CPU JIT's boundary: sizes that disagree are refused before any
compiled code runs (naming both arguments and sizes), a check that fails
inside the compiled code stops it and returns an error, and neither leaves
anything behind (10^4 failing calls keep the process size flat)."""

import resource

import numpy as np
import pytest

import attnfuse

SDPA = """func.func @sdpa(%q: tensor<?x?x2x4xf32>, %k: tensor<?x?x2x4xf32>,
                 %v: tensor<?x?x2x4xf32>) -> tensor<?x?x2x4xf32> {
  %o = attn.sdpa %q, %k, %v {causal} : (tensor<?x?x2x4xf32>,
      tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>) -> tensor<?x?x2x4xf32>
  return %o : tensor<?x?x2x4xf32>
}"""

# Writes one row per sequence at its position: a position past the capacity
# (8 rows) fails the compiled code's own check.
CACHE = """func.func @update(%cache: tensor<?x8x2x4xf32>, %rows: tensor<?x1x2x4xf32>,
                   %pos: tensor<?xi32>) -> tensor<?x8x2x4xf32> {
  %c = attn.cache_update %cache, %rows positions(%pos)
      : (tensor<?x8x2x4xf32>, tensor<?x1x2x4xf32>, tensor<?xi32>)
      -> tensor<?x8x2x4xf32>
  return %c : tensor<?x8x2x4xf32>
}"""


# A padded batch's key mask [B, T] follows the keys.
MASKED_SDPA = """func.func @masked(%q: tensor<?x?x2x4xf32>, %k: tensor<?x?x2x4xf32>,
                   %m: tensor<?x?xi32>) -> tensor<?x?x2x4xf32> {
  %o = attn.sdpa %q, %k, %k key_mask(%m) {causal} : (tensor<?x?x2x4xf32>,
      tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?xi32>)
      -> tensor<?x?x2x4xf32>
  return %o : tensor<?x?x2x4xf32>
}"""


@pytest.fixture(scope="module")
def sdpa():
    return attnfuse.compile(attnfuse.parse(SDPA))


@pytest.fixture(scope="module")
def update():
    return attnfuse.compile(attnfuse.parse(CACHE))


def arrays(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


@pytest.mark.parametrize("shapes, message", [
    # keys of length 0 against values of length 2 once wrote past a buffer
    (([2, 2, 2, 4], [2, 0, 2, 4], [2, 2, 2, 4]),
     r"argument #2 dimension 1 is 2 but argument #1 dimension 1 is 0; "
     r"attn.sdpa at .* needs 'value' T == 'key' T"),
    (([2, 5, 2, 4], [2, 0, 2, 4], [2, 5, 2, 4]),
     r"argument #2 dimension 1 is 5 but argument #1 dimension 1 is 0"),
    # these gave wrong answers
    (([2, 5, 2, 4], [3, 5, 2, 4], [2, 5, 2, 4]),
     r"argument #1 dimension 0 is 3 but argument #0 dimension 0 is 2; "
     r"attn.sdpa at .* needs 'key' batch == 'query' batch"),
    (([0, 5, 2, 4], [2, 5, 2, 4], [2, 5, 2, 4]),
     r"argument #1 dimension 0 is 2 but argument #0 dimension 0 is 0"),
    (([2, 5, 2, 4], [2, 7, 2, 4], [2, 5, 2, 4]),
     r"argument #2 dimension 1 is 5 but argument #1 dimension 1 is 7"),
    (([1, 1, 2, 4], [1, 20000, 2, 4], [1, 1, 2, 4]),
     r"argument #2 dimension 1 is 1 but argument #1 dimension 1 is 20000"),
])
def test_inconsistent_sizes_are_refused_before_the_call(sdpa, shapes, message):
    with pytest.raises(RuntimeError,
                       match="run-time size check of 'sdpa' failed before "
                             "the call: " + message):
        sdpa(*arrays(*shapes))


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "reference"])
@pytest.mark.parametrize("mask_shape, message", [
    ([2, 4], r"argument #2 dimension 1 is 4 but argument #1 dimension 1 is "
             r"5; attn.sdpa at .* needs 'key_mask' T == 'key' T"),
    ([3, 5], r"argument #2 dimension 0 is 3 but argument #0 dimension 0 is "
             r"2; attn.sdpa at .* needs 'key_mask' batch == 'query' batch"),
])
def test_a_key_mask_of_other_sizes_is_refused(fused, mask_shape, message):
    masked = attnfuse.compile(attnfuse.parse(MASKED_SDPA), fused=fused)
    q, k = arrays([2, 5, 2, 4], [2, 5, 2, 4])
    mask = np.ones((2, 5), np.int32)
    assert masked(q, k, mask).shape == (2, 5, 2, 4)
    with pytest.raises(RuntimeError, match="run-time size check of 'masked' "
                                           "failed before the call: "
                                           + message):
        masked(q, k, np.ones(mask_shape, np.int32))


def test_a_padding_mask_of_other_sizes_is_refused():
    run = attnfuse.compile(attnfuse.cca(embed_dim=16, num_heads=2,
                                        head_dim=8, padding_mask="i32"))
    rng = np.random.default_rng(0)
    weights = [rng.standard_normal(shape).astype(np.float32)
               for _, shape in run.arguments[2:]]
    x = rng.standard_normal((2, 6, 16)).astype(np.float32)
    assert run(x, np.ones((2, 6), np.int32), *weights).shape == (2, 6, 16)
    with pytest.raises(RuntimeError, match=r"argument #1 \('mask'\) "
                       r"dimension 0 is 1 but argument #0 \('x'\) "
                       r"dimension 0 is 2; attn.mask_tokens at .* needs "
                       r"'mask' batch == 'input' batch"):
        run(x, np.ones((1, 6), np.int32), *weights)
    with pytest.raises(ValueError, match="argument #1 \\('mask'\\) of "
                       "'model' is i32: expected a int32 array, got int64"):
        run(x, np.ones((2, 6), np.int64), *weights)


def test_no_keys_gives_zeros(sdpa):
    q, k, v = arrays([2, 5, 2, 4], [2, 0, 2, 4], [2, 0, 2, 4])
    out = sdpa(q, k, v)
    assert out.shape == (2, 5, 2, 4) and not out.any()
    assert sdpa(*arrays([0, 5, 2, 4], [0, 5, 2, 4], [0, 5, 2, 4])).shape == (0, 5, 2, 4)


def test_failed_check_inside_the_compiled_code(update):
    cache = np.zeros((2, 8, 2, 4), np.float32)
    rows = np.ones((2, 1, 2, 4), np.float32)
    out = update(cache, rows, np.array([3, 7], np.int32))
    assert out is cache  # updated in place
    assert out[0, 3].all() and out[1, 7].all() and out.sum() == 16
    cache = np.zeros((2, 8, 2, 4), np.float32)
    with pytest.raises(RuntimeError,
                       match="a run-time check of 'update' failed, nothing "
                             "after it ran: .*position"):
        update(cache, rows, np.array([3, 8], np.int32))
    # The rows written before the failed check stay; nothing past it ran.
    assert cache[0, 3].all() and cache.sum() == 8
    # The process is healthy: the next call works.
    assert update(np.zeros_like(cache), rows, np.array([0, 1], np.int32)).sum() == 16


def test_failed_check_leaves_a_copied_cache_untouched():
    update = attnfuse.compile(attnfuse.parse(CACHE), in_place_caches=False)
    cache = np.zeros((2, 8, 2, 4), np.float32)
    rows = np.ones((2, 1, 2, 4), np.float32)
    with pytest.raises(RuntimeError, match="position"):
        update(cache, rows, np.array([3, 8], np.int32))
    assert not cache.any()
    out = update(cache, rows, np.array([3, 7], np.int32))
    assert out is not cache and out.sum() == 16 and not cache.any()


def _rss_kb():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def test_ten_thousand_failing_calls_leave_nothing_behind(sdpa, update):
    q, k, v = arrays([2, 5, 2, 4], [3, 5, 2, 4], [2, 5, 2, 4])
    cache = np.zeros((4, 8, 2, 4), np.float32)
    rows = np.ones((4, 1, 2, 4), np.float32)
    bad = np.array([0, 1, 2, 9], np.int32)

    def fail_many(count):
        for _ in range(count):
            with pytest.raises(RuntimeError):
                sdpa(q, k, v)
            with pytest.raises(RuntimeError):
                update(cache, rows, bad)

    fail_many(500)  # warm up (allocator pools, message caches)
    before = _rss_kb()
    fail_many(10000)
    grown = _rss_kb() - before
    # 10^4 leaked copies of the cache result alone would be 10 MB.
    assert grown < 2048, f"RSS grew by {grown} kB over 10^4 failing calls"
    assert np.array_equal(update(cache, rows, np.array([0, 1, 2, 3], np.int32))
                          .sum(), np.float32(32))


def test_layouts_are_accepted_and_named(sdpa):
    q, k, v = arrays([2, 5, 2, 4], [2, 5, 2, 4], [2, 5, 2, 4])
    expected = sdpa(q, k, v)
    # Read-only, non-contiguous and misaligned arrays are copied, not refused.
    ro = q.copy()
    ro.flags.writeable = False
    assert np.array_equal(sdpa(ro, k, v), expected)
    strided = np.empty((2, 5, 2, 8), np.float32)
    strided[..., ::2] = q
    assert np.array_equal(sdpa(strided[..., ::2], k, v), expected)
    raw = np.zeros(q.nbytes + 1, np.uint8)
    misaligned = raw[1:].view(np.float32).reshape(q.shape)
    misaligned[...] = q
    assert not misaligned.flags.aligned
    assert np.array_equal(sdpa(misaligned, k, v), expected)
    with pytest.raises(ValueError, match=r"argument #1 of 'sdpa' is f32: "
                                         r"expected a float32 array, got float64"):
        sdpa(q, k.astype(np.float64), v)
