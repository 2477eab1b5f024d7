// Internal interfaces of the AttnFuse runtime (not installed; the tests use them).
#ifndef ATTNFUSE_RUNTIME_INTERNAL_H
#define ATTNFUSE_RUNTIME_INTERNAL_H

#include "attnfuse/runtime.h"
#include "json.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace afr {

// Sets the calling thread's afr_last_error() and returns `status`.
afr_status setError(afr_status status, const std::string &message);
afr_status ok(); // clears the message

// An integer in the manifest or an expression over B, S, T ("2048*S", "ceil_div(S, 32)").
struct Expr {
  std::string text;
  bool constant = false;
  int64_t value = 0;
};

bool evalExpr(const std::string &text, const afr_sizes &sizes, int64_t &value,
              std::string &error);

struct TensorSpec {
  std::string name;
  std::string dtypeName;
  afr_dtype dtype = AFR_DTYPE_INVALID;
  std::vector<Expr> shape;
  std::vector<Expr> strides; // elements
  int64_t operand = -1;
  std::string role;
};

struct TmaSpec {
  std::string param;
  std::string tensor;
  std::string use;
  uint32_t rank = 0;
  uint32_t dataType = 0;
  std::vector<Expr> globalDim;
  std::vector<Expr> globalStrides; // bytes, rank - 1
  std::vector<uint32_t> box;
  std::vector<uint32_t> elementStrides;
  uint32_t interleave = 0, swizzle = 0, l2Promotion = 0, oobFill = 0;
};

struct ParamSpec {
  std::string name;
  afr_param_kind kind = AFR_PARAM_SCALAR;
  std::string dtype; // scalar / pointer element type
  std::string value; // scalar: expression; pointer: tensor name
  std::string tma;   // descriptor name (tma params)
};

// A RoPE table the host computes: `sine ? sin : cos`(p * theta^(-2 i / rotated)) in f64,
// rounded to f32, [positions, rotated / 2].
struct RopeTableSpec {
  std::string param;
  bool sine = false;
  double theta = 10000.0;
  int64_t rotated = 0;
};

struct KernelSpec {
  std::vector<RopeTableSpec> ropeTables;
  std::string name;   // manifest "name"
  std::string symbol; // manifest "kernel" (the PTX entry)
  std::string kind;
  std::string cubin, ptx;
  std::array<uint32_t, 3> block{{1, 1, 1}};
  std::vector<Expr> grid;
  uint32_t dynamicSmem = 0;
  std::vector<ParamSpec> params;
  std::vector<TensorSpec> tensors;
  std::vector<TmaSpec> tmas;
  std::string configJson;
  // Launch results that are operand tensors updated in place: (result, tensor).
  std::vector<std::pair<std::string, std::string>> aliases;
  // A scratch tensor the caller allocates (none: empty) and its size in bytes.
  std::string workspaceTensor;
  Expr workspaceBytes;
  // The kernel to launch next with the same workspace (none: empty).
  std::string then;
};

// One step of a device program (see afr_program in runtime.h).
struct ProgramStep {
  enum class Kind { Launch, View } kind = Kind::Launch;
  // Launch: the kernel, the value bound to each of its tensors, the values its results define
  // (by tensor name) and the results that are operand tensors updated in place.
  int kernel = -1;
  std::vector<std::pair<std::string, int64_t>> tensors, results;
  std::vector<std::pair<std::string, std::string>> aliases;
  std::vector<std::vector<int64_t>> resultShapes; // static sizes of the result types, -1 dynamic
  // B, S, T that no bound tensor gives: a count, or (when hintValue >= 0) dimension hintDim
  // of value hintValue times hintTimes (0: none).
  int64_t sizeHints[3] = {0, 0, 0};
  int64_t hintValue[3] = {-1, -1, -1}, hintDim[3] = {0, 0, 0};
  // View: a contiguous reshape of `source` into `result` (collapse or expand groups).
  int64_t source = -1, result = -1;
  bool collapse = true;
  std::vector<std::vector<int64_t>> groups;
  afr_dtype dtype = AFR_DTYPE_INVALID;
  std::vector<int64_t> shape; // static sizes of the result, -1 dynamic
};

struct ProgramSpec {
  std::string function;
  std::vector<afr_dtype> inputDtypes;
  std::vector<std::vector<int64_t>> inputShapes; // -1 dynamic
  int64_t numValues = 0;
  std::vector<ProgramStep> steps;
  std::vector<int64_t> outputs;
};

struct Manifest;
bool parseProgram(const Json &p, const Manifest &manifest, ProgramSpec &out, std::string &error);

struct Manifest {
  std::vector<ProgramSpec> programs;
  std::string baseDir;
  std::string format;
  std::vector<KernelSpec> kernels;
  std::vector<std::string> launches; // kernel name per launch, program order
};

bool parseManifest(const std::string &text, Manifest &out, std::string &error);
std::vector<Expr> contiguousStrides(const std::vector<Expr> &shape);

// Name -> value tables of the cuda.h enums the manifest spells out.
bool tmaDataTypeFromName(const std::string &name, uint32_t &value);
bool tmaEnumFromName(const std::string &name, uint32_t &value); // interleave/swizzle/l2/oob
afr_dtype dtypeFromName(const std::string &name);
const char *dtypeName(afr_dtype dtype);
uint32_t dtypeSize(afr_dtype dtype);

afr_status validate(const KernelSpec &kernel, const afr_sizes &sizes, const afr_tensor *tensors,
                    int numTensors);
afr_status tmaParams(const KernelSpec &kernel, const TmaSpec &tma, const afr_sizes &sizes,
                     const afr_tensor *tensors, int numTensors, afr_tma_params &out);
afr_status launchDims(const KernelSpec &kernel, const afr_sizes &sizes, afr_launch_dims &out);
afr_status paramLayout(const KernelSpec &kernel, std::vector<afr_param_slot> &slots,
                       uint32_t &total);

// Test hook: the driver library dlopen() tries (default "libcuda.so.1"); resets a loaded driver.
void setDriverLibraryForTesting(const std::string &name);

} // namespace afr

struct afr_manifest {
  afr::Manifest m;
};

#endif
