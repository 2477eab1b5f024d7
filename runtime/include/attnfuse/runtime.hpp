// AttnFuse GPU runtime: thin RAII C++17 wrapper over runtime.h.
//
//   auto m = attnfuse::Manifest::load("out/manifest.json");       // Result<Manifest>
//   if (!m) { std::cerr << m.error().message; return 1; }
//   auto ctx = attnfuse::Context::create(0);
//   auto k = ctx->load(*m, "attn_fa_bf16_...");                     // Result<Kernel>
//   auto st = k->launch({B, S, T}, tensors, stream);                // Status
#ifndef ATTNFUSE_RUNTIME_HPP
#define ATTNFUSE_RUNTIME_HPP

#include "attnfuse/runtime.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace attnfuse {

struct Error {
  afr_status status = AFR_OK;
  std::string message;
  static Error last(afr_status s) { return Error{s, afr_last_error()}; }
};

// Success or an Error (the status and afr_last_error() of the failing call).
class Status {
public:
  Status() = default;
  explicit Status(Error e) : error_(std::move(e)) {}
  static Status from(afr_status s) { return s == AFR_OK ? Status() : Status(Error::last(s)); }
  explicit operator bool() const { return !error_.has_value(); }
  bool ok() const { return !error_.has_value(); }
  const Error &error() const { return *error_; }

private:
  std::optional<Error> error_;
};

// A value or an Error (an expected-like result).
template <typename T> class Result {
public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error e) : v_(std::move(e)) {}
  explicit operator bool() const { return v_.index() == 0; }
  bool ok() const { return v_.index() == 0; }
  T &value() { return std::get<0>(v_); }
  const T &value() const { return std::get<0>(v_); }
  T &operator*() { return value(); }
  const T &operator*() const { return value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }
  const Error &error() const { return std::get<1>(v_); }

private:
  std::variant<T, Error> v_;
};

// Builds an afr_tensor (rank <= AFR_MAX_RANK).
inline afr_tensor makeTensor(const char *name, uint64_t data, afr_dtype dtype,
                             const std::vector<int64_t> &shape,
                             const std::vector<int64_t> &strides) {
  afr_tensor t{};
  t.name = name;
  t.data = data;
  t.dtype = dtype;
  t.rank = static_cast<int32_t>(shape.size() < AFR_MAX_RANK ? shape.size() : AFR_MAX_RANK);
  for (int32_t i = 0; i < t.rank; ++i) {
    t.shape[i] = shape[i];
    t.strides[i] = i < static_cast<int32_t>(strides.size()) ? strides[i] : 0;
  }
  return t;
}

// Contiguous row-major strides of `shape`.
inline std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    s[i - 1] = s[i] * shape[i];
  return s;
}

class Manifest {
public:
  static Result<Manifest> load(const std::string &path) {
    afr_manifest *m = nullptr;
    if (afr_status s = afr_manifest_load(path.c_str(), &m))
      return Error::last(s);
    return Manifest(m);
  }
  static Result<Manifest> parse(const std::string &json, const std::string &baseDir = "") {
    afr_manifest *m = nullptr;
    if (afr_status s = afr_manifest_parse(json.data(), json.size(), baseDir.c_str(), &m))
      return Error::last(s);
    return Manifest(m);
  }

  afr_manifest *get() const { return m_.get(); }
  int numKernels() const { return afr_manifest_num_kernels(get()); }
  std::string kernelName(int i) const {
    const char *n = afr_manifest_kernel_name(get(), i);
    return n ? n : "";
  }
  std::string kernelKind(int i) const {
    const char *n = afr_manifest_kernel_kind(get(), i);
    return n ? n : "";
  }
  std::string kernelConfigJson(int i) const {
    const char *n = afr_manifest_kernel_config_json(get(), i);
    return n ? n : "";
  }
  std::optional<int> find(const std::string &name) const {
    int i = -1;
    if (afr_manifest_find_kernel(get(), name.c_str(), &i) != AFR_OK)
      return std::nullopt;
    return i;
  }
  std::vector<std::string> launches() const {
    std::vector<std::string> out;
    for (int i = 0; i < afr_manifest_num_launches(get()); ++i)
      out.emplace_back(afr_manifest_launch_kernel(get(), i));
    return out;
  }
  Result<afr_launch_dims> launchDims(int kernel, afr_sizes sizes) const {
    afr_launch_dims d{};
    if (afr_status s = afr_kernel_launch_dims(get(), kernel, &sizes, &d))
      return Error::last(s);
    return d;
  }
  Status validate(int kernel, afr_sizes sizes, const std::vector<afr_tensor> &tensors) const {
    return Status::from(afr_validate(get(), kernel, &sizes, tensors.data(),
                                     static_cast<int>(tensors.size())));
  }
  Result<std::vector<afr_tma_params>> tmaParams(int kernel, afr_sizes sizes,
                                                const std::vector<afr_tensor> &tensors) const {
    std::vector<afr_tma_params> out(afr_kernel_num_tma(get(), kernel));
    for (size_t i = 0; i < out.size(); ++i)
      if (afr_status s = afr_tma_encode_params(get(), kernel, static_cast<int>(i), &sizes,
                                               tensors.data(),
                                               static_cast<int>(tensors.size()), &out[i]))
        return Error::last(s);
    return out;
  }
  std::pair<std::vector<afr_param_slot>, uint32_t> paramLayout(int kernel) const {
    int n = 0;
    uint32_t total = 0;
    afr_kernel_param_layout(get(), kernel, nullptr, 0, &n, &total);
    std::vector<afr_param_slot> slots(n);
    afr_kernel_param_layout(get(), kernel, slots.data(), n, &n, &total);
    return {slots, total};
  }

private:
  explicit Manifest(afr_manifest *m) : m_(m, &afr_manifest_destroy) {}
  std::shared_ptr<afr_manifest> m_;
};

class Kernel {
public:
  Status launch(afr_sizes sizes, const std::vector<afr_tensor> &tensors,
                void *stream = nullptr) const {
    return Status::from(afr_launch(k_.get(), &sizes, tensors.data(),
                                   static_cast<int>(tensors.size()), stream));
  }
  afr_kernel *get() const { return k_.get(); }

private:
  friend class Context;
  Kernel(afr_kernel *k, Manifest m, std::shared_ptr<afr_context> c)
      : context_(std::move(c)), manifest_(std::move(m)), k_(k, &afr_kernel_destroy) {}
  // Declared before k_: destroyed after it (the kernel needs both).
  std::shared_ptr<afr_context> context_;
  Manifest manifest_;
  std::shared_ptr<afr_kernel> k_;
};

class Context {
public:
  static Result<Context> create(int device = 0) {
    afr_context *c = nullptr;
    if (afr_status s = afr_context_create(device, &c))
      return Error::last(s);
    return Context(c);
  }
  afr_context *get() const { return c_.get(); }
  Result<Kernel> load(const Manifest &m, int kernel) const {
    afr_kernel *k = nullptr;
    if (afr_status s = afr_kernel_load(get(), m.get(), kernel, &k))
      return Error::last(s);
    return Kernel(k, m, c_);
  }
  Result<Kernel> load(const Manifest &m, const std::string &name) const {
    std::optional<int> i = m.find(name);
    if (!i)
      return Error::last(AFR_ERR_NOT_FOUND);
    return load(m, *i);
  }
  Status synchronize(void *stream = nullptr) const {
    return Status::from(afr_stream_synchronize(get(), stream));
  }

private:
  explicit Context(afr_context *c) : c_(c, &afr_context_destroy) {}
  std::shared_ptr<afr_context> c_;
};

} // namespace attnfuse

#endif
