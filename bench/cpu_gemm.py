#!/usr/bin/env python3
"""GEMM throughput of attn.project and attn.project_grad on the CPU next to
torch (MKL) in the same process, over tile sizes.

The projection (y = x W^T) and its gradient (dx = dy W, dW = dy^T x) at
[1, S, E] x [E, E], f32, one compiled function each per tile setting
(block_s, block_n, block_k of attnfuse.compile). With --rope-head-dim D the
projection is followed by attn.rope over heads of D (theta 1e4), which the
fused projection applies in its epilogue on tiles of whole heads: the
tiles of a layer's query and key projections (D 128: 128 features wide).
Each figure is the best of --runs calls after one warm-up call, in GFLOP/s
(2 S E^2 per GEMM); torch's are timed between ours so that every ratio
comes from one run.

    PYTHONPATH=build/python_packages OMP_NUM_THREADS=1 python3 bench/cpu_gemm.py \\
        --tiles "" "block_k=32" "block_k=128" "block_s=128"
"""

import argparse
import os
import sys
import time

import numpy as np

# The numerics tests' float64 reference (numpy only) checks the rotation.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration_test"))
import reference  # noqa: E402


def best_time(fn, runs):
    fn()
    seconds = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        seconds.append(time.perf_counter() - start)
    return min(seconds)


def modules(seq, embed, rope_head_dim=None):
    x, w = f"tensor<1x{seq}x{embed}xf32>", f"tensor<{embed}x{embed}xf32>"
    if not rope_head_dim:
        forward = f"""
func.func @model(%x: {x}, %w: {w}) -> {x} {{
  %y = attn.project %x, %w : ({x}, {w}) -> {x}
  return %y : {x}
}}"""
    else:
        heads = embed // rope_head_dim
        h = f"tensor<1x{seq}x{heads}x{rope_head_dim}xf32>"
        forward = f"""
func.func @model(%x: {x}, %w: {w}) -> {h} {{
  %y = attn.project %x, %w : ({x}, {w}) -> {x}
  %e = tensor.expand_shape %y [[0], [1], [2, 3]]
      output_shape [1, {seq}, {heads}, {rope_head_dim}] : {x} into {h}
  %r = attn.rope %e {{rope = #attn.rope<theta = 10000.0>}} : {h}
  return %r : {h}
}}"""
    backward = f"""
func.func @model(%x: {x}, %w: {w}, %dy: {x}) -> ({x}, {w}) {{
  %dx, %dw, %db = attn.project_grad %x, %w, %dy
      : ({x}, {w}, {x}) -> ({x}, {w}, tensor<{embed}xf32>)
  return %dx, %dw : {x}, {w}
}}"""
    return forward, backward


def parse_tiles(text):
    tiles = {}
    for part in text.split():
        name, value = part.split("=")
        tiles[name] = int(value)
    return tiles


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq", type=int, default=2048)
    parser.add_argument("--embed", type=int, default=1024)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--rope-head-dim", type=int, default=None,
                        help="rotate the projection's heads of this size "
                             "(torch: the plain product, no rotation)")
    parser.add_argument("--tiles", nargs="*", default=[""],
                        help='settings such as "block_s=128 block_k=32"; "" '
                             "is the defaults")
    args = parser.parse_args()

    import attnfuse
    import torch
    threads = int(os.environ.get("OMP_NUM_THREADS", "1"))
    torch.set_num_threads(threads)
    rng = np.random.default_rng(0)
    s, e = args.seq, args.embed
    x = rng.standard_normal((1, s, e), dtype=np.float32)
    w = (rng.standard_normal((e, e)) / np.sqrt(e)).astype(np.float32)
    dy = rng.standard_normal((1, s, e), dtype=np.float32)
    tx, tw, tdy = map(torch.from_numpy, (x, w, dy))
    gflop = 2 * s * e * e / 1e9
    if args.rope_head_dim and e % args.rope_head_dim:
        parser.error(f"--rope-head-dim {args.rope_head_dim} does not divide "
                     f"the width {e}")
    forward_text, backward_text = modules(s, e, args.rope_head_dim)
    rotated = (f", RoPE on heads of {args.rope_head_dim}"
               if args.rope_head_dim else "")
    print(f"S {s}, E {e}{rotated}, {threads} thread(s), best of {args.runs}, "
          "GFLOP/s")
    print("| tiles | ours projection | torch | ours dx + dW | torch | "
          "max abs error (projection) |")
    print("|---|---|---|---|---|---|")
    for text in args.tiles:
        tiles = parse_tiles(text)
        forward = attnfuse.compile(attnfuse.parse(forward_text), **tiles)
        backward = attnfuse.compile(attnfuse.parse(backward_text), **tiles)
        ours_forward = best_time(lambda: forward(x, w), args.runs)
        torch_forward = best_time(lambda: tx @ tw.T, args.runs)
        ours_backward = best_time(lambda: backward(x, w, dy), args.runs)
        torch_backward = best_time(lambda: (tdy @ tw, tdy[0].T @ tx[0]),
                                   args.runs)
        y = forward(x, w)
        y = np.asarray(y[0] if isinstance(y, (tuple, list)) else y)
        expected = (tx @ tw.T).numpy()
        if args.rope_head_dim:
            expected = reference.rope(
                expected.reshape(1, s, e // args.rope_head_dim,
                                 args.rope_head_dim), theta=1e4)
        error = np.abs(y.reshape(expected.shape) - expected).max()
        print(f"| {text or 'defaults'} | {gflop / ours_forward:.0f} | "
              f"{gflop / torch_forward:.0f} | {2 * gflop / ours_backward:.0f} | "
              f"{2 * gflop / torch_backward:.0f} | {error:.1e} |", flush=True)


if __name__ == "__main__":
    main()
