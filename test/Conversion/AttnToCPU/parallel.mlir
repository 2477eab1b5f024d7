// RUN: attnfuse-opt %s --attn-to-cpu | FileCheck %s
// RUN: attnfuse-opt %s --attn-to-cpu="num-threads=2" | FileCheck %s --check-prefix=THREADS
// RUN: attnfuse-opt %s --attn-to-cpu="parallel=false" | FileCheck %s --check-prefix=SEQ --implicit-check-not=omp.
// Any thread count computes the same bits; so does the sequential lowering.
// RUN: rm -rf %t && mkdir -p %t
// RUN: attnfuse-run %s --entry=layer --random-seed=5 --batch=3 --seq=70 --num-threads=1 --output-dir=%t/t1
// RUN: attnfuse-run %s --entry=layer --input=%t/t1/input0.npy --input=%t/t1/input1.npy --input=%t/t1/input2.npy --input=%t/t1/input3.npy --num-threads=2 --output-dir=%t/t2
// RUN: attnfuse-run %s --entry=layer --input=%t/t1/input0.npy --input=%t/t1/input1.npy --input=%t/t1/input2.npy --input=%t/t1/input3.npy --pipeline-options=parallel=false --output-dir=%t/seq
// RUN: cmp %t/t1/out0.npy %t/t2/out0.npy
// RUN: cmp %t/t1/out0.npy %t/seq/out0.npy
// RUN: not attnfuse-run %s --entry=layer --random-seed=5 --num-threads=2 --pipeline-options=parallel=false --output-dir=%t/x 2>&1 | FileCheck %s --check-prefix=CONFLICT

// By default the fused kernels' outer tile loops run on the OpenMP runtime's
// threads: one omp.parallel region with a worksharing loop over the
// collapsed tile indices per kernel (the three projections and flash
// attention), the reductions sequential inside each iteration. Each
// projection's input is packed into token blocks by a region of its own,
// one block per iteration (the weights here are a single block each), and
// so are the attention's key/value blocks, one per (batch, KV head, block).
// CHECK-LABEL: llvm.func @layer(
// CHECK: omp.parallel {
// CHECK-NEXT: omp.wsloop {
// CHECK-NEXT: omp.loop_nest (%{{.*}}) : i64 = ({{.*}}) to ({{.*}}) step ({{.*}}) {
// CHECK: omp.terminator
// CHECK: omp.parallel {
// CHECK-NEXT: omp.wsloop {
// CHECK-NEXT: omp.loop_nest (%{{.*}}, %{{.*}}) : i64 = ({{.*}}) to ({{.*}}) step ({{.*}}) collapse(2) {
// CHECK: omp.yield
// CHECK: omp.terminator
// CHECK-COUNT-2: omp.wsloop
// CHECK: omp.wsloop {
// CHECK-NEXT: omp.loop_nest (%{{.*}}, %{{.*}}, %{{.*}}) : i64 = ({{.*}}) to ({{.*}}) step ({{.*}}) collapse(3) {
// CHECK-COUNT-3: omp.wsloop
// CHECK-NOT: omp.wsloop
// CHECK: llvm.return

// num-threads=2 fixes the team size of every region.
// THREADS-LABEL: llvm.func @layer(
// THREADS-COUNT-8: omp.parallel num_threads(%{{.*}} : i32)
// THREADS-NOT: omp.parallel

// parallel=false: plain loops, no OpenMP.
// SEQ-LABEL: llvm.func @layer(

// CONFLICT: error: {{.*}}num_threads=2 needs the parallel lowering (the attn-to-cpu option parallel=false was given)
func.func @layer(%x: tensor<?x?x64xf32>, %wq: tensor<64x64xf32>,
                 %wk: tensor<32x64xf32>, %wo: tensor<64x64xf32>)
    -> tensor<?x?x64xf32> {
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64,
       causal, rope = #attn.rope<theta = 10000.0>}
      : (tensor<?x?x64xf32>, tensor<64x64xf32>, tensor<32x64xf32>,
         tensor<64x64xf32>) -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}
