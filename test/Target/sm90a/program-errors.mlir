// A function of the model that the device cannot execute completely is a
// compile error on the op, never a silent fallback to the host.
// RUN: not attnfuse-compile %s --target=sm_90a -o %t --no-cubin 2>&1 | FileCheck %s

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
