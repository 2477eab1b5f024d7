// Device programs: the launches of one compiled function over device buffers.
//
// The manifest's "programs" entry of a function lists its inputs (dtype, static sizes), the
// steps (kernel launches binding numbered values to the kernel's tensors, contiguous views)
// and its outputs. A call is planned once per input shapes on the host: the launch sizes
// (B, S, T) by unifying each kernel's tensor shapes with the bound values, the result shapes
// from the kernel's expressions, and an arena offset for every intermediate from its live
// range (first fit). Running it is then one pass of afr_launch calls.
#include "internal.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace afr {

static const char *stepWhere(const ProgramSpec &p, size_t step) {
  static thread_local std::string where;
  where = "program '" + p.function + "' step " + std::to_string(step);
  return where.c_str();
}

static bool intList(const Json *j, std::vector<int64_t> &out) {
  if (!j || !j->isArray())
    return false;
  for (const Json &e : j->array) {
    if (!e.isNumber() || !e.isInteger)
      return false;
    out.push_back(e.integer);
  }
  return true;
}

static bool valueId(const Json *j, int64_t numValues, int64_t &out) {
  if (!j || !j->isNumber() || !j->isInteger || j->integer < 0 || j->integer >= numValues)
    return false;
  out = j->integer;
  return true;
}

bool parseProgram(const Json &p, const Manifest &manifest, ProgramSpec &out,
                  std::string &error) {
  auto fail = [&](const std::string &message) {
    error = "program '" + out.function + "': " + message;
    return false;
  };
  if (!p.isObject())
    return fail("is not an object");
  if (const Json *f = p.get("function"); f && f->isString())
    out.function = f->string;
  else
    return fail("has no \"function\"");
  const Json *values = p.get("values");
  if (!values || !values->isNumber() || !values->isInteger || values->integer < 0)
    return fail("has no \"values\" count");
  out.numValues = values->integer;
  const Json *inputs = p.get("inputs");
  if (!inputs || !inputs->isArray())
    return fail("has no \"inputs\" array");
  for (const Json &in : inputs->array) {
    const Json *dtype = in.get("dtype");
    std::vector<int64_t> shape;
    if (!dtype || !dtype->isString() || dtypeFromName(dtype->string) == AFR_DTYPE_INVALID ||
        !intList(in.get("shape"), shape) || shape.size() > AFR_MAX_RANK)
      return fail("input " + std::to_string(out.inputDtypes.size()) +
                  " has a bad dtype or shape");
    out.inputDtypes.push_back(dtypeFromName(dtype->string));
    out.inputShapes.push_back(shape);
  }
  if (static_cast<int64_t>(out.inputDtypes.size()) > out.numValues)
    return fail("has more inputs than values");
  const Json *steps = p.get("steps");
  if (!steps || !steps->isArray())
    return fail("has no \"steps\" array");
  for (const Json &s : steps->array) {
    ProgramStep step;
    const Json *op = s.get("op");
    std::string where = "step " + std::to_string(out.steps.size());
    if (!op || !op->isString())
      return fail(where + " has no \"op\"");
    if (op->string == "view") {
      step.kind = ProgramStep::Kind::View;
      const Json *groups = s.get("collapse");
      step.collapse = groups != nullptr;
      if (!groups)
        groups = s.get("expand");
      if (!groups || !groups->isArray())
        return fail(where + ": a view needs \"collapse\" or \"expand\" groups");
      for (const Json &g : groups->array) {
        std::vector<int64_t> group;
        if (!intList(&g, group) || group.empty())
          return fail(where + ": bad reassociation group");
        step.groups.push_back(group);
      }
      const Json *dtype = s.get("dtype");
      if (!valueId(s.get("source"), out.numValues, step.source) ||
          !valueId(s.get("result"), out.numValues, step.result) || !dtype ||
          !dtype->isString() || !intList(s.get("shape"), step.shape) ||
          step.shape.size() > AFR_MAX_RANK)
        return fail(where + ": a view needs source, result, dtype and shape");
      step.dtype = dtypeFromName(dtype->string);
      size_t grouped = 0;
      for (const auto &g : step.groups)
        grouped += step.collapse ? 1 : g.size();
      if (grouped != step.shape.size())
        return fail(where + ": the groups do not match the result rank");
    } else if (op->string == "launch") {
      const Json *kernel = s.get("kernel");
      if (!kernel || !kernel->isString())
        return fail(where + ": a launch needs \"kernel\"");
      for (size_t k = 0; k < manifest.kernels.size(); ++k)
        if (manifest.kernels[k].name == kernel->string)
          step.kernel = static_cast<int>(k);
      if (step.kernel < 0)
        return fail(where + " launches unknown kernel '" + kernel->string + "'");
      const KernelSpec &ks = manifest.kernels[step.kernel];
      auto hasTensor = [&](const std::string &name) {
        for (const TensorSpec &t : ks.tensors)
          if (t.name == name)
            return true;
        return false;
      };
      const Json *map = s.get("tensors");
      if (!map || !map->isObject())
        return fail(where + ": a launch needs \"tensors\"");
      for (const auto &[name, id] : map->object) {
        int64_t v;
        if (!valueId(&id, out.numValues, v))
          return fail(where + ": bad value for tensor '" + name + "'");
        if (!hasTensor(name))
          return fail(where + ": kernel '" + ks.name + "' has no tensor '" + name + "'");
        step.tensors.emplace_back(name, v);
      }
      const Json *results = s.get("results");
      if (!results || !results->isArray())
        return fail(where + ": a launch needs \"results\"");
      for (const Json &r : results->array) {
        const Json *name = r.get("tensor");
        int64_t v;
        std::vector<int64_t> shape;
        if (!name || !name->isString() || !valueId(r.get("value"), out.numValues, v) ||
            !intList(r.get("shape"), shape) || shape.size() > AFR_MAX_RANK)
          return fail(where + ": a result needs tensor, value and shape");
        const Json *aliases = s.get("aliases");
        bool aliased = aliases && aliases->get(name->string) != nullptr;
        if (!aliased && !hasTensor(name->string))
          return fail(where + ": kernel '" + ks.name + "' has no tensor '" + name->string + "'");
        step.results.emplace_back(name->string, v);
        step.resultShapes.push_back(shape);
      }
      if (const Json *hints = s.get("sizes"); hints && hints->isObject())
        for (const auto &[symbol, value] : hints->object) {
          int index = symbol == "B" ? 0 : symbol == "S" ? 1 : symbol == "T" ? 2 : -1;
          if (index >= 0 && value.isObject()) {
            // A dimension of a value (a cache argument) times a factor (the page size).
            const Json *times = value.get("times");
            const Json *dim = value.get("dim");
            if (valueId(value.get("value"), out.numValues, step.hintValue[index]) && dim &&
                dim->isNumber() && dim->isInteger && dim->integer >= 0 && times &&
                times->isNumber() && times->isInteger && times->integer >= 1) {
              step.hintDim[index] = dim->integer;
              step.sizeHints[index] = times->integer;
              continue;
            }
          }
          if (index < 0 || !value.isNumber() || !value.isInteger || value.integer < 1)
            return fail(where + ": bad size hint '" + symbol + "'");
          step.sizeHints[index] = value.integer;
        }
      if (const Json *aliases = s.get("aliases"); aliases && aliases->isObject())
        for (const auto &[result, tensor] : aliases->object) {
          if (!tensor.isString())
            return fail(where + ": bad alias of '" + result + "'");
          bool bound = false;
          for (const auto &[name, v] : step.tensors)
            bound = bound || name == tensor.string;
          if (!bound)
            return fail(where + ": result '" + result + "' aliases unbound tensor '" +
                        tensor.string + "'");
          step.aliases.emplace_back(result, tensor.string);
        }
    } else {
      return fail(where + " has unknown op '" + op->string + "'");
    }
    out.steps.push_back(std::move(step));
  }
  if (!intList(p.get("outputs"), out.outputs))
    return fail("has no \"outputs\" array");
  for (int64_t v : out.outputs)
    if (v < 0 || v >= out.numValues)
      return fail("output value " + std::to_string(v) + " out of range");
  return true;
}

namespace {

struct ValueState {
  bool known = false;
  afr_dtype dtype = AFR_DTYPE_INVALID;
  std::vector<int64_t> shape;
  int64_t root = -1; // the value owning the storage (itself unless a view or an alias)
  bool hasSizes = false;
  afr_sizes sizes{0, 0, 0}; // of the launch that produced it
};

enum class StorageKind { Input, Arena, Output };

struct Storage {
  StorageKind kind = StorageKind::Arena;
  int64_t index = 0;   // input or output index
  uint64_t offset = 0; // arena
  uint64_t bytes = 0;
  size_t first = 0, last = 0; // live steps
};

struct Plan {
  std::vector<ValueState> values;
  std::map<int64_t, Storage> storage; // by root value
  std::vector<afr_sizes> sizes;       // per step (launches)
  // Per step and result: the shape the kernel writes (its result type may view it).
  std::vector<std::vector<std::vector<int64_t>>> resultShapes;
  std::vector<afr_program_output> outputs;
  uint64_t arenaBytes = 0;
  int64_t launches = 0;
};

int64_t elements(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + (shape[i] < 0 ? std::string("?") : std::to_string(shape[i]));
  return s + "]";
}

afr_status checkStatic(const std::vector<int64_t> &expected, const std::vector<int64_t> &got,
                       const std::string &what) {
  bool ok = expected.size() == got.size();
  for (size_t i = 0; ok && i < got.size(); ++i)
    ok = got[i] >= 0 && (expected[i] < 0 || expected[i] == got[i]);
  if (!ok)
    return setError(AFR_ERR_VALIDATION,
                    what + ": shape " + shapeText(got) + " does not match " + shapeText(expected));
  return AFR_OK;
}

// Shapes, launch sizes, storage and arena layout of one call.
afr_status planProgram(const Manifest &m, const ProgramSpec &p, const afr_tensor *inputs,
                       int numInputs, Plan &plan) {
  if (numInputs != static_cast<int>(p.inputDtypes.size()))
    return setError(AFR_ERR_INVALID_ARGUMENT,
                    "program '" + p.function + "' takes " +
                        std::to_string(p.inputDtypes.size()) + " inputs, got " +
                        std::to_string(numInputs));
  if (numInputs > 0 && !inputs)
    return setError(AFR_ERR_INVALID_ARGUMENT, "program '" + p.function + "': null inputs");
  plan = Plan();
  plan.values.resize(p.numValues);
  plan.sizes.resize(p.steps.size());
  plan.resultShapes.resize(p.steps.size());
  for (int i = 0; i < numInputs; ++i) {
    const afr_tensor &t = inputs[i];
    std::string what = "program '" + p.function + "' input " + std::to_string(i) +
                       (t.name && *t.name ? " ('" + std::string(t.name) + "')" : "");
    if (t.dtype != p.inputDtypes[i])
      return setError(AFR_ERR_VALIDATION, what + ": dtype " + dtypeName(t.dtype) +
                                              ", expected " + dtypeName(p.inputDtypes[i]));
    if (t.rank < 0 || t.rank > AFR_MAX_RANK)
      return setError(AFR_ERR_VALIDATION, what + ": bad rank " + std::to_string(t.rank));
    std::vector<int64_t> shape(t.shape, t.shape + t.rank);
    if (afr_status s = checkStatic(p.inputShapes[i], shape, what))
      return s;
    int64_t stride = 1;
    for (int d = t.rank - 1; d >= 0; --d) {
      if (t.shape[d] > 1 && t.strides[d] != stride)
        return setError(AFR_ERR_VALIDATION, what + ": not contiguous (stride " +
                                                std::to_string(t.strides[d]) + " of dimension " +
                                                std::to_string(d) + ", expected " +
                                                std::to_string(stride) + ")");
      stride *= t.shape[d];
    }
    ValueState &v = plan.values[i];
    v.known = true;
    v.dtype = t.dtype;
    v.shape = shape;
    v.root = i;
    Storage st;
    st.kind = StorageKind::Input;
    st.index = i;
    plan.storage[i] = st;
  }
  auto valueOf = [&](size_t step, int64_t id) -> ValueState * {
    if (!plan.values[id].known) {
      setError(AFR_ERR_MANIFEST, std::string(stepWhere(p, step)) + " reads value " +
                                     std::to_string(id) + " before it is defined");
      return nullptr;
    }
    return &plan.values[id];
  };
  for (size_t si = 0; si < p.steps.size(); ++si) {
    const ProgramStep &step = p.steps[si];
    if (step.kind == ProgramStep::Kind::View) {
      ValueState *src = valueOf(si, step.source);
      if (!src)
        return AFR_ERR_MANIFEST;
      std::vector<int64_t> shape;
      if (step.collapse) {
        for (const auto &g : step.groups) {
          int64_t n = 1;
          for (int64_t d : g) {
            if (d < 0 || d >= static_cast<int64_t>(src->shape.size()))
              return setError(AFR_ERR_MANIFEST, std::string(stepWhere(p, si)) +
                                                    ": collapse group out of range");
            n *= src->shape[d];
          }
          shape.push_back(n);
        }
      } else {
        if (step.groups.size() != src->shape.size())
          return setError(AFR_ERR_MANIFEST,
                          std::string(stepWhere(p, si)) + ": expand groups do not match the source");
        shape.assign(step.shape.begin(), step.shape.end());
        for (size_t gi = 0; gi < step.groups.size(); ++gi) {
          int64_t known = 1, dynamic = -1;
          for (int64_t d : step.groups[gi]) {
            if (d < 0 || d >= static_cast<int64_t>(shape.size()))
              return setError(AFR_ERR_MANIFEST, std::string(stepWhere(p, si)) +
                                                    ": expand group out of range");
            if (step.shape[d] < 0)
              dynamic = d;
            else
              known *= step.shape[d];
          }
          if (dynamic >= 0)
            shape[dynamic] = known ? src->shape[gi] / known : 0;
        }
      }
      if (elements(shape) != elements(src->shape))
        return setError(AFR_ERR_VALIDATION, std::string(stepWhere(p, si)) + ": cannot view " +
                                                shapeText(src->shape) + " as " + shapeText(shape));
      if (afr_status s = checkStatic(step.shape, shape, stepWhere(p, si)))
        return s;
      ValueState &r = plan.values[step.result];
      r = *src;
      r.shape = shape;
      r.dtype = step.dtype;
      continue;
    }
    const KernelSpec &k = m.kernels[step.kernel];
    ++plan.launches;
    auto specOf = [&](const std::string &name) -> const TensorSpec * {
      for (const TensorSpec &t : k.tensors)
        if (t.name == name)
          return &t;
      return nullptr;
    };
    // B, S, T: from the bound tensors' dimensions that are a bare symbol, else from the
    // launch that produced an input (the combine kernel of a split decode).
    int64_t sizes[3] = {0, 0, 0};
    const char *names[3] = {"B", "S", "T"};
    for (const auto &[name, id] : step.tensors) {
      ValueState *v = valueOf(si, id);
      if (!v)
        return AFR_ERR_MANIFEST;
      const TensorSpec *spec = specOf(name);
      if (!spec || spec->shape.size() != v->shape.size())
        continue; // afr_launch reports the mismatch with the tensor's name
      for (size_t d = 0; d < spec->shape.size(); ++d)
        for (int sym = 0; sym < 3; ++sym)
          if (!spec->shape[d].constant && spec->shape[d].text == names[sym]) {
            if (sizes[sym] != 0 && sizes[sym] != v->shape[d])
              return setError(AFR_ERR_VALIDATION,
                              std::string(stepWhere(p, si)) + ": kernel '" + k.name +
                                  "' needs one " + names[sym] + " but tensor '" + name +
                                  "' has " + std::to_string(v->shape[d]) + " where another has " +
                                  std::to_string(sizes[sym]));
            sizes[sym] = v->shape[d];
          }
    }
    for (int sym = 0; sym < 3; ++sym) {
      if (sizes[sym] != 0 || step.sizeHints[sym] == 0)
        continue;
      if (step.hintValue[sym] < 0) {
        sizes[sym] = step.sizeHints[sym];
        continue;
      }
      ValueState *v = valueOf(si, step.hintValue[sym]);
      if (!v)
        return AFR_ERR_MANIFEST;
      if (step.hintDim[sym] >= static_cast<int64_t>(v->shape.size()))
        return setError(AFR_ERR_MANIFEST, std::string(stepWhere(p, si)) +
                                              ": size hint names a missing dimension");
      sizes[sym] = v->shape[step.hintDim[sym]] * step.sizeHints[sym];
    }
    for (const auto &[name, id] : step.tensors) {
      const ValueState &v = plan.values[id];
      if (!v.hasSizes)
        continue;
      const int64_t inherited[3] = {v.sizes.B, v.sizes.S, v.sizes.T};
      for (int sym = 0; sym < 3; ++sym)
        if (sizes[sym] == 0)
          sizes[sym] = inherited[sym];
    }
    afr_sizes launchSizes{sizes[0] ? sizes[0] : 1, sizes[1] ? sizes[1] : 1,
                          sizes[2] ? sizes[2] : 1};
    plan.sizes[si] = launchSizes;
    for (const auto &[name, id] : step.tensors) {
      Storage &st = plan.storage[plan.values[id].root];
      st.last = si;
    }
    for (const auto &result : step.results) {
      const std::string &name = result.first;
      int64_t id = result.second;
      ValueState &r = plan.values[id];
      auto alias = std::find_if(step.aliases.begin(), step.aliases.end(),
                                [&](const auto &a) { return a.first == name; });
      if (alias != step.aliases.end()) {
        for (const auto &[tname, tid] : step.tensors)
          if (tname == alias->second)
            r = plan.values[tid];
        r.hasSizes = true;
        r.sizes = launchSizes;
        continue;
      }
      const TensorSpec *spec = specOf(name);
      r.known = true;
      r.dtype = spec->dtype;
      std::vector<int64_t> kernelShape;
      for (const Expr &e : spec->shape) {
        int64_t value = e.value;
        std::string err;
        if (!e.constant && !evalExpr(e.text, launchSizes, value, err))
          return setError(AFR_ERR_MANIFEST, "kernel '" + k.name + "' tensor '" + name +
                                                "': " + err);
        kernelShape.push_back(value);
      }
      // The result type views the kernel's tensor (a [B, S, N] projection as
      // [B, S, heads, head_dim]): its static sizes, its dynamic ones from the kernel's size at
      // the same index.
      const std::vector<int64_t> &typeShape =
          step.resultShapes[&result - step.results.data()];
      plan.resultShapes[si].resize(step.results.size());
      plan.resultShapes[si][&result - step.results.data()] = kernelShape;
      if (typeShape.size() == kernelShape.size()) {
        r.shape = kernelShape;
      } else {
        r.shape = typeShape;
        for (size_t d = 0; d < r.shape.size(); ++d)
          if (r.shape[d] < 0)
            r.shape[d] = d < kernelShape.size() ? kernelShape[d] : -1;
        if (elements(r.shape) != elements(kernelShape) ||
            std::any_of(r.shape.begin(), r.shape.end(), [](int64_t d) { return d < 0; }))
          return setError(AFR_ERR_MANIFEST, std::string(stepWhere(p, si)) + ": kernel '" +
                                                k.name + "' tensor '" + name + "' " +
                                                shapeText(kernelShape) +
                                                " cannot be its result " + shapeText(typeShape));
      }
      if (afr_status s = checkStatic(typeShape, r.shape,
                                     std::string(stepWhere(p, si)) + " result '" + name + "'"))
        return s;
      r.root = id;
      r.hasSizes = true;
      r.sizes = launchSizes;
      Storage st;
      st.bytes = static_cast<uint64_t>(elements(r.shape)) * dtypeSize(r.dtype);
      st.first = st.last = si;
      plan.storage[id] = st;
    }
  }
  // Outputs: inputs updated in place alias their input; the rest are the caller's buffers.
  for (size_t j = 0; j < p.outputs.size(); ++j) {
    const ValueState &v = plan.values[p.outputs[j]];
    if (!v.known)
      return setError(AFR_ERR_MANIFEST, "program '" + p.function + "' output " +
                                            std::to_string(j) + " is never defined");
    afr_program_output out{};
    out.dtype = v.dtype;
    out.rank = static_cast<int32_t>(v.shape.size());
    for (size_t d = 0; d < v.shape.size(); ++d)
      out.shape[d] = v.shape[d];
    Storage &st = plan.storage[v.root];
    if (st.kind == StorageKind::Input) {
      out.aliases_input = static_cast<int32_t>(st.index);
    } else if (st.kind == StorageKind::Output) {
      return setError(AFR_ERR_MANIFEST, "program '" + p.function +
                                            "' returns one buffer twice (outputs " +
                                            std::to_string(st.index) + " and " +
                                            std::to_string(j) + ")");
    } else {
      out.aliases_input = -1;
      st.kind = StorageKind::Output;
      st.index = static_cast<int64_t>(j);
    }
    plan.outputs.push_back(out);
  }
  // First fit of the intermediates by live range, 256-byte aligned.
  std::vector<Storage *> arena;
  for (auto &[root, st] : plan.storage)
    if (st.kind == StorageKind::Arena)
      arena.push_back(&st);
  // Largest first (ties in program order) packs the long-lived big buffers low.
  std::sort(arena.begin(), arena.end(), [](const Storage *a, const Storage *b) {
    return a->bytes != b->bytes ? a->bytes > b->bytes : a->first < b->first;
  });
  std::vector<Storage *> placed;
  for (Storage *st : arena) {
    uint64_t size = (st->bytes + 255) / 256 * 256;
    std::vector<std::pair<uint64_t, uint64_t>> busy;
    for (Storage *o : placed)
      if (!(o->last < st->first || st->last < o->first))
        busy.emplace_back(o->offset, o->offset + (o->bytes + 255) / 256 * 256);
    std::sort(busy.begin(), busy.end());
    uint64_t offset = 0;
    for (const auto &[lo, hi] : busy) {
      if (offset + size <= lo)
        break;
      offset = std::max(offset, hi);
    }
    st->offset = offset;
    plan.arenaBytes = std::max(plan.arenaBytes, offset + size);
    placed.push_back(st);
  }
  return ok();
}

// What a plan depends on: every input's dtype, shape and strides.
std::string planKey(const afr_tensor *inputs, int n) {
  std::string key;
  for (int i = 0; i < n; ++i) {
    key += std::to_string(inputs[i].dtype) + ":";
    for (int d = 0; d < inputs[i].rank && d < AFR_MAX_RANK; ++d)
      key += std::to_string(inputs[i].shape[d]) + "/" + std::to_string(inputs[i].strides[d]) + ",";
    key += ";";
  }
  return key;
}

} // namespace
} // namespace afr

using namespace afr;

struct afr_program {
  afr_context *context = nullptr;
  const afr_manifest *manifest = nullptr;
  const ProgramSpec *spec = nullptr;
  std::map<int, afr_kernel *> kernels;
  std::map<std::string, std::unique_ptr<Plan>> plans;
  uint64_t arena = 0, arenaCapacity = 0;
  std::map<std::string, uint64_t> tables; // RoPE tables by (param, theta, dims, rows)
  uint64_t tableBytes = 0;
  int64_t allocations = 0, calls = 0, lastLaunches = 0;
  uint64_t lastArenaBytes = 0;
  void *lastStream = nullptr;
  bool ran = false;
};

static const ProgramSpec *programAt(const afr_manifest *m, int program) {
  if (!m || program < 0 || program >= static_cast<int>(m->m.programs.size())) {
    setError(AFR_ERR_INVALID_ARGUMENT, "program index " + std::to_string(program) +
                                           " out of range");
    return nullptr;
  }
  return &m->m.programs[program];
}

extern "C" {

int afr_manifest_num_programs(const afr_manifest *m) {
  return m ? static_cast<int>(m->m.programs.size()) : 0;
}

const char *afr_manifest_program_function(const afr_manifest *m, int program) {
  const ProgramSpec *p = programAt(m, program);
  return p ? p->function.c_str() : nullptr;
}

afr_status afr_manifest_find_program(const afr_manifest *m, const char *function, int *program) {
  if (!m || !function || !program)
    return setError(AFR_ERR_INVALID_ARGUMENT, "afr_manifest_find_program: null argument");
  std::string names;
  for (size_t i = 0; i < m->m.programs.size(); ++i) {
    if (m->m.programs[i].function == function) {
      *program = static_cast<int>(i);
      return ok();
    }
    names += (i ? ", " : "") + m->m.programs[i].function;
  }
  return setError(AFR_ERR_NOT_FOUND, "no program for function '" + std::string(function) +
                                         "' (the manifest has: " +
                                         (names.empty() ? "none" : names) + ")");
}

int afr_program_num_inputs(const afr_manifest *m, int program) {
  const ProgramSpec *p = programAt(m, program);
  return p ? static_cast<int>(p->inputDtypes.size()) : -1;
}

int afr_program_num_outputs(const afr_manifest *m, int program) {
  const ProgramSpec *p = programAt(m, program);
  return p ? static_cast<int>(p->outputs.size()) : -1;
}

afr_status afr_program_infer(const afr_manifest *m, int program, const afr_tensor *inputs,
                             int numInputs, afr_program_output *outputs, int capacity,
                             uint64_t *arenaBytes) {
  const ProgramSpec *p = programAt(m, program);
  if (!p)
    return AFR_ERR_INVALID_ARGUMENT;
  Plan plan;
  if (afr_status s = planProgram(m->m, *p, inputs, numInputs, plan))
    return s;
  for (int j = 0; outputs && j < capacity && j < static_cast<int>(plan.outputs.size()); ++j)
    outputs[j] = plan.outputs[j];
  if (arenaBytes)
    *arenaBytes = plan.arenaBytes;
  return ok();
}

afr_status afr_program_create(afr_context *context, const afr_manifest *m, int program,
                              afr_program **out) {
  if (!context || !out)
    return setError(AFR_ERR_INVALID_ARGUMENT, "afr_program_create: null argument");
  const ProgramSpec *p = programAt(m, program);
  if (!p)
    return AFR_ERR_INVALID_ARGUMENT;
  auto prog = std::make_unique<afr_program>();
  prog->context = context;
  prog->manifest = m;
  prog->spec = p;
  for (const ProgramStep &step : p->steps) {
    if (step.kind != ProgramStep::Kind::Launch || prog->kernels.count(step.kernel))
      continue;
    afr_kernel *kernel = nullptr;
    if (afr_status s = afr_kernel_load(context, m, step.kernel, &kernel)) {
      afr_program_destroy(prog.release());
      return s;
    }
    prog->kernels[step.kernel] = kernel;
  }
  *out = prog.release();
  return ok();
}

void afr_program_destroy(afr_program *prog) {
  if (!prog)
    return;
  for (auto &[index, kernel] : prog->kernels)
    afr_kernel_destroy(kernel);
  if (prog->ran)
    (void)afr_stream_synchronize(prog->context, prog->lastStream);
  if (prog->arena)
    (void)afr_mem_free(prog->context, prog->arena);
  for (auto &[key, ptr] : prog->tables)
    (void)afr_mem_free(prog->context, ptr);
  delete prog;
}

static afr_status ropeTable(afr_program *prog, const RopeTableSpec &table, int64_t rows,
                            int64_t cols, uint64_t &ptr) {
  std::string key = table.param + ":" + std::to_string(table.theta) + ":" +
                    std::to_string(table.rotated) + ":" + std::to_string(rows) + ":" +
                    std::to_string(cols);
  if (auto it = prog->tables.find(key); it != prog->tables.end()) {
    ptr = it->second;
    return ok();
  }
  if (table.rotated <= 0 || cols != table.rotated / 2)
    return setError(AFR_ERR_MANIFEST, "rope table '" + table.param + "': " +
                                          std::to_string(cols) + " columns for " +
                                          std::to_string(table.rotated) + " rotated dims");
  std::vector<float> values(static_cast<size_t>(rows * cols));
  for (int64_t p = 0; p < rows; ++p)
    for (int64_t i = 0; i < cols; ++i) {
      double angle = static_cast<double>(p) *
                     std::pow(table.theta, -2.0 * static_cast<double>(i) /
                                               static_cast<double>(table.rotated));
      values[p * cols + i] = static_cast<float>(table.sine ? std::sin(angle) : std::cos(angle));
    }
  size_t bytes = std::max<size_t>(values.size() * sizeof(float), 16);
  if (afr_status s = afr_mem_alloc(prog->context, bytes, &ptr))
    return s;
  ++prog->allocations;
  if (!values.empty())
    if (afr_status s = afr_memcpy_htod(prog->context, ptr, values.data(),
                                       values.size() * sizeof(float))) {
      (void)afr_mem_free(prog->context, ptr);
      return s;
    }
  prog->tables[key] = ptr;
  prog->tableBytes += bytes;
  return ok();
}

static void describe(afr_tensor &t, const char *name, uint64_t data, const ValueState &v) {
  t = afr_tensor{};
  t.name = name;
  t.data = data;
  t.dtype = v.dtype;
  t.rank = static_cast<int32_t>(v.shape.size());
  int64_t stride = 1;
  for (int d = t.rank - 1; d >= 0; --d) {
    t.shape[d] = v.shape[d];
    t.strides[d] = stride;
    stride *= v.shape[d];
  }
}

afr_status afr_program_run(afr_program *prog, const afr_tensor *inputs, int numInputs,
                           const afr_tensor *outputs, int numOutputs, void *stream) {
  if (!prog)
    return setError(AFR_ERR_INVALID_ARGUMENT, "afr_program_run: null program");
  const ProgramSpec &p = *prog->spec;
  const Manifest &m = prog->manifest->m;
  std::string key = planKey(inputs, inputs ? numInputs : 0);
  auto found = prog->plans.find(key);
  if (found == prog->plans.end()) {
    auto plan = std::make_unique<Plan>();
    if (afr_status s = planProgram(m, p, inputs, numInputs, *plan))
      return s;
    found = prog->plans.emplace(key, std::move(plan)).first;
  }
  const Plan &plan = *found->second;
  if (numOutputs != static_cast<int>(plan.outputs.size()) || (numOutputs > 0 && !outputs))
    return setError(AFR_ERR_INVALID_ARGUMENT,
                    "program '" + p.function + "' has " + std::to_string(plan.outputs.size()) +
                        " outputs, got " + std::to_string(numOutputs));
  for (int j = 0; j < numOutputs; ++j) {
    const afr_program_output &o = plan.outputs[j];
    if (o.aliases_input >= 0)
      continue;
    const afr_tensor &t = outputs[j];
    std::string what = "program '" + p.function + "' output " + std::to_string(j);
    std::vector<int64_t> want(o.shape, o.shape + o.rank), got(t.shape, t.shape + t.rank);
    if (t.dtype != o.dtype || t.rank != o.rank || want != got)
      return setError(AFR_ERR_VALIDATION, what + ": expected " + dtypeName(o.dtype) + " " +
                                              shapeText(want) + ", got " + dtypeName(t.dtype) +
                                              " " + shapeText(got));
    if (!t.data)
      return setError(AFR_ERR_VALIDATION, what + ": null data pointer");
  }
  for (int i = 0; i < numInputs; ++i)
    if (!inputs[i].data && elements(plan.values[i].shape) > 0)
      return setError(AFR_ERR_VALIDATION, "program '" + p.function + "' input " +
                                              std::to_string(i) + ": null data pointer");
  // The arena is shared by every call: a call on another stream waits for the last one.
  if (prog->ran && stream != prog->lastStream)
    if (afr_status s = afr_stream_synchronize(prog->context, prog->lastStream))
      return s;
  if (plan.arenaBytes > prog->arenaCapacity) {
    if (prog->arena) {
      if (afr_status s = afr_stream_synchronize(prog->context, prog->lastStream))
        return s;
      (void)afr_mem_free(prog->context, prog->arena);
      prog->arena = 0;
      prog->arenaCapacity = 0;
    }
    if (afr_status s = afr_mem_alloc(prog->context, plan.arenaBytes, &prog->arena))
      return s;
    ++prog->allocations;
    prog->arenaCapacity = plan.arenaBytes;
  }
  auto dataOf = [&](int64_t id) -> uint64_t {
    const Storage &st = plan.storage.at(plan.values[id].root);
    switch (st.kind) {
    case StorageKind::Input:
      return inputs[st.index].data;
    case StorageKind::Output:
      return outputs[st.index].data;
    case StorageKind::Arena:
      return prog->arena + st.offset;
    }
    return 0;
  };
  std::vector<afr_tensor> tensors;
  for (size_t si = 0; si < p.steps.size(); ++si) {
    const ProgramStep &step = p.steps[si];
    if (step.kind != ProgramStep::Kind::Launch)
      continue;
    const KernelSpec &k = m.kernels[step.kernel];
    const afr_sizes &sizes = plan.sizes[si];
    tensors.assign(step.tensors.size() + step.results.size() + k.ropeTables.size(), afr_tensor{});
    size_t n = 0;
    for (const auto &[name, id] : step.tensors)
      describe(tensors[n++], name.c_str(), dataOf(id), plan.values[id]);
    for (size_t j = 0; j < step.results.size(); ++j) {
      const std::string &name = step.results[j].first;
      bool aliased = std::any_of(step.aliases.begin(), step.aliases.end(),
                                 [&](const auto &a) { return a.first == name; });
      if (aliased)
        continue;
      ValueState written = plan.values[step.results[j].second];
      written.shape = plan.resultShapes[si][j];
      describe(tensors[n++], name.c_str(), dataOf(step.results[j].second), written);
    }
    for (const RopeTableSpec &table : k.ropeTables) {
      const TensorSpec *spec = nullptr;
      for (const TensorSpec &t : k.tensors)
        if (t.name == table.param)
          spec = &t;
      if (!spec || spec->shape.size() != 2)
        return setError(AFR_ERR_MANIFEST, "kernel '" + k.name + "': rope table '" +
                                              table.param + "' is not a [positions, r/2] table");
      int64_t dims[2];
      for (int d = 0; d < 2; ++d) {
        std::string err;
        dims[d] = spec->shape[d].value;
        if (!spec->shape[d].constant && !evalExpr(spec->shape[d].text, sizes, dims[d], err))
          return setError(AFR_ERR_MANIFEST, "rope table '" + table.param + "': " + err);
      }
      uint64_t ptr = 0;
      if (afr_status s = ropeTable(prog, table, dims[0], dims[1], ptr))
        return s;
      afr_tensor &t = tensors[n++];
      t = afr_tensor{};
      t.name = table.param.c_str();
      t.data = ptr;
      t.dtype = AFR_DTYPE_F32;
      t.rank = 2;
      t.shape[0] = dims[0];
      t.shape[1] = dims[1];
      t.strides[0] = dims[1];
      t.strides[1] = 1;
    }
    afr_status s = afr_launch(prog->kernels.at(step.kernel), &sizes, tensors.data(),
                              static_cast<int>(n), stream);
    if (s != AFR_OK) {
      std::string message = afr_last_error();
      return setError(s, std::string(stepWhere(p, si)) + " (kernel '" + k.name + "'): " + message);
    }
  }
  prog->ran = true;
  prog->lastStream = stream;
  ++prog->calls;
  prog->lastLaunches = plan.launches;
  prog->lastArenaBytes = plan.arenaBytes;
  return ok();
}

afr_status afr_program_get_stats(const afr_program *prog, afr_program_stats *out) {
  if (!prog || !out)
    return setError(AFR_ERR_INVALID_ARGUMENT, "afr_program_get_stats: null argument");
  out->launches_per_call = prog->lastLaunches;
  out->arena_bytes = prog->lastArenaBytes;
  out->arena_capacity = prog->arenaCapacity;
  out->table_bytes = prog->tableBytes;
  out->device_allocations = prog->allocations;
  out->calls = prog->calls;
  return ok();
}

} // extern "C"
