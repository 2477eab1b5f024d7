// Golden kernel for the emulator: the TMA + wgmma GEMM of MLIR's sm_90 integration test
// llvm-project mlir/test/Integration/GPU/CUDA/sm90/gemm_f32_f16_f16_128x128x128.mlir, whose
// authors check the result on an H100 (16384 correct results). Same structure, written here as a
// kernel-only module: D[128x128] f32 = A[128x128] f16 * B[128x128] f16, one CTA of 128 threads,
// two pipeline stages of A[128x64] (K-major) and B[64x128] (N-major, transposeB), TMA with the
// 128-byte swizzle, nvgpu.warpgroup.mma (wgmma m64n128k16), accumulators stored through shared
// memory. Lowered by mlir-opt's gpu-lower-to-nvvm-pipeline (MLIR's own emitters, not AttnFuse's)
// and run by golden_gemm.py. One deliberate difference: every shared-memory view starts 1 KiB
// into the dynamic shared memory and the accumulator tile reuses it (the upstream test indexes
// 64 KiB past zero-sized shared globals, which the PTX demotes to 1-byte variables; where those
// land is the assembler's choice, so this kernel does not depend on it). And a gpu.barrier between
// the accumulator store and the loads of the epilogue: each warp reads rows the other warps
// stored, and the upstream test orders nothing between them (a shared-memory race the emulator
// reports; the GEMM example of MLIR's NVDSL, which builds the same epilogue, has the barrier).
!barrierType = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
!lhsTensorMap = !nvgpu.tensormap.descriptor<tensor = memref<128x64xf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
!rhsTensorMap = !nvgpu.tensormap.descriptor<tensor = memref<64x64xf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>

// The host side only launches; golden_gemm.py runs the outlined kernel with its own buffers and
// tensor maps (the kernel's parameters: descA, descB, then the memref descriptor of D).
func.func @golden_launch(%descA: !lhsTensorMap, %descB: !rhsTensorMap, %matrixD: memref<128x128xf32>) {
  %h1 = arith.constant 1 : index
  %h128 = arith.constant 128 : index
  %smem = arith.constant 66560 : i32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %h1, %gy = %h1, %gz = %h1)
             threads(%tx, %ty, %tz) in (%nx = %h128, %ny = %h1, %nz = %h1)
             dynamic_shared_memory_size %smem {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %txcount = arith.constant 32768 : index
    %tidx = gpu.thread_id x
    %dynsmem = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %barrier = nvgpu.mbarrier.create -> !barrierType
    %leader = arith.cmpi eq, %tidx, %c0 : index
    nvgpu.mbarrier.init %barrier[%c0], %c1 : !barrierType
    nvgpu.mbarrier.init %barrier[%c1], %c1 : !barrierType
    nvgpu.tma.prefetch.descriptor %descA : !lhsTensorMap
    nvgpu.tma.prefetch.descriptor %descB : !rhsTensorMap
    // Stage s holds A[:, 64s:64s+64] at 1 KiB + 16 KiB * s and B[64s:64s+64, :] as two 64x64
    // halves at 33 KiB + 16 KiB * s (+ 8 KiB for the second half).
    scf.for %s = %c0 to %c2 step %c1 {
      scf.if %leader {
        %aOff = arith.muli %s, %c128 : index
        %aByte0 = arith.muli %aOff, %c128 : index
        %c1024 = arith.constant 1024 : index
        %aByte = arith.addi %aByte0, %c1024 : index
        %bByte0 = arith.addi %aByte, %txcount : index
        %c8192 = arith.constant 8192 : index
        %bByte1 = arith.addi %bByte0, %c8192 : index
        %aTile = memref.view %dynsmem[%aByte][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<128x64xf16, #gpu.address_space<workgroup>>
        %bHalf0 = memref.view %dynsmem[%bByte0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xf16, #gpu.address_space<workgroup>>
        %bHalf1 = memref.view %dynsmem[%bByte1][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xf16, #gpu.address_space<workgroup>>
        nvgpu.mbarrier.arrive.expect_tx %barrier[%s], %txcount : !barrierType
        %k = arith.muli %s, %c64 : index
        nvgpu.tma.async.load %descA[%k, %c0], %barrier[%s] to %aTile : !lhsTensorMap, !barrierType -> memref<128x64xf16, #gpu.address_space<workgroup>>
        nvgpu.tma.async.load %descB[%c0, %k], %barrier[%s] to %bHalf0 : !rhsTensorMap, !barrierType -> memref<64x64xf16, #gpu.address_space<workgroup>>
        nvgpu.tma.async.load %descB[%c64, %k], %barrier[%s] to %bHalf1 : !rhsTensorMap, !barrierType -> memref<64x64xf16, #gpu.address_space<workgroup>>
      }
    }
    %smemF16 = memref.view %dynsmem[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<33280xf16, #gpu.address_space<workgroup>>
    %lhsShmem = memref.reinterpret_cast %smemF16 to offset: [512], sizes: [2, 128, 64], strides: [8192, 64, 1] : memref<33280xf16, #gpu.address_space<workgroup>> to memref<2x128x64xf16, strided<[8192, 64, 1], offset: 512>, #gpu.address_space<workgroup>>
    %rhsShmem = memref.reinterpret_cast %smemF16 to offset: [16896], sizes: [2, 64, 128], strides: [8192, 128, 1] : memref<33280xf16, #gpu.address_space<workgroup>> to memref<2x64x128xf16, strided<[8192, 128, 1], offset: 16896>, #gpu.address_space<workgroup>>
    %acc0 = nvgpu.warpgroup.mma.init.accumulator -> <fragmented = vector<128x128xf32>>
    %acc = scf.for %s = %c0 to %c2 step %c1 iter_args(%acc1 = %acc0)
        -> (!nvgpu.warpgroup.accumulator<fragmented = vector<128x128xf32>>) {
      %ticks = arith.constant 10000000 : index
      %parity = arith.constant 0 : i1
      nvgpu.mbarrier.try_wait.parity %barrier[%s], %parity, %ticks : !barrierType
      %lhs = memref.subview %lhsShmem[%s, 0, 0][1, 128, 64][1, 1, 1] : memref<2x128x64xf16, strided<[8192, 64, 1], offset: 512>, #gpu.address_space<workgroup>> to memref<128x64xf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
      %rhs = memref.subview %rhsShmem[%s, 0, 0][1, 64, 128][1, 1, 1] : memref<2x64x128xf16, strided<[8192, 128, 1], offset: 16896>, #gpu.address_space<workgroup>> to memref<64x128xf16, strided<[128, 1], offset: ?>, #gpu.address_space<workgroup>>
      %dA = nvgpu.warpgroup.generate.descriptor %lhs, %descA : memref<128x64xf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>, !lhsTensorMap -> !nvgpu.warpgroup.descriptor<tensor = memref<128x64xf16, #gpu.address_space<workgroup>>>
      %dB = nvgpu.warpgroup.generate.descriptor %rhs, %descB : memref<64x128xf16, strided<[128, 1], offset: ?>, #gpu.address_space<workgroup>>, !rhsTensorMap -> !nvgpu.warpgroup.descriptor<tensor = memref<64x128xf16, #gpu.address_space<workgroup>>>
      %next = nvgpu.warpgroup.mma %dA, %dB, %acc1 {transposeB} : <tensor = memref<128x64xf16, #gpu.address_space<workgroup>>>, <tensor = memref<64x128xf16, #gpu.address_space<workgroup>>>, <fragmented = vector<128x128xf32>> -> <fragmented = vector<128x128xf32>>
      scf.yield %next : !nvgpu.warpgroup.accumulator<fragmented = vector<128x128xf32>>
    }
    nvvm.wgmma.wait.group.sync.aligned 0
    %c1024b = arith.constant 1024 : index
    %accTile = memref.view %dynsmem[%c1024b][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<128x128xf32, #gpu.address_space<workgroup>>
    nvgpu.warpgroup.mma.store %acc, %accTile : <fragmented = vector<128x128xf32>> to memref<128x128xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    %warp = arith.divui %tidx, %c32 : index
    %lane = arith.remui %tidx, %c32 : index
    scf.for %row = %warp to %c128 step %c4 {
      %col = arith.muli %lane, %c4 : index
      %v = vector.load %accTile[%row, %col] : memref<128x128xf32, #gpu.address_space<workgroup>>, vector<4xf32>
      vector.store %v, %matrixD[%row, %col] : memref<128x128xf32>, vector<4xf32>
    }
    gpu.terminator
  }
  return
}
