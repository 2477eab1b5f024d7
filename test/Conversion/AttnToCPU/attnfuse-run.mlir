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
// MISSING: attnfuse-run: error: no function 'nope' in '{{.*}}attnfuse-run.mlir' (functions: sdpa, sdpa_bias, project_bf16, takes_i32, takes_i8)

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
// TRUNCATED: error: input #0: '{{.*}}truncated.npy': the .npy file holds 72 data bytes, its shape needs 320

// Dynamic sizes that disagree between arguments are refused before the
// compiled code runs, naming both arguments and both sizes. Each case once
// ran unchecked: it wrote past a buffer (keys of length 0 against values of
// length 2 or 5) or answered wrongly (batch 3 against 2, queries of batch 0,
// 7 keys against 5 values).
// RUN: attnfuse-run %s --entry=sdpa --random-seed=7 --batch=3 --seq=5 --output-dir=%t/b3
// RUN: attnfuse-run %s --entry=sdpa --random-seed=7 --batch=2 --seq=2 --output-dir=%t/s2
// RUN: attnfuse-run %s --entry=sdpa --random-seed=7 --batch=2 --seq=0 --output-dir=%t/s0
// RUN: attnfuse-run %s --entry=sdpa --random-seed=7 --batch=2 --seq=7 --output-dir=%t/s7
// RUN: attnfuse-run %s --entry=sdpa --random-seed=7 --batch=0 --seq=5 --output-dir=%t/b0
// RUN: not attnfuse-run %s --entry=sdpa --input=%t/b3/input0.npy --input=%t/rand/input1.npy --input=%t/rand/input2.npy --output-dir=%t/x 2>&1 | FileCheck %s --check-prefix=BATCH
// BATCH: attnfuse-run: error: run-time size check of 'sdpa' failed before the call: argument #1 dimension 0 is 2 but argument #0 dimension 0 is 3; attn.sdpa at {{.*}}attnfuse-run.mlir:{{[0-9]+}}:{{[0-9]+}} needs 'key' batch == 'query' batch
// RUN: not attnfuse-run %s --entry=sdpa --input=%t/rand/input0.npy --input=%t/b3/input1.npy --input=%t/rand/input2.npy --output-dir=%t/x 2>&1 | FileCheck %s --check-prefix=KBATCH
// KBATCH: error: run-time size check of 'sdpa' failed before the call: argument #1 dimension 0 is 3 but argument #0 dimension 0 is 2; attn.sdpa {{.*}} needs 'key' batch == 'query' batch
// RUN: not attnfuse-run %s --entry=sdpa --input=%t/s2/input0.npy --input=%t/s0/input1.npy --input=%t/s2/input2.npy --output-dir=%t/x 2>&1 | FileCheck %s --check-prefix=T0
// T0: error: run-time size check of 'sdpa' failed before the call: argument #2 dimension 1 is 2 but argument #1 dimension 1 is 0; attn.sdpa {{.*}} needs 'value' T == 'key' T
// RUN: not attnfuse-run %s --entry=sdpa --input=%t/rand/input0.npy --input=%t/s0/input1.npy --input=%t/rand/input2.npy --output-dir=%t/x 2>&1 | FileCheck %s --check-prefix=T0S5
// T0S5: error: run-time size check of 'sdpa' failed before the call: argument #2 dimension 1 is 5 but argument #1 dimension 1 is 0
// RUN: not attnfuse-run %s --entry=sdpa --input=%t/rand/input0.npy --input=%t/s7/input1.npy --input=%t/rand/input2.npy --output-dir=%t/x 2>&1 | FileCheck %s --check-prefix=T7
// T7: error: run-time size check of 'sdpa' failed before the call: argument #2 dimension 1 is 5 but argument #1 dimension 1 is 7; attn.sdpa {{.*}} needs 'value' T == 'key' T
// RUN: not attnfuse-run %s --entry=sdpa --input=%t/b0/input0.npy --input=%t/rand/input1.npy --input=%t/rand/input2.npy --output-dir=%t/x 2>&1 | FileCheck %s --check-prefix=Q0
// Q0: error: run-time size check of 'sdpa' failed before the call: argument #1 dimension 0 is 2 but argument #0 dimension 0 is 0

// k of shape [0, 2^62, 2, 4] holds no element, but its strides overflow.
// RUN: not attnfuse-run %s --entry=sdpa --input=%t/rand/input0.npy --input=%S/Inputs/k-empty-huge.npy --input=%t/rand/input2.npy --output-dir=%t/x 2>&1 | FileCheck %s --check-prefix=HUGE
// HUGE: error: run-time size check of 'sdpa' failed before the call: argument #1 is too large: its byte size overflows int64

// No keys at all is legal: every query row is fully masked and gives zeros.
// RUN: attnfuse-run %s --entry=sdpa --input=%t/rand/input0.npy --input=%t/s0/input1.npy --input=%t/s0/input2.npy --output-dir=%t/nokeys
// RUN: head -c 80 %t/nokeys/out0.npy | FileCheck %s --check-prefix=NOKEYS
// NOKEYS: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 5, 2, 4), }
// RUN: tail -c 320 %t/nokeys/out0.npy | od -An -v -tx1 | tr -d ' \n' | FileCheck %s --check-prefix=ZEROS
// ZEROS: {{^0+$}}
// RUN: attnfuse-run %s --entry=sdpa_bias --input=%t/rand/input0.npy --input=%t/s0/input1.npy --input=%t/s0/input2.npy --input=%S/Inputs/bias-5x0.npy --output-dir=%t/nokeys-bias
// RUN: tail -c 320 %t/nokeys-bias/out0.npy | od -An -v -tx1 | tr -d ' \n' | FileCheck %s --check-prefix=ZEROS

// A logit bias must be [S, T].
// RUN: not attnfuse-run %s --entry=sdpa_bias --input=%t/rand/input0.npy --input=%t/rand/input1.npy --input=%t/rand/input2.npy --input=%S/Inputs/bias-5x0.npy --output-dir=%t/x 2>&1 | FileCheck %s --check-prefix=BIAS
// BIAS: error: run-time size check of 'sdpa_bias' failed before the call: argument #3 dimension 1 is 0 but argument #1 dimension 1 is 5; attn.sdpa {{.*}} needs 'bias' T == 'key' T

// .npy headers are read as numpy reads them: Fortran order and big-endian
// data are converted, a repeated key takes its last value, and what numpy
// refuses is refused.
// RUN: attnfuse-run %s --entry=sdpa --input=%S/Inputs/q-c-order.npy --input=%S/Inputs/kv.npy --input=%S/Inputs/kv.npy --output-dir=%t/corder
// RUN: attnfuse-run %s --entry=sdpa --input=%S/Inputs/q-fortran-order.npy --input=%S/Inputs/kv.npy --input=%S/Inputs/kv.npy --output-dir=%t/forder
// RUN: attnfuse-run %s --entry=sdpa --input=%S/Inputs/q-big-endian.npy --input=%S/Inputs/kv.npy --input=%S/Inputs/kv.npy --output-dir=%t/bigendian
// RUN: cmp %t/corder/out0.npy %t/forder/out0.npy
// RUN: cmp %t/corder/out0.npy %t/bigendian/out0.npy
// RUN: not attnfuse-run %s --entry=sdpa --input=%S/Inputs/fortran-order-int.npy --input=%S/Inputs/kv.npy --input=%S/Inputs/kv.npy --output-dir=%t/x 2>&1 | FileCheck %s --check-prefix=FORTRAN1
// FORTRAN1: error: input #0: '{{.*}}fortran-order-int.npy': malformed .npy header: 'fortran_order' is not True or False
// RUN: not attnfuse-run %s --entry=sdpa --input=%S/Inputs/unclosed-shape.npy --input=%S/Inputs/kv.npy --input=%S/Inputs/kv.npy --output-dir=%t/x 2>&1 | FileCheck %s --check-prefix=UNCLOSED
// UNCLOSED: error: input #0: '{{.*}}unclosed-shape.npy': malformed .npy header: unsupported value starting with '}'
// RUN: not attnfuse-run %s --entry=sdpa --input=%S/Inputs/extra-key.npy --input=%S/Inputs/kv.npy --input=%S/Inputs/kv.npy --output-dir=%t/x 2>&1 | FileCheck %s --check-prefix=EXTRAKEY
// EXTRAKEY: error: input #0: '{{.*}}extra-key.npy': malformed .npy header: unexpected key 'x' (the keys are 'descr', 'fortran_order' and 'shape')
// RUN: not attnfuse-run %s --entry=sdpa --input=%S/Inputs/duplicate-descr.npy --input=%S/Inputs/kv.npy --input=%S/Inputs/kv.npy --output-dir=%t/x 2>&1 | FileCheck %s --check-prefix=DUPLICATE
// DUPLICATE: error: input #0 '{{.*}}duplicate-descr.npy' has dtype <i4 (i32), argument #0 of 'sdpa' is f32 (npy dtype <f4)

// i32 (positions, indices) round-trips as '<i4'.
// RUN: attnfuse-run %s --entry=takes_i32 --random-seed=1 --output-dir=%t/i32
// RUN: cmp %t/i32/input0.npy %t/i32/out0.npy
// RUN: head -c 80 %t/i32/out0.npy | FileCheck %s --check-prefix=I32
// I32: {'descr': '<i4', 'fortran_order': False, 'shape': (4,), }

// RUN: not attnfuse-run %s --entry=takes_i8 --random-seed=1 --output-dir=%t/x 2>&1 | FileCheck %s --check-prefix=TYPE
// TYPE: attnfuse-run: error: argument #0 of 'takes_i8' has type tensor<4xi8>; supported element types are f32, f64, f16, bf16, i32 and i64

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

func.func @sdpa_bias(%q: tensor<?x?x2x4xf32>, %k: tensor<?x?x2x4xf32>, %v: tensor<?x?x2x4xf32>, %bias: tensor<?x?xf32>) -> tensor<?x?x2x4xf32> {
  %o = attn.sdpa %q, %k, %v bias(%bias) {causal} : (tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?xf32>) -> tensor<?x?x2x4xf32>
  return %o : tensor<?x?x2x4xf32>
}

func.func @project_bf16(%x: tensor<?x?x8xbf16>, %w: tensor<6x8xbf16>) -> tensor<?x?x6xbf16> {
  %y = attn.project %x, %w : (tensor<?x?x8xbf16>, tensor<6x8xbf16>) -> tensor<?x?x6xbf16>
  return %y : tensor<?x?x6xbf16>
}

func.func @takes_i32(%x: tensor<4xi32>) -> tensor<4xi32> {
  return %x : tensor<4xi32>
}

func.func @takes_i8(%x: tensor<4xi8>) -> tensor<4xi8> {
  return %x : tensor<4xi8>
}
