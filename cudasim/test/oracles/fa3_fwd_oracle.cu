// A second independent oracle: FlashAttention-3's Hopper forward kernel
// (github.com/Dao-AILab/flash-attention, hopper/: TMA loads of Q/K/V, wgmma
// with P in registers (RS), intra-warpgroup overlap, setmaxnreg, named-barrier
// warp-specialised pipelines, TMA-store epilogue), bf16 in and out, head dim
// FA3_HDIM (default 128), cluster 1x1x1 (FA3 itself picks a 2-CTA cluster for
// hdim 128 when the number of query blocks is even; the emulator models one-CTA
// clusters, so ClusterM is fixed at 1 here).
//
// Like cutlass_gemm_oracle.cu, the file is compiled twice: with
// -DORACLE_EMIT_KERNEL to PTX, and as the host program that builds the
// kernel's Params with FA3's own to_underlying_arguments (the same argument
// lists as hopper/flash_fwd_launch_template.h's run_flash_fwd) and launches
// it through the emulator's driver API. Reference: softmax(Q K^T * scale) V
// in double from the same bf16 inputs.
#include <cuda.h>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/device_kernel.h"
#include <cutlass/kernel_hardware_info.h>

// In hopper/flash_fwd_launch_template.h's order.
#include "flash.h"
#include "tile_size.h"
#include "tile_scheduler.hpp"
#include "flash_fwd_kernel_sm90.h"
#include "mainloop_fwd_sm90_tma_gmma_ws.hpp"
#include "epilogue_fwd.hpp"

#ifndef FA3_HDIM
#define FA3_HDIM 128
#endif
#ifndef FA3_CAUSAL
#define FA3_CAUSAL 0
#endif

using namespace cute;

namespace oracle {
constexpr int Arch = 90, kHeadDim = FA3_HDIM, kHeadDimV = FA3_HDIM, ClusterM = 1;
using Element = cutlass::bfloat16_t;
using ElementOut = cutlass::bfloat16_t;
constexpr bool Is_causal = FA3_CAUSAL, Is_local = false, Has_softcap = false,
               Varlen = false, PagedKVNonTMA = false, AppendKV = false,
               HasQv = false, PackGQA = false, Split = false,
               V_colmajor = false;
constexpr std::tuple<int, int, bool, bool> kBlockMN_RS_IntraWGOverlap =
    tile_size_fwd_sm90(kHeadDim, kHeadDimV, Is_causal, Is_local, sizeof(Element),
                       V_colmajor, PagedKVNonTMA, Has_softcap);
constexpr int kBlockM = std::get<0>(kBlockMN_RS_IntraWGOverlap);
constexpr int kBlockN = std::get<1>(kBlockMN_RS_IntraWGOverlap);
constexpr bool MmaPV_is_RS = std::get<2>(kBlockMN_RS_IntraWGOverlap);
constexpr bool IntraWGOverlap = std::get<3>(kBlockMN_RS_IntraWGOverlap);
constexpr int kStages = 2;
using TileShape_MNK = cute::Shape<Int<kBlockM>, Int<kBlockN>, Int<kHeadDim>>;
using TileShape_MNK_PV = cute::Shape<Int<kBlockM>, Int<kHeadDimV>, Int<kBlockN>>;
using ClusterShape = cute::Shape<Int<ClusterM>, _1, _1>;
using CollectiveMainloop = flash::CollectiveMainloopFwdSm90<
    kStages, ClusterShape, TileShape_MNK, kHeadDimV, Element, float,
    cutlass::arch::Sm90, Is_causal, Is_local, Has_softcap, Varlen,
    PagedKVNonTMA, AppendKV, HasQv, MmaPV_is_RS, IntraWGOverlap, PackGQA, Split,
    V_colmajor>;
using CollectiveEpilogue = flash::CollectiveEpilogueFwd<
    TileShape_MNK_PV, ClusterShape, ElementOut, cutlass::arch::Sm90,
    CollectiveMainloop::NumMmaThreads, Varlen, PackGQA, Split, false>;
constexpr int NumProducerThreads = CollectiveMainloop::NumProducerThreads;
using Scheduler = std::conditional_t<
    !Is_causal, flash::StaticPersistentTileScheduler<Split>,
    flash::DynamicPersistentTileScheduler<CollectiveMainloop::NumMmaThreads,
                                          NumProducerThreads, Split, PackGQA,
                                          true>>;
using AttnKernel = flash::enable_sm90<
    flash::FlashAttnFwdSm90<CollectiveMainloop, CollectiveEpilogue, Scheduler>>;
} // namespace oracle

#ifdef ORACLE_EMIT_KERNEL
template __global__ void cutlass::device_kernel<oracle::AttnKernel>(
    CUTLASS_GRID_CONSTANT typename oracle::AttnKernel::Params const);
#else

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

extern "C" void cudasimStats(unsigned long long *instructions, double *seconds);

static void check(CUresult r, const char *what) {
  if (r != CUDA_SUCCESS) {
    const char *s = nullptr;
    cuGetErrorString(r, &s);
    std::fprintf(stderr, "FAIL: %s (%d): %s\n", what, int(r), s ? s : "?");
    std::exit(1);
  }
}
static uint16_t toBf16Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7FFF + ((u >> 16) & 1);
  return uint16_t(u >> 16);
}
static float fromBf16Bits(uint16_t b) {
  uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

int main(int argc, char **argv) {
  using namespace oracle;
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s KERNEL.ptx B H SEQLEN_Q SEQLEN_K\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[1]);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string ptx = ss.str();
  int B = std::atoi(argv[2]), H = std::atoi(argv[3]), Sq = std::atoi(argv[4]),
      Sk = std::atoi(argv[5]), D = kHeadDim;
  size_t e = ptx.find(".entry ");
  if (e == std::string::npos) {
    std::fprintf(stderr, "FAIL: no .entry in %s\n", argv[1]);
    return 1;
  }
  std::string entry = ptx.substr(e + 7, ptx.find('(', e) - e - 7);
  while (!entry.empty() && std::isspace((unsigned char)entry.back()))
    entry.pop_back();

  check(cuInit(0), "cuInit");
  CUdevice dev;
  check(cuDeviceGet(&dev, 0), "cuDeviceGet");
  CUcontext ctx;
  check(cuDevicePrimaryCtxRetain(&ctx, dev), "ctx");
  check(cuCtxSetCurrent(ctx), "ctx");
  CUmodule mod;
  check(cuModuleLoadData(&mod, ptx.c_str()), "cuModuleLoadData");
  CUfunction fn;
  check(cuModuleGetFunction(&fn, mod, entry.c_str()), "cuModuleGetFunction");

  // Q [B, Sq, H, D], K/V [B, Sk, H, D], O [B, Sq, H, D] (torch's layout),
  // LSE [B, H, Sq].
  std::mt19937 rng(42 + Sq * 3 + Sk);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<uint16_t> hQ(size_t(B) * Sq * H * D), hK(size_t(B) * Sk * H * D),
      hV(hK.size()), hO(hQ.size());
  for (auto *v : {&hQ, &hK, &hV})
    for (auto &x : *v)
      x = toBf16Bits(normal(rng));
  CUdeviceptr dQ, dK, dV, dO, dL, dSem;
  check(cuMemAlloc(&dQ, hQ.size() * 2), "alloc");
  check(cuMemAlloc(&dK, hK.size() * 2), "alloc");
  check(cuMemAlloc(&dV, hV.size() * 2), "alloc");
  check(cuMemAlloc(&dO, hO.size() * 2), "alloc");
  check(cuMemAlloc(&dL, size_t(B) * H * Sq * 4), "alloc");
  check(cuMemAlloc(&dSem, 4), "alloc");
  check(cuMemsetD32(dSem, 0, 1), "memset");
  check(cuMemcpyHtoD(dQ, hQ.data(), hQ.size() * 2), "copy");
  check(cuMemcpyHtoD(dK, hK.data(), hK.size() * 2), "copy");
  check(cuMemcpyHtoD(dV, hV.data(), hV.size() * 2), "copy");

  // As hopper/flash_api.cpp's set_params_fprop for dense, non-varlen inputs.
  Flash_fwd_params params{};
  params.is_bf16 = true;
  params.q_ptr = reinterpret_cast<void *>(dQ);
  params.k_ptr = reinterpret_cast<void *>(dK);
  params.v_ptr = reinterpret_cast<void *>(dV);
  params.o_ptr = reinterpret_cast<void *>(dO);
  params.q_row_stride = params.k_row_stride = params.v_row_stride = params.o_row_stride = int64_t(H) * D;
  params.q_head_stride = params.k_head_stride = params.v_head_stride = params.o_head_stride = D;
  params.v_dim_stride = 1;
  params.q_batch_stride = params.o_batch_stride = int64_t(Sq) * H * D;
  params.k_batch_stride = params.v_batch_stride = int64_t(Sk) * H * D;
  params.softmax_lse_ptr = reinterpret_cast<void *>(dL);
  params.b = B, params.h = H, params.h_k = H;
  params.seqlen_q = Sq, params.seqlen_k = Sk;
  params.d = D, params.dv = D;
  params.d_rounded = D, params.dv_rounded = D;
  params.scale_softmax = 1.0f / std::sqrt(float(D));
  params.softcap = 0.f;
  params.p_dropout = 1.f;
  params.is_causal = Is_causal;
  params.window_size_left = Sk - 1;
  params.window_size_right = Is_causal ? 0 : Sq - 1;
  params.num_splits = 1;
  params.arch = 90;
  params.num_sm = std::getenv("ORACLE_SM_COUNT") ? std::atoi(std::getenv("ORACLE_SM_COUNT")) : 132;
  params.tile_count_semaphore = reinterpret_cast<int *>(dSem);

  // hopper/flash_fwd_launch_template.h, run_flash_fwd, with Varlen, PagedKV,
  // AppendKV, Qv, rotary, descales, PackGQA and Split all off.
  int seqlen_q = params.seqlen_q, batch_q = params.b, batch_k = params.b;
  typename CollectiveMainloop::StrideV v_strides =
      make_stride(params.v_row_stride, _1{}, params.v_head_stride, params.v_batch_stride);
  typename CollectiveMainloop::Arguments mainloop_args{
      static_cast<Element const *>(params.q_ptr),
      {seqlen_q, params.d, params.h, batch_q},
      {params.q_row_stride, _1{}, params.q_head_stride, params.q_batch_stride},
      static_cast<Element *>(params.k_ptr),
      {params.seqlen_k, params.d, params.h_k, batch_k},
      {params.k_row_stride, _1{}, params.k_head_stride, params.k_batch_stride},
      static_cast<Element *>(params.v_ptr),
      params.dv,
      v_strides,
      static_cast<Element const *>(params.knew_ptr),
      {params.seqlen_knew, params.d, params.h_k, params.b},
      {params.knew_row_stride, _1{}, params.knew_head_stride, params.knew_batch_stride},
      static_cast<Element const *>(params.vnew_ptr),
      {params.vnew_row_stride, _1{}, params.vnew_head_stride, params.vnew_batch_stride},
      static_cast<Element const *>(params.qv_ptr),
      {params.qv_row_stride, _1{}, params.qv_head_stride, params.qv_batch_stride},
      static_cast<Element const *>(params.rotary_cos_ptr),
      {params.seqlen_k, params.rotary_dim / 2},
      {params.rotary_dim / 2, _1{}},
      static_cast<Element const *>(params.rotary_sin_ptr),
      {params.rotary_dim / 2, _1{}},
      params.is_rotary_interleaved,
      params.page_table,
      {params.b, 0},
      {params.page_table_batch_stride, _1{}},
      params.scale_softmax,
      params.q_descale_ptr, params.k_descale_ptr, params.v_descale_ptr,
      {params.q_descale_batch_stride, params.q_descale_head_stride},
      {params.k_descale_batch_stride, params.k_descale_head_stride},
      {params.v_descale_batch_stride, params.v_descale_head_stride},
      params.window_size_left, params.window_size_right, params.attention_chunk,
      params.softcap,
      params.num_splits,
      params.kv_batch_idx,
      params.cu_seqlens_q, params.cu_seqlens_k, params.cu_seqlens_knew,
      params.seqused_q, params.seqused_k,
      params.leftpad_k, params.seqlens_rotary};
  typename CollectiveEpilogue::Arguments epilogue_args{
      static_cast<ElementOut *>(params.o_ptr),
      {seqlen_q, params.dv, params.h, batch_q, params.num_splits},
      {params.o_row_stride, _1{}, params.o_head_stride, params.o_batch_stride, 0},
      static_cast<float *>(params.oaccum_ptr),
      {params.oaccum_row_stride, _1{}, params.oaccum_head_stride, params.oaccum_batch_stride, params.oaccum_split_stride},
      static_cast<float *>(params.softmax_lse_ptr),
      {_1{}, seqlen_q, params.h * seqlen_q, 0},
      static_cast<float *>(params.softmax_lseaccum_ptr),
      {_1{}, params.lseaccum_head_stride, params.lseaccum_batch_stride, params.lseaccum_split_stride},
      params.h_k,
      params.cu_seqlens_q, params.seqused_q};
  int num_blocks_m = cutlass::ceil_div(params.seqlen_q, get<0>(TileShape_MNK{}));
  typename flash::TileSchedulerArguments scheduler_args{
      num_blocks_m, params.h, params.b, params.num_splits,
      params.h / params.h_k,
      params.seqlen_q,
      params.seqlen_k, params.d, params.dv, sizeof(Element),
      params.tile_count_semaphore, params.cu_seqlens_q, params.seqused_q,
      params.num_splits_dynamic_ptr,
      params.num_m_blocks_ptr,
      params.varlen_batch_idx_ptr,
      params.num_nheads_in_l2_ptr};
  typename AttnKernel::Params kp = AttnKernel::to_underlying_arguments(
      {mainloop_args, epilogue_args, {0, params.num_sm}, scheduler_args});
  dim3 grid = AttnKernel::get_grid_shape(kp);
  dim3 block = AttnKernel::get_block_shape();
  int smem = AttnKernel::SharedStorageSize;
  check(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem), "smem");
  std::printf("FA3 fwd hdim %d causal %d tile %dx%d RS %d overlap %d grid %ux%ux%u block %u "
              "smem %d sizeof(Params) %zu\n",
              D, int(Is_causal), kBlockM, kBlockN, int(MmaPV_is_RS), int(IntraWGOverlap),
              grid.x, grid.y, grid.z, block.x, smem, sizeof(kp));
  void *kargs[] = {&kp};
  unsigned long long i0 = 0, i1 = 0;
  double s0 = 0, s1 = 0;
  cudasimStats(&i0, &s0);
  auto t0 = std::chrono::steady_clock::now();
  check(cuLaunchKernel(fn, grid.x, grid.y, grid.z, block.x, block.y, block.z, smem,
                       nullptr, kargs, nullptr),
        "cuLaunchKernel");
  double runS = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  cudasimStats(&i1, &s1);
  check(cuMemcpyDtoH(hO.data(), dO, hO.size() * 2), "copy O");
  std::vector<float> hL(size_t(B) * H * Sq);
  check(cuMemcpyDtoH(hL.data(), dL, hL.size() * 4), "copy LSE");

  // Reference in double. O is bf16: allow 2^-8 |o| (its rounding) plus 2e-3
  // (P is rounded to bf16 before the PV product on the tensor cores, which
  // the reference does not do; |v| ~ 1). LSE (f32): 1e-4 absolute.
  double maxErr = 0, maxLseErr = 0, maxRatio = 0; // ratio: error / tolerance
  long bad = 0;
  double scale = params.scale_softmax;
  std::vector<double> p(Sk);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < Sq; ++i) {
        auto q = [&](int d) { return double(fromBf16Bits(hQ[((size_t(b) * Sq + i) * H + h) * D + d])); };
        double mx = -INFINITY;
        int last = Is_causal ? std::min(Sk - 1, i + Sk - Sq) : Sk - 1;
        for (int j = 0; j <= last; ++j) {
          double s = 0;
          for (int d = 0; d < D; ++d)
            s += q(d) * fromBf16Bits(hK[((size_t(b) * Sk + j) * H + h) * D + d]);
          p[j] = s * scale;
          mx = std::max(mx, p[j]);
        }
        double sum = 0;
        for (int j = 0; j <= last; ++j)
          sum += (p[j] = std::exp(p[j] - mx));
        double lse = mx + std::log(sum);
        double gotL = hL[(size_t(b) * H + h) * Sq + i];
        double lerr = last >= 0 ? std::fabs(gotL - lse) : 0;
        maxLseErr = std::max(maxLseErr, lerr);
        if (!(lerr <= 1e-4)) {
          if (bad < 5)
            std::fprintf(stderr, "LSE[%d][%d][%d] = %.7g, reference %.7g\n", b, h, i, gotL, lse);
          ++bad;
        }
        for (int d = 0; d < D; ++d) {
          double o = 0;
          for (int j = 0; j <= last; ++j)
            o += p[j] * fromBf16Bits(hV[((size_t(b) * Sk + j) * H + h) * D + d]);
          o = last >= 0 ? o / sum : 0;
          double got = fromBf16Bits(hO[((size_t(b) * Sq + i) * H + h) * D + d]);
          double err = std::fabs(got - o), tol = std::ldexp(std::fabs(o), -8) + 2e-3;
          maxRatio = std::max(maxRatio, err / tol);
          if (!(err <= tol)) {
            if (bad < 5)
              std::fprintf(stderr, "O[%d][%d][%d][%d] = %.6g, reference %.6g\n", b, i, h, d, got, o);
            ++bad;
          }
          if (!(err <= maxErr))
            maxErr = err;
        }
      }
  std::printf("%s FA3 B=%d H=%d Sq=%d Sk=%d D=%d causal=%d: O max_abs_err %.3g (%.2f of the "
              "tolerance), LSE max_abs_err %.3g, %ld mismatches, emulator %.2f s, %llu thread-instructions\n",
              bad ? "FAIL" : "PASS", B, H, Sq, Sk, D, int(Is_causal), maxErr, maxRatio, maxLseErr, bad, runS,
              i1 - i0);
  return bad ? 1 : 0;
}
#endif
