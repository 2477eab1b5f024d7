// The fused CPU kernels keep a contiguous dimension innermost in every tile
// loop, so LLVM's loop vectorizer turns them into vector code once it knows
// the target (attnfuse-run hands it the host's target machine).
// RUN: attnfuse-opt %s --attn-to-cpu="runtime-checks=false" | mlir-translate --mlir-to-llvmir | opt -O3 -mtriple=x86_64-unknown-linux-gnu -mattr=+avx2 -S | FileCheck %s

// CHECK-LABEL: define {{.*}} @flash_kv_gqa(
// CHECK: fmul <8 x float>
// CHECK: call <8 x float> @llvm.exp.v8f32
func.func @flash_kv_gqa(%q: tensor<?x?x16x64xf32>, %kv: tensor<?x?x4x64xf32>)
    -> tensor<?x?x16x64xf32> {
  %o = attn.sdpa %q, %kv, %kv {causal}
      : (tensor<?x?x16x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>)
      -> tensor<?x?x16x64xf32>
  return %o : tensor<?x?x16x64xf32>
}

// CHECK-LABEL: define {{.*}} @gemm(
// CHECK: fmul <8 x float>
func.func @gemm(%x: tensor<?x?x256xf32>, %w: tensor<128x256xf32>)
    -> tensor<?x?x128xf32> {
  %y = attn.project %x, %w : (tensor<?x?x256xf32>, tensor<128x256xf32>)
      -> tensor<?x?x128xf32>
  return %y : tensor<?x?x128xf32>
}
