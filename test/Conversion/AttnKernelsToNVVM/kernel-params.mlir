// RUN: attnfuse-opt %s --pass-pipeline='builtin.module(gpu.module(convert-scf-to-cf,convert-gpu-to-nvvm),attn-nvvm-kernel-params)' | FileCheck %s

// After gpu-to-nvvm the CUtensorMap parameters listed in attnfuse.tma_params
// become 128-byte by-value __grid_constant__ parameters (TMA reads the map
// from parameter space); other parameters are left alone.
// CHECK: llvm.func @k(%{{.*}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}, %{{.*}}: i32, %{{.*}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant})
// CHECK-SAME: attributes {gpu.kernel, nvvm.kernel}
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @k(%a: !llvm.ptr {llvm.align = 64 : i64}, %n: i32,
                %b: !llvm.ptr {llvm.align = 64 : i64}) kernel
        attributes {attnfuse.tma_params = array<i32: 0, 2>} {
      gpu.return
    }
  }
}
