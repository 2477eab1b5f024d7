//===- AttnFuseModule.cpp - the attnfuse._attnfuse extension ----*- C++ -*-===//
//
// Thin nanobind layer over Bridge.h. Failures raise attnfuse._attnfuse.Error
// with (message, diagnostics); the pure-Python package turns those into
// attnfuse.MLIRError, ValueError and friends.
//
//===----------------------------------------------------------------------===//

#include "Bridge.h"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

namespace nb = nanobind;
using namespace attnfuse::python;

namespace {

/// Raised with (message, [(severity, location, message), ...]).
nb::object &errorType() {
  static nb::object type;
  return type;
}

[[noreturn]] void raise(const Failure &failure) {
  nb::list diagnostics;
  for (const Diagnostic &d : failure.diagnostics)
    diagnostics.append(nb::make_tuple(d.severity, d.location, d.message));
  PyErr_SetObject(errorType().ptr(),
                  nb::make_tuple(failure.message, diagnostics).ptr());
  throw nb::python_error();
}

nb::list specsToList(const std::vector<Spec> &specs) {
  nb::list list;
  for (const Spec &spec : specs)
    list.append(nb::make_tuple(spec.elementType, spec.shape));
  return list;
}

using CpuArray = nb::ndarray<nb::c_contig, nb::device::cpu>;

/// The element type of a DLPack dtype ("f32", "bf16", ...); uint16 is "u16".
std::string elementTypeName(nb::dlpack::dtype dtype) {
  auto code = static_cast<nb::dlpack::dtype_code>(dtype.code);
  if (dtype.lanes == 1) {
    if (code == nb::dlpack::dtype_code::Float && dtype.bits == 32)
      return "f32";
    if (code == nb::dlpack::dtype_code::Float && dtype.bits == 64)
      return "f64";
    if (code == nb::dlpack::dtype_code::Float && dtype.bits == 16)
      return "f16";
    if (code == nb::dlpack::dtype_code::Bfloat && dtype.bits == 16)
      return "bf16";
    if (code == nb::dlpack::dtype_code::UInt && dtype.bits == 16)
      return "u16";
    if (code == nb::dlpack::dtype_code::Int && dtype.bits == 32)
      return "i32";
    if (code == nb::dlpack::dtype_code::Int && dtype.bits == 64)
      return "i64";
  }
  return "unsupported (code " + std::to_string(dtype.code) + ", " +
         std::to_string(dtype.bits) + " bits)";
}

/// The element type a buffer holds; uint16 buffers carry bf16 bit patterns.
std::string elementTypeOf(const CpuArray &array) {
  std::string name = elementTypeName(array.dtype());
  return name == "u16" ? "bf16" : name;
}

/// Names of DLPack device types (dlpack.h's DLDeviceType).
const char *deviceName(int32_t type) {
  switch (type) {
  case 1:
    return "cpu";
  case 2:
    return "cuda";
  case 3:
    return "cuda_host";
  case 10:
    return "rocm";
  case 13:
    return "cuda_managed";
  default:
    return "other";
  }
}

/// A numpy array that owns the result's bytes.
nb::object toNumpy(ResultBuffer &&result) {
  auto *bytes = new std::vector<char>(std::move(result.data));
  nb::capsule owner(bytes, [](void *p) noexcept {
    delete static_cast<std::vector<char> *>(p);
  });
  nb::dlpack::dtype dtype;
  if (result.elementType == "f32")
    dtype = nb::dtype<float>();
  else if (result.elementType == "f64")
    dtype = nb::dtype<double>();
  else if (result.elementType == "f16")
    dtype = {uint8_t(nb::dlpack::dtype_code::Float), 16, 1};
  else if (result.elementType == "bf16") // bit patterns as uint16
    dtype = nb::dtype<uint16_t>();
  else if (result.elementType == "i32")
    dtype = nb::dtype<int32_t>();
  else
    dtype = nb::dtype<int64_t>();
  std::vector<size_t> shape(result.shape.begin(), result.shape.end());
  nb::ndarray<nb::numpy> array(bytes->data(), shape.size(), shape.data(), owner,
                               /*strides=*/nullptr, dtype);
  return nb::cast(array, nb::rv_policy::reference);
}

} // namespace

NB_MODULE(_attnfuse, m) {
  m.doc() = "AttnFuse compiler internals; use the attnfuse package.";
  errorType() =
      nb::borrow(PyErr_NewException("_attnfuse.Error", nullptr, nullptr));
  m.attr("Error") = errorType();

  // What a DLPack producer (torch, JAX, CuPy, numpy, ...) holds, without
  // copying it: (element type, shape, device type name, device id,
  // C-contiguous). The CPU path checks arguments with it before the call.
  m.def("inspect_array", [](nb::ndarray<> array) {
    nb::list shape;
    bool contiguous = true;
    int64_t expectedStride = 1;
    for (size_t i = array.ndim(); i-- > 0;) {
      if (array.shape(i) != 1 && array.stride(i) != expectedStride)
        contiguous = false;
      expectedStride *= array.shape(i);
    }
    for (size_t i = 0; i < array.ndim(); ++i)
      shape.append(array.shape(i));
    // Compiled code may use aligned vector loads: a buffer that starts off
    // its element size (torch.frombuffer with an odd offset) must be copied.
    size_t elementBytes = std::max<size_t>(1, (array.dtype().bits + 7) / 8);
    bool aligned =
        reinterpret_cast<uintptr_t>(array.data()) % elementBytes == 0;
    return nb::make_tuple(elementTypeName(array.dtype()), nb::tuple(shape),
                          deviceName(array.device_type()), array.device_id(),
                          contiguous, aligned);
  });

  nb::class_<Module>(m, "Module")
      .def("__str__", &Module::str)
      .def("clone", &Module::clone)
      .def("verify",
           [](const Module &self) {
             Failure failure;
             if (!self.verify(failure))
               raise(failure);
           })
      .def("run_pipeline",
           [](Module &self, const std::string &pipeline) {
             Failure failure;
             if (!self.runPipeline(pipeline, failure))
               raise(failure);
           })
      .def("function_names", &Module::functionNames)
      .def("signature",
           [](const Module &self, const std::string &name) {
             Failure failure;
             std::vector<Spec> arguments, results;
             if (!self.signature(name, arguments, results, failure))
               raise(failure);
             return nb::make_tuple(specsToList(arguments),
                                   specsToList(results));
           })
      .def(
          "cost_report",
          [](const Module &self, std::optional<int64_t> seqLen,
             std::optional<int64_t> batch, const std::string &elemType,
             const std::string &function) {
            Failure failure;
            std::string json;
            if (!self.costReport(seqLen, batch, elemType, function, json,
                                 failure))
              raise(failure);
            return json;
          },
          nb::arg("seq_len").none(), nb::arg("batch").none(),
          nb::arg("elem_type"), nb::arg("function") = "")
      .def(
          "compile_cpu",
          [](const Module &self, const std::string &entry,
             const std::string &pipelineOptions, std::optional<bool> fused,
             bool runtimeChecks, unsigned optLevel, bool inPlaceCaches,
             unsigned numThreads, bool passiveWait) {
            Failure failure;
            std::unique_ptr<CpuFunction> function;
            {
              nb::gil_scoped_release release;
              function = self.compileCpu(entry, pipelineOptions, fused,
                                         runtimeChecks, optLevel, inPlaceCaches,
                                         numThreads, passiveWait, failure);
            }
            if (!function)
              raise(failure);
            return function;
          },
          nb::arg("entry"), nb::arg("pipeline_options"),
          nb::arg("fused").none(), nb::arg("runtime_checks"),
          nb::arg("opt_level"), nb::arg("in_place_caches"),
          nb::arg("num_threads") = 0, nb::arg("passive_wait") = false)
      .def("compile_sm90a",
           [](const Module &self, const std::string &outputDir,
              const std::string &sourceName, const std::string &elemType,
              std::optional<int64_t> blockQ, std::optional<int64_t> blockKV,
              std::optional<int64_t> stages, const std::string &ptxas,
              bool cubin, bool programs) {
             // Sizes left as None keep SM90aOptions' defaults.
             SM90aRequest request;
             request.outputDir = outputDir;
             request.sourceName = sourceName;
             attnfuse::SM90aOptions &options = request.options;
             options.elemType = elemType;
             options.blockQ = blockQ.value_or(options.blockQ);
             options.blockKV = blockKV.value_or(options.blockKV);
             options.stages = stages.value_or(options.stages);
             options.ptxasPath = ptxas;
             options.cubin = cubin;
             options.programs = programs;
             SM90aResult result;
             Failure failure;
             bool ok;
             {
               nb::gil_scoped_release release;
               ok = self.compileSM90a(request, result, failure);
             }
             if (!ok)
               raise(failure);
             nb::dict out;
             out["output_dir"] = result.outputDir;
             out["files"] = result.files;
             out["warnings"] = result.warnings;
             out["num_kernels"] = result.numKernels;
             return out;
           });

  m.def(
      "parse",
      [](const std::string &text, const std::string &sourceName, bool verify) {
        Failure failure;
        std::unique_ptr<Module> module =
            Module::parse(text, sourceName, verify, failure);
        if (!module)
          raise(failure);
        return module;
      },
      nb::arg("text"), nb::arg("source_name"), nb::arg("verify"));

  nb::class_<CpuFunction>(m, "CpuFunction")
      .def_prop_ro("name", &CpuFunction::name)
      .def_prop_ro(
          "arguments",
          [](const CpuFunction &f) { return specsToList(f.arguments()); })
      .def_prop_ro(
          "results",
          [](const CpuFunction &f) { return specsToList(f.results()); })
      .def_prop_ro("result_arguments", &CpuFunction::resultArguments)
      .def_prop_ro("written_arguments", &CpuFunction::writtenArguments)
      .def("__call__", [](CpuFunction &self, std::vector<CpuArray> arrays) {
        std::vector<ArgumentBuffer> arguments;
        for (CpuArray &array : arrays) {
          ArgumentBuffer argument{elementTypeOf(array), {}, array.data()};
          for (size_t i = 0; i < array.ndim(); ++i)
            argument.shape.push_back(array.shape(i));
          arguments.push_back(std::move(argument));
        }
        std::vector<ResultBuffer> results;
        Failure failure;
        bool ok;
        {
          nb::gil_scoped_release release;
          ok = self.call(arguments, results, failure);
        }
        if (!ok)
          raise(failure);
        nb::list out;
        // A result that is an argument updated in place comes back as the
        // argument's index; the Python side returns the caller's object.
        for (ResultBuffer &result : results)
          out.append(result.argument >= 0 ? nb::int_(result.argument)
                                          : toNumpy(std::move(result)));
        return out;
      });
}
