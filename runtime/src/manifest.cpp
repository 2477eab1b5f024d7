// Host-only half of the runtime: errors, expressions, manifest, validation, TMA parameters,
// argument layout.
#include "internal.h"

#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

namespace afr {

// ---------------------------------------------------------------- errors

static thread_local std::string lastError;

afr_status setError(afr_status status, const std::string &message) {
  lastError = message;
  return status;
}

afr_status ok() {
  lastError.clear();
  return AFR_OK;
}

// ---------------------------------------------------------------- expressions

namespace {

class ExprParser {
public:
  ExprParser(const std::string &t, const afr_sizes &s) : text(t), sizes(s) {}

  bool run(int64_t &out, std::string &error) {
    skip();
    if (!sum(out) || (skip(), pos != text.size() && (err = "unexpected '" +
                                                         std::string(1, text[pos]) + "'",
                                                     true))) {
      error = "expression '" + text + "': " + err;
      return false;
    }
    return true;
  }

private:
  // Deeper nesting (parentheses, unary minus, call arguments) is rejected
  // rather than recursed into: the parser must not run out of stack on any
  // input.
  static constexpr int kMaxDepth = 64;

  const std::string &text;
  const afr_sizes &sizes;
  size_t pos = 0;
  int depth = 0;
  std::string err;

  /// Enters one level of nesting; false (with the error set) past kMaxDepth.
  bool enter() {
    if (++depth > kMaxDepth) {
      err = "nested deeper than " + std::to_string(kMaxDepth) + " levels";
      return false;
    }
    return true;
  }

  void skip() {
    while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos])))
      ++pos;
  }

  bool overflow() {
    err = "integer overflow";
    return false;
  }

  bool sum(int64_t &v) {
    if (!product(v))
      return false;
    while (true) {
      skip();
      if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
        char op = text[pos++];
        int64_t r;
        if (!product(r))
          return false;
        if (op == '+' ? __builtin_add_overflow(v, r, &v) : __builtin_sub_overflow(v, r, &v))
          return overflow();
      } else {
        return true;
      }
    }
  }

  bool product(int64_t &v) {
    if (!unary(v))
      return false;
    while (true) {
      skip();
      if (pos < text.size() && (text[pos] == '*' || text[pos] == '/' || text[pos] == '%')) {
        char op = text[pos++];
        int64_t r;
        if (!unary(r))
          return false;
        if (op == '*') {
          if (__builtin_mul_overflow(v, r, &v))
            return overflow();
        } else {
          if (r == 0) {
            err = "division by zero";
            return false;
          }
          // INT64_MIN / -1 does not fit (and traps on x86, as does % -1).
          if (r == -1) {
            if (v == std::numeric_limits<int64_t>::min() && op == '/')
              return overflow();
            v = op == '/' ? -v : 0;
          } else {
            v = op == '/' ? v / r : v % r;
          }
        }
      } else {
        return true;
      }
    }
  }

  bool unary(int64_t &v) {
    skip();
    if (pos < text.size() && text[pos] == '-') {
      ++pos;
      if (!enter() || !unary(v))
        return false;
      --depth;
      if (v == std::numeric_limits<int64_t>::min())
        return overflow();
      v = -v;
      return true;
    }
    return primary(v);
  }

  bool primary(int64_t &v) {
    skip();
    if (pos >= text.size()) {
      err = "unexpected end";
      return false;
    }
    char c = text[pos];
    if (c == '(') {
      ++pos;
      if (!enter() || !sum(v))
        return false;
      --depth;
      skip();
      if (pos >= text.size() || text[pos] != ')') {
        err = "expected ')'";
        return false;
      }
      ++pos;
      return true;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      v = 0;
      while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
        if (__builtin_mul_overflow(v, 10, &v) ||
            __builtin_add_overflow(v, static_cast<int64_t>(text[pos] - '0'), &v))
          return overflow();
        ++pos;
      }
      return true;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t start = pos;
      while (pos < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[pos])) || text[pos] == '_'))
        ++pos;
      std::string ident = text.substr(start, pos - start);
      skip();
      if (pos < text.size() && text[pos] == '(')
        return call(ident, v);
      if (ident == "B") {
        v = sizes.B;
        return true;
      }
      if (ident == "S") {
        v = sizes.S;
        return true;
      }
      if (ident == "T") {
        v = sizes.T;
        return true;
      }
      err = "unknown symbol '" + ident + "'";
      return false;
    }
    err = "unexpected '" + std::string(1, c) + "'";
    return false;
  }

  bool call(const std::string &fn, int64_t &v) {
    ++pos; // (
    if (!enter())
      return false;
    std::vector<int64_t> args;
    skip();
    if (pos < text.size() && text[pos] == ')') {
      ++pos;
    } else {
      while (true) {
        int64_t a;
        if (!sum(a))
          return false;
        args.push_back(a);
        skip();
        if (pos < text.size() && text[pos] == ',') {
          ++pos;
          continue;
        }
        if (pos < text.size() && text[pos] == ')') {
          ++pos;
          break;
        }
        err = "expected ',' or ')'";
        return false;
      }
    }
    --depth;
    if (fn == "ceil_div" || fn == "min" || fn == "max") {
      if (args.size() != 2) {
        err = fn + " takes 2 arguments";
        return false;
      }
      if (fn == "min") {
        v = args[0] < args[1] ? args[0] : args[1];
      } else if (fn == "max") {
        v = args[0] > args[1] ? args[0] : args[1];
      } else {
        if (args[1] <= 0) {
          err = "ceil_div by a non-positive value";
          return false;
        }
        // Rounds toward +infinity without negating args[0] (INT64_MIN).
        v = args[0] / args[1] + (args[0] % args[1] > 0);
      }
      return true;
    }
    err = "unknown function '" + fn + "'";
    return false;
  }
};

} // namespace

bool evalExpr(const std::string &text, const afr_sizes &sizes, int64_t &value,
              std::string &error) {
  ExprParser p(text, sizes);
  return p.run(value, error);
}

static bool evalE(const Expr &e, const afr_sizes &sizes, int64_t &v, std::string &error) {
  if (e.constant) {
    v = e.value;
    return true;
  }
  return evalExpr(e.text, sizes, v, error);
}

// ---------------------------------------------------------------- enums

bool tmaDataTypeFromName(const std::string &name, uint32_t &value) {
  static const char *names[] = {"UINT8",  "UINT16",  "UINT32",      "INT32",
                                "UINT64", "INT64",   "FLOAT16",     "FLOAT32",
                                "FLOAT64", "BFLOAT16", "FLOAT32_FTZ", "TFLOAT32",
                                "TFLOAT32_FTZ"};
  const std::string prefix = "CU_TENSOR_MAP_DATA_TYPE_";
  if (name.compare(0, prefix.size(), prefix) != 0)
    return false;
  std::string rest = name.substr(prefix.size());
  for (uint32_t i = 0; i < sizeof(names) / sizeof(names[0]); ++i)
    if (rest == names[i]) {
      value = i;
      return true;
    }
  return false;
}

bool tmaEnumFromName(const std::string &name, uint32_t &value) {
  static const struct {
    const char *name;
    uint32_t value;
  } table[] = {
      {"CU_TENSOR_MAP_INTERLEAVE_NONE", 0},
      {"CU_TENSOR_MAP_INTERLEAVE_16B", 1},
      {"CU_TENSOR_MAP_INTERLEAVE_32B", 2},
      {"CU_TENSOR_MAP_SWIZZLE_NONE", 0},
      {"CU_TENSOR_MAP_SWIZZLE_32B", 1},
      {"CU_TENSOR_MAP_SWIZZLE_64B", 2},
      {"CU_TENSOR_MAP_SWIZZLE_128B", 3},
      {"CU_TENSOR_MAP_L2_PROMOTION_NONE", 0},
      {"CU_TENSOR_MAP_L2_PROMOTION_L2_64B", 1},
      {"CU_TENSOR_MAP_L2_PROMOTION_L2_128B", 2},
      {"CU_TENSOR_MAP_L2_PROMOTION_L2_256B", 3},
      {"CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE", 0},
      {"CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA", 1},
  };
  for (const auto &e : table)
    if (name == e.name) {
      value = e.value;
      return true;
    }
  return false;
}

afr_dtype dtypeFromName(const std::string &name) {
  if (name == "bf16")
    return AFR_DTYPE_BF16;
  if (name == "f16")
    return AFR_DTYPE_F16;
  if (name == "f32")
    return AFR_DTYPE_F32;
  if (name == "i32")
    return AFR_DTYPE_I32;
  if (name == "i64")
    return AFR_DTYPE_I64;
  if (name == "u8" || name == "i8")
    return AFR_DTYPE_U8;
  return AFR_DTYPE_INVALID;
}

const char *dtypeName(afr_dtype dtype) {
  switch (dtype) {
  case AFR_DTYPE_BF16: return "bf16";
  case AFR_DTYPE_F16: return "f16";
  case AFR_DTYPE_F32: return "f32";
  case AFR_DTYPE_I32: return "i32";
  case AFR_DTYPE_I64: return "i64";
  case AFR_DTYPE_U8: return "u8";
  default: return "invalid";
  }
}

uint32_t dtypeSize(afr_dtype dtype) {
  switch (dtype) {
  case AFR_DTYPE_BF16:
  case AFR_DTYPE_F16: return 2;
  case AFR_DTYPE_F32:
  case AFR_DTYPE_I32: return 4;
  case AFR_DTYPE_I64: return 8;
  case AFR_DTYPE_U8: return 1;
  default: return 0;
  }
}

// ---------------------------------------------------------------- manifest

namespace {

struct Reader {
  std::string &error;
  std::string where;

  bool fail(const std::string &msg) {
    error = where + ": " + msg;
    return false;
  }
  const Json *need(const Json &obj, const char *key, Json::Type type) {
    const Json *v = obj.get(key);
    if (!v) {
      fail(std::string("missing \"") + key + "\"");
      return nullptr;
    }
    if (v->type != type) {
      fail(std::string("\"") + key + "\" has the wrong JSON type");
      return nullptr;
    }
    return v;
  }
  bool str(const Json &obj, const char *key, std::string &out) {
    const Json *v = need(obj, key, Json::Type::String);
    if (!v)
      return false;
    out = v->string;
    return true;
  }
  bool uint(const Json &v, const char *what, uint32_t &out) {
    if (!v.isNumber() || !v.isInteger || v.integer < 0 || v.integer > 0xFFFFFFFFll)
      return fail(std::string(what) + " must be a non-negative integer");
    out = static_cast<uint32_t>(v.integer);
    return true;
  }
  bool expr(const Json &v, const char *what, Expr &out) {
    if (v.isNumber() && v.isInteger) {
      out.constant = true;
      out.value = v.integer;
      out.text = std::to_string(v.integer);
      return true;
    }
    if (v.isString()) {
      out.text = v.string;
      // Check that it parses, with dummy sizes.
      afr_sizes probe{1, 1, 1};
      int64_t ignored;
      std::string e;
      if (!evalExpr(out.text, probe, ignored, e))
        return fail(std::string(what) + ": " + e);
      return true;
    }
    return fail(std::string(what) + " must be an integer or an expression string");
  }
  bool exprList(const Json &obj, const char *key, std::vector<Expr> &out) {
    const Json *v = need(obj, key, Json::Type::Array);
    if (!v)
      return false;
    for (const Json &e : v->array) {
      Expr x;
      if (!expr(e, key, x))
        return false;
      out.push_back(x);
    }
    return true;
  }
  bool uintList(const Json &obj, const char *key, std::vector<uint32_t> &out) {
    const Json *v = need(obj, key, Json::Type::Array);
    if (!v)
      return false;
    for (const Json &e : v->array) {
      uint32_t x;
      if (!uint(e, key, x))
        return false;
      out.push_back(x);
    }
    return true;
  }
};

} // namespace

// Row-major contiguous element strides of `shape` (expressions where the shape has symbols).
std::vector<Expr> contiguousStrides(const std::vector<Expr> &shape) {
  std::vector<Expr> strides(shape.size());
  Expr acc{"1", true, 1};
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = acc;
    const Expr &d = shape[i];
    if (acc.constant && d.constant) {
      acc = Expr{std::to_string(acc.value * d.value), true, acc.value * d.value};
    } else if (acc.constant && acc.value == 1) {
      acc = Expr{d.text, d.constant, d.value};
    } else {
      acc = Expr{"(" + acc.text + ")*(" + d.text + ")", false, 0};
    }
  }
  return strides;
}

namespace {

bool parseKernel(const Json &k, KernelSpec &ks, std::string &error) {
  Reader r{error, "kernel"};
  if (!k.isObject())
    return r.fail("is not an object");
  if (!r.str(k, "name", ks.name))
    return false;
  r.where = "kernel '" + ks.name + "'";
  if (const Json *sym = k.get("kernel"); sym && sym->isString())
    ks.symbol = sym->string;
  else
    ks.symbol = ks.name;
  if (const Json *kind = k.get("kind"); kind && kind->isString())
    ks.kind = kind->string;
  if (const Json *c = k.get("cubin"); c && c->isString())
    ks.cubin = c->string;
  if (const Json *p = k.get("ptx"); p && p->isString())
    ks.ptx = p->string;
  if (ks.cubin.empty() && ks.ptx.empty())
    return r.fail("names neither a \"cubin\" nor a \"ptx\" file");

  const Json *block = r.need(k, "block", Json::Type::Array);
  if (!block)
    return false;
  if (block->array.empty() || block->array.size() > 3)
    return r.fail("\"block\" must have 1 to 3 entries");
  for (size_t i = 0; i < block->array.size(); ++i)
    if (!r.uint(block->array[i], "block", ks.block[i]))
      return false;

  const Json *grid = r.need(k, "grid", Json::Type::Array);
  if (!grid)
    return false;
  if (grid->array.empty() || grid->array.size() > 3)
    return r.fail("\"grid\" must have 1 to 3 entries");
  for (const Json &g : grid->array) {
    Expr e;
    if (g.isObject()) {
      const Json *value = g.get("value");
      const Json *expr = g.get("expr");
      if (value) {
        if (!r.expr(*value, "grid value", e))
          return false;
      } else if (expr) {
        if (!r.expr(*expr, "grid expr", e))
          return false;
      } else {
        return r.fail("grid entry has neither \"value\" nor \"expr\"");
      }
    } else if (!r.expr(g, "grid", e)) {
      return false;
    }
    ks.grid.push_back(e);
  }
  while (ks.grid.size() < 3)
    ks.grid.push_back(Expr{"1", true, 1});

  if (const Json *smem = k.get("dynamic_smem_bytes")) {
    if (!r.uint(*smem, "dynamic_smem_bytes", ks.dynamicSmem))
      return false;
  }

  if (const Json *tensors = k.get("tensors")) {
    if (!tensors->isArray())
      return r.fail("\"tensors\" must be an array");
    for (const Json &t : tensors->array) {
      TensorSpec ts;
      if (!r.str(t, "name", ts.name) || !r.str(t, "dtype", ts.dtypeName))
        return false;
      ts.dtype = dtypeFromName(ts.dtypeName);
      if (ts.dtype == AFR_DTYPE_INVALID)
        return r.fail("tensor '" + ts.name + "' has unknown dtype '" + ts.dtypeName + "'");
      if (!r.exprList(t, "shape", ts.shape))
        return false;
      if (t.get("strides_elements")) {
        if (!r.exprList(t, "strides_elements", ts.strides))
          return false;
      } else {
        ts.strides = contiguousStrides(ts.shape); // "contiguous" layouts may omit them
      }
      if (ts.shape.size() != ts.strides.size() || ts.shape.empty() ||
          ts.shape.size() > AFR_MAX_RANK)
        return r.fail("tensor '" + ts.name + "' has inconsistent shape/strides ranks");
      if (const Json *op = t.get("operand"); op && op->isNumber() && op->isInteger)
        ts.operand = op->integer;
      if (const Json *role = t.get("role"); role && role->isString())
        ts.role = role->string;
      ks.tensors.push_back(std::move(ts));
    }
  }

  // Tables the host computes and passes through pointer parameters (RoPE cos/sin):
  // validated like tensors, under the parameter's name.
  if (const Json *tables = k.get("rope_tables")) {
    if (!tables->isArray())
      return r.fail("\"rope_tables\" must be an array");
    for (const Json &t : tables->array) {
      TensorSpec ts;
      if (!r.str(t, "param", ts.name) || !r.str(t, "dtype", ts.dtypeName) ||
          !r.exprList(t, "shape", ts.shape))
        return false;
      ts.dtype = dtypeFromName(ts.dtypeName);
      if (ts.dtype == AFR_DTYPE_INVALID || ts.shape.empty() || ts.shape.size() > AFR_MAX_RANK)
        return r.fail("rope table '" + ts.name + "' has a bad dtype or shape");
      ts.strides = contiguousStrides(ts.shape);
      ts.role = "rope table";
      RopeTableSpec table;
      table.param = ts.name;
      table.sine = ts.name.size() >= 4 && ts.name.compare(ts.name.size() - 4, 4, "_sin") == 0;
      if (const Json *f = t.get("formula"); f && f->isString())
        table.sine = f->string.rfind("sin", 0) == 0;
      if (const Json *theta = t.get("theta"); theta && theta->isNumber())
        table.theta = theta->number;
      if (const Json *rot = t.get("rotated_dims"); rot && rot->isNumber() && rot->isInteger)
        table.rotated = rot->integer;
      ks.ropeTables.push_back(table);
      ks.tensors.push_back(std::move(ts));
    }
  }

  if (const Json *tmas = k.get("tma_descriptors")) {
    if (!tmas->isArray())
      return r.fail("\"tma_descriptors\" must be an array");
    for (const Json &t : tmas->array) {
      TmaSpec ts;
      std::string elem, inter, swz, l2, oob;
      if (!r.str(t, "param", ts.param) || !r.str(t, "tensor", ts.tensor) ||
          !r.str(t, "element_type", elem) || !r.str(t, "interleave", inter) ||
          !r.str(t, "swizzle", swz) || !r.str(t, "l2_promotion", l2) ||
          !r.str(t, "oob_fill", oob))
        return false;
      if (const Json *use = t.get("use"); use && use->isString())
        ts.use = use->string;
      const Json *rank = r.need(t, "rank", Json::Type::Number);
      if (!rank || !r.uint(*rank, "rank", ts.rank))
        return false;
      if (!tmaDataTypeFromName(elem, ts.dataType))
        return r.fail("descriptor '" + ts.param + "': unknown element_type '" + elem + "'");
      if (inter.find("INTERLEAVE") == std::string::npos || !tmaEnumFromName(inter, ts.interleave))
        return r.fail("descriptor '" + ts.param + "': unknown interleave '" + inter + "'");
      if (swz.find("SWIZZLE") == std::string::npos || !tmaEnumFromName(swz, ts.swizzle))
        return r.fail("descriptor '" + ts.param + "': unknown swizzle '" + swz + "'");
      if (l2.find("L2_PROMOTION") == std::string::npos || !tmaEnumFromName(l2, ts.l2Promotion))
        return r.fail("descriptor '" + ts.param + "': unknown l2_promotion '" + l2 + "'");
      if (oob.find("OOB_FILL") == std::string::npos || !tmaEnumFromName(oob, ts.oobFill))
        return r.fail("descriptor '" + ts.param + "': unknown oob_fill '" + oob + "'");
      if (!r.exprList(t, "global_dim", ts.globalDim) ||
          !r.exprList(t, "global_strides_bytes", ts.globalStrides) ||
          !r.uintList(t, "box_dim", ts.box) || !r.uintList(t, "element_strides", ts.elementStrides))
        return false;
      if (ts.rank < 1 || ts.rank > 5 || ts.globalDim.size() != ts.rank ||
          ts.globalStrides.size() != ts.rank - 1 || ts.box.size() != ts.rank ||
          ts.elementStrides.size() != ts.rank)
        return r.fail("descriptor '" + ts.param + "': rank " + std::to_string(ts.rank) +
                      " does not match its global_dim/global_strides_bytes/box_dim/"
                      "element_strides lengths");
      ks.tmas.push_back(std::move(ts));
    }
  }

  const Json *params = r.need(k, "params", Json::Type::Array);
  if (!params)
    return false;
  for (const Json &p : params->array) {
    ParamSpec ps;
    std::string kind;
    if (!r.str(p, "name", ps.name) || !r.str(p, "kind", kind))
      return false;
    if (const Json *d = p.get("dtype"); d && d->isString())
      ps.dtype = d->string;
    if (const Json *v = p.get("value")) {
      if (v->isString())
        ps.value = v->string;
      else if (v->isNumber())
        ps.value = v->dump();
    }
    if (kind == "tma_descriptor") {
      ps.kind = AFR_PARAM_TMA_DESCRIPTOR;
      ps.tma = ps.name;
      if (const Json *t = p.get("tma"); t && t->isString())
        ps.tma = t->string;
      bool found = false;
      for (const TmaSpec &t : ks.tmas)
        found = found || t.param == ps.tma;
      if (!found)
        return r.fail("parameter '" + ps.name + "' names no TMA descriptor '" + ps.tma + "'");
    } else if (kind == "scalar") {
      ps.kind = AFR_PARAM_SCALAR;
      if (ps.dtype != "i32" && ps.dtype != "i64" && ps.dtype != "f32")
        return r.fail("scalar parameter '" + ps.name + "' has unsupported dtype '" + ps.dtype +
                      "'");
      if (ps.value.empty())
        return r.fail("scalar parameter '" + ps.name + "' has no \"value\"");
    } else if (kind == "pointer") {
      ps.kind = AFR_PARAM_POINTER;
      if (ps.value.empty())
        ps.value = ps.name;
    } else {
      return r.fail("parameter '" + ps.name + "' has unknown kind '" + kind + "'");
    }
    ks.params.push_back(std::move(ps));
  }

  if (const Json *aliases = k.get("aliases")) {
    if (!aliases->isArray())
      return r.fail("\"aliases\" must be an array");
    for (const Json &a : aliases->array) {
      std::string result, tensor;
      if (!r.str(a, "result", result) || !r.str(a, "tensor", tensor))
        return false;
      bool known = false;
      for (const TensorSpec &ts : ks.tensors)
        known = known || ts.name == tensor;
      if (!known)
        return r.fail("result '" + result + "' aliases unknown tensor '" + tensor + "'");
      ks.aliases.emplace_back(result, tensor);
    }
  }
  if (const Json *ws = k.get("workspace")) {
    if (!ws->isObject())
      return r.fail("\"workspace\" must be an object");
    if (!r.str(*ws, "tensor", ks.workspaceTensor))
      return false;
    const Json *bytes = ws->get("bytes");
    if (!bytes)
      return r.fail("workspace has no \"bytes\"");
    if (!r.expr(*bytes, "workspace bytes", ks.workspaceBytes))
      return false;
    bool known = false;
    for (const TensorSpec &ts : ks.tensors)
      known = known || ts.name == ks.workspaceTensor;
    if (!known)
      return r.fail("workspace names unknown tensor '" + ks.workspaceTensor + "'");
  }
  if (const Json *then = k.get("then"); then && then->isString())
    ks.then = then->string;

  if (const Json *cfg = k.get("config"))
    ks.configJson = cfg->dump();
  else
    ks.configJson = "{}";
  return true;
}

} // namespace

bool parseManifest(const std::string &text, Manifest &out, std::string &error) {
  Json root;
  std::string jerr;
  if (!Json::parse(text, root, jerr)) {
    error = "manifest is not valid JSON: " + jerr;
    return false;
  }
  if (!root.isObject()) {
    error = "manifest is not a JSON object";
    return false;
  }
  if (const Json *f = root.get("format"); f && f->isString())
    out.format = f->string;
  const Json *kernels = root.get("kernels");
  if (!kernels || !kernels->isArray()) {
    error = "manifest has no \"kernels\" array";
    return false;
  }
  for (const Json &k : kernels->array) {
    KernelSpec ks;
    if (!parseKernel(k, ks, error))
      return false;
    out.kernels.push_back(std::move(ks));
  }
  for (const KernelSpec &ks : out.kernels) {
    if (ks.then.empty())
      continue;
    bool known = false;
    for (const KernelSpec &other : out.kernels)
      known = known || other.name == ks.then;
    if (!known) {
      error = "kernel '" + ks.name + "': \"then\" names unknown kernel '" + ks.then + "'";
      return false;
    }
  }
  if (const Json *launches = root.get("launches"); launches && launches->isArray()) {
    for (const Json &l : launches->array) {
      const Json *k = l.get("kernel");
      if (!k || !k->isString()) {
        error = "launch entry has no \"kernel\"";
        return false;
      }
      bool known = false;
      for (const KernelSpec &ks : out.kernels)
        known = known || ks.name == k->string;
      if (!known) {
        error = "launch names unknown kernel '" + k->string + "'";
        return false;
      }
      out.launches.push_back(k->string);
    }
  }
  if (const Json *programs = root.get("programs")) {
    if (!programs->isArray()) {
      error = "\"programs\" must be an array";
      return false;
    }
    for (const Json &p : programs->array) {
      ProgramSpec spec;
      if (!parseProgram(p, out, spec, error))
        return false;
      out.programs.push_back(std::move(spec));
    }
  }
  return true;
}

// ---------------------------------------------------------------- validation

static std::string kname(const KernelSpec &k) { return "kernel '" + k.name + "'"; }

static afr_status checkSizes(const KernelSpec &k, const afr_sizes &sizes) {
  if (sizes.B < 1 || sizes.S < 1 || sizes.T < 1)
    return setError(AFR_ERR_INVALID_ARGUMENT,
                    kname(k) + ": sizes must be positive (B=" + std::to_string(sizes.B) +
                        ", S=" + std::to_string(sizes.S) + ", T=" + std::to_string(sizes.T) +
                        ")");
  return AFR_OK;
}

static const afr_tensor *findTensor(const afr_tensor *tensors, int n, const std::string &name) {
  for (int i = 0; i < n; ++i)
    if (tensors[i].name && name == tensors[i].name)
      return &tensors[i];
  return nullptr;
}

static std::string exprNote(const Expr &e) {
  return e.constant ? std::string() : " (" + e.text + ")";
}

afr_status validate(const KernelSpec &k, const afr_sizes &sizes, const afr_tensor *tensors,
                    int n) {
  if (afr_status s = checkSizes(k, sizes))
    return s;
  if (n < 0 || (n > 0 && !tensors))
    return setError(AFR_ERR_INVALID_ARGUMENT, kname(k) + ": no tensors given");
  // Every caller tensor must be named, known and given once.
  for (int i = 0; i < n; ++i) {
    const afr_tensor &t = tensors[i];
    if (!t.name || !*t.name)
      return setError(AFR_ERR_INVALID_ARGUMENT,
                      kname(k) + ": tensor #" + std::to_string(i) + " has no name");
    bool known = false;
    for (const TensorSpec &ts : k.tensors)
      known = known || ts.name == t.name;
    for (const ParamSpec &ps : k.params)
      known = known || (ps.kind == AFR_PARAM_POINTER && ps.value == t.name);
    if (!known) {
      std::string names;
      for (const TensorSpec &ts : k.tensors)
        names += (names.empty() ? "" : ", ") + ts.name;
      return setError(AFR_ERR_NOT_FOUND, kname(k) + ": unknown tensor '" + t.name +
                                             "' (the kernel takes: " + names + ")");
    }
    for (int j = 0; j < i; ++j)
      if (tensors[j].name && std::strcmp(tensors[j].name, t.name) == 0)
        return setError(AFR_ERR_INVALID_ARGUMENT,
                        kname(k) + ": tensor '" + t.name + "' is given twice");
  }
  for (const TensorSpec &ts : k.tensors) {
    const afr_tensor *t = findTensor(tensors, n, ts.name);
    std::string tn = kname(k) + ": tensor '" + ts.name + "'";
    if (!t)
      return setError(AFR_ERR_VALIDATION, tn + " is missing");
    if (t->data == 0)
      return setError(AFR_ERR_VALIDATION, tn + " has a null data pointer");
    if (t->dtype != ts.dtype)
      return setError(AFR_ERR_VALIDATION, tn + " has dtype " + dtypeName(t->dtype) +
                                              ", the kernel needs " + ts.dtypeName);
    if (t->rank != static_cast<int32_t>(ts.shape.size()))
      return setError(AFR_ERR_VALIDATION, tn + " has rank " + std::to_string(t->rank) +
                                              ", the kernel needs " +
                                              std::to_string(ts.shape.size()));
    for (size_t d = 0; d < ts.shape.size(); ++d) {
      int64_t want;
      std::string e;
      if (!evalE(ts.shape[d], sizes, want, e))
        return setError(AFR_ERR_MANIFEST, tn + ": " + e);
      if (t->shape[d] != want)
        return setError(AFR_ERR_VALIDATION,
                        tn + " dim " + std::to_string(d) + " is " + std::to_string(t->shape[d]) +
                            ", the kernel needs " + std::to_string(want) +
                            exprNote(ts.shape[d]));
    }
    for (size_t d = 0; d < ts.strides.size(); ++d) {
      int64_t want;
      std::string e;
      if (!evalE(ts.strides[d], sizes, want, e))
        return setError(AFR_ERR_MANIFEST, tn + ": " + e);
      // A stride of a size-1 dimension is irrelevant (PyTorch reports arbitrary values there).
      if (t->strides[d] != want && t->shape[d] != 1)
        return setError(AFR_ERR_VALIDATION,
                        tn + " stride " + std::to_string(d) + " is " +
                            std::to_string(t->strides[d]) + " elements, the kernel needs " +
                            std::to_string(want) + exprNote(ts.strides[d]) +
                            " (a contiguous row-major layout)");
    }
    if (t->data % 16 != 0) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "0x%" PRIx64, t->data);
      return setError(AFR_ERR_VALIDATION,
                      tn + " address " + buf + " is not 16-byte aligned (TMA needs 16 bytes)");
    }
  }
  for (const ParamSpec &ps : k.params) {
    if (ps.kind == AFR_PARAM_POINTER) {
      const afr_tensor *t = findTensor(tensors, n, ps.value);
      if (!t)
        return setError(AFR_ERR_VALIDATION, kname(k) + ": pointer parameter '" + ps.name +
                                                "' needs tensor '" + ps.value +
                                                "', which is missing");
      if (t->data == 0)
        return setError(AFR_ERR_VALIDATION, kname(k) + ": pointer parameter '" + ps.name +
                                                "' (tensor '" + ps.value +
                                                "') has a null data pointer");
      afr_dtype want = dtypeFromName(ps.dtype);
      if (want != AFR_DTYPE_INVALID && t->dtype != want)
        return setError(AFR_ERR_VALIDATION, kname(k) + ": pointer parameter '" + ps.name +
                                                "' (tensor '" + ps.value + "') has dtype " +
                                                dtypeName(t->dtype) + ", the kernel needs " +
                                                ps.dtype);
    } else if (ps.kind == AFR_PARAM_SCALAR && ps.dtype != "f32") {
      int64_t v;
      std::string e;
      if (!evalExpr(ps.value, sizes, v, e))
        return setError(AFR_ERR_MANIFEST, kname(k) + ": parameter '" + ps.name + "': " + e);
      if (ps.dtype == "i32" && (v > std::numeric_limits<int32_t>::max() ||
                                v < std::numeric_limits<int32_t>::min()))
        return setError(AFR_ERR_VALIDATION, kname(k) + ": parameter '" + ps.name + "' = " +
                                                ps.value + " = " + std::to_string(v) +
                                                " does not fit in i32");
    }
  }
  return ok();
}

// ---------------------------------------------------------------- TMA

afr_status tmaParams(const KernelSpec &k, const TmaSpec &tma, const afr_sizes &sizes,
                     const afr_tensor *tensors, int n, afr_tma_params &out) {
  out = afr_tma_params{};
  std::string where = kname(k) + ": descriptor '" + tma.param + "'";
  const afr_tensor *t = findTensor(tensors, n, tma.tensor);
  if (!t)
    return setError(AFR_ERR_VALIDATION, where + " needs tensor '" + tma.tensor +
                                            "', which is missing");
  std::snprintf(out.param, sizeof out.param, "%s", tma.param.c_str());
  std::snprintf(out.tensor, sizeof out.tensor, "%s", tma.tensor.c_str());
  out.data_type = tma.dataType;
  out.rank = tma.rank;
  out.global_address = t->data;
  out.interleave = tma.interleave;
  out.swizzle = tma.swizzle;
  out.l2_promotion = tma.l2Promotion;
  out.oob_fill = tma.oobFill;

  static const uint32_t elemBytes[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4};
  uint32_t esize = tma.dataType < 13 ? elemBytes[tma.dataType] : 1;
  if (t->dtype != AFR_DTYPE_INVALID && dtypeSize(t->dtype) != esize)
    return setError(AFR_ERR_VALIDATION, where + ": tensor '" + tma.tensor + "' has " +
                                            std::to_string(dtypeSize(t->dtype)) +
                                            "-byte elements, the descriptor " +
                                            std::to_string(esize));
  uint32_t addrAlign = tma.interleave == 2 ? 32 : 16;
  if (t->data == 0 || t->data % addrAlign != 0)
    return setError(AFR_ERR_VALIDATION, where + ": global address of '" + tma.tensor +
                                            "' must be non-null and " +
                                            std::to_string(addrAlign) + "-byte aligned");
  for (uint32_t d = 0; d < tma.rank; ++d) {
    int64_t v;
    std::string e;
    if (!evalE(tma.globalDim[d], sizes, v, e))
      return setError(AFR_ERR_MANIFEST, where + ": " + e);
    if (v < 1 || v > (int64_t(1) << 32))
      return setError(AFR_ERR_VALIDATION, where + ": global dim " + std::to_string(d) + " = " +
                                              std::to_string(v) + " is outside [1, 2^32]");
    out.global_dim[d] = static_cast<uint64_t>(v);
  }
  for (uint32_t d = 0; d + 1 < tma.rank; ++d) {
    int64_t v;
    std::string e;
    if (!evalE(tma.globalStrides[d], sizes, v, e))
      return setError(AFR_ERR_MANIFEST, where + ": " + e);
    if (v <= 0 || v % 16 != 0 || v >= (int64_t(1) << 40))
      return setError(AFR_ERR_VALIDATION, where + ": global stride " + std::to_string(d) +
                                              " = " + std::to_string(v) +
                                              " bytes must be a positive multiple of 16 below "
                                              "2^40");
    out.global_strides[d] = static_cast<uint64_t>(v);
  }
  for (uint32_t d = 0; d < tma.rank; ++d) {
    if (tma.box[d] < 1 || tma.box[d] > 256)
      return setError(AFR_ERR_MANIFEST, where + ": box dim " + std::to_string(d) + " = " +
                                            std::to_string(tma.box[d]) +
                                            " is outside [1, 256]");
    if (tma.elementStrides[d] < 1 || tma.elementStrides[d] > 8)
      return setError(AFR_ERR_MANIFEST, where + ": element stride " + std::to_string(d) +
                                            " = " + std::to_string(tma.elementStrides[d]) +
                                            " is outside [1, 8]");
    out.box_dim[d] = tma.box[d];
    out.element_strides[d] = tma.elementStrides[d];
  }
  uint64_t innerBytes = uint64_t(tma.box[0]) * esize;
  if (tma.interleave == 0 && innerBytes % 16 != 0)
    return setError(AFR_ERR_MANIFEST, where + ": inner box " + std::to_string(innerBytes) +
                                          " bytes is not a multiple of 16");
  static const uint32_t swizzleSpan[] = {0, 32, 64, 128};
  if (tma.interleave == 0 && tma.swizzle >= 1 && tma.swizzle <= 3 &&
      innerBytes > swizzleSpan[tma.swizzle])
    return setError(AFR_ERR_MANIFEST, where + ": inner box " + std::to_string(innerBytes) +
                                          " bytes exceeds the " +
                                          std::to_string(swizzleSpan[tma.swizzle]) +
                                          "-byte swizzle span");
  return ok();
}

afr_status launchDims(const KernelSpec &k, const afr_sizes &sizes, afr_launch_dims &out) {
  if (afr_status s = checkSizes(k, sizes))
    return s;
  for (int d = 0; d < 3; ++d) {
    int64_t v;
    std::string e;
    if (!evalE(k.grid[d], sizes, v, e))
      return setError(AFR_ERR_MANIFEST, kname(k) + ": grid: " + e);
    int64_t limit = d == 0 ? 0x7FFFFFFFll : 65535;
    if (v < 1 || v > limit)
      return setError(AFR_ERR_INVALID_ARGUMENT,
                      kname(k) + ": grid dim " + std::to_string(d) + " = " + k.grid[d].text +
                          " = " + std::to_string(v) + " is outside [1, " +
                          std::to_string(limit) + "]");
    out.grid[d] = static_cast<uint32_t>(v);
    out.block[d] = k.block[d];
  }
  out.dynamic_smem_bytes = k.dynamicSmem;
  return ok();
}

afr_status paramLayout(const KernelSpec &k, std::vector<afr_param_slot> &slots,
                       uint32_t &total) {
  slots.clear();
  uint32_t offset = 0;
  for (const ParamSpec &p : k.params) {
    afr_param_slot s{};
    std::snprintf(s.name, sizeof s.name, "%s", p.name.c_str());
    s.kind = p.kind;
    if (p.kind == AFR_PARAM_TMA_DESCRIPTOR) {
      s.size = 128;
      s.align = 64;
    } else if (p.kind == AFR_PARAM_POINTER) {
      s.size = 8;
      s.align = 8;
    } else if (p.dtype == "i64") {
      s.size = 8;
      s.align = 8;
    } else {
      s.size = 4;
      s.align = 4;
    }
    offset = (offset + s.align - 1) / s.align * s.align;
    s.offset = offset;
    offset += s.size;
    slots.push_back(s);
  }
  total = offset;
  return ok();
}

} // namespace afr

// ---------------------------------------------------------------- C API (host only)

using namespace afr;

extern "C" {

const char *afr_last_error(void) { return lastError.c_str(); }

const char *afr_status_name(afr_status status) {
  switch (status) {
  case AFR_OK: return "AFR_OK";
  case AFR_ERR_INVALID_ARGUMENT: return "AFR_ERR_INVALID_ARGUMENT";
  case AFR_ERR_IO: return "AFR_ERR_IO";
  case AFR_ERR_MANIFEST: return "AFR_ERR_MANIFEST";
  case AFR_ERR_NOT_FOUND: return "AFR_ERR_NOT_FOUND";
  case AFR_ERR_VALIDATION: return "AFR_ERR_VALIDATION";
  case AFR_ERR_NO_DRIVER: return "AFR_ERR_NO_DRIVER";
  case AFR_ERR_CUDA: return "AFR_ERR_CUDA";
  }
  return "AFR_ERR_UNKNOWN";
}

afr_status afr_manifest_parse(const char *json, size_t length, const char *base_dir,
                              afr_manifest **out) {
  if (!json || !out)
    return setError(AFR_ERR_INVALID_ARGUMENT, "afr_manifest_parse: null argument");
  *out = nullptr;
  auto *m = new afr_manifest;
  std::string error;
  if (!parseManifest(std::string(json, length), m->m, error)) {
    delete m;
    return setError(AFR_ERR_MANIFEST, error);
  }
  m->m.baseDir = base_dir ? base_dir : "";
  *out = m;
  return ok();
}

afr_status afr_manifest_load(const char *path, afr_manifest **out) {
  if (!path || !out)
    return setError(AFR_ERR_INVALID_ARGUMENT, "afr_manifest_load: null argument");
  *out = nullptr;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return setError(AFR_ERR_IO, std::string("cannot read manifest '") + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  std::string p(path);
  size_t slash = p.find_last_of('/');
  std::string dir = slash == std::string::npos ? "." : p.substr(0, slash);
  afr_status s = afr_manifest_parse(text.data(), text.size(), dir.c_str(), out);
  if (s != AFR_OK)
    return setError(s, std::string(path) + ": " + afr_last_error());
  return s;
}

void afr_manifest_destroy(afr_manifest *manifest) { delete manifest; }

int afr_manifest_num_kernels(const afr_manifest *m) {
  return m ? static_cast<int>(m->m.kernels.size()) : 0;
}

static const KernelSpec *kernelAt(const afr_manifest *m, int i) {
  if (!m || i < 0 || i >= static_cast<int>(m->m.kernels.size())) {
    setError(AFR_ERR_INVALID_ARGUMENT, "kernel index " + std::to_string(i) + " out of range");
    return nullptr;
  }
  return &m->m.kernels[i];
}

const char *afr_manifest_kernel_name(const afr_manifest *m, int i) {
  const KernelSpec *k = kernelAt(m, i);
  return k ? k->name.c_str() : nullptr;
}

const char *afr_manifest_kernel_kind(const afr_manifest *m, int i) {
  const KernelSpec *k = kernelAt(m, i);
  return k ? k->kind.c_str() : nullptr;
}

const char *afr_manifest_kernel_config_json(const afr_manifest *m, int i) {
  const KernelSpec *k = kernelAt(m, i);
  return k ? k->configJson.c_str() : nullptr;
}

afr_status afr_manifest_find_kernel(const afr_manifest *m, const char *name, int *kernel) {
  if (!m || !name || !kernel)
    return setError(AFR_ERR_INVALID_ARGUMENT, "afr_manifest_find_kernel: null argument");
  for (size_t i = 0; i < m->m.kernels.size(); ++i)
    if (m->m.kernels[i].name == name) {
      *kernel = static_cast<int>(i);
      return ok();
    }
  return setError(AFR_ERR_NOT_FOUND, std::string("no kernel named '") + name + "'");
}

int afr_manifest_num_launches(const afr_manifest *m) {
  return m ? static_cast<int>(m->m.launches.size()) : 0;
}

const char *afr_manifest_launch_kernel(const afr_manifest *m, int i) {
  if (!m || i < 0 || i >= static_cast<int>(m->m.launches.size()))
    return nullptr;
  return m->m.launches[i].c_str();
}

afr_status afr_eval_expr(const char *expr, const afr_sizes *sizes, int64_t *value) {
  if (!expr || !sizes || !value)
    return setError(AFR_ERR_INVALID_ARGUMENT, "afr_eval_expr: null argument");
  std::string e;
  if (!evalExpr(expr, *sizes, *value, e))
    return setError(AFR_ERR_INVALID_ARGUMENT, e);
  return ok();
}

afr_status afr_kernel_workspace_bytes(const afr_manifest *m, int kernel, const afr_sizes *sizes,
                                      int64_t *bytes) {
  const KernelSpec *k = kernelAt(m, kernel);
  if (!k)
    return AFR_ERR_INVALID_ARGUMENT;
  if (!sizes || !bytes)
    return setError(AFR_ERR_INVALID_ARGUMENT, "afr_kernel_workspace_bytes: null argument");
  if (k->workspaceTensor.empty()) {
    *bytes = 0;
    return ok();
  }
  std::string e;
  if (!evalE(k->workspaceBytes, *sizes, *bytes, e))
    return setError(AFR_ERR_MANIFEST, kname(*k) + ": workspace: " + e);
  return ok();
}

afr_status afr_kernel_launch_dims(const afr_manifest *m, int kernel, const afr_sizes *sizes,
                                  afr_launch_dims *out) {
  const KernelSpec *k = kernelAt(m, kernel);
  if (!k)
    return AFR_ERR_INVALID_ARGUMENT;
  if (!sizes || !out)
    return setError(AFR_ERR_INVALID_ARGUMENT, "afr_kernel_launch_dims: null argument");
  return launchDims(*k, *sizes, *out);
}

afr_status afr_validate(const afr_manifest *m, int kernel, const afr_sizes *sizes,
                        const afr_tensor *tensors, int num_tensors) {
  const KernelSpec *k = kernelAt(m, kernel);
  if (!k)
    return AFR_ERR_INVALID_ARGUMENT;
  if (!sizes)
    return setError(AFR_ERR_INVALID_ARGUMENT, "afr_validate: null sizes");
  return validate(*k, *sizes, tensors, num_tensors);
}

int afr_kernel_num_tma(const afr_manifest *m, int kernel) {
  const KernelSpec *k = kernelAt(m, kernel);
  return k ? static_cast<int>(k->tmas.size()) : 0;
}

afr_status afr_tma_encode_params(const afr_manifest *m, int kernel, int index,
                                 const afr_sizes *sizes, const afr_tensor *tensors,
                                 int num_tensors, afr_tma_params *out) {
  const KernelSpec *k = kernelAt(m, kernel);
  if (!k)
    return AFR_ERR_INVALID_ARGUMENT;
  if (!sizes || !out)
    return setError(AFR_ERR_INVALID_ARGUMENT, "afr_tma_encode_params: null argument");
  if (index < 0 || index >= static_cast<int>(k->tmas.size()))
    return setError(AFR_ERR_INVALID_ARGUMENT,
                    "descriptor index " + std::to_string(index) + " out of range");
  if (afr_status s = validate(*k, *sizes, tensors, num_tensors))
    return s;
  return tmaParams(*k, k->tmas[index], *sizes, tensors, num_tensors, *out);
}

afr_status afr_kernel_param_layout(const afr_manifest *m, int kernel, afr_param_slot *slots,
                                   int capacity, int *count, uint32_t *total_bytes) {
  const KernelSpec *k = kernelAt(m, kernel);
  if (!k)
    return AFR_ERR_INVALID_ARGUMENT;
  std::vector<afr_param_slot> v;
  uint32_t total = 0;
  paramLayout(*k, v, total);
  if (count)
    *count = static_cast<int>(v.size());
  if (total_bytes)
    *total_bytes = total;
  for (int i = 0; slots && i < capacity && i < static_cast<int>(v.size()); ++i)
    slots[i] = v[i];
  return ok();
}

} // extern "C"
