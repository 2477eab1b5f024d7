// The fused CPU kernels' tiles are register-blocked and vectorized before
// LLVM sees them (attn-vectorize-kernel-tiles, attn-lower-kernel-vectors):
// the GEMM tiles (the projection, Q K^T and P V) are 2 x 32 blocks (the
// pipeline's register-tile-m/n) whose k steps are FMAs on <32 x float>
// accumulators, and exp is a polynomial on
// 16-wide rows (no call of expf per lane). vectorize=false leaves the tiles
// to scalar loops.
// RUN: attnfuse-opt %s --attn-to-cpu="runtime-checks=false" | mlir-translate --mlir-to-llvmir | opt -O3 -mtriple=x86_64-unknown-linux-gnu -mattr=+avx2,+fma -S | FileCheck %s
// RUN: attnfuse-opt %s --attn-to-cpu="runtime-checks=false vectorize=false" | mlir-translate --mlir-to-llvmir | opt -O3 -mtriple=x86_64-unknown-linux-gnu -mattr=+avx2,+fma -S | FileCheck %s --check-prefix=SCALAR

// CHECK-LABEL: define {{.*}} @flash_kv_gqa(
// CHECK-NOT: @llvm.exp
// CHECK: call <32 x float> @llvm.fmuladd.v32f32
// CHECK-NOT: @llvm.exp
// CHECK: call <16 x float> @llvm.fma.v16f32
// CHECK-NOT: @llvm.exp
// CHECK-LABEL: define {{.*}} @gemm(
// SCALAR-LABEL: define {{.*}} @flash_kv_gqa(
// SCALAR-NOT: @llvm.fmuladd
// SCALAR: @llvm.exp
// SCALAR-LABEL: define {{.*}} @gemm(
func.func @flash_kv_gqa(%q: tensor<?x?x16x64xf32>, %kv: tensor<?x?x4x64xf32>)
    -> tensor<?x?x16x64xf32> {
  %o = attn.sdpa %q, %kv, %kv {causal}
      : (tensor<?x?x16x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>)
      -> tensor<?x?x16x64xf32>
  return %o : tensor<?x?x16x64xf32>
}

// The packing of the input and the GEMM tiles are regions of their own.
// CHECK: define {{.*}} @gemm..omp_par{{[.0-9]*}}(
// CHECK: call <32 x float> @llvm.fmuladd.v32f32
// SCALAR: define {{.*}} @gemm..omp_par{{[.0-9]*}}(
// SCALAR-NOT: @llvm.fmuladd
func.func @gemm(%x: tensor<?x?x256xf32>, %w: tensor<128x256xf32>)
    -> tensor<?x?x128xf32> {
  %y = attn.project %x, %w : (tensor<?x?x256xf32>, tensor<128x256xf32>)
      -> tensor<?x?x128xf32>
  return %y : tensor<?x?x128xf32>
}
