// attnfuse-compile on the ZAYA1 CCGQA example: attn.cca fuses into
// attn.cca_prologue + attn.flash_attention + the output projection, and the
// prologue now has an sm_90a kernel (no host fallback warning for attn ops).
// RUN: rm -rf %t && attnfuse-compile %examples/zaya1_ccgqa.mlir --target=sm_90a -o %t --no-cubin 2>&1 | FileCheck %s --check-prefix=OUT
// RUN: FileCheck %s --check-prefix=PTX --input-file=%t/attn_cca_prologue_bf16_e2048_h8_g4_d128_k2x2_qkmean_vshift_nclamp_rope64.ptx
// RUN: FileCheck %s --check-prefix=MANIFEST --input-file=%t/manifest.json

// OUT-NOT: have no sm_90a kernel
// OUT: attnfuse-compile: 4 kernel(s) for sm_90a written to

// PTX: .target sm_90a
// PTX: .visible .entry attn_cca_prologue_bf16_e2048_h8_g4_d128_k2x2_qkmean_vshift_nclamp_rope64(
// PTX-COUNT-5: .param .align 64 .b8 attn_cca_prologue_{{.*}}[128],
// PTX: .maxntid 256, 1, 1
// PTX-DAG: cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTX-DAG: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// PTX-DAG: wgmma.wait_group.sync.aligned 	0;
// PTX-DAG: mbarrier.try_wait.parity

// MANIFEST: "host_ops": [
// MANIFEST-NOT: "op": "attn.
// MANIFEST: "kernels": [
// MANIFEST: "kind": "cca_prologue",
// MANIFEST: "name": "attn_cca_prologue_bf16_e2048_h8_g4_d128_k2x2_qkmean_vshift_nclamp_rope64",
// MANIFEST: "launches": [
// MANIFEST: "kernel": "attn_cca_prologue_bf16_e2048_h8_g4_d128_k2x2_qkmean_vshift_nclamp_rope64",
// MANIFEST-NEXT: "op": "attn.cca_prologue",
