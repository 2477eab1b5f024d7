// A function of the model that the device cannot execute completely is a
// compile error on the op, never a silent fallback to the host.
// RUN: not attnfuse-compile %s --target=sm_90a -o %t --no-cubin 2>&1 | FileCheck %s
// RUN: not attnfuse-compile %S/Inputs/rope-at-positions.mlir --target=sm_90a -o %t --no-cubin 2>&1 | FileCheck %s --check-prefix=ROPE
// RUN: attnfuse-compile %S/Inputs/rope-at-positions.mlir --target=sm_90a -o %t --no-cubin --no-programs | FileCheck %s --check-prefix=KERNELS

// A rotation at given positions in a function without a cache: nothing gives
// the rows of its RoPE tables. Without device programs the kernel compiles,
// to be launched by hand.
// ROPE: rope-at-positions.mlir:4:8: error: rotates at given positions, but @rope_at has no cache of static capacity to size its RoPE tables by
// KERNELS: attnfuse-compile: 1 kernel(s) for sm_90a written to

// CHECK: program-errors.mlir:[[@LINE+10]]:8: error: has no sm_90a kernel: the device program of @scaled cannot execute 'arith.mulf'
// CHECK: attnfuse-compile: error: '{{.*}}program-errors.mlir' cannot run on the device as sm_90a kernels
func.func @scaled(%x: tensor<?x?x256xbf16>, %wq: tensor<256x256xbf16>,
                  %wk: tensor<128x256xbf16>, %wo: tensor<256x256xbf16>)
    -> tensor<?x?x256xbf16> {
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 64 : i64, causal}
      : (tensor<?x?x256xbf16>, tensor<256x256xbf16>, tensor<128x256xbf16>,
         tensor<256x256xbf16>) -> tensor<?x?x256xbf16>
  // No kernel multiplies two activations.
  %z = arith.mulf %x, %y : tensor<?x?x256xbf16>
  return %z : tensor<?x?x256xbf16>
}
