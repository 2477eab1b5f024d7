// Option validation: a bad chip, tile or element type is a diagnostic and a
// failed pass, never an LLVM abort (sm_90 without "a", or a PTX version
// below 8.0 with sm_90a, would otherwise reach the NVPTX backend).
// RUN: not attnfuse-opt %s --pass-pipeline='builtin.module(convert-attn-kernels-to-nvvm{chip=sm_80})' 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not attnfuse-opt %s --attn-to-ptx=chip=sm_90 2>&1 | FileCheck %s --check-prefix=SM90
// RUN: not attnfuse-opt %s --attn-to-ptx=elem-type=f32 2>&1 | FileCheck %s --check-prefix=ELEM
// RUN: not attnfuse-opt %s --attn-to-ptx="stages=4" 2>&1 | FileCheck %s --check-prefix=SMEM
// RUN: attnfuse-opt %s --attn-to-ptx="stages=2" | FileCheck %s --check-prefix=SMALL
// The flash attention tiles are the ops' block_q / block_kv, not options of
// the sm_90a lowering (invalid.mlir has the unsupported values).
// RUN: not attnfuse-opt %s --attn-to-ptx=block-q=64 2>&1 | FileCheck %s --check-prefix=NOBLOCKQ

// CHIP: error: attn sm_90a kernels: unsupported chip 'sm_80': the kernels use wgmma, setmaxnreg and TMA, which need sm_90a
// SM90: error: attn sm_90a kernels: unsupported chip 'sm_90'
// ELEM: error: attn sm_90a kernels: unsupported elem-type 'f32' (bf16 or f16)
// With 4 stages the block-q 64 kernel (148584 bytes) no longer fits two
// CTAs per SM and runs one; the block-q 128 one does not fit at all.
// SMEM-NOT: block_q 64
// SMEM: error: 'attn.flash_attention' op the sm_90a kernel needs 296040 bytes of shared memory (block_q 128, block_kv 128, 4 stages), more than the 232448 available; lower stages or block_kv
// NOBLOCKQ: no such option block-q

// One consumer warpgroup (block-q 64) runs two CTAs per SM: 256 threads,
// minctasm 2, a register cap of 128 moved to 232 for the consumer.
// SMALL: gpu.binary @attn_fa_bf16_d128_h8_g1_q64_kv64_s2
// SMALL-SAME: .maxntid 256, 1, 1
// SMALL-SAME: .minnctapersm 2
// SMALL-SAME: setmaxnreg.dec.sync.aligned.u32 \0924
// SMALL-SAME: setmaxnreg.inc.sync.aligned.u32 \09232
func.func @mha(%q: tensor<?x?x8x128xbf16>, %k: tensor<?x?x8x128xbf16>,
               %v: tensor<?x?x8x128xbf16>) -> tensor<?x?x8x128xbf16> {
  %o_c0 = arith.constant 0 : index
  %o_d0 = tensor.dim %q, %o_c0 : tensor<?x?x8x128xbf16>
  %o_c1 = arith.constant 1 : index
  %o_d1 = tensor.dim %q, %o_c1 : tensor<?x?x8x128xbf16>
  %o_init = tensor.empty(%o_d0, %o_d1) : tensor<?x?x8x128xbf16>
  %o = attn.flash_attention %q, %k, %v outs(%o_init) {block_q = 64 : i64, block_kv = 64 : i64}
      : (tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>)
      -> tensor<?x?x8x128xbf16>
  return %o : tensor<?x?x8x128xbf16>
}

func.func @mha128(%q: tensor<?x?x8x128xbf16>, %k: tensor<?x?x8x128xbf16>,
                  %v: tensor<?x?x8x128xbf16>) -> tensor<?x?x8x128xbf16> {
  %o_c0 = arith.constant 0 : index
  %o_d0 = tensor.dim %q, %o_c0 : tensor<?x?x8x128xbf16>
  %o_c1 = arith.constant 1 : index
  %o_d1 = tensor.dim %q, %o_c1 : tensor<?x?x8x128xbf16>
  %o_init = tensor.empty(%o_d0, %o_d1) : tensor<?x?x8x128xbf16>
  %o = attn.flash_attention %q, %k, %v outs(%o_init) {block_q = 128 : i64, block_kv = 128 : i64}
      : (tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>)
      -> tensor<?x?x8x128xbf16>
  return %o : tensor<?x?x8x128xbf16>
}
