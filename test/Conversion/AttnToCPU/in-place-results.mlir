// RUN: attnfuse-opt %s --pass-pipeline='builtin.module(attn-to-cpu{in-place-results=true})' | FileCheck %s
// RUN: attnfuse-opt %s --pass-pipeline='builtin.module(attn-to-cpu)' | FileCheck %s --check-prefix=COPY

// Two identical decode layers over caches the caller lets the step write
// (`bufferization.writable`): the layer is outlined once, and with
// in-place-results the outlined function writes the cache in place and
// returns only the layer's output (rank 3); without it, it also returns the
// cache (rank 4), which the deallocation pipeline clones for the caller.

// CHECK-LABEL: llvm.func @step(
// CHECK: llvm.call @[[LAYER:[a-z_0-9]+]](
// CHECK: llvm.func @[[LAYER]](
// CHECK-SAME: -> !llvm.struct<(ptr, ptr, i64, array<3 x i64>, array<3 x i64>)>

// COPY-LABEL: llvm.func @step(
// COPY: llvm.call @[[LAYER:[a-z_0-9]+]](
// COPY: llvm.func @[[LAYER]](
// COPY-SAME: -> !llvm.struct<(struct<(ptr, ptr, i64, array<3 x i64>, array<3 x i64>)>, struct<(ptr, ptr, i64, array<4 x i64>, array<4 x i64>)>)>
func.func @step(%x: tensor<?x1x32xf32>, %wq0: tensor<32x32xf32>, %wk0: tensor<16x32xf32>,
                %wo0: tensor<32x32xf32>,
                %cache0: tensor<?x16x2x8xf32> {bufferization.writable = true},
                %wq1: tensor<32x32xf32>, %wk1: tensor<16x32xf32>, %wo1: tensor<32x32xf32>,
                %cache1: tensor<?x16x2x8xf32> {bufferization.writable = true},
                %pos: tensor<?xi32>)
    -> (tensor<?x1x32xf32>, tensor<?x16x2x8xf32>, tensor<?x16x2x8xf32>) {
  %y0, %c0 = attn.qkv_decode <kv> %x wq(%wq0) wk(%wk0) wo(%wo0) cache(%cache0) positions(%pos)
      {head_dim = 8 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64}
      : (tensor<?x1x32xf32>, tensor<32x32xf32>, tensor<16x32xf32>, tensor<32x32xf32>,
         tensor<?x16x2x8xf32>, tensor<?xi32>) -> (tensor<?x1x32xf32>, tensor<?x16x2x8xf32>)
  %h0 = arith.addf %x, %y0 : tensor<?x1x32xf32>
  %y1, %c1 = attn.qkv_decode <kv> %h0 wq(%wq1) wk(%wk1) wo(%wo1) cache(%cache1) positions(%pos)
      {head_dim = 8 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64}
      : (tensor<?x1x32xf32>, tensor<32x32xf32>, tensor<16x32xf32>, tensor<32x32xf32>,
         tensor<?x16x2x8xf32>, tensor<?xi32>) -> (tensor<?x1x32xf32>, tensor<?x16x2x8xf32>)
  %h1 = arith.addf %h0, %y1 : tensor<?x1x32xf32>
  return %h1, %c0, %c1 : tensor<?x1x32xf32>, tensor<?x16x2x8xf32>, tensor<?x16x2x8xf32>
}
