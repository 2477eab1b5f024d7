// attnfuse-run: random inputs, .npy round trip, the run list, and clean
// errors for every kind of bad input. (Numerics: integration_test/.)

// RUN: rm -rf %t && mkdir -p %t
// RUN: attnfuse-run %s --entry=sdpa --random-seed=7 --batch=2 --seq=5 --output-dir=%t/rand
// RUN: ls %t/rand | FileCheck %s --check-prefix=FILES
// FILES: input0.npy
// FILES-NEXT: input1.npy
// FILES-NEXT: input2.npy
// FILES-NEXT: out0.npy

// Feeding the saved inputs back gives the same result, byte for byte.
// RUN: attnfuse-run %s --entry=sdpa --input=%t/rand/input0.npy --input=%t/rand/input1.npy --input=%t/rand/input2.npy --output-dir=%t/again
// RUN: cmp %t/rand/out0.npy %t/again/out0.npy

// One compilation, several calls.
// RUN: echo "# comment" > %t/runs.txt
// RUN: echo "%t/list1 %t/rand/input0.npy %t/rand/input1.npy %t/rand/input2.npy" >> %t/runs.txt
// RUN: echo "%t/list2 %t/rand/input0.npy %t/rand/input1.npy %t/rand/input2.npy" >> %t/runs.txt
// RUN: attnfuse-run %s --entry=sdpa --run-list=%t/runs.txt
// RUN: cmp %t/rand/out0.npy %t/list1/out0.npy
// RUN: cmp %t/rand/out0.npy %t/list2/out0.npy

// bf16 results are '<u2' bit patterns.
// RUN: attnfuse-run %s --entry=project_bf16 --random-seed=1 --batch=3 --seq=4 --output-dir=%t/bf16
// RUN: head -c 80 %t/bf16/out0.npy | FileCheck %s --check-prefix=BF16
// BF16: {'descr': '<u2', 'fortran_order': False, 'shape': (3, 4, 6), }

// RUN: not attnfuse-run %s --entry=nope --random-seed=1 --output-dir=%t/x 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: attnfuse-run: error: no function 'nope' in '{{.*}}attnfuse-run.mlir' (functions: sdpa, project_bf16, takes_i32, takes_i64)

// RUN: not attnfuse-run %s --entry=sdpa --input=%t/rand/input0.npy --output-dir=%t/x 2>&1 | FileCheck %s --check-prefix=COUNT
// COUNT: attnfuse-run: error: 'sdpa' takes 3 argument(s), got 1 input file(s)

// RUN: not attnfuse-run %s --entry=project_bf16 --input=%t/rand/input0.npy --input=%t/bf16/input1.npy --output-dir=%t/x 2>&1 | FileCheck %s --check-prefix=DTYPE
// DTYPE: attnfuse-run: error: input #0 '{{.*}}input0.npy' has dtype <f4 (f32), argument #0 of 'project_bf16' is bf16 (npy dtype <u2)

// RUN: not attnfuse-run %s --entry=sdpa --input=%t/rand/input0.npy --input=%t/bf16/input0.npy --input=%t/rand/input2.npy --output-dir=%t/x 2>&1 | FileCheck %s --check-prefix=DTYPE2
// DTYPE2: error: input #1 '{{.*}}input0.npy' has dtype <u2 (bf16), argument #1 of 'sdpa' is f32 (npy dtype <f4)

// RUN: not attnfuse-run %s --entry=project_bf16 --input=%t/bf16/input1.npy --input=%t/bf16/input1.npy --output-dir=%t/x 2>&1 | FileCheck %s --check-prefix=SHAPE
// SHAPE: attnfuse-run: error: input #0 '{{.*}}input1.npy' has shape [6, 8], argument #0 of 'project_bf16' needs [?, ?, 8]

// RUN: not attnfuse-run %s --entry=sdpa --input=%t/missing.npy --input=%t/rand/input1.npy --input=%t/rand/input2.npy --output-dir=%t/x 2>&1 | FileCheck %s --check-prefix=UNREADABLE
// UNREADABLE: attnfuse-run: error: input #0: '{{.*}}missing.npy': cannot read file:

// RUN: not attnfuse-run %s --entry=sdpa --input=%s --input=%t/rand/input1.npy --input=%t/rand/input2.npy --output-dir=%t/x 2>&1 | FileCheck %s --check-prefix=NOTNPY
// NOTNPY: attnfuse-run: error: input #0: '{{.*}}attnfuse-run.mlir': not a .npy file (bad magic)

// RUN: head -c 200 %t/rand/input0.npy > %t/truncated.npy
// RUN: not attnfuse-run %s --entry=sdpa --input=%t/truncated.npy --input=%t/rand/input1.npy --input=%t/rand/input2.npy --output-dir=%t/x 2>&1 | FileCheck %s --check-prefix=TRUNCATED
// TRUNCATED: error: input #0: '{{.*}}truncated.npy': holds 72 data bytes, shape [2, 5, 2, 4] needs 320

// Dynamic sizes that disagree between arguments (keys of batch 2, queries
// of batch 3) are caught by the run-time checks of the compiled code.
// RUN: attnfuse-run %s --entry=sdpa --random-seed=7 --batch=3 --seq=5 --output-dir=%t/b3
// RUN: not attnfuse-run %s --entry=sdpa --input=%t/b3/input0.npy --input=%t/rand/input1.npy --input=%t/rand/input2.npy --output-dir=%t/x 2>&1 | FileCheck %s --check-prefix=RUNTIME
// RUNTIME: attnfuse-run: error: a run-time check of the compiled function failed: the dynamic sizes of the inputs are inconsistent

// i32 tensors (positions, block tables) travel as <i4; random i32 inputs are
// zeros.
// RUN: attnfuse-run %s --entry=takes_i32 --random-seed=1 --output-dir=%t/i32
// RUN: FileCheck --input-file=%t/i32/out0.npy %s --check-prefix=I32
// I32: {'descr': '<i4', 'fortran_order': False, 'shape': (4,)

// RUN: not attnfuse-run %s --entry=takes_i64 --random-seed=1 --output-dir=%t/x 2>&1 | FileCheck %s --check-prefix=TYPE
// TYPE: attnfuse-run: error: argument #0 of 'takes_i64' has type tensor<4xi64>; supported element types are f32, f64, f16, bf16 and i32

// RUN: not attnfuse-run %t/missing.mlir --entry=sdpa --random-seed=1 --output-dir=%t/x 2>&1 | FileCheck %s --check-prefix=NOFILE
// NOFILE: attnfuse-run: error: cannot read '{{.*}}missing.mlir'

// RUN: not attnfuse-run %t/rand/input0.npy --entry=sdpa --random-seed=1 --output-dir=%t/x 2>&1 | FileCheck %s --check-prefix=NOPARSE
// NOPARSE: attnfuse-run: error: cannot parse

// RUN: not attnfuse-run %s --entry=sdpa --random-seed=1 2>&1 | FileCheck %s --check-prefix=NOOUT
// NOOUT: attnfuse-run: error: --output-dir is required

func.func @sdpa(%q: tensor<?x?x2x4xf32>, %k: tensor<?x?x2x4xf32>, %v: tensor<?x?x2x4xf32>) -> tensor<?x?x2x4xf32> {
  %o = attn.sdpa %q, %k, %v {causal} : (tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>) -> tensor<?x?x2x4xf32>
  return %o : tensor<?x?x2x4xf32>
}

func.func @project_bf16(%x: tensor<?x?x8xbf16>, %w: tensor<6x8xbf16>) -> tensor<?x?x6xbf16> {
  %y = attn.project %x, %w : (tensor<?x?x8xbf16>, tensor<6x8xbf16>) -> tensor<?x?x6xbf16>
  return %y : tensor<?x?x6xbf16>
}

func.func @takes_i32(%x: tensor<4xi32>) -> tensor<4xi32> {
  return %x : tensor<4xi32>
}

func.func @takes_i64(%x: tensor<4xi64>) -> tensor<4xi64> {
  return %x : tensor<4xi64>
}
