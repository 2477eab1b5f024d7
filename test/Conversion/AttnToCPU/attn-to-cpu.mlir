// RUN: attnfuse-opt %s --attn-to-cpu | FileCheck %s --implicit-check-not=attn. --implicit-check-not=linalg. --implicit-check-not=tensor. --implicit-check-not=memref. --implicit-check-not=scf. --implicit-check-not=cf. --implicit-check-not=unrealized_conversion_cast
// RUN: attnfuse-opt %s --pass-pipeline='builtin.module(attn-to-cpu)' | FileCheck %s --check-prefix=ANCHORED
// RUN: attnfuse-opt %s --pass-pipeline='builtin.module(attn-to-cpu{runtime-checks=false})' | FileCheck %s --check-prefix=NOCHECKS

// By default the sizes of the operands are checked at run time: a failed
// check prints the location and aborts. The option drops the checks.
// CHECK-DAG: llvm.func @abort()
// NOCHECKS-NOT: llvm.func @abort()
// NOCHECKS: llvm.func @_mlir_ciface_cca(

// The whole layer ends in the LLVM dialect, with a C-interface wrapper for
// the function that asks for one (attnfuse-run sets the attribute), buffers
// from malloc and temporaries released with free.

// CHECK-DAG: llvm.func @malloc(i64) -> !llvm.ptr
// CHECK-DAG: llvm.func @free(!llvm.ptr)
// CHECK-LABEL: llvm.func @cca(
// CHECK-DAG: llvm.intr.exp
// CHECK-DAG: llvm.intr.cos
// CHECK-DAG: llvm.intr.sin
// CHECK-DAG: llvm.intr.sqrt
// CHECK: llvm.return
// CHECK-LABEL: llvm.func @_mlir_ciface_cca(
// CHECK-SAME: %[[RESULT:[^:]+]]: !llvm.ptr
// CHECK: llvm.call @cca(
// CHECK: llvm.store %{{.+}}, %[[RESULT]]
// CHECK-LABEL: llvm.func @kv_gqa(
// CHECK-NOT: llvm.func @_mlir_ciface_kv_gqa
// ANCHORED: llvm.func @_mlir_ciface_cca(
func.func @cca(%x: tensor<?x?x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<16x32xf32>,
               %wv: tensor<8x32xf32>, %wvp: tensor<8x32xf32>, %dw: tensor<48x1x2xf32>,
               %dwb: tensor<48xf32>, %gw: tensor<48x8x2xf32>, %gwb: tensor<48xf32>,
               %temp: tensor<2xf32>, %wo: tensor<32x32xf32>) -> tensor<?x?x32xf32>
    attributes {llvm.emit_c_interface} {
  %y = attn.cca %x wq(%wq) wk(%wk) wv(%wv) wv_prev(%wvp) conv_dw(%dw, %dwb)
      conv_g(%gw, %gwb) temp(%temp) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 8 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift,
       temperature = #attn.temperature<clamped>, causal,
       rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
      : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<16x32xf32>, tensor<8x32xf32>,
         tensor<8x32xf32>, tensor<48x1x2xf32>, tensor<48xf32>, tensor<48x8x2xf32>,
         tensor<48xf32>, tensor<2xf32>, tensor<32x32xf32>) -> tensor<?x?x32xf32>
  return %y : tensor<?x?x32xf32>
}

// bf16 <-> f32 conversions are expanded to integer ops (no libcalls): bf16
// is only loaded and stored.
// CHECK-NOT: llvm.fpext {{.*}}bf16
// CHECK-NOT: llvm.fptrunc {{.*}}bf16
// CHECK-NOT: llvm.call @__
func.func @kv_gqa(%x: tensor<2x5x16xbf16>, %wq: tensor<16x16xbf16>,
                  %wk: tensor<8x16xbf16>, %wo: tensor<16x16xbf16>) -> tensor<2x5x16xbf16> {
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, causal,
       window = 3 : i64, rope = #attn.rope<theta = 10000.0>}
      : (tensor<2x5x16xbf16>, tensor<16x16xbf16>, tensor<8x16xbf16>, tensor<16x16xbf16>)
      -> tensor<2x5x16xbf16>
  return %y : tensor<2x5x16xbf16>
}
