// RUN: attnfuse-opt %s --convert-attn-to-linalg -split-input-file -verify-diagnostics
// RUN: not attnfuse-opt %s --attn-to-cpu -split-input-file 2>&1 | FileCheck %s --check-prefix=CPU

// Static shapes beyond what the lowering handles are refused at once (this
// one ran for minutes, building a table of 2^30 frequencies, at 9.8 GB).
func.func @rope_head_dim_too_wide(%x: tensor<2x8x2x2147483648xf32>) -> tensor<2x8x2x2147483648xf32> {
  // CPU: error: 'attn.rope' op rotates 2147483648 dimensions per head
  // expected-error @+1 {{'attn.rope' op rotates 2147483648 dimensions per head: its frequency table of 1073741824 constants exceeds the 1048576 this lowering builds}}
  %y = attn.rope %x {rope = #attn.rope<theta = 10000.0>} : tensor<2x8x2x2147483648xf32>
  return %y : tensor<2x8x2x2147483648xf32>
}

// -----

// A byte size that does not fit in 64 bits.
func.func @too_many_bytes(%x: tensor<4611686018427387904x2x4xf32>, %w: tensor<6x4xf32>) -> tensor<4611686018427387904x2x6xf32> {
  // CPU: error: 'attn.fused_projection' op has a 'tensor<4611686018427387904x2x4xf32>' whose size in bytes does not fit in 64 bits
  // expected-error @+1 {{'attn.project' op has a 'tensor<4611686018427387904x2x4xf32>' whose size in bytes does not fit in 64 bits}}
  %y = attn.project %x, %w : (tensor<4611686018427387904x2x4xf32>, tensor<6x4xf32>) -> tensor<4611686018427387904x2x6xf32>
  return %y : tensor<4611686018427387904x2x6xf32>
}
