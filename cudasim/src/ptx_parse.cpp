// PTX text -> Module. A small tokenizer and a statement parser for the subset
// in ptx.h.
#include "ptx.h"

#include <cctype>
#include <cstring>
#include <functional>
#include <set>
#include <sstream>
#include <stdexcept>

namespace cudasim {

unsigned tyBits(Ty t) {
  switch (t) {
  case Ty::B8:
  case Ty::U8:
  case Ty::S8:
    return 8;
  case Ty::B16:
  case Ty::U16:
  case Ty::S16:
  case Ty::F16:
  case Ty::BF16:
    return 16;
  case Ty::B32:
  case Ty::U32:
  case Ty::S32:
  case Ty::F32:
  case Ty::F16x2:
  case Ty::BF16x2:
    return 32;
  case Ty::B64:
  case Ty::U64:
  case Ty::S64:
  case Ty::F64:
    return 64;
  case Ty::B128:
    return 128;
  case Ty::Pred:
    return 1;
  default:
    return 0;
  }
}
bool tyIsFloat(Ty t) {
  return t == Ty::F16 || t == Ty::F16x2 || t == Ty::BF16 || t == Ty::BF16x2 ||
         t == Ty::F32 || t == Ty::F64;
}
bool tyIsSigned(Ty t) {
  return t == Ty::S8 || t == Ty::S16 || t == Ty::S32 || t == Ty::S64;
}
const char *tyName(Ty t) {
  static const char *names[] = {
      "none",  "b8",   "b16",    "b32", "b64", "u8",   "u16",
      "u32",   "u64",  "s8",     "s16", "s32", "s64",  "f16",
      "f16x2", "bf16", "bf16x2", "f32", "f64", "pred", "b128"};
  return names[static_cast<int>(t)];
}

namespace {

struct ParseError : std::runtime_error {
  int line;
  ParseError(int l, const std::string &m) : std::runtime_error(m), line(l) {}
};

struct Token {
  std::string s;
  int line;
};

bool identChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' ||
         c == '%' || c == '.';
}

std::vector<Token> tokenize(const std::string &text) {
  std::vector<Token> toks;
  int line = 1;
  size_t i = 0, n = text.size();
  while (i < n) {
    char c = text[i];
    if (c == '\n') {
      ++line;
      ++i;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '/' && i + 1 < n && text[i + 1] == '/') {
      while (i < n && text[i] != '\n')
        ++i;
    } else if (c == '/' && i + 1 < n && text[i + 1] == '*') {
      i += 2;
      while (i + 1 < n && !(text[i] == '*' && text[i + 1] == '/')) {
        if (text[i] == '\n')
          ++line;
        ++i;
      }
      i += 2;
    } else if (c == '"') {
      size_t j = i + 1;
      while (j < n && text[j] != '"')
        ++j;
      toks.push_back({text.substr(i, j + 1 - i), line});
      i = j + 1;
    } else if (identChar(c)) {
      size_t j = i;
      while (j < n) {
        if (identChar(text[j])) {
          ++j;
        } else if (text[j] == ':' && j + 1 < n && text[j + 1] == ':') {
          j += 2;
        } else if ((text[j] == '+' || text[j] == '-') && j > i &&
                   (text[j - 1] == 'e' || text[j - 1] == 'E') &&
                   std::isdigit(static_cast<unsigned char>(text[i])) &&
                   !(text[i] == '0' && i + 1 < n &&
                     (text[i + 1] == 'x' || text[i + 1] == 'X' ||
                      text[i + 1] == 'f' || text[i + 1] == 'F' ||
                      text[i + 1] == 'd' || text[i + 1] == 'D'))) {
          ++j; // exponent sign of a decimal float literal
        } else {
          break;
        }
      }
      toks.push_back({text.substr(i, j - i), line});
      i = j;
    } else {
      toks.push_back({std::string(1, c), line});
      ++i;
    }
  }
  return toks;
}

const std::map<std::string, Ty> &typeNames() {
  static const std::map<std::string, Ty> m = {
      {"b8", Ty::B8},         {"b16", Ty::B16},     {"b32", Ty::B32},
      {"b64", Ty::B64},       {"u8", Ty::U8},       {"u16", Ty::U16},
      {"u32", Ty::U32},       {"u64", Ty::U64},     {"s8", Ty::S8},
      {"s16", Ty::S16},       {"s32", Ty::S32},     {"s64", Ty::S64},
      {"f16", Ty::F16},       {"f16x2", Ty::F16x2}, {"bf16", Ty::BF16},
      {"bf16x2", Ty::BF16x2}, {"f32", Ty::F32},     {"f64", Ty::F64},
      {"pred", Ty::Pred},     {"b128", Ty::B128}};
  return m;
}

const std::map<std::string, Special> &specialNames() {
  static const std::map<std::string, Special> m = {
      {"%tid.x", Special::TidX},
      {"%tid.y", Special::TidY},
      {"%tid.z", Special::TidZ},
      {"%ntid.x", Special::NtidX},
      {"%ntid.y", Special::NtidY},
      {"%ntid.z", Special::NtidZ},
      {"%ctaid.x", Special::CtaidX},
      {"%ctaid.y", Special::CtaidY},
      {"%ctaid.z", Special::CtaidZ},
      {"%nctaid.x", Special::NctaidX},
      {"%nctaid.y", Special::NctaidY},
      {"%nctaid.z", Special::NctaidZ},
      {"%laneid", Special::LaneId},
      {"%warpid", Special::WarpId},
      {"%nwarpid", Special::NWarpId},
      {"%smid", Special::SmId},
      {"%nsmid", Special::NSmId},
      {"%clock", Special::Clock},
      {"%clock64", Special::Clock64},
      {"%globaltimer", Special::GlobalTimer},
      {"%dynamic_smem_size", Special::DynSmem},
      {"%total_smem_size", Special::TotalSmem},
      {"%lanemask_lt", Special::LanemaskLt},
      {"%lanemask_le", Special::LanemaskLe},
      {"%lanemask_eq", Special::LanemaskEq},
      {"%lanemask_ge", Special::LanemaskGe},
      {"%lanemask_gt", Special::LanemaskGt},
      {"%cluster_ctarank", Special::ClusterCtaRank},
      {"%cluster_nctarank", Special::ClusterNCtaRank},
      {"%cluster_ctaid.x", Special::ClusterCtaidX},
      {"%cluster_ctaid.y", Special::ClusterCtaidY},
      {"%cluster_ctaid.z", Special::ClusterCtaidZ},
      {"%cluster_nctaid.x", Special::ClusterNctaidX},
      {"%cluster_nctaid.y", Special::ClusterNctaidY},
      {"%cluster_nctaid.z", Special::ClusterNctaidZ},
      {"%clusterid.x", Special::ClusterIdX},
      {"%clusterid.y", Special::ClusterIdY},
      {"%clusterid.z", Special::ClusterIdZ},
      {"%nclusterid.x", Special::NClusterIdX},
      {"%nclusterid.y", Special::NClusterIdY},
      {"%nclusterid.z", Special::NClusterIdZ},
      {"%is_explicit_cluster", Special::IsExplicitCluster}};
  return m;
}

std::vector<std::string> splitDots(const std::string &s) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == '.') {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  return parts;
}

bool parseInt(const std::string &s, uint64_t &v) {
  if (s.empty())
    return false;
  std::string t = s;
  if (t.back() == 'U' || t.back() == 'u')
    t.pop_back();
  char *end = nullptr;
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X'))
    v = std::strtoull(t.c_str() + 2, &end, 16);
  else if (t.size() > 1 && t[0] == '0' && (t[1] == 'b' || t[1] == 'B'))
    v = std::strtoull(t.c_str() + 2, &end, 2);
  else if (t.size() > 1 && t[0] == '0' &&
           std::isdigit(static_cast<unsigned char>(t[1])))
    v = std::strtoull(t.c_str() + 1, &end, 8);
  else
    v = std::strtoull(t.c_str(), &end, 10);
  return end && *end == 0;
}

// Which registers an instruction reads and writes. Destinations come first,
// except for the instructions that have none.
void collectRegs(const Operand &o, std::vector<int> &out) {
  if (o.kind == Operand::Reg)
    out.push_back(o.reg);
  else if (o.kind == Operand::Addr && o.reg >= 0)
    out.push_back(o.reg);
  for (const Operand &e : o.elems)
    collectRegs(e, out);
}

void classifyRegisters(Inst &inst) {
  bool firstIsDest;
  switch (inst.op) {
  case Op::St:
  case Op::Bra:
  case Op::Ret:
  case Op::Exit:
  case Op::BarSync:
  case Op::BarArrive:
  case Op::BarWarpSync:
  case Op::Trap:
  case Op::Prefetch:
  case Op::PrefetchTensormap:
  case Op::MbarInit:
  case Op::MbarInval:
  case Op::MbarExpectTx:
  case Op::MbarCompleteTx:
  case Op::CpBulkTensorLoad:
  case Op::CpBulkTensorStore:
  case Op::CpBulkLoad:
  case Op::CpBulkStore:
  case Op::CpBulkCommit:
  case Op::CpBulkWait:
  case Op::WgmmaFence:
  case Op::WgmmaCommit:
  case Op::WgmmaWait:
  case Op::SetMaxNReg:
  case Op::Nanosleep:
  case Op::Fence:
  case Op::Membar:
  case Op::FenceProxyAsync:
  case Op::FenceMbarrierInit:
  case Op::Red:
    firstIsDest = false;
    break;
  default:
    firstIsDest = !inst.ops.empty();
  }
  if (inst.guard >= 0)
    inst.srcRegs.push_back(inst.guard);
  for (size_t i = 0; i < inst.ops.size(); ++i) {
    if (i == 0 && firstIsDest) {
      if (inst.ops[0].kind ==
          Operand::Addr) // never for dest-first ops; keep for safety
        collectRegs(inst.ops[0], inst.srcRegs);
      else
        collectRegs(inst.ops[0], inst.dstRegs);
    } else {
      collectRegs(inst.ops[i], inst.srcRegs);
    }
  }
}

struct Scope {
  std::map<std::string, int> regs;
  std::map<std::string, int> ranges; // "%r" -> count, for %r<N>
};

class Parser {
public:
  Parser(const std::vector<Token> &t, Module &m) : toks(t), mod(m) {}
  void run();

private:
  const std::vector<Token> &toks;
  Module &mod;
  size_t pos = 0;
  Kernel *kernel = nullptr;
  std::vector<Scope> scopes;
  // Labels are scoped like registers: one inside an inline-asm `{ }` block is
  // local to it (the same asm body, pasted many times, defines the same
  // labels).
  std::map<std::pair<int, std::string>, int> labels; // (block id, name) -> pc
  std::vector<int> blockIds{0};
  int nextBlockId = 1;
  struct Fixup {
    size_t inst;
    int op;
    std::string name;
    std::vector<int> blocks;
  };
  std::vector<Fixup> labelFixups;
  std::set<std::string> unbackedGlobals; // module-level .global, no storage

  bool atEnd() const { return pos >= toks.size(); }
  const std::string &peek(size_t o = 0) const {
    static const std::string empty;
    return pos + o < toks.size() ? toks[pos + o].s : empty;
  }
  int line() const {
    return pos < toks.size() ? toks[pos].line
                             : (toks.empty() ? 0 : toks.back().line);
  }
  std::string next() {
    if (atEnd())
      throw ParseError(line(), "unexpected end of PTX");
    return toks[pos++].s;
  }
  void expect(const std::string &s) {
    if (peek() != s)
      throw ParseError(line(), "expected '" + s + "', found '" + peek() + "'");
    ++pos;
  }
  void skipStatement() {
    while (!atEnd() && peek() != ";")
      ++pos;
    if (!atEnd())
      ++pos;
  }

  void moduleDirective();
  void entry(bool isFunc);
  void body();
  void regDecl();
  void sharedDecl(std::vector<Symbol> &into);
  void instruction();
  Operand operand(Inst &inst);
  Operand addressOperand(Inst &inst);
  int lookupReg(const std::string &name);
  int declareReg(const std::string &name);
  void decode(Inst &inst, const std::string &opcode);
};

void Parser::run() {
  while (!atEnd())
    moduleDirective();
}

void Parser::moduleDirective() {
  const std::string t = peek();
  if (t == ".version") {
    ++pos;
    std::string v = next();
    mod.version = int(std::stod(v) * 10 + 0.5);
  } else if (t == ".target") {
    ++pos;
    mod.target = next();
    while (peek() == ",") {
      ++pos;
      mod.target += "," + next();
    }
  } else if (t == ".address_size") {
    ++pos;
    if (next() != "64")
      throw ParseError(line(), ".address_size other than 64 is not supported");
  } else if (t == ".visible" || t == ".weak" || t == ".extern" ||
             t == ".entry" || t == ".func" || t == ".shared" ||
             t == ".global" || t == ".const") {
    // Look ahead to classify the declaration.
    size_t p = pos;
    bool isExtern = false;
    while (p < toks.size() &&
           (toks[p].s == ".visible" || toks[p].s == ".weak" ||
            toks[p].s == ".extern")) {
      isExtern |= toks[p].s == ".extern";
      ++p;
    }
    const std::string &kind = p < toks.size() ? toks[p].s : t;
    if (kind == ".entry") {
      pos = p + 1;
      entry(false);
    } else if (kind == ".func") {
      throw ParseError(
          line(),
          ".func (device function calls) is not supported by the emulator");
    } else if (kind == ".shared") {
      pos = p;
      sharedDecl(mod.moduleShared);
      if (isExtern)
        mod.moduleShared.back().isExtern = true;
    } else if (kind == ".global") {
      // A module-scope .global variable (nvcc emits one byte for every
      // constexpr customisation-point object of libcu++ and CuTe). Such
      // variables get no storage here: the declaration is accepted and a
      // kernel that references one is rejected when its label fixups resolve.
      pos = p;
      while (!atEnd() && peek() != ";" && peek() != "=") {
        const std::string &d = next();
        if (d[0] != '.' && !std::isdigit(static_cast<unsigned char>(d[0])) &&
            d != "[" && d != "]")
          unbackedGlobals.insert(d);
      }
      if (peek() == "=")
        throw ParseError(line(),
                         "initialised module-level .global variables are not "
                         "supported");
      expect(";");
    } else {
      throw ParseError(line(),
                       "module-level " + kind + " variables are not supported");
    }
  } else if (t == ";") {
    ++pos;
  } else {
    throw ParseError(line(), "unexpected '" + t + "' at module level");
  }
}

void Parser::sharedDecl(std::vector<Symbol> &into) {
  expect(".shared");
  Symbol s;
  s.space = Space::Shared;
  unsigned elem = 1;
  while (!atEnd() && peek()[0] == '.') {
    std::string d = next();
    if (d == ".align") {
      s.align = unsigned(std::stoul(next()));
    } else {
      auto it = typeNames().find(d.substr(1));
      if (it != typeNames().end())
        elem = std::max(1u, tyBits(it->second) / 8);
    }
  }
  s.name = next();
  s.size = elem;
  if (peek() == "[") {
    ++pos;
    if (peek() == "]") {
      s.size = 0;
      s.isExtern = true;
    } else {
      uint64_t n;
      if (!parseInt(next(), n))
        throw ParseError(line(), "bad array size for " + s.name);
      s.size = n * elem;
    }
    expect("]");
  }
  if (peek() == "=")
    throw ParseError(line(), "initialised .shared variables are not supported");
  expect(";");
  into.push_back(s);
}

void Parser::entry(bool) {
  auto k = std::make_unique<Kernel>();
  kernel = k.get();
  kernel->name = next();
  expect("(");
  unsigned offset = 0;
  while (peek() != ")") {
    expect(".param");
    Param p;
    unsigned elem = 0, count = 1;
    p.align = 0;
    bool pointer = false; // after .ptr, .align is the pointee's alignment
    while (peek()[0] == '.') {
      std::string d = next();
      if (d == ".align") {
        unsigned a = unsigned(std::stoul(next()));
        if (!pointer)
          p.align = a;
      } else if (d == ".ptr") {
        pointer = true;
      } else if (d == ".global" || d == ".shared" || d == ".const" ||
                 d == ".local") {
        // pointer attributes (.ptr.global.align N) carry no layout
      } else {
        auto it = typeNames().find(d.substr(1));
        if (it == typeNames().end())
          throw ParseError(line(), "unknown parameter attribute " + d);
        elem = std::max(1u, tyBits(it->second) / 8);
      }
    }
    p.name = next();
    if (peek() == "[") {
      ++pos;
      uint64_t n;
      if (!parseInt(next(), n))
        throw ParseError(line(), "bad parameter array size");
      count = unsigned(n);
      expect("]");
    }
    p.size = elem * count;
    if (!p.align)
      p.align = elem;
    offset = (offset + p.align - 1) / p.align * p.align;
    p.offset = offset;
    offset += p.size;
    Symbol s;
    s.name = p.name;
    s.space = Space::Param;
    s.size = p.size;
    s.align = p.align;
    s.offset = p.offset;
    kernel->symbols.push_back(s);
    kernel->params.push_back(p);
    if (peek() == ",")
      ++pos;
  }
  expect(")");
  kernel->paramBytes = offset;
  while (peek() != "{") {
    std::string d = next();
    auto nums = [&](unsigned *out, int maxN) {
      int i = 0;
      do {
        if (i && peek() == ",")
          ++pos;
        uint64_t v;
        if (!parseInt(next(), v))
          throw ParseError(line(), "bad number after " + d);
        if (i < maxN)
          out[i] = unsigned(v);
        ++i;
      } while (peek() == ",");
    };
    if (d == ".maxntid" || d == ".reqntid")
      nums(kernel->maxntid, 3);
    else if (d == ".maxnreg")
      nums(&kernel->maxnreg, 1);
    else if (d == ".minnctapersm")
      nums(&kernel->minnctapersm, 1);
    else if (d == ".maxclusterrank" || d == ".reqnctapercluster" ||
             d == ".explicitcluster") {
      unsigned tmp[3];
      if (d != ".explicitcluster")
        nums(tmp, 3);
    } else if (d == ".noreturn" || d == ".pragma") {
      if (d == ".pragma")
        skipStatement();
    } else
      throw ParseError(line(), "unknown kernel directive " + d);
  }
  scopes.clear();
  scopes.emplace_back();
  labels.clear();
  labelFixups.clear();
  blockIds.assign(1, 0);
  nextBlockId = 1;
  expect("{");
  body();
  for (auto &f : labelFixups) {
    Inst &inst = kernel->code[f.inst];
    int target = -1;
    for (auto b = f.blocks.rbegin(); b != f.blocks.rend() && target < 0; ++b) {
      auto it = labels.find({*b, f.name});
      if (it != labels.end())
        target = it->second;
    }
    if (target < 0 && unbackedGlobals.count(f.name))
      throw ParseError(inst.line, "module-level .global variable '" + f.name +
                                      "' is referenced; module-scope global "
                                      "variables are not supported");
    if (target < 0)
      throw ParseError(inst.line, "unknown label or symbol '" + f.name + "'");
    inst.ops[f.op].kind = Operand::Label;
    inst.ops[f.op].imm = uint64_t(target);
  }
  // A final implicit exit, so that falling off the end terminates the thread.
  Inst ret;
  ret.op = Op::Exit;
  ret.text = "<end of kernel>";
  ret.line = line();
  kernel->code.push_back(ret);
  kernel->numRegs = int(kernel->regNames.size());
  for (Inst &inst : kernel->code)
    classifyRegisters(inst);
  for (const Symbol &s : kernel->symbols)
    if (s.space == Space::Shared && !s.isExtern)
      kernel->staticSmem +=
          unsigned((s.size + s.align - 1) / s.align * s.align);
  mod.kernels.push_back(std::move(k));
  kernel = nullptr;
}

int Parser::declareReg(const std::string &name) {
  int idx = int(kernel->regNames.size());
  kernel->regNames.push_back(name);
  scopes.back().regs[name] = idx;
  return idx;
}

int Parser::lookupReg(const std::string &name) {
  for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
    auto r = it->regs.find(name);
    if (r != it->regs.end())
      return r->second;
    size_t d = name.size();
    while (d > 0 && std::isdigit(static_cast<unsigned char>(name[d - 1])))
      --d;
    if (d < name.size() && d > 0) {
      auto rr = it->ranges.find(name.substr(0, d));
      if (rr != it->ranges.end()) {
        uint64_t idx = std::stoull(name.substr(d));
        if (idx < uint64_t(rr->second)) {
          int i = int(kernel->regNames.size());
          kernel->regNames.push_back(name);
          it->regs[name] = i;
          return i;
        }
      }
    }
  }
  return -1;
}

void Parser::regDecl() {
  expect(".reg");
  while (peek()[0] == '.' && peek() != ".")
    ++pos; // type (.b32, .pred, .v2...): registers hold raw bits
  do {
    if (peek() == ",")
      ++pos;
    std::string name = next();
    if (peek() == "<") {
      ++pos;
      uint64_t n;
      if (!parseInt(next(), n))
        throw ParseError(line(), "bad register count");
      expect(">");
      scopes.back().ranges[name] = int(n);
    } else {
      declareReg(name);
    }
  } while (peek() == ",");
  expect(";");
}

void Parser::body() {
  while (true) {
    const std::string t = peek();
    if (t == "}") {
      ++pos;
      if (scopes.size() == 1)
        return;
      scopes.pop_back();
      blockIds.pop_back();
      continue;
    }
    if (t == "{") {
      ++pos;
      scopes.emplace_back();
      blockIds.push_back(nextBlockId++);
      continue;
    }
    if (t == ";") {
      ++pos;
      continue;
    }
    if (t == ".reg") {
      regDecl();
      continue;
    }
    if (t == ".shared") {
      sharedDecl(kernel->symbols);
      continue;
    }
    if (t == ".local")
      throw ParseError(line(),
                       ".local variables (a stack frame) are not supported");
    if (t == ".pragma") {
      skipStatement();
      continue;
    }
    if (peek(1) == ":" && t[0] != '@') {
      if (!labels
               .emplace(std::make_pair(blockIds.back(), t),
                        int(kernel->code.size()))
               .second)
        throw ParseError(line(),
                         "label '" + t + "' defined twice in one block");
      pos += 2;
      continue;
    }
    instruction();
  }
}

Operand Parser::addressOperand(Inst &inst) {
  Operand a;
  a.kind = Operand::Addr;
  bool first = true;
  int64_t offset = 0;
  while (peek() != "]" && peek() != ",") {
    std::string t = next();
    int64_t sign = 1;
    if (t == "+" || t == "-") {
      sign = t == "-" ? -1 : 1;
      t = next();
      if (t == "-") { // "+-4"
        sign = -sign;
        t = next();
      }
    }
    uint64_t v;
    if (parseInt(t, v)) {
      offset += sign * int64_t(v);
    } else if (first) {
      int r = lookupReg(t);
      if (r >= 0) {
        a.reg = r;
      } else {
        int found = -1;
        for (size_t i = 0; i < kernel->symbols.size(); ++i)
          if (kernel->symbols[i].name == t)
            found = int(i);
        if (found < 0)
          for (size_t i = 0; i < mod.moduleShared.size(); ++i)
            if (mod.moduleShared[i].name == t) {
              kernel->symbols.push_back(mod.moduleShared[i]);
              found = int(kernel->symbols.size()) - 1;
            }
        if (found < 0)
          throw ParseError(line(),
                           "unknown register or symbol '" + t + "' in address");
        a.symbol = found;
      }
    } else {
      throw ParseError(line(),
                       "unsupported address expression near '" + t + "'");
    }
    first = false;
  }
  a.imm = uint64_t(offset);
  if (peek() == ",") { // [tensorMap, {c0, c1, ...}]
    ++pos;
    a.elems.push_back(operand(inst));
  }
  expect("]");
  return a;
}

Operand Parser::operand(Inst &inst) {
  Operand o;
  std::string t = next();
  if (t == "{") {
    o.kind = Operand::Vec;
    while (peek() != "}") {
      o.elems.push_back(operand(inst));
      if (peek() == ",")
        ++pos;
    }
    ++pos;
    return o;
  }
  if (t == "[")
    return addressOperand(inst);
  if (t == "!") {
    o = operand(inst);
    o.negate = true;
    return o;
  }
  bool neg = false;
  if (t == "-") {
    neg = true;
    t = next();
  }
  if (t == "_") {
    o.kind = Operand::Sink;
    return o;
  }
  if (std::isdigit(static_cast<unsigned char>(t[0]))) {
    o.kind = Operand::Imm;
    uint64_t v;
    if (t.size() == 10 && (t[1] == 'f' || t[1] == 'F') && t[0] == '0') {
      o.imm = std::stoull(t.substr(2), nullptr, 16);
      o.floatLiteral = true;
      if (neg)
        o.imm ^= 0x80000000u;
    } else if (t.size() == 18 && (t[1] == 'd' || t[1] == 'D') && t[0] == '0') {
      o.imm = std::stoull(t.substr(2), nullptr, 16);
      o.doubleLiteral = true;
      if (neg)
        o.imm ^= 0x8000000000000000ull;
    } else if (parseInt(t, v)) {
      o.imm = neg ? uint64_t(-int64_t(v)) : v;
    } else {
      char *end = nullptr;
      double d = std::strtod(t.c_str(), &end);
      if (!end || *end)
        throw ParseError(line(), "bad number '" + t + "'");
      o.fimm = neg ? -d : d;
      o.doubleLiteral = true;
      double dv = o.fimm;
      std::memcpy(&o.imm, &dv, 8);
    }
    return o;
  }
  auto sp = specialNames().find(t);
  if (sp != specialNames().end()) {
    o.kind = Operand::Special;
    o.special = sp->second;
    return o;
  }
  int r = lookupReg(t);
  if (r >= 0) {
    o.kind = Operand::Reg;
    o.reg = r;
  } else {
    bool isSym = false;
    for (size_t i = 0; i < kernel->symbols.size(); ++i)
      if (kernel->symbols[i].name == t) {
        o.kind = Operand::Symbol;
        o.symbol = int(i);
        isSym = true;
      }
    if (!isSym)
      for (size_t i = 0; i < mod.moduleShared.size(); ++i)
        if (mod.moduleShared[i].name == t) {
          kernel->symbols.push_back(mod.moduleShared[i]);
          o.kind = Operand::Symbol;
          o.symbol = int(kernel->symbols.size()) - 1;
          isSym = true;
        }
    if (!isSym) {
      if (t[0] == '%')
        throw ParseError(line(), "undeclared register '" + t + "'");
      o.kind = Operand::Label; // resolved after the body is parsed
      o.imm = ~0ull;
      labelFixups.push_back(
          {kernel->code.size(), int(inst.ops.size()), t, blockIds});
    }
  }
  if (peek() == "|") { // setp p|q
    ++pos;
    Operand q = operand(inst);
    Operand v;
    v.kind = Operand::Vec;
    v.elems = {o, q};
    return v;
  }
  return o;
}

void Parser::instruction() {
  Inst inst;
  inst.line = line();
  size_t startTok = pos;
  if (peek() == "@") {
    ++pos;
    bool neg = false;
    if (peek() == "!") {
      neg = true;
      ++pos;
    }
    std::string p = next();
    int r = lookupReg(p);
    if (r < 0)
      throw ParseError(line(), "unknown guard predicate " + p);
    inst.guard = r;
    inst.guardNeg = neg;
  }
  std::string opcode = next();
  while (peek() != ";") {
    inst.ops.push_back(operand(inst));
    if (peek() == ",")
      ++pos;
    else if (peek() != ";")
      throw ParseError(line(), "expected ',' or ';' after operand, found '" +
                                   peek() + "'");
  }
  for (size_t i = startTok; i < pos; ++i) {
    if (i > startTok && toks[i].s != "," && toks[i - 1].s != "@" &&
        toks[i - 1].s != "!" && toks[i].s != "]" && toks[i - 1].s != "[" &&
        toks[i].s != "}" && toks[i - 1].s != "{")
      inst.text += ' ';
    inst.text += toks[i].s;
  }
  ++pos; // ';'
  decode(inst, opcode);
  kernel->code.push_back(std::move(inst));
}

void Parser::decode(Inst &inst, const std::string &opcode) {
  auto parts = splitDots(opcode);
  const std::string &base = parts[0];
  std::set<std::string> mods(parts.begin() + 1, parts.end());
  auto has = [&](const char *m) { return mods.count(m) != 0; };
  auto unknown = [&]() {
    throw ParseError(inst.line, "unsupported instruction '" + opcode + "'");
  };
  // Types, in order of appearance.
  std::vector<Ty> types;
  for (size_t i = 1; i < parts.size(); ++i) {
    auto it = typeNames().find(parts[i]);
    if (it != typeNames().end())
      types.push_back(it->second);
  }
  if (!types.empty())
    inst.type = types.back();
  if (types.size() >= 2 && base == "cvt") {
    inst.type = types[0];
    inst.type2 = types[1];
  }
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string &p = parts[i];
    if (p == "global")
      inst.space = Space::Global;
    else if (p == "shared" || p == "shared::cta")
      inst.space = Space::Shared;
    else if (p == "shared::cluster")
      inst.space = Space::SharedCluster;
    else if (p == "param")
      inst.space = Space::Param;
    else if (p == "local")
      inst.space = Space::Local;
    else if (p == "const")
      inst.space = Space::Const;
    else if (p == "v2")
      inst.vec = 2;
    else if (p == "v4")
      inst.vec = 4;
    else if (p == "rn" || p == "rni")
      inst.rounding = 0;
    else if (p == "rz" || p == "rzi")
      inst.rounding = 1;
    else if (p == "rm" || p == "rmi")
      inst.rounding = 2;
    else if (p == "rp" || p == "rpi")
      inst.rounding = 3;
    if (p == "rni" || p == "rzi" || p == "rmi" || p == "rpi")
      inst.rounding += 4;
  }
  inst.ftz = has("ftz");
  inst.sat = has("sat") || has("satfinite");
  inst.approx = has("approx");
  inst.wide = has("wide");
  inst.hi = has("hi");
  inst.lo = has("lo");
  inst.cc = has("cc");
  inst.relu = has("relu");
  static const std::map<std::string, CmpOp> cmps = {
      {"eq", Eq},   {"ne", Ne},   {"lt", Lt},   {"le", Le},   {"gt", Gt},
      {"ge", Ge},   {"lo", Lo},   {"ls", Ls},   {"hi", Hi},   {"hs", Hs},
      {"equ", Equ}, {"neu", Neu}, {"ltu", Ltu}, {"leu", Leu}, {"gtu", Gtu},
      {"geu", Geu}, {"num", Num}, {"nan", Nan}};
  auto need = [&](size_t n) {
    if (inst.ops.size() != n)
      throw ParseError(inst.line, opcode + " expects " + std::to_string(n) +
                                      " operands, got " +
                                      std::to_string(inst.ops.size()));
  };

  static const std::map<std::string, Op> simple = {{"mov", Op::Mov},
                                                   {"selp", Op::Selp},
                                                   {"prmt", Op::Prmt},
                                                   {"add", Op::Add},
                                                   {"sub", Op::Sub},
                                                   {"mul", Op::Mul},
                                                   {"mad", Op::Mad},
                                                   {"div", Op::Div},
                                                   {"rem", Op::Rem},
                                                   {"abs", Op::Abs},
                                                   {"neg", Op::Neg},
                                                   {"min", Op::Min},
                                                   {"max", Op::Max},
                                                   {"and", Op::And},
                                                   {"or", Op::Or},
                                                   {"xor", Op::Xor},
                                                   {"not", Op::Not},
                                                   {"cnot", Op::Cnot},
                                                   {"shl", Op::Shl},
                                                   {"shr", Op::Shr},
                                                   {"popc", Op::Popc},
                                                   {"clz", Op::Clz},
                                                   {"brev", Op::Brev},
                                                   {"bfe", Op::Bfe},
                                                   {"bfi", Op::Bfi},
                                                   {"lop3", Op::Lop3},
                                                   {"fma", Op::Fma},
                                                   {"rcp", Op::Rcp},
                                                   {"sqrt", Op::Sqrt},
                                                   {"rsqrt", Op::Rsqrt},
                                                   {"ex2", Op::Ex2},
                                                   {"lg2", Op::Lg2},
                                                   {"sin", Op::Sin},
                                                   {"cos", Op::Cos},
                                                   {"tanh", Op::Tanh},
                                                   {"copysign", Op::Copysign},
                                                   {"cvta", Op::Cvta},
                                                   {"cvt", Op::Cvt},
                                                   {"ld", Op::Ld},
                                                   {"ldu", Op::Ld},
                                                   {"st", Op::St},
                                                   {"bra", Op::Bra},
                                                   {"ret", Op::Ret},
                                                   {"exit", Op::Exit},
                                                   {"trap", Op::Trap},
                                                   {"membar", Op::Membar},
                                                   {"nanosleep", Op::Nanosleep},
                                                   {"testp", Op::Testp}};

  if (base == "setp" || base == "set") {
    inst.op = base == "setp" ? Op::Setp : Op::Set;
    for (size_t i = 1; i < parts.size(); ++i) {
      auto c = cmps.find(parts[i]);
      if (c != cmps.end() && i == 1)
        inst.cmp = c->second;
      if (parts[i] == "and")
        inst.boolOp = 1;
      if (parts[i] == "or")
        inst.boolOp = 2;
      if (parts[i] == "xor")
        inst.boolOp = 3;
    }
    if (cmps.find(parts.size() > 1 ? parts[1] : "") == cmps.end())
      unknown();
    if (base == "set" && types.size() >= 2)
      inst.type = types[1], inst.type2 = types[0]; // set.cmp.dtype.stype
    return;
  }
  if (base == "prmt" && parts.size() > 2)
    throw ParseError(inst.line,
                     "prmt modes other than the default are not supported: " +
                         opcode);
  if (base == "shf") {
    inst.op = Op::Shf;
    inst.mode = (has("l") ? 0 : 1) | (has("wrap") ? 2 : 0);
    return;
  }
  if (base == "shfl") {
    inst.op = Op::Shfl;
    inst.collective = true;
    if (!has("sync"))
      throw ParseError(inst.line,
                       "shfl without .sync is not supported on sm_90");
    inst.mode = has("up")     ? 0
                : has("down") ? 1
                : has("bfly") ? 2
                : has("idx")  ? 3
                              : 9;
    if (inst.mode == 9)
      unknown();
    return;
  }
  if (base == "vote") {
    inst.op = Op::Vote;
    inst.collective = true;
    inst.mode = has("all")      ? 0
                : has("any")    ? 1
                : has("uni")    ? 2
                : has("ballot") ? 3
                                : 9;
    if (inst.mode == 9 || !has("sync"))
      unknown();
    return;
  }
  if (base == "elect") {
    inst.op = Op::Elect;
    inst.collective = true;
    return;
  }
  if (base == "atom" || base == "red") {
    inst.op = base == "atom" ? Op::Atom : Op::Red;
    static const char *ops[] = {"add", "min", "max", "exch", "cas",
                                "and", "or",  "xor", "inc",  "dec"};
    inst.mode = 255;
    for (int i = 0; i < 10; ++i)
      if (has(ops[i]))
        inst.mode = uint8_t(i);
    if (inst.mode == 255)
      unknown();
    return;
  }
  if (base == "bar" || base == "barrier") {
    if (has("warp") && has("sync")) {
      inst.op = Op::BarWarpSync;
      inst.collective = true;
    } else if (has("arrive"))
      inst.op = Op::BarArrive;
    else if (has("red"))
      inst.op = Op::BarRed;
    else if (has("sync") || parts.size() == 1 ||
             (base == "barrier" && parts.size() <= 3))
      inst.op = Op::BarSync;
    else
      unknown();
    if (inst.op == Op::BarRed)
      throw ParseError(inst.line, "bar.red is not supported by the emulator");
    return;
  }
  if (base == "fence") {
    if (has("proxy") && has("async")) {
      inst.op = Op::FenceProxyAsync;
      inst.mode = has("global") ? 1 : 0; // 1: orders only global memory
    } else if (has("mbarrier_init"))
      inst.op = Op::FenceMbarrierInit;
    else if (has("proxy") && has("tensormap"))
      inst.op = Op::Fence;
    else
      inst.op = Op::Fence;
    return;
  }
  if (base == "prefetch" || base == "prefetchu") {
    inst.op = has("tensormap") ? Op::PrefetchTensormap : Op::Prefetch;
    return;
  }
  if (base == "mbarrier") {
    if (parts.size() < 2)
      unknown();
    const std::string &what = parts[1];
    if (what == "init")
      inst.op = Op::MbarInit;
    else if (what == "inval")
      inst.op = Op::MbarInval;
    else if (what == "arrive" && has("expect_tx"))
      inst.op = Op::MbarArrive, inst.mode = 1;
    else if (what == "arrive")
      inst.op = Op::MbarArrive;
    else if (what == "arrive_drop")
      inst.op = Op::MbarArriveDrop, inst.mode = has("expect_tx") ? 1 : 0;
    else if (what == "expect_tx")
      inst.op = Op::MbarExpectTx;
    else if (what == "complete_tx")
      inst.op = Op::MbarCompleteTx;
    else if (what == "test_wait")
      inst.op = Op::MbarTestWait;
    else if (what == "try_wait")
      inst.op = Op::MbarTryWait;
    else if (what == "pending_count")
      inst.op = Op::MbarPendingCount;
    else
      unknown();
    inst.parity = has("parity");
    if (has("noComplete"))
      throw ParseError(inst.line, "mbarrier .noComplete is not supported");
    return;
  }
  if (base == "cp") {
    if (parts.size() >= 3 && parts[1] == "async" && parts[2] == "bulk") {
      if (has("commit_group")) {
        inst.op = Op::CpBulkCommit;
        return;
      }
      if (has("wait_group")) {
        inst.op = Op::CpBulkWait;
        return;
      }
      bool tensor = has("tensor");
      if (has("prefetch")) {
        // cp.async.bulk.prefetch[.tensor.Nd].L2.global: a hint to bring data
        // into L2, with no effect on memory; caches are not modelled.
        if (!has("L2") || !has("global"))
          unknown();
        inst.op = Op::Prefetch;
        return;
      }
      if (has("multicast::cluster"))
        throw ParseError(
            inst.line,
            "cluster multicast is not modelled (one CTA per cluster)");
      if (has("im2col") || has("im2col::w") || has("tile::gather4") ||
          has("tile::scatter4"))
        throw ParseError(inst.line,
                         "only the .tile TMA mode is modelled: " + opcode);
      // Destination space first: cp.async.bulk[.tensor.Nd].dst.src
      size_t i = tensor ? 5 : 3;
      if (tensor) {
        if (parts.size() < 5 || parts[4].size() != 2 || parts[4][1] != 'd')
          unknown();
        inst.mode = uint8_t(parts[4][0] - '0');
        if (inst.mode < 1 || inst.mode > 5)
          unknown();
      }
      if (parts.size() <= i)
        unknown();
      bool toShared = parts[i].rfind("shared", 0) == 0;
      if (toShared)
        inst.op = tensor ? Op::CpBulkTensorLoad : Op::CpBulkLoad;
      else if (parts[i] == "global")
        inst.op = tensor ? Op::CpBulkTensorStore : Op::CpBulkStore;
      else
        unknown();
      if (parts.size() > i + 1 && parts[i + 1] != "global" && toShared)
        throw ParseError(inst.line,
                         "bulk copy shared -> shared is not supported: " +
                             opcode);
      if (has("reduce") || has("add") || has("min") || has("max"))
        throw ParseError(inst.line,
                         "bulk reductions are not supported: " + opcode);
      return;
    }
    unknown();
  }
  if (base == "wgmma") {
    if (has("fence"))
      inst.op = Op::WgmmaFence;
    else if (has("commit_group"))
      inst.op = Op::WgmmaCommit;
    else if (has("wait_group"))
      inst.op = Op::WgmmaWait;
    else if (has("mma_async"))
      inst.op = Op::WgmmaMma;
    else
      unknown();
    if (inst.op == Op::WgmmaMma) {
      if (has("sp"))
        throw ParseError(inst.line, "sparse wgmma is not supported");
      inst.collective = true;
      for (auto &p : parts)
        if (p.size() > 3 && p[0] == 'm' &&
            std::isdigit(static_cast<unsigned char>(p[1]))) {
          if (std::sscanf(p.c_str(), "m%un%uk%u", &inst.m, &inst.n, &inst.k) !=
              3)
            unknown();
        }
      if (types.size() != 3)
        throw ParseError(inst.line,
                         "wgmma: expected .dtype.atype.btype in " + opcode);
      inst.type = types[0];
      inst.atype = types[1];
      inst.btype = types[2];
      if (inst.m != 64 || inst.k != 16 || inst.n % 8 || inst.n < 8 ||
          inst.n > 256)
        throw ParseError(inst.line, "wgmma shape not modelled: " + opcode +
                                        " (m64nNk16 with 16-bit inputs only)");
      if (inst.type != Ty::F32 ||
          !((inst.atype == Ty::BF16 && inst.btype == Ty::BF16) ||
            (inst.atype == Ty::F16 && inst.btype == Ty::F16)))
        throw ParseError(inst.line, "wgmma types not modelled: " + opcode +
                                        " (f32 += bf16*bf16 or f16*f16 only)");
      if (inst.ops.size() < 2)
        unknown();
      inst.rsForm = inst.ops[1].kind == Operand::Vec;
      size_t expected = inst.rsForm ? 7 : 8;
      if (inst.ops.size() != expected)
        throw ParseError(inst.line, "wgmma: expected " +
                                        std::to_string(expected) + " operands");
      if (inst.ops[0].kind != Operand::Vec ||
          inst.ops[0].elems.size() != inst.n / 2)
        throw ParseError(inst.line,
                         "wgmma: D must be a vector of N/2 registers");
      if (inst.rsForm && inst.ops[1].elems.size() != 4)
        throw ParseError(inst.line,
                         "wgmma: the register A operand must be 4 registers");
    }
    return;
  }
  if (base == "mapa") {
    // mapa[.shared::cluster].u32/.u64 d, a, rank: the address of the
    // variable at `a` in the CTA of the cluster with that rank.
    inst.op = Op::Mapa;
    if (inst.type != Ty::U32 && inst.type != Ty::U64)
      unknown();
    need(3);
    return;
  }
  if (base == "ldmatrix" || base == "stmatrix") {
    // {ld,st}matrix.sync.aligned.m8n8.x{1,2,4}{.trans}{.shared{::cta}}.b16:
    // mode = the number of matrices, +8 with .trans.
    inst.op = base == "ldmatrix" ? Op::Ldmatrix : Op::Stmatrix;
    inst.collective = true;
    if (!has("sync") || !has("aligned") || !has("m8n8") || inst.type != Ty::B16)
      throw ParseError(inst.line,
                       "only " + base +
                           ".sync.aligned.m8n8.b16 is modelled: " + opcode);
    unsigned num = has("x1") ? 1 : has("x2") ? 2 : has("x4") ? 4 : 0;
    if (!num)
      unknown();
    if (inst.space != Space::Generic && inst.space != Space::Shared)
      unknown();
    inst.mode = uint8_t(num | (has("trans") ? 8 : 0));
    need(2);
    const Operand &regs = inst.ops[inst.op == Op::Ldmatrix ? 0 : 1];
    const Operand &addr = inst.ops[inst.op == Op::Ldmatrix ? 1 : 0];
    if (addr.kind != Operand::Addr ||
        (num == 1 ? regs.kind != Operand::Reg && regs.kind != Operand::Vec
                  : regs.kind != Operand::Vec) ||
        (regs.kind == Operand::Vec && regs.elems.size() != num))
      throw ParseError(inst.line, base + ": expected " + std::to_string(num) +
                                      " registers and an address");
    return;
  }
  if (base == "setmaxnreg") {
    inst.op = Op::SetMaxNReg;
    inst.collective = true;
    inst.mode = has("inc") ? 1 : has("dec") ? 2 : 0;
    if (!inst.mode)
      unknown();
    need(1);
    return;
  }
  auto it = simple.find(base);
  if (it == simple.end())
    unknown();
  inst.op = it->second;
  if (inst.op == Op::Cvta)
    inst.mode = has("to") ? 1 : 0;
  if (inst.op == Op::Testp) {
    inst.mode = has("finite")       ? 0
                : has("infinite")   ? 1
                : has("number")     ? 2
                : has("notanumber") ? 3
                : has("normal")     ? 4
                : has("subnormal")  ? 5
                                    : 9;
    if (inst.mode == 9)
      unknown();
  }
  if (inst.op == Op::Min || inst.op == Op::Max)
    inst.mode = has("NaN") ? 1 : 0;
  if (inst.op == Op::Mul || inst.op == Op::Mad) {
    if (!tyIsFloat(inst.type) && !inst.hi && !inst.lo && !inst.wide &&
        inst.type != Ty::None)
      throw ParseError(inst.line,
                       opcode + ": integer mul/mad needs .lo, .hi or .wide");
  }
  if ((inst.op == Op::Fma || inst.op == Op::Mad) && tyIsFloat(inst.type))
    inst.op = Op::Fma;
  if (inst.op == Op::Ld || inst.op == Op::St) {
    if (inst.type == Ty::B128)
      throw ParseError(inst.line, ".b128 loads/stores are not supported");
  }
  if (inst.type == Ty::F16x2 || inst.type == Ty::BF16x2 ||
      ((inst.type == Ty::F16 || inst.type == Ty::BF16) && inst.op != Op::Cvt &&
       inst.op != Op::Ld && inst.op != Op::St && inst.op != Op::Mov)) {
    // Packed / 16-bit float arithmetic: supported for the common ops in exec.
  }
}

} // namespace

bool parseModule(const std::string &text, Module &out, std::string &error) {
  try {
    auto toks = tokenize(text);
    Parser p(toks, out);
    p.run();
  } catch (const ParseError &e) {
    error = "line " + std::to_string(e.line) + ": " + e.what();
    return false;
  } catch (const std::exception &e) {
    error = std::string("PTX parse error: ") + e.what();
    return false;
  }
  if (out.kernels.empty()) {
    error = "no .entry in the PTX module";
    return false;
  }
  return true;
}

} // namespace cudasim
