// attnfuse-compile reports bad targets, unsupported shapes and a missing
// ptxas as diagnostics with a non-zero exit status, never an abort.
// RUN: not attnfuse-compile %s --target=sm_80 -o %t 2>&1 | FileCheck %s --check-prefix=TARGET
// RUN: not attnfuse-compile %s --target=sm_90 -o %t 2>&1 | FileCheck %s --check-prefix=SM90
// RUN: not attnfuse-compile %s --elem-type=f8 -o %t 2>&1 | FileCheck %s --check-prefix=ELEM
// RUN: not attnfuse-compile %s -o %t 2>&1 | FileCheck %s --check-prefix=HEADDIM
// RUN: not attnfuse-compile %S/compile-ptx.mlir -o %t --ptxas=%t/no-such-ptxas 2>&1 | FileCheck %s --check-prefix=PTXAS

// TARGET: attnfuse-compile: error: unsupported target 'sm_80' (supported: sm_90a)
// SM90: attnfuse-compile: error: unsupported target 'sm_90' (supported: sm_90a) (the kernels use wgmma and setmaxnreg, which need the architecture-specific sm_90a)
// ELEM: attnfuse-compile: error: unsupported --elem-type 'f8' (bf16 or f16)
// HEADDIM: errors.mlir:[[@LINE+6]]:8: error: 'attn.flash_attention' op head_dim 40 is not supported by the sm_90a kernel (a multiple of 16 up to 256)
// HEADDIM: attnfuse-compile: error: lowering
// PTXAS: attnfuse-compile: error: ptxas not found
func.func @d40(%x: tensor<?x?x400xbf16>, %wq: tensor<400x400xbf16>,
               %wk: tensor<400x400xbf16>, %wv: tensor<400x400xbf16>,
               %wo: tensor<400x400xbf16>) -> tensor<?x?x400xbf16> {
  %y = attn.qkv_attention <none> %x wq(%wq) wk(%wk) wv(%wv) wo(%wo)
      {num_heads = 10 : i64, num_kv_heads = 10 : i64, head_dim = 40 : i64, causal}
      : (tensor<?x?x400xbf16>, tensor<400x400xbf16>, tensor<400x400xbf16>,
         tensor<400x400xbf16>, tensor<400x400xbf16>) -> tensor<?x?x400xbf16>
  return %y : tensor<?x?x400xbf16>
}
