// RUN: attnfuse-opt %s --convert-attn-kernels-to-nvvm -split-input-file -verify-diagnostics | FileCheck %s

// The ZAYA1 prologue (E 2048, Hq 8, Hk 2, d 128, conv 2/2, every toggle):
// one CTA of two warpgroups per (64 tokens, KV group, batch). A 3-stage TMA
// ring feeds the GEMM of 128 x rows (64 tokens + 2 halo, zero-filled by TMA
// before token 0) by the group's 6 weight tiles (4 Wq heads, Wk, Wv or
// Wv_prev): m64n128k16 wgmma, both operands K-major.
// CHECK-LABEL: func.func @zaya1
// CHECK: call @[[K:attn_cca_prologue_bf16_e2048_h8_g4_d128_k2x2_qkmean_vshift_tclamp_rope64]]_launch(
// CHECK: gpu.module @[[K]]
// CHECK: gpu.func @[[K]](%{{.*}}: !llvm.ptr {llvm.align = 64 : i64}, %{{.*}}: !llvm.ptr {llvm.align = 64 : i64}, %{{.*}}: !llvm.ptr {llvm.align = 64 : i64}, %{{.*}}: !llvm.ptr {llvm.align = 64 : i64}, %{{.*}}: !llvm.ptr {llvm.align = 64 : i64}, %{{.*}}: i32, {{.*}}) kernel attributes {attnfuse.tma_params = array<i32: 0, 1, 2, 3, 4>, nvvm.maxntid = array<i32: 256, 1, 1>, nvvm.minctasm = 1 : i32}
// CHECK-COUNT-3: nvvm.mbarrier.init %{{.*}}, %c1_i32
// CHECK: nvvm.fence.mbarrier.init
// CHECK: nvvm.barrier0
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c32768_i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg0, %{{.*}}, box[%{{.*}}, %{{.*}}, %{{.*}}] : !llvm.ptr<7>, !llvm.ptr
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg1, %{{.*}}, box[%{{.*}}, %{{.*}}] : !llvm.ptr<7>, !llvm.ptr
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg2, %{{.*}}, box[%{{.*}}, %{{.*}}] : !llvm.ptr<7>, !llvm.ptr
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg3, %{{.*}}, box[%{{.*}}, %{{.*}}] : !llvm.ptr<7>, !llvm.ptr
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg4, %{{.*}}, box[%{{.*}}, %{{.*}}] : !llvm.ptr<7>, !llvm.ptr
// CHECK: scf.for %{{.*}} = %{{.*}} to %c6_i32{{.*}} step
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>, D[<f32>, <zero>]
// CHECK-COUNT-3: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>, D[<f32>, <one>]
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvvm.barrier0
// CHECK: scf.for %{{.*}} = %c1_i32{{.*}} to %c32_i32
// CHECK-COUNT-4: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>, D[<f32>, <one>]
// The conv channels in chunks of 256 (640 per group: 3 chunks), the grouped
// conv over the head's 128 input channels, the norm's warp shuffles.
// CHECK: scf.for %{{.*}} = %{{.*}} to %c3_i32{{.*}} step
// CHECK: scf.for %{{.*}} = %{{.*}} to %c128_i32{{.*}} step
// CHECK: nvvm.shfl.sync bfly
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: llvm.inline_asm asm_dialect = att "sqrt.rn.f32 $0, $1;", "=f,f"
// The launch description.
// CHECK: func.func private @[[K]]_launch
// CHECK-SAME: kind = "cca_prologue"
// CHECK-SAME: dynamic_smem_bytes = 202776
// CHECK-SAME: attnfuse.op = "attn.cca_prologue"
func.func @zaya1(%x: tensor<?x?x2048xbf16>, %wq: tensor<1024x2048xbf16>,
                 %wk: tensor<256x2048xbf16>, %wv: tensor<128x2048xbf16>,
                 %wvp: tensor<128x2048xbf16>, %dw: tensor<1280x1x2xbf16>,
                 %dwb: tensor<1280xbf16>, %gw: tensor<1280x128x2xbf16>,
                 %gwb: tensor<1280xbf16>, %temp: tensor<2xbf16>)
    -> (tensor<?x?x8x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>) {
  %cp_c0 = arith.constant 0 : index
  %cp_c1 = arith.constant 1 : index
  %cp_batch = tensor.dim %x, %cp_c0 : tensor<?x?x2048xbf16>
  %cp_seq = tensor.dim %x, %cp_c1 : tensor<?x?x2048xbf16>
  %cp_init0 = tensor.empty(%cp_batch, %cp_seq) : tensor<?x?x8x128xbf16>
  %cp_init1 = tensor.empty(%cp_batch, %cp_seq) : tensor<?x?x2x128xbf16>
  %cp_init2 = tensor.empty(%cp_batch, %cp_seq) : tensor<?x?x2x128xbf16>
  %q, %k, %v = attn.cca_prologue %x wq(%wq) wk(%wk) wv(%wv) wv_prev(%wvp)
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp)
      outs(%cp_init0, %cp_init1, %cp_init2) {num_heads = 8 : i64, num_kv_heads = 2 : i64, head_dim = 128 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift,
       temperature = #attn.temperature<clamped>,
       rope = #attn.rope<theta = 10000.0, fraction = 0.5>, block_s = 64 : i64}
      : (tensor<?x?x2048xbf16>, tensor<1024x2048xbf16>, tensor<256x2048xbf16>,
         tensor<128x2048xbf16>, tensor<128x2048xbf16>, tensor<1280x1x2xbf16>,
         tensor<1280xbf16>, tensor<1280x128x2xbf16>, tensor<1280xbf16>,
         tensor<2xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>)
      -> (tensor<?x?x8x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>)
  return %q, %k, %v
      : tensor<?x?x8x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>
}

// -----

// The ZAYA1 prologue with transformers' numerics: raw temperature (no
// exponential) and heads divided by max(|x|, eps): |x|^2 clamped at eps^2
// (2^-14) before the square root. Its own kernel name (_nclamp).
// CHECK-LABEL: func.func @zaya1_hf_norm
// CHECK: call @[[K:attn_cca_prologue_bf16_e2048_h8_g4_d128_k2x2_qkmean_vshift_nclamp_rope64]]_launch(
// CHECK: gpu.func @[[K]]
// CHECK-NOT: ex2.approx
// CHECK: %[[EPS2:.+]] = arith.constant 6.10351563E-5 : f32
// CHECK: %[[FLOOR:.+]] = llvm.intr.maxnum(%{{.*}}, %[[EPS2]])
// CHECK: sqrt.rn.f32 $0, $1;", "=f,f" %[[FLOOR]]
// CHECK: func.func private @[[K]]_launch
func.func @zaya1_hf_norm(%x: tensor<?x?x2048xbf16>, %wq: tensor<1024x2048xbf16>,
                 %wk: tensor<256x2048xbf16>, %wv: tensor<128x2048xbf16>,
                 %wvp: tensor<128x2048xbf16>, %dw: tensor<1280x1x2xbf16>,
                 %dwb: tensor<1280xbf16>, %gw: tensor<1280x128x2xbf16>,
                 %gwb: tensor<1280xbf16>, %temp: tensor<2xbf16>)
    -> (tensor<?x?x8x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>) {
  %cp2_c0 = arith.constant 0 : index
  %cp2_c1 = arith.constant 1 : index
  %cp2_batch = tensor.dim %x, %cp2_c0 : tensor<?x?x2048xbf16>
  %cp2_seq = tensor.dim %x, %cp2_c1 : tensor<?x?x2048xbf16>
  %cp2_init0 = tensor.empty(%cp2_batch, %cp2_seq) : tensor<?x?x8x128xbf16>
  %cp2_init1 = tensor.empty(%cp2_batch, %cp2_seq) : tensor<?x?x2x128xbf16>
  %cp2_init2 = tensor.empty(%cp2_batch, %cp2_seq) : tensor<?x?x2x128xbf16>
  %q, %k, %v = attn.cca_prologue %x wq(%wq) wk(%wk) wv(%wv) wv_prev(%wvp)
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp)
      outs(%cp2_init0, %cp2_init1, %cp2_init2) {num_heads = 8 : i64, num_kv_heads = 2 : i64, head_dim = 128 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift,
       norm = #attn.norm<clamp_eps>, eps = 0.0078125 : f64,
       rope = #attn.rope<theta = 10000.0, fraction = 0.5>, block_s = 64 : i64}
      : (tensor<?x?x2048xbf16>, tensor<1024x2048xbf16>, tensor<256x2048xbf16>,
         tensor<128x2048xbf16>, tensor<128x2048xbf16>, tensor<1280x1x2xbf16>,
         tensor<1280xbf16>, tensor<1280x128x2xbf16>, tensor<1280xbf16>,
         tensor<2xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>)
      -> (tensor<?x?x8x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>)
  return %q, %k, %v
      : tensor<?x?x8x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>
}

// -----

// head_dim 64, conv kernels 3/3 (halo 4), no value shift, raw temperature,
// no RoPE: m64n64k16 tiles, 4 weight tiles per group (2 Wq heads, Wk, Wv).
// CHECK-LABEL: func.func @d64_k3
// CHECK: call @[[K:attn_cca_prologue_bf16_e1024_h4_g2_d64_k3x3]]_launch(
// CHECK: gpu.func @[[K]]({{.*}}) kernel attributes {attnfuse.tma_params = array<i32: 0, 1, 2, 3>
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c24576_i32
// CHECK: scf.for %{{.*}} = %{{.*}} to %c4_i32{{.*}} step
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f32>, <zero>]
// CHECK-NOT: ex2.approx
// CHECK: func.func private @[[K]]_launch
func.func @d64_k3(%x: tensor<?x?x1024xbf16>, %wq: tensor<256x1024xbf16>,
                  %wk: tensor<128x1024xbf16>, %wv: tensor<128x1024xbf16>,
                  %dw: tensor<384x1x3xbf16>, %dwb: tensor<384xbf16>,
                  %gw: tensor<384x64x3xbf16>, %gwb: tensor<384xbf16>,
                  %temp: tensor<2xbf16>)
    -> (tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>) {
  %cp3_c0 = arith.constant 0 : index
  %cp3_c1 = arith.constant 1 : index
  %cp3_batch = tensor.dim %x, %cp3_c0 : tensor<?x?x1024xbf16>
  %cp3_seq = tensor.dim %x, %cp3_c1 : tensor<?x?x1024xbf16>
  %cp3_init0 = tensor.empty(%cp3_batch, %cp3_seq) : tensor<?x?x4x64xbf16>
  %cp3_init1 = tensor.empty(%cp3_batch, %cp3_seq) : tensor<?x?x2x64xbf16>
  %cp3_init2 = tensor.empty(%cp3_batch, %cp3_seq) : tensor<?x?x2x64xbf16>
  %q, %k, %v = attn.cca_prologue %x wq(%wq) wk(%wk) wv(%wv)
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp)
      outs(%cp3_init0, %cp3_init1, %cp3_init2) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 64 : i64,
       conv_kernel_sizes = array<i64: 3, 3>, block_s = 64 : i64}
      : (tensor<?x?x1024xbf16>, tensor<256x1024xbf16>, tensor<128x1024xbf16>,
         tensor<128x1024xbf16>, tensor<384x1x3xbf16>, tensor<384xbf16>,
         tensor<384x64x3xbf16>, tensor<384xbf16>, tensor<2xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>)
      -> (tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>)
  return %q, %k, %v
      : tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>
}

// -----

// A head_dim the kernel does not cover: the op stays on the host, with a
// warning, and the pass goes on.
// CHECK-LABEL: func.func @tiny
// CHECK: attn.cca_prologue
// CHECK-NOT: gpu.module
func.func @tiny(%x: tensor<?x?x16xbf16>, %wq: tensor<32x16xbf16>,
                %wk: tensor<16x16xbf16>, %wv: tensor<8x16xbf16>,
                %wvp: tensor<8x16xbf16>, %dw: tensor<48x1x2xbf16>,
                %dwb: tensor<48xbf16>, %gw: tensor<48x8x2xbf16>,
                %gwb: tensor<48xbf16>, %temp: tensor<2xbf16>)
    -> (tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>) {
  %cp4_c0 = arith.constant 0 : index
  %cp4_c1 = arith.constant 1 : index
  %cp4_batch = tensor.dim %x, %cp4_c0 : tensor<?x?x16xbf16>
  %cp4_seq = tensor.dim %x, %cp4_c1 : tensor<?x?x16xbf16>
  %cp4_init0 = tensor.empty(%cp4_batch, %cp4_seq) : tensor<?x?x4x8xbf16>
  %cp4_init1 = tensor.empty(%cp4_batch, %cp4_seq) : tensor<?x?x2x8xbf16>
  %cp4_init2 = tensor.empty(%cp4_batch, %cp4_seq) : tensor<?x?x2x8xbf16>
  // expected-warning @+1 {{the sm_90a prologue needs a static model width that is a multiple of 64; attn.cca_prologue stays on the host}}
  %q, %k, %v = attn.cca_prologue %x wq(%wq) wk(%wk) wv(%wv) wv_prev(%wvp)
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp)
      outs(%cp4_init0, %cp4_init1, %cp4_init2) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 8 : i64,
       conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift,
       temperature = #attn.temperature<clamped>,
       rope = #attn.rope<theta = 10000.0, fraction = 0.5>, block_s = 4 : i64}
      : (tensor<?x?x16xbf16>, tensor<32x16xbf16>, tensor<16x16xbf16>,
         tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<48x1x2xbf16>,
         tensor<48xbf16>, tensor<48x8x2xbf16>, tensor<48xbf16>,
         tensor<2xbf16>, tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>)
      -> (tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>)
  return %q, %k, %v
      : tensor<?x?x4x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>
}

// -----

// A padded batch: the i64 padding mask is the last pointer parameter; each
// thread reads the entries of its two accumulator rows (token s0 - halo +
// row, clamped into the sequence) once, and the GEMM stores zeros for the
// rows of padded tokens into u.
// CHECK-LABEL: func.func @padding_mask
// CHECK: call @[[K:attn_cca_prologue_bf16_e128_h4_g2_d64_k2x2_qkmean_vshift_mask64]]_launch(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7, %arg8, %arg9, %arg10)
// CHECK: gpu.func @[[K]]({{.*}}, %[[MASK:.*]]: !llvm.ptr<1>) kernel
// CHECK: %[[PTR:.*]] = llvm.getelementptr %[[MASK]][%{{.*}}] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i64
// CHECK: %[[ENTRY:.*]] = llvm.load %[[PTR]] {alignment = 8 : i64} : !llvm.ptr<1> -> i64
// CHECK: %[[SET:.*]] = arith.cmpi ne, %[[ENTRY]], %{{.*}} : i64
// CHECK: %[[REAL:.*]] = arith.ori %{{.*}}, %[[SET]] : i1
// CHECK: nvvm.wgmma.mma_async
// CHECK: arith.select %[[REAL]], %{{.*}}, %{{.*}} : f32
// CHECK: func.func private @[[K]]_launch
// CHECK-SAME: #attn.kernel_param<name = "padding_mask", kind = "pointer", detail = "i64", value = "padding_mask">
// CHECK-SAME: #attn.kernel_tensor<name = "padding_mask", role = "{{[^"]*}}", operand = 10, dtype = "i64"
func.func @padding_mask(%x: tensor<?x?x128xbf16>, %wq: tensor<256x128xbf16>, %wk: tensor<128x128xbf16>, %wv: tensor<64x128xbf16>, %wvp: tensor<64x128xbf16>, %dw: tensor<384x1x2xbf16>, %dwb: tensor<384xbf16>, %gw: tensor<384x64x2xbf16>, %gwb: tensor<384xbf16>, %temp: tensor<2xbf16>, %m: tensor<?x?xi64>) -> (tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>) {
  %cp5_c0 = arith.constant 0 : index
  %cp5_c1 = arith.constant 1 : index
  %cp5_batch = tensor.dim %x, %cp5_c0 : tensor<?x?x128xbf16>
  %cp5_seq = tensor.dim %x, %cp5_c1 : tensor<?x?x128xbf16>
  %cp5_init0 = tensor.empty(%cp5_batch, %cp5_seq) : tensor<?x?x4x64xbf16>
  %cp5_init1 = tensor.empty(%cp5_batch, %cp5_seq) : tensor<?x?x2x64xbf16>
  %cp5_init2 = tensor.empty(%cp5_batch, %cp5_seq) : tensor<?x?x2x64xbf16>
  %q, %k, %v = attn.cca_prologue %x wq(%wq) wk(%wk) wv(%wv) wv_prev(%wvp) conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) padding_mask(%m)
      outs(%cp5_init0, %cp5_init1, %cp5_init2) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 64 : i64, conv_kernel_sizes = array<i64: 2, 2>, qk_mean, value_shift, block_s = 64 : i64}
      : (tensor<?x?x128xbf16>, tensor<256x128xbf16>, tensor<128x128xbf16>, tensor<64x128xbf16>, tensor<64x128xbf16>, tensor<384x1x2xbf16>, tensor<384xbf16>, tensor<384x64x2xbf16>, tensor<384xbf16>, tensor<2xbf16>, tensor<?x?xi64>, tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>) -> (tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>)
  return %q, %k, %v : tensor<?x?x4x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>
}
