// An independent oracle for the emulator: a CUTLASS 3.x sm90 GEMM (TMA loads,
// wgmma, mbarrier pipelines, warp-specialized producer/consumer warpgroups),
// bf16 inputs with f32 accumulation and f32 output,
//   D[M, N] = alpha * A[M, K] . B[N, K]^T + beta * C[M, N]   (row-major A, C, D;
//   B stored N x K, so both operands are K-major).
//
// The same file is compiled twice:
//   * with -DORACLE_EMIT_KERNEL and `nvcc -arch=sm_90a -ptx`: the PTX of
//     cutlass::device_kernel<GemmKernel>, which the emulator loads;
//   * as a host program (nvcc, linked against libattnfuse_cudasim.so in place
//     of libcuda): it builds the kernel's Params with CUTLASS's own
//     GemmKernel::to_underlying_arguments (which encodes the TMA descriptors
//     through cuTensorMapEncodeTiled, i.e. the emulator's), copies the Params
//     by value into the launch's parameter buffer, launches through
//     cuLaunchKernel and checks D against a double-precision host reference.
//
// ORACLE_SCHEDULE selects the kernel schedule:
//   1  KernelTmaWarpSpecialized             + NoSmemWarpSpecialized epilogue
//   2  KernelTmaWarpSpecializedPingpong     + TmaWarpSpecialized epilogue
//   3  KernelTmaWarpSpecializedCooperative  + TmaWarpSpecializedCooperative
// ORACLE_BF16_OUT=1 makes C and D bf16 (default f32).
// All use a 1x1x1 cluster (the emulator models one-CTA clusters only).
#include <cuda.h>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"

#ifndef ORACLE_SCHEDULE
#define ORACLE_SCHEDULE 1
#endif
#ifndef ORACLE_BF16_OUT
#define ORACLE_BF16_OUT 0
#endif

using namespace cute;

using ElementA = cutlass::bfloat16_t;
using ElementB = cutlass::bfloat16_t;
#if ORACLE_BF16_OUT
using ElementC = cutlass::bfloat16_t; // 16-bit C and D: the TMA epilogue
using ElementD = cutlass::bfloat16_t; // stages D through stmatrix
#else
using ElementC = float;
using ElementD = float;
#endif
using ElementAccumulator = float;
using LayoutA = cutlass::layout::RowMajor;    // M x K, K contiguous
using LayoutB = cutlass::layout::ColumnMajor; // K x N, K contiguous
using LayoutC = cutlass::layout::RowMajor;
using LayoutD = cutlass::layout::RowMajor;
constexpr int AlignA = 16 / sizeof(ElementA);
constexpr int AlignB = 16 / sizeof(ElementB);
constexpr int AlignC = 16 / sizeof(ElementC);
constexpr int AlignD = 16 / sizeof(ElementD);

using ClusterShape = Shape<_1, _1, _1>;
#if ORACLE_SCHEDULE == 1
using TileShape = Shape<_128, _128, _64>;
using MainloopSchedule = cutlass::gemm::KernelTmaWarpSpecialized;
using EpilogueSchedule = cutlass::epilogue::NoSmemWarpSpecialized;
#elif ORACLE_SCHEDULE == 2
using TileShape = Shape<_64, _128, _64>;
using MainloopSchedule = cutlass::gemm::KernelTmaWarpSpecializedPingpong;
using EpilogueSchedule = cutlass::epilogue::TmaWarpSpecialized;
#elif ORACLE_SCHEDULE == 3
using TileShape = Shape<_128, _128, _64>;
using MainloopSchedule = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
using EpilogueSchedule = cutlass::epilogue::TmaWarpSpecializedCooperative;
#else
#error "ORACLE_SCHEDULE must be 1, 2 or 3"
#endif

using CollectiveEpilogue =
    typename cutlass::epilogue::collective::CollectiveBuilder<
        cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape,
        ClusterShape, cutlass::epilogue::collective::EpilogueTileAuto,
        ElementAccumulator, float, ElementC, LayoutC, AlignC, ElementD,
        LayoutD, AlignD, EpilogueSchedule>::CollectiveOp;

using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, ElementA, LayoutA,
    AlignA, ElementB, LayoutB, AlignB, ElementAccumulator, TileShape,
    ClusterShape,
    cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
        sizeof(typename CollectiveEpilogue::SharedStorage))>,
    MainloopSchedule>::CollectiveOp;

using GemmKernel =
    cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>,
                                         CollectiveMainloop,
                                         CollectiveEpilogue>;

#ifdef ORACLE_EMIT_KERNEL
// The kernel the emulator runs (CUTLASS's own entry point).
template __global__ void cutlass::device_kernel<GemmKernel>(
    CUTLASS_GRID_CONSTANT typename GemmKernel::Params const);
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

static uint16_t toBf16Bits(float f) { // round to nearest even
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
  if (argc < 5) {
    std::fprintf(stderr,
                 "usage: %s KERNEL.ptx M N K [int|normal] [alpha beta]\n",
                 argv[0]);
    return 2;
  }
  const char *ptxPath = argv[1];
  int M = std::atoi(argv[2]), N = std::atoi(argv[3]), K = std::atoi(argv[4]);
  std::string mode = argc > 5 ? argv[5] : "int";
  float alpha = argc > 6 ? std::atof(argv[6]) : 1.0f;
  float beta = argc > 7 ? std::atof(argv[7]) : 0.0f;

  std::ifstream in(ptxPath);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string ptx = ss.str();
  if (ptx.empty()) {
    std::fprintf(stderr, "FAIL: cannot read %s\n", ptxPath);
    return 1;
  }
  // The module holds one kernel: cutlass::device_kernel<GemmKernel>.
  size_t e = ptx.find(".entry ");
  if (e == std::string::npos) {
    std::fprintf(stderr, "FAIL: no .entry in %s\n", ptxPath);
    return 1;
  }
  size_t b0 = e + 7, b1 = ptx.find('(', b0);
  std::string entry = ptx.substr(b0, b1 - b0);
  while (!entry.empty() && std::isspace((unsigned char)entry.back()))
    entry.pop_back();

  check(cuInit(0), "cuInit");
  CUdevice dev;
  check(cuDeviceGet(&dev, 0), "cuDeviceGet");
  CUcontext ctx;
  check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  CUmodule mod;
  auto t0 = std::chrono::steady_clock::now();
  check(cuModuleLoadData(&mod, ptx.c_str()), "cuModuleLoadData");
  double loadS = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CUfunction fn;
  check(cuModuleGetFunction(&fn, mod, entry.c_str()), "cuModuleGetFunction");

  // Host data: bf16-exact inputs.
  std::mt19937 rng(1234 + M * 7 + N * 13 + K);
  std::vector<uint16_t> hA(size_t(M) * K), hB(size_t(N) * K);
  std::vector<float> hC(size_t(M) * N), hD(size_t(M) * N);
  constexpr bool bf16Out = sizeof(ElementD) == 2;
  constexpr size_t cBytes = sizeof(ElementC), dBytes = sizeof(ElementD);
  std::uniform_int_distribution<int> small(-4, 4);
  std::normal_distribution<float> normal(0.f, 1.f);
  auto gen = [&]() {
    return mode == "int" ? float(small(rng)) : normal(rng);
  };
  for (auto &x : hA)
    x = toBf16Bits(gen());
  for (auto &x : hB)
    x = toBf16Bits(gen());
  for (auto &x : hC) {
    x = mode == "int" ? float(small(rng)) : normal(rng);
    if (bf16Out)
      x = fromBf16Bits(toBf16Bits(x));
  }
  std::vector<uint8_t> rawC(hC.size() * cBytes), rawD(hD.size() * dBytes);
  for (size_t i = 0; i < hC.size(); ++i) {
    if (bf16Out) {
      uint16_t b = toBf16Bits(hC[i]);
      std::memcpy(&rawC[i * 2], &b, 2);
    } else {
      std::memcpy(&rawC[i * 4], &hC[i], 4);
    }
  }

  CUdeviceptr dA, dB, dC, dD;
  check(cuMemAlloc(&dA, hA.size() * 2), "alloc A");
  check(cuMemAlloc(&dB, hB.size() * 2), "alloc B");
  check(cuMemAlloc(&dC, rawC.size()), "alloc C");
  check(cuMemAlloc(&dD, rawD.size()), "alloc D");
  check(cuMemcpyHtoD(dA, hA.data(), hA.size() * 2), "copy A");
  check(cuMemcpyHtoD(dB, hB.data(), hB.size() * 2), "copy B");
  check(cuMemcpyHtoD(dC, rawC.data(), rawC.size()), "copy C");

  using StrideA = typename GemmKernel::StrideA;
  using StrideB = typename GemmKernel::StrideB;
  using StrideC = typename GemmKernel::StrideC;
  using StrideD = typename GemmKernel::StrideD;
  // Packed strides (row, unit column, batch), as cutlass/util's
  // make_cute_packed_stride builds them: A M x K, B N x K, C and D M x N.
  StrideA sA{};
  StrideB sB{};
  StrideC sC{};
  StrideD sD{};
  get<0>(sA) = K, get<2>(sA) = int64_t(M) * K;
  get<0>(sB) = K, get<2>(sB) = int64_t(N) * K;
  get<0>(sC) = N, get<2>(sC) = int64_t(M) * N;
  get<0>(sD) = N, get<2>(sD) = int64_t(M) * N;

  cutlass::KernelHardwareInfo hw;
  hw.device_id = 0;
  // The persistent schedules launch min(tiles, sm_count) CTAs; a small
  // ORACLE_SM_COUNT makes each CTA loop over several tiles.
  hw.sm_count = std::getenv("ORACLE_SM_COUNT") ? std::atoi(std::getenv("ORACLE_SM_COUNT")) : 132;
  typename GemmKernel::Arguments args{
      cutlass::gemm::GemmUniversalMode::kGemm,
      {M, N, K, 1},
      {reinterpret_cast<ElementA const *>(dA), sA,
       reinterpret_cast<ElementB const *>(dB), sB},
      {{alpha, beta},
       reinterpret_cast<ElementC const *>(dC), sC,
       reinterpret_cast<ElementD *>(dD), sD},
      hw};
  if (!GemmKernel::can_implement(args)) {
    std::fprintf(stderr, "FAIL: GemmKernel::can_implement rejects %dx%dx%d\n", M, N, K);
    return 1;
  }
  size_t wsBytes = GemmKernel::get_workspace_size(args);
  CUdeviceptr dW = 0;
  if (wsBytes) {
    check(cuMemAlloc(&dW, wsBytes), "alloc workspace");
    check(cuMemsetD8(dW, 0, wsBytes), "clear workspace");
  }
  typename GemmKernel::Params params =
      GemmKernel::to_underlying_arguments(args, reinterpret_cast<void *>(dW));

  dim3 grid = GemmKernel::get_grid_shape(params);
  dim3 block = GemmKernel::get_block_shape();
  int smem = GemmKernel::SharedStorageSize;
  check(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem),
        "cuFuncSetAttribute");
  std::printf("kernel %.90s...\n", entry.c_str());
  std::printf("schedule %d  D %s  tile %dx%dx%d  stages %d  grid %ux%ux%u  block %u  "
              "smem %d  sizeof(Params) %zu  workspace %zu\n",
              ORACLE_SCHEDULE, bf16Out ? "bf16" : "f32", int(size<0>(TileShape{})), int(size<1>(TileShape{})),
              int(size<2>(TileShape{})), int(CollectiveMainloop::DispatchPolicy::Stages),
              grid.x, grid.y, grid.z, block.x, smem, sizeof(params), wsBytes);
  void *kargs[] = {&params};
  unsigned long long i0 = 0, i1 = 0;
  double s0 = 0, s1 = 0;
  cudasimStats(&i0, &s0);
  auto t1 = std::chrono::steady_clock::now();
  check(cuLaunchKernel(fn, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                       smem, nullptr, kargs, nullptr),
        "cuLaunchKernel");
  check(cuCtxSynchronize(), "cuCtxSynchronize");
  double runS = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  cudasimStats(&i1, &s1);
  check(cuMemcpyDtoH(rawD.data(), dD, rawD.size()), "copy D");
  for (size_t i = 0; i < hD.size(); ++i) {
    if (bf16Out) {
      uint16_t b;
      std::memcpy(&b, &rawD[i * 2], 2);
      hD[i] = fromBf16Bits(b);
    } else {
      std::memcpy(&hD[i], &rawD[i * 4], 4);
    }
  }

  // Reference in double from the same bf16 values.
  double maxErr = 0, maxRef = 0;
  long bad = 0;
  std::vector<double> a(size_t(M) * K), bt(size_t(N) * K);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = fromBf16Bits(hA[i]);
  for (size_t i = 0; i < bt.size(); ++i)
    bt[i] = fromBf16Bits(hB[i]);
  // Tolerance: "int" data are small integers, every partial sum is exact in
  // f32, so D must equal the reference exactly. "normal" data: the f32
  // accumulation order of the tensor cores is unspecified; allow
  // K * 2^-23 * sum|a*b| (a bound on any order of f32 sums) plus 2^-23*|beta*c|.
  // A bf16 D is the f32 result rounded to nearest even: "int" data must give
  // exactly bf16(reference); "normal" data get another 2^-8 |reference|.
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double s = 0, sabs = 0;
      for (int k = 0; k < K; ++k) {
        double p = a[size_t(i) * K + k] * bt[size_t(j) * K + k];
        s += p;
        sabs += std::fabs(p);
      }
      double c = hC[size_t(i) * N + j];
      double ref = double(alpha) * s + double(beta) * c;
      double got = hD[size_t(i) * N + j];
      double tol = mode == "int" ? 0.0
                                 : (K + 2) * std::ldexp(1.0, -23) *
                                       (std::fabs(alpha) * sabs + std::fabs(beta * c));
      if (bf16Out && mode == "int")
        ref = fromBf16Bits(toBf16Bits(float(ref)));
      else if (bf16Out)
        tol += std::ldexp(std::fabs(ref), -8);
      double err = std::fabs(got - ref);
      if (!(err <= tol)) {
        if (bad < 5)
          std::fprintf(stderr, "mismatch D[%d][%d] = %.9g, reference %.9g\n", i, j, got, ref);
        ++bad;
      }
      if (!(err <= maxErr))
        maxErr = err;
      maxRef = std::fmax(maxRef, std::fabs(ref));
    }
  std::printf("%s %s M=%d N=%d K=%d %s alpha=%g beta=%g: max_abs_err %.3g (max |ref| %.3g), "
              "%ld mismatches, emulator %.2f s (load %.2f s), %llu thread-instructions\n",
              bad ? "FAIL" : "PASS", bf16Out ? "D=bf16" : "D=f32", M, N, K, mode.c_str(), alpha, beta, maxErr, maxRef,
              bad, runS, loadS, i1 - i0);
  return bad ? 1 : 0;
}
#endif
