// RUN: attnfuse-opt %s -split-input-file --attn-differentiate="function=taken residuals=true" -verify-diagnostics

// With residuals the pass adds @f_fwd and @f_bwd: neither name may be taken.

// expected-error @+1 {{attn-differentiate: @taken_fwd exists already}}
func.func @taken(%x: tensor<2x5x16xf32>) -> tensor<2x5x16xf32> {
  return %x : tensor<2x5x16xf32>
}

func.func private @taken_fwd(%x: tensor<2x5x16xf32>) -> tensor<2x5x16xf32>

// -----

// expected-error @+1 {{attn-differentiate: @taken_bwd exists already}}
func.func @taken(%x: tensor<2x5x16xf32>) -> tensor<2x5x16xf32> {
  return %x : tensor<2x5x16xf32>
}

func.func private @taken_bwd(%x: tensor<2x5x16xf32>) -> tensor<2x5x16xf32>
