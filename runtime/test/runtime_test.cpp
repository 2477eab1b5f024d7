// Unit tests of the AttnFuse runtime that need no GPU: JSON, expressions, the manifest (a
// committed fixture and, when the tool is built, a fresh attnfuse-compile manifest), launch
// dimensions, argument layout, validation messages, TMA encode arguments, the no-driver path,
// and the whole launch path against a fake libcuda.
#include "attnfuse/runtime.hpp"
#include "internal.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

// ---------------------------------------------------------------- tiny harness

static int checks = 0, failures = 0;
static std::vector<std::pair<const char *, std::function<void()>>> &registry() {
  static std::vector<std::pair<const char *, std::function<void()>>> r;
  return r;
}
struct Register {
  Register(const char *name, std::function<void()> fn) { registry().emplace_back(name, fn); }
};
#define TEST(name)                                                                           \
  static void test_##name();                                                                 \
  static Register reg_##name(#name, test_##name);                                            \
  static void test_##name()

#define CHECK(cond)                                                                          \
  do {                                                                                       \
    ++checks;                                                                                \
    if (!(cond)) {                                                                           \
      ++failures;                                                                            \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);          \
    }                                                                                        \
  } while (0)

#define CHECK_EQ(a, b)                                                                       \
  do {                                                                                       \
    ++checks;                                                                                \
    auto va_ = (a);                                                                          \
    auto vb_ = (b);                                                                          \
    if (!(va_ == vb_)) {                                                                     \
      ++failures;                                                                            \
      std::ostringstream os_;                                                                \
      os_ << va_ << " vs " << vb_;                                                           \
      std::fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %s (%s)\n", __FILE__, __LINE__,    \
                   #a, #b, os_.str().c_str());                                               \
    }                                                                                        \
  } while (0)

// Status and exact message of the last call.
#define CHECK_ERR(call, status, message)                                                     \
  do {                                                                                       \
    afr_status s_ = (call);                                                                  \
    CHECK_EQ(std::string(afr_status_name(s_)), std::string(afr_status_name(status)));        \
    CHECK_EQ(std::string(afr_last_error()), std::string(message));                           \
  } while (0)

// The same with the start of the message.
#define CHECK_ERR_PREFIX(call, status, prefix)                                               \
  do {                                                                                       \
    afr_status s_ = (call);                                                                  \
    CHECK_EQ(std::string(afr_status_name(s_)), std::string(afr_status_name(status)));        \
    CHECK_EQ(std::string(afr_last_error()).substr(0, std::string(prefix).size()),            \
             std::string(prefix));                                                           \
  } while (0)

static std::string readAll(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

static const std::string fixture = std::string(AFR_FIXTURE_DIR) + "/manifest.json";
static const char *FA_GQA = "attn_fa_bf16_d64_h16_g4_q128_kv128_s2_causal_keqv";
static const char *FA_MHA = "attn_fa_bf16_d64_h16_g1_q128_kv128_s2_causal";
static const char *GEMM = "attn_gemm_bf16_k1024_n1024_bias";

static afr_manifest *loadFixture() {
  afr_manifest *m = nullptr;
  afr_status s = afr_manifest_load(fixture.c_str(), &m);
  if (s != AFR_OK)
    std::fprintf(stderr, "cannot load fixture: %s\n", afr_last_error());
  return m;
}

static int kernelIndex(afr_manifest *m, const char *name) {
  int i = -1;
  afr_manifest_find_kernel(m, name, &i);
  return i;
}

static afr_tensor tensor(const char *name, uint64_t data, std::vector<int64_t> shape,
                         afr_dtype dtype = AFR_DTYPE_BF16) {
  return attnfuse::makeTensor(name, data, dtype, shape, attnfuse::contiguousStrides(shape));
}

// Buffers of the K=V GQA-4 kernel: query/output [B,S,16,64], key [B,T,4,64].
static std::vector<afr_tensor> gqaTensors(int64_t B, int64_t S, int64_t T) {
  return {tensor("query", 0x10000, {B, S, 16, 64}), tensor("key", 0x20000, {B, T, 4, 64}),
          tensor("output", 0x30000, {B, S, 16, 64})};
}

// ---------------------------------------------------------------- JSON

TEST(json_values) {
  afr::Json j;
  std::string err;
  CHECK(afr::Json::parse(R"J({"a": [1, -2, 3.5, 1e3], "b": "x\"\\\n\u00e9", "c": true,
                             "d": null, "e": {}, "f": []})J",
                         j, err));
  CHECK(j.isObject());
  const afr::Json *a = j.get("a");
  CHECK(a && a->isArray() && a->array.size() == 4);
  CHECK(a->array[0].isInteger && a->array[0].integer == 1);
  CHECK(a->array[1].isInteger && a->array[1].integer == -2);
  CHECK(!a->array[2].isInteger && a->array[2].number == 3.5);
  CHECK(!a->array[3].isInteger && a->array[3].number == 1000);
  CHECK_EQ(j.get("b")->string, std::string("x\"\\\n\xc3\xa9"));
  CHECK(j.get("c")->isBool() && j.get("c")->boolean);
  CHECK(j.get("d")->isNull());
  CHECK(j.get("missing") == nullptr);
  CHECK_EQ(j.get("a")->dump(), std::string("[1,-2,3.5,1000]"));
}

TEST(json_errors) {
  afr::Json j;
  std::string err;
  CHECK(!afr::Json::parse("{\"a\": 1,}", j, err));
  CHECK_EQ(err, std::string("line 1 column 9: expected a string key"));
  CHECK(!afr::Json::parse("{\n  \"a\": tru }", j, err));
  CHECK_EQ(err, std::string("line 2 column 8: invalid literal (expected 'true')"));
  CHECK(!afr::Json::parse("[1, 2", j, err));
  CHECK_EQ(err, std::string("line 1 column 6: expected ',' or ']'"));
  CHECK(!afr::Json::parse("\"abc", j, err));
  CHECK_EQ(err, std::string("line 1 column 5: unterminated string"));
  CHECK(!afr::Json::parse("{} x", j, err));
  CHECK_EQ(err, std::string("line 1 column 4: unexpected text after the JSON value"));
  CHECK(!afr::Json::parse("-", j, err));
  CHECK_EQ(err, std::string("line 1 column 2: invalid number"));
}

// ---------------------------------------------------------------- expressions

TEST(expressions) {
  afr_sizes sz{3, 1000, 4100};
  auto eval = [&](const char *e) {
    int64_t v = -12345;
    afr_status s = afr_eval_expr(e, &sz, &v);
    if (s != AFR_OK)
      std::fprintf(stderr, "eval '%s': %s\n", e, afr_last_error());
    return v;
  };
  CHECK_EQ(eval("4"), 4);
  CHECK_EQ(eval("B"), 3);
  CHECK_EQ(eval("2048*S"), 2048000);
  CHECK_EQ(eval("256*T"), 1049600);
  CHECK_EQ(eval("ceil_div(S, 32)"), 32);  // 1000 / 32 = 31.25
  CHECK_EQ(eval("ceil_div(S, 128)"), 8);  // 7.8
  CHECK_EQ(eval("ceil_div(T, 128)"), 33); // 32.03
  CHECK_EQ(eval("ceil_div(1024, 128)"), 8);
  CHECK_EQ(eval("1 + 2 * 3"), 7);
  CHECK_EQ(eval("(1 + 2) * 3"), 9);
  CHECK_EQ(eval("T - S"), 3100);
  CHECK_EQ(eval("-S + 1"), -999);
  CHECK_EQ(eval("min(S, T) + max(S, T)"), 5100);
  CHECK_EQ(eval("S / 3"), 333);
  CHECK_EQ(eval("S % 3"), 1);
  CHECK_EQ(eval("  B*S*16*64  "), 3 * 1000 * 16 * 64);
  int64_t v;
  CHECK_ERR(afr_eval_expr("X * 2", &sz, &v), AFR_ERR_INVALID_ARGUMENT,
            "expression 'X * 2': unknown symbol 'X'");
  CHECK_ERR(afr_eval_expr("S / (B - 3)", &sz, &v), AFR_ERR_INVALID_ARGUMENT,
            "expression 'S / (B - 3)': division by zero");
  CHECK_ERR(afr_eval_expr("ceil_div(S)", &sz, &v), AFR_ERR_INVALID_ARGUMENT,
            "expression 'ceil_div(S)': ceil_div takes 2 arguments");
  CHECK_ERR(afr_eval_expr("ceil_div(S, 0)", &sz, &v), AFR_ERR_INVALID_ARGUMENT,
            "expression 'ceil_div(S, 0)': ceil_div by a non-positive value");
  CHECK_ERR(afr_eval_expr("S 2", &sz, &v), AFR_ERR_INVALID_ARGUMENT,
            "expression 'S 2': unexpected '2'");
  CHECK_ERR(afr_eval_expr("9223372036854775807 * 2", &sz, &v), AFR_ERR_INVALID_ARGUMENT,
            "expression '9223372036854775807 * 2': integer overflow");
  CHECK_ERR(afr_eval_expr("sqrt(S)", &sz, &v), AFR_ERR_INVALID_ARGUMENT,
            "expression 'sqrt(S)': unknown function 'sqrt'");
}

// Every input gives a value or an error: no trap (INT64_MIN / -1 raises SIGFPE on x86), no
// signed overflow, no unbounded recursion.
TEST(expressions_overflow_and_depth) {
  afr_sizes sz{3, 1000, 4100};
  int64_t v = 0;
  CHECK_ERR(afr_eval_expr("(-9223372036854775807-1)/-1", &sz, &v), AFR_ERR_INVALID_ARGUMENT,
            "expression '(-9223372036854775807-1)/-1': integer overflow");
  CHECK(afr_eval_expr("(-9223372036854775807-1)%-1", &sz, &v) == AFR_OK);
  CHECK_EQ(v, 0);
  CHECK(afr_eval_expr("S/-1", &sz, &v) == AFR_OK);
  CHECK_EQ(v, -1000);
  CHECK_ERR(afr_eval_expr("-(-9223372036854775807-1)", &sz, &v), AFR_ERR_INVALID_ARGUMENT,
            "expression '-(-9223372036854775807-1)': integer overflow");
  CHECK_ERR(afr_eval_expr("-9223372036854775807-2", &sz, &v), AFR_ERR_INVALID_ARGUMENT,
            "expression '-9223372036854775807-2': integer overflow");
  CHECK(afr_eval_expr("ceil_div(-9223372036854775807-1, 3)", &sz, &v) == AFR_OK);
  CHECK_EQ(v, (-9223372036854775807LL - 1) / 3);
  CHECK(afr_eval_expr("ceil_div(-7, 2)", &sz, &v) == AFR_OK);
  CHECK_EQ(v, -3);
  CHECK(afr_eval_expr("ceil_div(7, 2)", &sz, &v) == AFR_OK);
  CHECK_EQ(v, 4);
  // 64 levels are accepted, deeper nesting is an error, however deep.
  std::string ok64 = std::string(64, '(') + "1" + std::string(64, ')');
  CHECK(afr_eval_expr(ok64.c_str(), &sz, &v) == AFR_OK);
  CHECK_EQ(v, 1);
  for (size_t depth : {65, 100000}) {
    std::string deep = std::string(depth, '(') + "1";
    CHECK(afr_eval_expr(deep.c_str(), &sz, &v) == AFR_ERR_INVALID_ARGUMENT);
    CHECK(std::strstr(afr_last_error(), "nested deeper than 64 levels") != nullptr);
    std::string minus = std::string(depth, '-') + "1";
    CHECK(afr_eval_expr(minus.c_str(), &sz, &v) == AFR_ERR_INVALID_ARGUMENT);
    std::string calls;
    for (size_t i = 0; i < depth; ++i)
      calls += "min(1,";
    CHECK(afr_eval_expr(calls.c_str(), &sz, &v) == AFR_ERR_INVALID_ARGUMENT);
  }
  CHECK(afr_eval_expr(nullptr, &sz, &v) == AFR_ERR_INVALID_ARGUMENT);
  CHECK(afr_eval_expr("1", nullptr, &v) == AFR_ERR_INVALID_ARGUMENT);
  CHECK(afr_eval_expr("1", &sz, nullptr) == AFR_ERR_INVALID_ARGUMENT);
}

// ---------------------------------------------------------------- manifest

TEST(fixture_manifest) {
  afr_manifest *m = loadFixture();
  CHECK(m != nullptr);
  if (!m)
    return;
  CHECK_EQ(afr_manifest_num_kernels(m), 3);
  CHECK_EQ(std::string(afr_manifest_kernel_name(m, 0)), std::string(FA_GQA));
  CHECK_EQ(std::string(afr_manifest_kernel_kind(m, 0)), std::string("flash_attention"));
  CHECK_EQ(std::string(afr_manifest_kernel_kind(m, 1)), std::string("projection_gemm"));
  CHECK_EQ(kernelIndex(m, GEMM), 1);
  CHECK_EQ(kernelIndex(m, FA_MHA), 2);
  CHECK_EQ(afr_manifest_num_launches(m), 4);
  CHECK_EQ(std::string(afr_manifest_launch_kernel(m, 0)), std::string(GEMM));
  CHECK_EQ(std::string(afr_manifest_launch_kernel(m, 1)), std::string(FA_GQA));
  CHECK(afr_manifest_launch_kernel(m, 4) == nullptr);
  std::string cfg = afr_manifest_kernel_config_json(m, 0);
  CHECK(cfg.find("\"heads_per_cta\":4") != std::string::npos);
  CHECK(cfg.find("\"key_is_value\":true") != std::string::npos);
  int idx;
  CHECK_ERR(afr_manifest_find_kernel(m, "nope", &idx), AFR_ERR_NOT_FOUND,
            "no kernel named 'nope'");
  CHECK(afr_manifest_kernel_name(m, 7) == nullptr);
  CHECK_EQ(std::string(afr_last_error()), std::string("kernel index 7 out of range"));

  const afr::KernelSpec &k = m->m.kernels[0];
  CHECK_EQ(k.symbol, std::string(FA_GQA));
  CHECK_EQ(k.cubin, std::string(FA_GQA) + ".cubin");
  CHECK_EQ(k.dynamicSmem, 50232u);
  CHECK_EQ(k.params.size(), size_t(5));
  CHECK_EQ(k.tensors.size(), size_t(3));
  CHECK_EQ(k.tmas.size(), size_t(3));
  CHECK_EQ(k.tensors[1].name, std::string("key"));
  CHECK_EQ(k.tensors[1].shape[1].text, std::string("T"));
  CHECK_EQ(k.tmas[0].dataType, 9u); // BFLOAT16
  CHECK_EQ(k.tmas[0].swizzle, 3u); // 128B
  CHECK_EQ(k.tmas[0].l2Promotion, 3u); // 256B
  CHECK_EQ(k.params[3].kind, AFR_PARAM_SCALAR);
  CHECK_EQ(k.params[3].value, std::string("S"));
  CHECK_EQ(m->m.kernels[1].params[4].kind, AFR_PARAM_POINTER);
  afr_manifest_destroy(m);
}

TEST(manifest_errors) {
  afr_manifest *m = nullptr;
  auto parse = [&](const std::string &text) {
    return afr_manifest_parse(text.data(), text.size(), "", &m);
  };
  CHECK_ERR(parse("{"), AFR_ERR_MANIFEST,
            "manifest is not valid JSON: line 1 column 2: expected a string key");
  CHECK_ERR(parse("[]"), AFR_ERR_MANIFEST, "manifest is not a JSON object");
  CHECK_ERR(parse("{\"kernels\": [{}]}"), AFR_ERR_MANIFEST, "kernel: missing \"name\"");
  CHECK_ERR(parse(R"J({"kernels": [{"name": "k", "cubin": "k.cubin"}]})J"), AFR_ERR_MANIFEST,
            "kernel 'k': missing \"block\"");
  CHECK_ERR(parse(R"J({"kernels": [{"name": "k"}]})J"), AFR_ERR_MANIFEST,
            "kernel 'k': names neither a \"cubin\" nor a \"ptx\" file");
  const std::string base = R"J({"kernels": [{"name": "k", "ptx": "k.ptx", "block": [128],
      "grid": [{"expr": "ceil_div(S, 64)"}, {"value": 2}, "B"], "params": [PARAMS]}]
      LAUNCHES})J";
  auto with = [&](const std::string &params, const std::string &launches = "") {
    std::string t = base;
    t.replace(t.find("PARAMS"), 6, params);
    t.replace(t.find("LAUNCHES"), 8, launches);
    return t;
  };
  CHECK_ERR(parse(with(R"J({"name": "p", "kind": "blob"})J")), AFR_ERR_MANIFEST,
            "kernel 'k': parameter 'p' has unknown kind 'blob'");
  CHECK_ERR(parse(with(R"J({"name": "p", "kind": "scalar", "dtype": "f64", "value": "S"})J")),
            AFR_ERR_MANIFEST, "kernel 'k': scalar parameter 'p' has unsupported dtype 'f64'");
  CHECK_ERR(parse(with(R"J({"name": "tma_q", "kind": "tma_descriptor"})J")), AFR_ERR_MANIFEST,
            "kernel 'k': parameter 'tma_q' names no TMA descriptor 'tma_q'");
  CHECK_ERR(parse(with("", R"J(, "launches": [{"kernel": "other"}])J")), AFR_ERR_MANIFEST,
            "launch names unknown kernel 'other'");
  CHECK_ERR(parse(R"J({"kernels": [{"name": "k", "ptx": "k.ptx", "block": [128],
      "grid": ["Q*2"], "params": []}]})J"),
            AFR_ERR_MANIFEST, "kernel 'k': grid: expression 'Q*2': unknown symbol 'Q'");
  // A minimal valid one: block padded to 3 dims, grid from expr/value/string.
  CHECK(parse(with(R"J({"name": "n", "kind": "scalar", "dtype": "i32", "value": "T"})J")) ==
        AFR_OK);
  CHECK_EQ(std::string(afr_last_error()), std::string(""));
  afr_sizes sz{5, 130, 7};
  afr_launch_dims d{};
  CHECK(afr_kernel_launch_dims(m, 0, &sz, &d) == AFR_OK);
  CHECK_EQ(d.grid[0], 3u);
  CHECK_EQ(d.grid[1], 2u);
  CHECK_EQ(d.grid[2], 5u);
  CHECK_EQ(d.block[0], 128u);
  CHECK_EQ(d.block[1], 1u);
  CHECK_EQ(d.dynamic_smem_bytes, 0u);
  afr_manifest_destroy(m);
  CHECK_ERR(afr_manifest_load("/nonexistent/manifest.json", &m), AFR_ERR_IO,
            "cannot read manifest '/nonexistent/manifest.json'");
}

TEST(optional_strides_and_rope_tables) {
  // "contiguous" tensors may omit strides_elements; rope_tables become validated tensors.
  const std::string text = R"J({"kernels": [{"name": "p", "ptx": "p.ptx", "block": [256],
      "grid": ["ceil_div(S, 64)", 2, "B"], "dynamic_smem_bytes": 1024,
      "params": [{"name": "seq", "kind": "scalar", "dtype": "i32", "value": "S"},
                 {"name": "rope_cos", "kind": "pointer", "dtype": "f32"},
                 {"name": "query", "kind": "pointer", "dtype": "bf16", "value": "query"}],
      "rope_tables": [{"param": "rope_cos", "dtype": "f32", "shape": ["S", 32]}],
      "tensors": [{"name": "query", "dtype": "bf16", "operand": -1, "role": "result",
                   "shape": ["B", "S", 8, 128]}]}]})J";
  auto m = attnfuse::Manifest::parse(text);
  CHECK(m.ok());
  if (!m.ok()) {
    std::fprintf(stderr, "%s\n", m.error().message.c_str());
    return;
  }
  const afr::KernelSpec &k = m->get()->m.kernels[0];
  CHECK_EQ(k.tensors.size(), size_t(2));
  CHECK_EQ(k.tensors[0].strides[0].text, std::string("(1024)*(S)"));
  CHECK_EQ(k.tensors[0].strides[1].value, 1024);
  CHECK_EQ(k.tensors[0].strides[2].value, 128);
  CHECK_EQ(k.tensors[0].strides[3].value, 1);
  CHECK_EQ(k.tensors[1].name, std::string("rope_cos"));
  CHECK_EQ(k.tensors[1].strides[0].value, 32);
  CHECK_EQ(k.params[1].value, std::string("rope_cos")); // pointer value defaults to the name
  afr_sizes sz{2, 100, 100};
  std::vector<afr_tensor> t = {tensor("query", 0x1000, {2, 100, 8, 128}),
                               tensor("rope_cos", 0x2000, {100, 32}, AFR_DTYPE_F32)};
  CHECK(m->validate(0, sz, t).ok());
  t[0].strides[0] = 1;
  auto st = m->validate(0, sz, t);
  CHECK(!st.ok());
  CHECK_EQ(st.error().message, std::string("kernel 'p': tensor 'query' stride 0 is 1 elements, "
                                           "the kernel needs 102400 ((1024)*(S)) (a contiguous "
                                           "row-major layout)"));
  t[0] = tensor("query", 0x1000, {2, 100, 8, 128});
  t[1] = tensor("rope_cos", 0x2000, {64, 32}, AFR_DTYPE_F32);
  st = m->validate(0, sz, t);
  CHECK_EQ(st.error().message,
           std::string("kernel 'p': tensor 'rope_cos' dim 0 is 64, the kernel needs 100 (S)"));
  t.pop_back();
  st = m->validate(0, sz, t);
  CHECK_EQ(st.error().message, std::string("kernel 'p': tensor 'rope_cos' is missing"));
  auto layout = m->paramLayout(0);
  CHECK_EQ(layout.first[1].offset, 8u); // i32 at 0, pointers 8-aligned
  CHECK_EQ(layout.second, 24u);
}

TEST(launch_dims) {
  afr_manifest *m = loadFixture();
  if (!m)
    return;
  afr_launch_dims d{};
  afr_sizes sz{2, 4096, 4096};
  CHECK(afr_kernel_launch_dims(m, 0, &sz, &d) == AFR_OK);
  CHECK_EQ(d.grid[0], 128u); // ceil_div(S, 32): 32 positions x 4 heads per CTA
  CHECK_EQ(d.grid[1], 4u);   // KV heads
  CHECK_EQ(d.grid[2], 2u);   // B
  CHECK_EQ(d.block[0], 384u);
  CHECK_EQ(d.dynamic_smem_bytes, 50232u);
  sz = {1, 1000, 1000};
  CHECK(afr_kernel_launch_dims(m, 0, &sz, &d) == AFR_OK);
  CHECK_EQ(d.grid[0], 32u);
  CHECK(afr_kernel_launch_dims(m, 1, &sz, &d) == AFR_OK); // GEMM: ceil_div(S,128) x 8 x B
  CHECK_EQ(d.grid[0], 8u);
  CHECK_EQ(d.grid[1], 8u);
  CHECK_EQ(d.grid[2], 1u);
  CHECK_EQ(d.dynamic_smem_bytes, 164928u);
  CHECK(afr_kernel_launch_dims(m, 2, &sz, &d) == AFR_OK); // MHA: ceil_div(S,128) x 16 x B
  CHECK_EQ(d.grid[0], 8u);
  CHECK_EQ(d.grid[1], 16u);
  sz = {70000, 128, 128};
  CHECK_ERR(afr_kernel_launch_dims(m, 0, &sz, &d), AFR_ERR_INVALID_ARGUMENT,
            std::string("kernel '") + FA_GQA +
                "': grid dim 2 = B = 70000 is outside [1, 65535]");
  sz = {0, 128, 128};
  CHECK_ERR(afr_kernel_launch_dims(m, 0, &sz, &d), AFR_ERR_INVALID_ARGUMENT,
            std::string("kernel '") + FA_GQA + "': sizes must be positive (B=0, S=128, T=128)");
  CHECK_ERR(afr_kernel_launch_dims(m, 9, &sz, &d), AFR_ERR_INVALID_ARGUMENT,
            "kernel index 9 out of range");
  afr_manifest_destroy(m);
}

TEST(param_layout) {
  afr_manifest *m = loadFixture();
  if (!m)
    return;
  afr_param_slot slots[8];
  int n = 0;
  uint32_t total = 0;
  // K=V flash attention: tma_q, tma_k, tma_o (128 B, 64-aligned), seq_q, seq_kv (i32).
  CHECK(afr_kernel_param_layout(m, 0, slots, 8, &n, &total) == AFR_OK);
  CHECK_EQ(n, 5);
  CHECK_EQ(std::string(slots[0].name), std::string("tma_q"));
  CHECK_EQ(slots[0].offset, 0u);
  CHECK_EQ(slots[1].offset, 128u);
  CHECK_EQ(slots[2].offset, 256u);
  CHECK_EQ(slots[2].size, 128u);
  CHECK_EQ(slots[2].align, 64u);
  CHECK_EQ(std::string(slots[3].name), std::string("seq_q"));
  CHECK_EQ(slots[3].offset, 384u);
  CHECK_EQ(slots[3].size, 4u);
  CHECK_EQ(slots[4].offset, 388u);
  CHECK_EQ(total, 392u);
  // GEMM with bias: ..., seq (i32 @384), bias (pointer, 8-aligned @392).
  CHECK(afr_kernel_param_layout(m, 1, slots, 8, &n, &total) == AFR_OK);
  CHECK_EQ(n, 5);
  CHECK_EQ(slots[3].offset, 384u);
  CHECK_EQ(slots[4].kind, AFR_PARAM_POINTER);
  CHECK_EQ(slots[4].offset, 392u);
  CHECK_EQ(slots[4].size, 8u);
  CHECK_EQ(total, 400u);
  // Separate K and V: four descriptors, then the two i32.
  CHECK(afr_kernel_param_layout(m, 2, slots, 8, &n, &total) == AFR_OK);
  CHECK_EQ(n, 6);
  CHECK_EQ(slots[3].offset, 384u);
  CHECK_EQ(slots[4].offset, 512u);
  CHECK_EQ(total, 520u);
  // An i32 followed by a descriptor: padded to the next multiple of 64.
  afr::KernelSpec k;
  k.params = {{"n", AFR_PARAM_SCALAR, "i32", "S", ""},
              {"t", AFR_PARAM_TMA_DESCRIPTOR, "", "", "t"},
              {"p", AFR_PARAM_POINTER, "f32", "p", ""},
              {"x", AFR_PARAM_SCALAR, "i64", "T", ""}};
  std::vector<afr_param_slot> v;
  afr::paramLayout(k, v, total);
  CHECK_EQ(v[1].offset, 64u);
  CHECK_EQ(v[2].offset, 192u);
  CHECK_EQ(v[3].offset, 200u);
  CHECK_EQ(total, 208u);
  afr_manifest_destroy(m);
}

// ---------------------------------------------------------------- validation

TEST(validation_ok) {
  afr_manifest *m = loadFixture();
  if (!m)
    return;
  afr_sizes sz{2, 1000, 1200};
  auto t = gqaTensors(2, 1000, 1200);
  CHECK(afr_validate(m, 0, &sz, t.data(), 3) == AFR_OK);
  // Order does not matter; strides of size-1 dims are ignored.
  std::swap(t[0], t[2]);
  t[0].shape[0] = 1;
  t[1].shape[0] = 1;
  t[2].shape[0] = 1;
  t[0].strides[0] = 7;
  sz.B = 1;
  CHECK(afr_validate(m, 0, &sz, t.data(), 3) == AFR_OK);
  // GEMM with its bias pointer.
  std::vector<afr_tensor> g = {tensor("input", 0x1000, {2, 300, 1024}),
                               tensor("weight", 0x2000, {1024, 1024}),
                               tensor("bias", 0x3000, {1024}),
                               tensor("output", 0x4000, {2, 300, 1024})};
  sz = {2, 300, 300};
  CHECK(afr_validate(m, 1, &sz, g.data(), 4) == AFR_OK);
  afr_manifest_destroy(m);
}

TEST(validation_errors) {
  afr_manifest *m = loadFixture();
  if (!m)
    return;
  const std::string K = std::string("kernel '") + FA_GQA + "': ";
  afr_sizes sz{2, 1000, 1200};
  auto run = [&](std::vector<afr_tensor> t) {
    return afr_validate(m, 0, &sz, t.data(), static_cast<int>(t.size()));
  };
  auto t = gqaTensors(2, 1000, 1200);
  {
    auto u = t;
    u.pop_back();
    CHECK_ERR(run(u), AFR_ERR_VALIDATION, K + "tensor 'output' is missing");
  }
  {
    auto u = t;
    u[1].data = 0;
    CHECK_ERR(run(u), AFR_ERR_VALIDATION, K + "tensor 'key' has a null data pointer");
  }
  {
    auto u = t;
    u[0].dtype = AFR_DTYPE_F16;
    CHECK_ERR(run(u), AFR_ERR_VALIDATION,
              K + "tensor 'query' has dtype f16, the kernel needs bf16");
  }
  {
    auto u = t;
    u[0] = tensor("query", 0x10000, {2, 1000, 1024});
    CHECK_ERR(run(u), AFR_ERR_VALIDATION, K + "tensor 'query' has rank 3, the kernel needs 4");
  }
  {
    auto u = t;
    u[0] = tensor("query", 0x10000, {2, 999, 16, 64});
    CHECK_ERR(run(u), AFR_ERR_VALIDATION,
              K + "tensor 'query' dim 1 is 999, the kernel needs 1000 (S)");
  }
  {
    auto u = t;
    u[1] = tensor("key", 0x20000, {2, 1200, 8, 64}); // 8 KV heads, the kernel has 4
    CHECK_ERR(run(u), AFR_ERR_VALIDATION, K + "tensor 'key' dim 2 is 8, the kernel needs 4");
  }
  {
    auto u = t;
    u[1] = tensor("key", 0x20000, {3, 1200, 4, 64});
    CHECK_ERR(run(u), AFR_ERR_VALIDATION, K + "tensor 'key' dim 0 is 3, the kernel needs 2 (B)");
  }
  {
    // A [B, H, S, d] tensor viewed as [B, S, H, d] (transpose): not contiguous.
    auto u = t;
    u[0].strides[1] = 64;
    u[0].strides[2] = 1000 * 64;
    CHECK_ERR(run(u), AFR_ERR_VALIDATION,
              K + "tensor 'query' stride 1 is 64 elements, the kernel needs 1024 (a "
                  "contiguous row-major layout)");
  }
  {
    auto u = t;
    u[2].strides[0] = 5;
    CHECK_ERR(run(u), AFR_ERR_VALIDATION,
              K + "tensor 'output' stride 0 is 5 elements, the kernel needs 1024000 "
                  "(1024*S) (a contiguous row-major layout)");
  }
  {
    auto u = t;
    u[1].data = 0x20008;
    CHECK_ERR(run(u), AFR_ERR_VALIDATION,
              K + "tensor 'key' address 0x20008 is not 16-byte aligned (TMA needs 16 bytes)");
  }
  {
    auto u = t;
    u.push_back(tensor("value", 0x50000, {2, 1200, 4, 64})); // K=V kernel has no value
    CHECK_ERR(run(u), AFR_ERR_NOT_FOUND,
              K + "unknown tensor 'value' (the kernel takes: query, key, output)");
  }
  {
    auto u = t;
    u.push_back(t[0]);
    CHECK_ERR(run(u), AFR_ERR_INVALID_ARGUMENT, K + "tensor 'query' is given twice");
  }
  {
    auto u = t;
    u[0].name = nullptr;
    CHECK_ERR(run(u), AFR_ERR_INVALID_ARGUMENT, K + "tensor #0 has no name");
  }
  {
    CHECK_ERR(afr_validate(m, 0, &sz, nullptr, 3), AFR_ERR_INVALID_ARGUMENT,
              K + "no tensors given");
    CHECK_ERR(afr_validate(m, 0, nullptr, t.data(), 3), AFR_ERR_INVALID_ARGUMENT,
              "afr_validate: null sizes");
  }
  {
    sz = {1, 3000000000ll, 128};
    auto u = gqaTensors(1, 3000000000ll, 128);
    CHECK_ERR(run(u), AFR_ERR_VALIDATION,
              K + "parameter 'seq_q' = S = 3000000000 does not fit in i32");
    sz = {2, 1000, 1200};
  }
  // Pointer parameter (GEMM bias).
  const std::string G = std::string("kernel '") + GEMM + "': ";
  sz = {2, 300, 300};
  std::vector<afr_tensor> g = {tensor("input", 0x1000, {2, 300, 1024}),
                               tensor("weight", 0x2000, {1024, 1024}),
                               tensor("output", 0x4000, {2, 300, 1024})};
  CHECK_ERR(afr_validate(m, 1, &sz, g.data(), 3), AFR_ERR_VALIDATION,
            G + "tensor 'bias' is missing");
  afr::KernelSpec pk = m->m.kernels[1];
  pk.tensors.erase(pk.tensors.begin() + 2); // a pointer parameter without a tensor entry
  CHECK_ERR(afr::validate(pk, sz, g.data(), 3), AFR_ERR_VALIDATION,
            G + "pointer parameter 'bias' needs tensor 'bias', which is missing");
  g.push_back(tensor("bias", 0, {1024}));
  CHECK_ERR(afr::validate(pk, sz, g.data(), 4), AFR_ERR_VALIDATION,
            G + "pointer parameter 'bias' (tensor 'bias') has a null data pointer");
  g.back() = tensor("bias", 0x3000, {1024}, AFR_DTYPE_F32);
  CHECK_ERR(afr::validate(pk, sz, g.data(), 4), AFR_ERR_VALIDATION,
            G + "pointer parameter 'bias' (tensor 'bias') has dtype f32, the kernel needs bf16");
  afr_manifest_destroy(m);
}

// ---------------------------------------------------------------- TMA

TEST(tma_params) {
  afr_manifest *m = loadFixture();
  if (!m)
    return;
  afr_sizes sz{2, 1000, 1200};
  auto t = gqaTensors(2, 1000, 1200);
  CHECK_EQ(afr_kernel_num_tma(m, 0), 3);
  afr_tma_params p{};
  CHECK(afr_tma_encode_params(m, 0, 0, &sz, t.data(), 3, &p) == AFR_OK);
  CHECK_EQ(std::string(p.param), std::string("tma_q"));
  CHECK_EQ(std::string(p.tensor), std::string("query"));
  CHECK_EQ(p.data_type, 9u); // CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
  CHECK_EQ(p.rank, 4u);
  CHECK_EQ(p.global_address, uint64_t(0x10000));
  // [B, S, 16, 64] innermost first: 64, 16, S, B; byte strides 128, 2048, 2048*S.
  CHECK_EQ(p.global_dim[0], 64u);
  CHECK_EQ(p.global_dim[1], 16u);
  CHECK_EQ(p.global_dim[2], 1000u);
  CHECK_EQ(p.global_dim[3], 2u);
  CHECK_EQ(p.global_strides[0], 128u);
  CHECK_EQ(p.global_strides[1], 2048u);
  CHECK_EQ(p.global_strides[2], 2048000u);
  // Box [d, pack, 64 / pack, 1] = [64, 4, 16, 1] (GQA-4 packing).
  CHECK_EQ(p.box_dim[0], 64u);
  CHECK_EQ(p.box_dim[1], 4u);
  CHECK_EQ(p.box_dim[2], 16u);
  CHECK_EQ(p.box_dim[3], 1u);
  for (int i = 0; i < 4; ++i)
    CHECK_EQ(p.element_strides[i], 1u);
  CHECK_EQ(p.interleave, 0u);
  CHECK_EQ(p.swizzle, 3u);      // 128B
  CHECK_EQ(p.l2_promotion, 3u); // 256B
  CHECK_EQ(p.oob_fill, 0u);
  // Key (K=V): [B, T, 4, 64] -> 64, 4, T, B; box [64, 1, 128, 1].
  CHECK(afr_tma_encode_params(m, 0, 1, &sz, t.data(), 3, &p) == AFR_OK);
  CHECK_EQ(std::string(p.tensor), std::string("key"));
  CHECK_EQ(p.global_address, uint64_t(0x20000));
  CHECK_EQ(p.global_dim[1], 4u);
  CHECK_EQ(p.global_dim[2], 1200u);
  CHECK_EQ(p.global_strides[1], 512u);
  CHECK_EQ(p.global_strides[2], 512u * 1200);
  CHECK_EQ(p.box_dim[2], 128u);
  CHECK(afr_tma_encode_params(m, 0, 2, &sz, t.data(), 3, &p) == AFR_OK);
  CHECK_EQ(std::string(p.param), std::string("tma_o"));
  CHECK_EQ(p.global_address, uint64_t(0x30000));
  // GEMM weight: rank 2 [1024, 1024], stride 2048 bytes, box [64, 128].
  std::vector<afr_tensor> g = {tensor("input", 0x1000, {1, 300, 1024}),
                               tensor("weight", 0x2000, {1024, 1024}),
                               tensor("bias", 0x3000, {1024}),
                               tensor("output", 0x4000, {1, 300, 1024})};
  sz = {1, 300, 300};
  CHECK(afr_tma_encode_params(m, 1, 1, &sz, g.data(), 4, &p) == AFR_OK);
  CHECK_EQ(p.rank, 2u);
  CHECK_EQ(p.global_dim[0], 1024u);
  CHECK_EQ(p.global_dim[1], 1024u);
  CHECK_EQ(p.global_strides[0], 2048u);
  CHECK_EQ(p.box_dim[0], 64u);
  CHECK_EQ(p.box_dim[1], 128u);
  // Errors: validation runs first; index range.
  CHECK_ERR(afr_tma_encode_params(m, 1, 5, &sz, g.data(), 4, &p), AFR_ERR_INVALID_ARGUMENT,
            "descriptor index 5 out of range");
  g[1].data = 0x2004;
  CHECK_ERR(afr_tma_encode_params(m, 1, 1, &sz, g.data(), 4, &p), AFR_ERR_VALIDATION,
            std::string("kernel '") + GEMM +
                "': tensor 'weight' address 0x2004 is not 16-byte aligned (TMA needs 16 bytes)");
  afr_manifest_destroy(m);
}

TEST(tma_limits) {
  // Hand-made descriptors that break the cuTensorMapEncodeTiled rules.
  afr::KernelSpec k;
  k.name = "k";
  afr::TmaSpec tma;
  tma.param = "t";
  tma.tensor = "x";
  tma.rank = 2;
  tma.dataType = 9;
  tma.swizzle = 3;
  tma.globalDim = {{"S", false, 0}, {"B", false, 0}};
  tma.globalStrides = {{"2*S", false, 0}};
  tma.box = {64, 8};
  tma.elementStrides = {1, 1};
  afr_tensor x = tensor("x", 0x1000, {4, 64});
  afr_tma_params p{};
  afr_sizes sz{4, 64, 1};
  CHECK(afr::tmaParams(k, tma, sz, &x, 1, p) == AFR_OK);
  CHECK_EQ(p.global_strides[0], 128u);
  sz.S = 60; // 120-byte rows
  CHECK_ERR(afr::tmaParams(k, tma, sz, &x, 1, p), AFR_ERR_VALIDATION,
            "kernel 'k': descriptor 't': global stride 0 = 120 bytes must be a positive "
            "multiple of 16 below 2^40");
  sz.S = 64;
  tma.box = {128, 8}; // 256 bytes > 128-byte swizzle
  CHECK_ERR(afr::tmaParams(k, tma, sz, &x, 1, p), AFR_ERR_MANIFEST,
            "kernel 'k': descriptor 't': inner box 256 bytes exceeds the 128-byte swizzle span");
  tma.box = {4, 8}; // 8 bytes
  CHECK_ERR(afr::tmaParams(k, tma, sz, &x, 1, p), AFR_ERR_MANIFEST,
            "kernel 'k': descriptor 't': inner box 8 bytes is not a multiple of 16");
  tma.box = {64, 300};
  CHECK_ERR(afr::tmaParams(k, tma, sz, &x, 1, p), AFR_ERR_MANIFEST,
            "kernel 'k': descriptor 't': box dim 1 = 300 is outside [1, 256]");
  tma.box = {64, 8};
  tma.elementStrides = {1, 9};
  CHECK_ERR(afr::tmaParams(k, tma, sz, &x, 1, p), AFR_ERR_MANIFEST,
            "kernel 'k': descriptor 't': element stride 1 = 9 is outside [1, 8]");
  tma.elementStrides = {1, 1};
  tma.globalDim[1] = {"B - 4", false, 0};
  CHECK_ERR(afr::tmaParams(k, tma, sz, &x, 1, p), AFR_ERR_VALIDATION,
            "kernel 'k': descriptor 't': global dim 1 = 0 is outside [1, 2^32]");
  tma.globalDim[1] = {"B", false, 0};
  x.dtype = AFR_DTYPE_F32;
  CHECK_ERR(afr::tmaParams(k, tma, sz, &x, 1, p), AFR_ERR_VALIDATION,
            "kernel 'k': descriptor 't': tensor 'x' has 4-byte elements, the descriptor 2");
  x.dtype = AFR_DTYPE_BF16;
  x.data = 0x1008;
  CHECK_ERR(afr::tmaParams(k, tma, sz, &x, 1, p), AFR_ERR_VALIDATION,
            "kernel 'k': descriptor 't': global address of 'x' must be non-null and 16-byte "
            "aligned");
  x.name = "y";
  CHECK_ERR(afr::tmaParams(k, tma, sz, &x, 1, p), AFR_ERR_VALIDATION,
            "kernel 'k': descriptor 't' needs tensor 'x', which is missing");
}

// ---------------------------------------------------------------- driver: absent

TEST(no_driver) {
  // A library that does not exist: the runtime must fail cleanly, never abort.
  afr::setDriverLibraryForTesting("libcuda-attnfuse-missing.so.1");
  CHECK_EQ(afr_driver_available(), 0);
  afr_context *c = reinterpret_cast<afr_context *>(0x1);
  CHECK_ERR(afr_context_create(0, &c), AFR_ERR_NO_DRIVER,
            "no CUDA driver (libcuda-attnfuse-missing.so.1 not found)");
  CHECK(c == nullptr);
  // The real library name: on a machine without the driver the message is the documented one.
  afr::setDriverLibraryForTesting("libcuda.so.1");
  void *real = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!real) {
    CHECK_EQ(afr_driver_available(), 0);
    CHECK_ERR(afr_context_create(0, &c), AFR_ERR_NO_DRIVER,
              "no CUDA driver (libcuda.so.1 not found)");
    auto ctx = attnfuse::Context::create(0);
    CHECK(!ctx.ok());
    CHECK_EQ(ctx.error().status, AFR_ERR_NO_DRIVER);
    CHECK_EQ(ctx.error().message, std::string("no CUDA driver (libcuda.so.1 not found)"));
  } else {
    std::printf("  (libcuda.so.1 is present here: the absent-driver message is checked with "
                "the missing library name only)\n");
    dlclose(real);
  }
  // A library without the entry points (libm): reported as a missing driver entry point.
  afr::setDriverLibraryForTesting("libm.so.6");
  CHECK_ERR(afr_context_create(0, &c), AFR_ERR_NO_DRIVER,
            "CUDA driver libm.so.6 has no entry point cuInit (driver too old for sm_90a TMA?)");
  // Null-handle calls fail cleanly too.
  CHECK_ERR(afr_kernel_load(nullptr, nullptr, 0, nullptr), AFR_ERR_INVALID_ARGUMENT,
            "afr_kernel_load: null argument");
  afr_sizes sz{1, 1, 1};
  CHECK_ERR(afr_launch(nullptr, &sz, nullptr, 0, nullptr), AFR_ERR_INVALID_ARGUMENT,
            "afr_launch: null argument");
  CHECK_ERR(afr_mem_alloc(nullptr, 16, nullptr), AFR_ERR_INVALID_ARGUMENT,
            "afr_mem_alloc: null argument");
  afr::setDriverLibraryForTesting("libcuda.so.1");
}

// ---------------------------------------------------------------- driver: fake libcuda

struct FakeEncode {
  int dataType;
  unsigned rank;
  uint64_t address;
  uint64_t dim[5];
  uint64_t strides[4];
  unsigned box[5];
  unsigned elementStrides[5];
  int interleave, swizzle, l2, oob;
};
struct FakeState {
  int initCalls;
  int retainCalls, releaseCalls;
  int moduleLoads, moduleUnloads;
  char lastImageHead[16];
  char lastFunction[256];
  int funcAttribute, funcAttributeValue;
  int encodeCount;
  FakeEncode encodes[16];
  int launchCount;
  unsigned grid[3], block[3], smem;
  void *stream;
  int numParams;
  unsigned paramSizes[32];
  unsigned char params[32][128];
  uintptr_t paramAddress[32];
  unsigned long long nextAlloc;
};

struct Fake {
  void *lib = nullptr;
  FakeState *(*state)() = nullptr;
  void (*reset)() = nullptr;
  void (*fail)(const char *, int) = nullptr;
  bool ok() const { return lib && state && reset && fail; }
};

static Fake openFake() {
  Fake f;
  f.lib = dlopen(AFR_FAKE_CUDA, RTLD_NOW | RTLD_LOCAL);
  if (!f.lib)
    return f;
  f.state = reinterpret_cast<FakeState *(*)()>(dlsym(f.lib, "fake_cuda_state"));
  f.reset = reinterpret_cast<void (*)()>(dlsym(f.lib, "fake_cuda_reset"));
  f.fail = reinterpret_cast<void (*)(const char *, int)>(dlsym(f.lib, "fake_cuda_fail"));
  return f;
}

static std::string makeTmpDir(const std::string &name) {
  std::string dir = std::string(AFR_TMP_DIR);
  mkdir(dir.c_str(), 0755);
  dir += "/" + name;
  mkdir(dir.c_str(), 0755);
  return dir;
}

static void writeFile(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

static void fakeLaunchBody(Fake &fake);

TEST(fake_driver_launch) {
  Fake fake = openFake();
  CHECK(fake.ok());
  if (!fake.ok())
    return;
  fake.reset();
  afr::setDriverLibraryForTesting(AFR_FAKE_CUDA);
  CHECK_EQ(afr_driver_available(), 1);

  fakeLaunchBody(fake); // every handle is gone before the fake driver is unloaded
  afr::setDriverLibraryForTesting("libcuda.so.1");
}

static void fakeLaunchBody(Fake &fake) {
  // The fixture manifest with stand-in cubin/ptx files next to it.
  std::string dir = makeTmpDir("fake_launch");
  writeFile(dir + "/manifest.json", readAll(fixture));
  writeFile(dir + std::string("/") + FA_GQA + ".cubin", "CUBIN-GQA");
  writeFile(dir + std::string("/") + FA_GQA + ".ptx", "PTX-GQA");
  writeFile(dir + std::string("/") + GEMM + ".cubin", "failcubin");
  writeFile(dir + std::string("/") + GEMM + ".ptx", "PTX-GEMM");

  auto m = attnfuse::Manifest::load(dir + "/manifest.json");
  CHECK(m.ok());
  if (!m.ok())
    return;
  auto ctx = attnfuse::Context::create(0);
  CHECK(ctx.ok());
  if (!ctx.ok())
    return;
  FakeState *st = fake.state();
  CHECK_EQ(st->initCalls, 1);
  CHECK_EQ(st->retainCalls, 1);

  auto k = ctx->load(*m, FA_GQA);
  CHECK(k.ok());
  if (!k.ok())
    return;
  CHECK_EQ(std::string(st->lastImageHead), std::string("CUBIN-GQA"));
  CHECK_EQ(std::string(st->lastFunction), std::string(FA_GQA));
  CHECK_EQ(st->funcAttribute, 8); // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
  CHECK_EQ(st->funcAttributeValue, 50232);

  st->numParams = 5;
  unsigned sizes[5] = {128, 128, 128, 4, 4};
  std::memcpy(st->paramSizes, sizes, sizeof sizes);
  auto t = gqaTensors(2, 1000, 1200);
  void *stream = reinterpret_cast<void *>(0xABC0);
  attnfuse::Status s = k->launch({2, 1000, 1200}, t, stream);
  CHECK(s.ok());
  if (!s.ok())
    std::fprintf(stderr, "launch: %s\n", s.error().message.c_str());
  CHECK_EQ(st->launchCount, 1);
  CHECK_EQ(st->grid[0], 32u);
  CHECK_EQ(st->grid[1], 4u);
  CHECK_EQ(st->grid[2], 2u);
  CHECK_EQ(st->block[0], 384u);
  CHECK_EQ(st->block[1], 1u);
  CHECK_EQ(st->smem, 50232u);
  CHECK(st->stream == stream);
  CHECK_EQ(st->encodeCount, 3);
  // Encode arguments as computed by afr_tma_encode_params.
  const FakeEncode &q = st->encodes[0];
  CHECK_EQ(q.dataType, 9);
  CHECK_EQ(q.rank, 4u);
  CHECK_EQ(q.address, uint64_t(0x10000));
  CHECK_EQ(q.dim[2], 1000u);
  CHECK_EQ(q.strides[2], 2048000u);
  CHECK_EQ(q.box[1], 4u);
  CHECK_EQ(q.swizzle, 3);
  CHECK_EQ(q.l2, 3);
  CHECK_EQ(q.oob, 0);
  CHECK_EQ(st->encodes[1].address, uint64_t(0x20000));
  CHECK_EQ(st->encodes[1].dim[2], 1200u);
  CHECK_EQ(st->encodes[2].address, uint64_t(0x30000));
  // Arguments: descriptors by value (host copies 128-byte aligned), in order; then S and T.
  for (int i = 0; i < 3; ++i) {
    CHECK_EQ(st->paramAddress[i] % 128, 0u);
    uint64_t words[3];
    std::memcpy(words, st->params[i], sizeof words);
    CHECK_EQ(words[0], uint64_t(0x10000 * (i + 1)));
    CHECK_EQ(words[1], 4u);
    CHECK_EQ(words[2], 0xFA4E00000000ull + i);
  }
  int32_t seq[2];
  std::memcpy(&seq[0], st->params[3], 4);
  std::memcpy(&seq[1], st->params[4], 4);
  CHECK_EQ(seq[0], 1000);
  CHECK_EQ(seq[1], 1200);
  CHECK_EQ(st->paramAddress[4] - st->paramAddress[3], 4u); // packed like the param space

  // A launch with a bad buffer fails before any driver call.
  auto bad = t;
  bad[0].dtype = AFR_DTYPE_F32;
  s = k->launch({2, 1000, 1200}, bad, stream);
  CHECK(!s.ok());
  CHECK_EQ(s.error().status, AFR_ERR_VALIDATION);
  CHECK_EQ(st->launchCount, 1);

  // The GEMM's cubin "does not load" (like a cubin for another chip): the PTX is used.
  auto g = ctx->load(*m, GEMM);
  CHECK(g.ok());
  CHECK_EQ(std::string(st->lastImageHead), std::string("PTX-GEMM"));
  st->numParams = 5;
  unsigned gsizes[5] = {128, 128, 128, 4, 8};
  std::memcpy(st->paramSizes, gsizes, sizeof gsizes);
  std::vector<afr_tensor> gt = {tensor("input", 0x1000, {1, 300, 1024}),
                                tensor("weight", 0x2000, {1024, 1024}),
                                tensor("bias", 0x3000, {1024}),
                                tensor("output", 0x4000, {1, 300, 1024})};
  s = g->launch({1, 300, 300}, gt, nullptr);
  CHECK(s.ok());
  CHECK_EQ(st->grid[0], 3u);
  CHECK_EQ(st->grid[1], 8u);
  CHECK_EQ(st->smem, 164928u);
  int32_t seqv;
  uint64_t bias;
  std::memcpy(&seqv, st->params[3], 4);
  std::memcpy(&bias, st->params[4], 8);
  CHECK_EQ(seqv, 300);
  CHECK_EQ(bias, uint64_t(0x3000));
  CHECK_EQ(st->paramAddress[4] - st->paramAddress[3], 8u); // i32 at 384, pointer at 392

  // The MHA kernel has no files in this directory.
  auto missing = ctx->load(*m, FA_MHA);
  CHECK(!missing.ok());
  CHECK_EQ(missing.error().status, AFR_ERR_IO);
  CHECK_EQ(missing.error().message,
           std::string("kernel '") + FA_MHA + "': cannot read " + dir + "/" + FA_MHA +
               ".cubin; cannot read " + dir + "/" + FA_MHA + ".ptx");
  auto unknown = ctx->load(*m, "nope");
  CHECK(!unknown.ok());
  CHECK_EQ(unknown.error().message, std::string("no kernel named 'nope'"));

  // Driver errors carry the CUDA error name and text.
  fake.fail("cuLaunchKernel", 700);
  s = k->launch({2, 1000, 1200}, t, stream);
  CHECK(!s.ok());
  CHECK_EQ(s.error().status, AFR_ERR_CUDA);
  CHECK_EQ(s.error().message,
           std::string("kernel '") + FA_GQA +
               "': cuLaunchKernel(grid 32,4,2 block 384,1,1 smem 50232) failed: "
               "CUDA_ERROR_ILLEGAL_ADDRESS (700): fake driver error");
  fake.fail("cuTensorMapEncodeTiled", 1);
  s = k->launch({2, 1000, 1200}, t, stream);
  CHECK_EQ(s.error().message, std::string("kernel '") + FA_GQA +
                                  "': cuTensorMapEncodeTiled(tma_q) failed: "
                                  "CUDA_ERROR_INVALID_VALUE (1): fake driver error");
  fake.fail("cuFuncSetAttribute", 1);
  auto k2 = ctx->load(*m, FA_GQA);
  CHECK(!k2.ok());
  CHECK_EQ(k2.error().message,
           std::string("kernel '") + FA_GQA +
               "': cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, 50232) failed: "
               "CUDA_ERROR_INVALID_VALUE (1): fake driver error");
  fake.fail("cuModuleLoadData", 209);
  auto k3 = ctx->load(*m, FA_GQA);
  CHECK(!k3.ok());
  CHECK_EQ(k3.error().status, AFR_ERR_CUDA);
  CHECK_EQ(k3.error().message,
           std::string("kernel '") + FA_GQA + "': cuModuleLoadData(" + dir + "/" + FA_GQA +
               ".cubin) failed: CUDA_ERROR_NO_BINARY_FOR_GPU (209): no kernel image is "
               "available for execution on the device; cuModuleLoadData(" + dir + "/" +
               FA_GQA + ".ptx) failed: CUDA_ERROR_NO_BINARY_FOR_GPU (209): no kernel image "
               "is available for execution on the device");
  fake.fail("", 0);

  // Memory helpers and device selection.
  uint64_t p = 0;
  CHECK(afr_mem_alloc(ctx->get(), 1024, &p) == AFR_OK);
  CHECK(p != 0);
  CHECK(afr_mem_free(ctx->get(), p) == AFR_OK);
  int cc = 0;
  CHECK(afr_context_compute_capability(ctx->get(), &cc) == AFR_OK);
  CHECK_EQ(cc, 90);
  CHECK(ctx->synchronize(stream).ok());
  afr_context *c1 = nullptr;
  CHECK_ERR(afr_context_create(1, &c1), AFR_ERR_CUDA,
            "cuDeviceGet(1) failed: CUDA_ERROR_INVALID_DEVICE (101): fake driver error");

  int unloadsBefore = st->moduleUnloads;
  { auto tmp = std::move(k); } // RAII: the kernel's module is unloaded
  k = attnfuse::Error{};       // drop the moved-from handle
  CHECK_EQ(st->moduleUnloads, unloadsBefore + 1);
}

// ---------------------------------------------------------------- real attnfuse-compile output

TEST(compiled_manifests) {
  std::string tool = AFR_COMPILE_TOOL;
  if (tool.empty()) {
    std::printf("  (attnfuse-compile not part of this build: skipped)\n");
    return;
  }
  const char *examples[] = {"gpt300m_kv_gqa4", "gpt300m_none", "gpt300m_kv_mqa",
                            "zaya1_ccgqa"};
  for (const char *ex : examples) {
    std::string dir = makeTmpDir(std::string("compile_") + ex);
    std::string cmd = "'" + tool + "' '" + AFR_EXAMPLES_DIR + "/" + ex +
                      ".mlir' --target=sm_90a --no-cubin -o '" + dir + "' > '" + dir +
                      "/log.txt' 2>&1";
    int rc = std::system(cmd.c_str());
    CHECK_EQ(rc, 0);
    if (rc != 0) {
      std::fprintf(stderr, "%s\n", readAll(dir + "/log.txt").c_str());
      continue;
    }
    auto m = attnfuse::Manifest::load(dir + "/manifest.json");
    CHECK(m.ok());
    if (!m.ok()) {
      std::fprintf(stderr, "%s: %s\n", ex, m.error().message.c_str());
      continue;
    }
    CHECK(m->numKernels() >= 1);
    CHECK(!m->launches().empty());
    afr_sizes sz{2, 1000, 1000};
    for (int i = 0; i < m->numKernels(); ++i) {
      const afr::KernelSpec &k = m->get()->m.kernels[i];
      // Buffers straight from the manifest's own shapes: they must validate, and every
      // descriptor must produce legal cuTensorMapEncodeTiled arguments.
      std::vector<afr_tensor> t;
      uint64_t addr = 0x100000;
      for (const afr::TensorSpec &ts : k.tensors) {
        std::vector<int64_t> shape;
        for (const afr::Expr &e : ts.shape) {
          int64_t v = 0;
          std::string err;
          afr::evalExpr(e.text, sz, v, err);
          shape.push_back(v);
        }
        t.push_back(attnfuse::makeTensor(ts.name.c_str(), addr, ts.dtype, shape,
                                         attnfuse::contiguousStrides(shape)));
        addr += 0x10000000;
      }
      attnfuse::Status s = m->validate(i, sz, t);
      CHECK(s.ok());
      if (!s.ok())
        std::fprintf(stderr, "%s: %s\n", ex, s.error().message.c_str());
      auto tp = m->tmaParams(i, sz, t);
      CHECK(tp.ok());
      if (!tp.ok())
        std::fprintf(stderr, "%s: %s\n", ex, tp.error().message.c_str());
      auto dims = m->launchDims(i, sz);
      CHECK(dims.ok());
      // Grid z = B for every kernel but the element-wise ones (a 1-D grid over the elements).
      if (k.kind == "elementwise")
        CHECK(dims.ok() && dims->grid[1] == 1u && dims->grid[2] == 1u);
      else
        CHECK(dims.ok() && dims->grid[2] == 2u);
      auto layout = m->paramLayout(i);
      for (const afr_param_slot &sl : layout.first)
        if (sl.kind == AFR_PARAM_TMA_DESCRIPTOR)
          CHECK_EQ(sl.offset % 64, 0u);
      // Every kernel the manifest describes has its PTX on disk.
      std::ifstream ptx(dir + "/" + k.ptx);
      CHECK(ptx.good());
    }
  }
}

// The split-KV decode kernels as attnfuse-compile writes them: two kernels
// launched in order, a workspace sized by an expression of B and S, i32
// positions, and the cache updated in place.
TEST(decode_manifest) {
  afr_manifest *m = nullptr;
  CHECK(afr_manifest_load((std::string(AFR_FIXTURE_DIR) + "/decode-manifest.json").c_str(),
                          &m) == AFR_OK);
  CHECK_EQ(afr_manifest_num_launches(m), 2);
  CHECK_EQ(std::string(afr_manifest_launch_kernel(m, 0)), std::string("attn_flash_decode"));
  CHECK_EQ(std::string(afr_manifest_launch_kernel(m, 1)),
           std::string("attn_flash_decode_combine"));
  int split = -1, combine = -1;
  CHECK(afr_manifest_find_kernel(m, "attn_flash_decode", &split) == AFR_OK);
  CHECK(afr_manifest_find_kernel(m, "attn_flash_decode_combine", &combine) == AFR_OK);
  const afr::KernelSpec &spec = m->m.kernels[split];
  CHECK_EQ(spec.then, std::string("attn_flash_decode_combine"));
  CHECK_EQ(spec.aliases.size(), size_t(1));
  CHECK_EQ(spec.aliases[0].second, std::string("key_cache"));
  // B = 2, capacity S = 4096: splits = min(ceil_div(264, 8 * 2), ceil_div(4096, 256)) = 16.
  afr_sizes sz{2, 4096, 1};
  int64_t bytes = 0;
  CHECK(afr_kernel_workspace_bytes(m, split, &sz, &bytes) == AFR_OK);
  CHECK_EQ(bytes, int64_t(4) * 2 * 32 * 16 * 132);
  CHECK(afr_kernel_workspace_bytes(m, combine, &sz, &bytes) == AFR_OK);
  CHECK_EQ(bytes, int64_t(0));
  afr_launch_dims dims;
  CHECK(afr_kernel_launch_dims(m, split, &sz, &dims) == AFR_OK);
  CHECK_EQ(dims.grid[0], 16u);
  CHECK_EQ(dims.grid[1], 8u);
  CHECK_EQ(dims.grid[2], 2u);
  std::vector<afr_tensor> t = {
      tensor("query", 0x1000, {2, 1, 32, 128}, AFR_DTYPE_BF16),
      tensor("key_new", 0x2000, {2, 1, 8, 128}, AFR_DTYPE_BF16),
      tensor("key_cache", 0x3000, {2, 4096, 8, 128}, AFR_DTYPE_BF16),
      tensor("positions", 0x4000, {2}, AFR_DTYPE_I32),
      tensor("workspace", 0x5000, {2, 32, 16, 132}, AFR_DTYPE_F32)};
  CHECK(afr_validate(m, split, &sz, t.data(), int(t.size())) == AFR_OK);
  t[3] = tensor("positions", 0x4000, {2}, AFR_DTYPE_I64);
  CHECK_ERR(afr_validate(m, split, &sz, t.data(), int(t.size())), AFR_ERR_VALIDATION,
            "kernel 'attn_flash_decode': tensor 'positions' has dtype i64, the kernel needs i32");
  t[3] = tensor("positions", 0x4000, {2}, AFR_DTYPE_I32);
  t[4] = tensor("workspace", 0x5000, {2, 32, 8, 132}, AFR_DTYPE_F32);
  CHECK_ERR(afr_validate(m, split, &sz, t.data(), int(t.size())), AFR_ERR_VALIDATION,
            "kernel 'attn_flash_decode': tensor 'workspace' dim 2 is 8, the kernel needs 16 "
            "(max(1, min(ceil_div(264, 8*B), ceil_div(S, 256))))");
  afr_manifest_destroy(m);

  auto parse = [&](const std::string &text) {
    return afr_manifest_parse(text.data(), text.size(), "", &m);
  };
  const std::string base = R"J({"kernels": [{"name": "k", "ptx": "k.ptx", "block": [128],
      "grid": ["B"], "params": [], "tensors": [{"name": "cache", "dtype": "bf16",
      "shape": ["B"]}] EXTRA}]})J";
  auto with = [&](const std::string &extra) {
    std::string text = base;
    text.replace(text.find("EXTRA"), 5, extra);
    return text;
  };
  CHECK_ERR(parse(with(R"J(, "aliases": [{"result": "r", "tensor": "nope"}])J")),
            AFR_ERR_MANIFEST, "kernel 'k': result 'r' aliases unknown tensor 'nope'");
  CHECK_ERR(parse(with(R"J(, "workspace": {"tensor": "nope", "bytes": 4})J")),
            AFR_ERR_MANIFEST, "kernel 'k': workspace names unknown tensor 'nope'");
  CHECK_ERR(parse(with(R"J(, "workspace": {"tensor": "cache"})J")), AFR_ERR_MANIFEST,
            "kernel 'k': workspace has no \"bytes\"");
  CHECK_ERR(parse(with(R"J(, "then": "missing")J")), AFR_ERR_MANIFEST,
            "kernel 'k': \"then\" names unknown kernel 'missing'");
}

// A CCA decode step (attn.cca_decode_prologue, ZAYA1 shape): its manifest validates with
// the state results in the same buffers as the state operands (the in-place update the
// manifest allows), the grid is (heads, B), and the RoPE tables follow T.
static const char kDecodeStepModel[] = R"mlir(
func.func @decode_step(%qr: tensor<?x1x1024xbf16>, %kr: tensor<?x1x256xbf16>, %vc: tensor<?x1x128xbf16>, %vp: tensor<?x1x128xbf16>, %dw: tensor<1280x1x2xbf16>, %dwb: tensor<1280xbf16>, %gw: tensor<1280x128x2xbf16>, %gwb: tensor<1280xbf16>, %temp: tensor<2xbf16>, %cs: tensor<?x2x1280xbf16>, %ss: tensor<?x1x128xbf16>, %pos: tensor<?xi32>) -> (tensor<?x1x8x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x2x1280xbf16>, tensor<?x1x128xbf16>) {
  %c0 = arith.constant 0 : index
  %batch = tensor.dim %qr, %c0 : tensor<?x1x1024xbf16>
  %qi = tensor.empty(%batch) : tensor<?x1x8x128xbf16>
  %kvi = tensor.empty(%batch) : tensor<?x1x2x128xbf16>
  %r0, %r1, %r2, %r3, %r4 = attn.cca_decode_prologue %qr, %kr, %vc, %vp
      conv_dw(%dw, %dwb) conv_g(%gw, %gwb) temp(%temp) outs(%qi, %kvi, %kvi)
      conv_state(%cs) shift_state(%ss)
      positions(%pos) {num_heads = 8 : i64, num_kv_heads = 2 : i64, head_dim = 128 : i64, conv_kernel_sizes = array<i64: 2, 2>, temperature = #attn.temperature<clamped>, qk_mean, value_shift, rope = #attn.rope<theta = 10000.0, fraction = 0.5>}
      : (tensor<?x1x1024xbf16>, tensor<?x1x256xbf16>, tensor<?x1x128xbf16>, tensor<?x1x128xbf16>, tensor<1280x1x2xbf16>, tensor<1280xbf16>, tensor<1280x128x2xbf16>, tensor<1280xbf16>, tensor<2xbf16>, tensor<?x1x8x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x2x1280xbf16>, tensor<?x1x128xbf16>, tensor<?xi32>) -> (tensor<?x1x8x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x2x1280xbf16>, tensor<?x1x128xbf16>)
  return %r0, %r1, %r2, %r3, %r4 : tensor<?x1x8x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x1x2x128xbf16>, tensor<?x2x1280xbf16>, tensor<?x1x128xbf16>
}
)mlir";

TEST(compiled_decode_prologue_manifest) {
  std::string tool = AFR_COMPILE_TOOL;
  if (tool.empty()) {
    std::printf("  (attnfuse-compile not part of this build: skipped)\n");
    return;
  }
  std::string dir = makeTmpDir("compile_decode_step");
  {
    std::ofstream model(dir + "/decode.mlir");
    model << kDecodeStepModel;
  }
  std::string cmd = "'" + tool + "' '" + dir + "/decode.mlir' --target=sm_90a --no-cubin --no-programs -o '" +
                    dir + "/out' > '" + dir + "/log.txt' 2>&1";
  int rc = std::system(cmd.c_str());
  CHECK_EQ(rc, 0);
  if (rc != 0) {
    std::fprintf(stderr, "%s\n", readAll(dir + "/log.txt").c_str());
    return;
  }
  auto m = attnfuse::Manifest::load(dir + "/out/manifest.json");
  CHECK(m.ok());
  if (!m.ok()) {
    std::fprintf(stderr, "%s\n", m.error().message.c_str());
    return;
  }
  CHECK_EQ(m->numKernels(), 1);
  const afr::KernelSpec &k = m->get()->m.kernels[0];
  CHECK(k.kind == "cca_decode_prologue");
  afr_sizes sz{3, 1, 4096};
  std::vector<afr_tensor> t;
  uint64_t addr = 0x100000;
  uint64_t convState = 0, shiftState = 0;
  for (const afr::TensorSpec &ts : k.tensors) {
    std::vector<int64_t> shape;
    for (const afr::Expr &e : ts.shape) {
      int64_t v = 0;
      std::string err;
      afr::evalExpr(e.text, sz, v, err);
      shape.push_back(v);
    }
    uint64_t at = addr;
    if (ts.name == "conv_state")
      convState = at;
    if (ts.name == "shift_state")
      shiftState = at;
    if (ts.name == "conv_state_out")
      at = convState; // in place
    if (ts.name == "shift_state_out")
      at = shiftState;
    if (ts.name == "rope_cos" || ts.name == "rope_sin")
      CHECK(shape.size() == 2 && shape[0] == 4096 && shape[1] == 32);
    t.push_back(attnfuse::makeTensor(ts.name.c_str(), at, ts.dtype, shape,
                                     attnfuse::contiguousStrides(shape)));
    addr += 0x10000000;
  }
  CHECK(convState != 0 && shiftState != 0);
  attnfuse::Status s = m->validate(0, sz, t);
  CHECK(s.ok());
  if (!s.ok())
    std::fprintf(stderr, "%s\n", s.error().message.c_str());
  auto dims = m->launchDims(0, sz);
  CHECK(dims.ok());
  CHECK(dims.ok() && dims->grid[0] == 10u && dims->grid[1] == 3u && dims->grid[2] == 1u &&
        dims->block[0] == 256u);
  // Every parameter is a pointer but the table row count (T).
  auto layout = m->paramLayout(0);
  int scalars = 0;
  for (const afr_param_slot &sl : layout.first) {
    CHECK(sl.kind != AFR_PARAM_TMA_DESCRIPTOR);
    scalars += sl.kind == AFR_PARAM_SCALAR;
  }
  CHECK_EQ(scalars, 1);
  CHECK_EQ(layout.first.size(), size_t(20));
}

// ---------------------------------------------------------------- device programs

static void programsBody(Fake &fake, const std::string &tool);

// Every shipped example's device program plans and runs on the fake driver: one launch per
// launch step, an output of the input's shape, the arena allocated once (a second call
// allocates nothing), and bad inputs refused with a message naming them.
TEST(example_programs) {
  std::string tool = AFR_COMPILE_TOOL;
  if (tool.empty()) {
    std::printf("  (attnfuse-compile not part of this build: skipped)\n");
    return;
  }
  Fake fake = openFake();
  CHECK(fake.ok());
  if (!fake.ok())
    return;
  fake.reset();
  afr::setDriverLibraryForTesting(AFR_FAKE_CUDA);
  programsBody(fake, tool);
  afr::setDriverLibraryForTesting("libcuda.so.1");
}

static void programsBody(Fake &fake, const std::string &tool) {
  const char *examples[] = {"gpt300m_none", "gpt300m_kv",      "gpt300m_kv_gqa4",
                            "gpt300m_kv_mqa", "gpt300m_qk",    "gpt300m_qkv",
                            "gpt1b2_mha",     "gpt1b2_kv_mqa", "zaya1_ccgqa"};
  afr_context *ctx = nullptr;
  CHECK_EQ(afr_context_create(0, &ctx), AFR_OK);
  if (!ctx)
    return;
  for (const char *ex : examples) {
    std::string dir = makeTmpDir(std::string("program_") + ex);
    std::string cmd = "'" + tool + "' '" + AFR_EXAMPLES_DIR + "/" + ex +
                      ".mlir' --target=sm_90a --no-cubin -o '" + dir + "' > '" + dir +
                      "/log.txt' 2>&1";
    int rc = std::system(cmd.c_str());
    CHECK_EQ(rc, 0);
    if (rc != 0) {
      std::fprintf(stderr, "%s\n", readAll(dir + "/log.txt").c_str());
      continue;
    }
    afr_manifest *m = nullptr;
    CHECK_EQ(afr_manifest_load((dir + "/manifest.json").c_str(), &m), AFR_OK);
    if (!m)
      continue;
    int index = -1;
    CHECK_EQ(afr_manifest_find_program(m, "model", &index), AFR_OK);
    CHECK_ERR(afr_manifest_find_program(m, "nope", &index), AFR_ERR_NOT_FOUND,
              "no program for function 'nope' (the manifest has: model)");
    const afr::ProgramSpec &spec = m->m.programs.at(index);
    // Inputs: [B = 2, S = 8, E] activations, the weights at their static sizes.
    std::vector<afr_tensor> inputs;
    uint64_t address = 0x100000;
    for (size_t i = 0; i < spec.inputShapes.size(); ++i) {
      std::vector<int64_t> shape = spec.inputShapes[i];
      for (size_t d = 0; d < shape.size(); ++d)
        if (shape[d] < 0)
          shape[d] = d == 0 ? 2 : 8;
      inputs.push_back(tensor(nullptr, address, shape, spec.inputDtypes[i]));
      address += 0x1000000;
    }
    int numOutputs = afr_program_num_outputs(m, index);
    CHECK_EQ(numOutputs, 1);
    afr_program_output out{};
    uint64_t arena = 0;
    CHECK_EQ(afr_program_infer(m, index, inputs.data(), static_cast<int>(inputs.size()), &out,
                               1, &arena),
             AFR_OK);
    CHECK_EQ(out.aliases_input, -1);
    CHECK_EQ(out.rank, 3);
    CHECK_EQ(out.shape[0], 2);
    CHECK_EQ(out.shape[1], 8);
    CHECK_EQ(out.shape[2], inputs[0].shape[2]);
    CHECK(arena > 0);
    int launches = 0;
    for (const afr::ProgramStep &step : spec.steps)
      launches += step.kind == afr::ProgramStep::Kind::Launch;
    std::printf("  %-16s %3d launches, %zu steps, arena %llu bytes at B=2 S=8\n", ex, launches,
                spec.steps.size(), static_cast<unsigned long long>(arena));

    afr_program *program = nullptr;
    CHECK_EQ(afr_program_create(ctx, m, index, &program), AFR_OK);
    if (!program) {
      std::fprintf(stderr, "%s: %s\n", ex, afr_last_error());
      afr_manifest_destroy(m);
      continue;
    }
    afr_tensor output = tensor("out", 0x9000000000ull, {2, 8, out.shape[2]}, out.dtype);
    FakeState *st = fake.state();
    int before = st->launchCount;
    afr_status s = afr_program_run(program, inputs.data(), static_cast<int>(inputs.size()),
                                   &output, 1, nullptr);
    CHECK_EQ(s, AFR_OK);
    if (s != AFR_OK)
      std::fprintf(stderr, "%s: %s\n", ex, afr_last_error());
    CHECK_EQ(st->launchCount - before, launches);
    afr_program_stats first{}, second{};
    CHECK_EQ(afr_program_get_stats(program, &first), AFR_OK);
    CHECK_EQ(afr_program_run(program, inputs.data(), static_cast<int>(inputs.size()), &output,
                             1, nullptr),
             AFR_OK);
    CHECK_EQ(afr_program_get_stats(program, &second), AFR_OK);
    CHECK_EQ(second.launches_per_call, launches);
    CHECK_EQ(second.arena_bytes, arena);
    CHECK_EQ(second.device_allocations, first.device_allocations); // steady state
    CHECK_EQ(second.calls, 2);

    // A weight of the wrong size, a wrong dtype, a missing output: errors, nothing launched.
    before = st->launchCount;
    std::vector<afr_tensor> bad = inputs;
    bad[1].shape[0] += 1;
    bad[1].strides[0] = 1;
    CHECK_ERR_PREFIX(afr_program_run(program, bad.data(), static_cast<int>(bad.size()), &output, 1,
                              nullptr),
              AFR_ERR_VALIDATION, "program 'model' input 1: shape [");
    bad = inputs;
    bad[0].dtype = AFR_DTYPE_F32;
    CHECK_ERR(afr_program_run(program, bad.data(), static_cast<int>(bad.size()), &output, 1,
                              nullptr),
              AFR_ERR_VALIDATION, "program 'model' input 0: dtype f32, expected bf16");
    CHECK_ERR(afr_program_run(program, inputs.data(), static_cast<int>(inputs.size()), nullptr,
                              0, nullptr),
              AFR_ERR_INVALID_ARGUMENT, "program 'model' has 1 outputs, got 0");
    afr_tensor wrongOut = output;
    wrongOut.shape[1] = 9;
    CHECK_ERR_PREFIX(afr_program_run(program, inputs.data(), static_cast<int>(inputs.size()),
                              &wrongOut, 1, nullptr),
              AFR_ERR_VALIDATION, "program 'model' output 0: expected bf16 [2, 8, ");
    CHECK_EQ(st->launchCount, before);
    afr_program_destroy(program);
    afr_manifest_destroy(m);
  }
  afr_context_destroy(ctx);
}

int main() {
  for (auto &t : registry()) {
    int before = failures;
    t.second();
    std::printf("%-24s %s\n", t.first, failures == before ? "ok" : "FAILED");
  }
  std::printf("%d checks, %d failed, %zu tests\n", checks, failures, registry().size());
  return failures == 0 ? 0 : 1;
}
