//===- NpyFormat.cpp - numpy .npy files, read as numpy reads them ---------===//

#include "attnfuse/Support/NpyFormat.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <limits>
#include <optional>

using namespace attnfuse::npy;

namespace {

/// The Python literal values a .npy header dictionary holds.
struct Literal {
  enum class Kind { String, Int, Bool, Tuple } kind = Kind::Int;
  std::string string;
  int64_t integer = 0;
  bool boolean = false;
  std::vector<Literal> elements;
};

/// A recursive-descent parser of the part of Python's literal syntax that a
/// .npy header can use: a dict of str keys whose values are str, int, bool or
/// (flat) tuples. Everything else, which numpy would reject after evaluating
/// it, is rejected here while parsing.
class HeaderParser {
public:
  explicit HeaderParser(const std::string &text) : text(text) {}

  /// Parses the whole header as one dict; keys in document order, repeated
  /// keys keep their last value (a Python dict display).
  bool parseDict(std::vector<std::pair<std::string, Literal>> &entries) {
    skipSpace();
    if (!consume('{'))
      return fail("the header is not a Python dict literal");
    skipSpace();
    while (!consume('}')) {
      Literal key;
      if (!parseValue(key, /*depth=*/0))
        return false;
      if (key.kind != Literal::Kind::String)
        return fail("dict keys must be strings");
      skipSpace();
      if (!consume(':'))
        return fail("expected ':' after the key '" + key.string + "'");
      Literal value;
      if (!parseValue(value, /*depth=*/0))
        return false;
      bool replaced = false;
      for (auto &entry : entries)
        if (entry.first == key.string) {
          entry.second = value;
          replaced = true;
        }
      if (!replaced)
        entries.emplace_back(key.string, value);
      skipSpace();
      if (consume(','))
        skipSpace();
      else if (!peek('}'))
        return fail("expected ',' or '}' in the dict");
    }
    skipSpace();
    if (pos != text.size())
      return fail("unexpected text after the dict");
    return true;
  }

  std::string error;

private:
  const std::string &text;
  size_t pos = 0;

  bool fail(const std::string &message) {
    error = message + " (at byte " + std::to_string(pos) + " of the header)";
    return false;
  }
  bool peek(char c) const { return pos < text.size() && text[pos] == c; }
  bool consume(char c) {
    if (!peek(c))
      return false;
    ++pos;
    return true;
  }
  void skipSpace() {
    while (pos < text.size() && std::strchr(" \t\n\r\f\v", text[pos]) &&
           text[pos] != '\0')
      ++pos;
  }

  bool parseValue(Literal &out, int depth) {
    skipSpace();
    if (pos >= text.size())
      return fail("unexpected end of the header");
    char c = text[pos];
    if (c == '\'' || c == '"')
      return parseString(out);
    if (c == '(')
      return parseTuple(out, depth);
    if (c == '-' || c == '+' || (c >= '0' && c <= '9'))
      return parseInt(out);
    if (text.compare(pos, 4, "True") == 0 || text.compare(pos, 5, "False") == 0) {
      bool value = text[pos] == 'T';
      size_t end = pos + (value ? 4 : 5);
      if (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) ||
                                text[end] == '_'))
        return fail("unsupported name in the header");
      out.kind = Literal::Kind::Bool;
      out.boolean = value;
      pos = end;
      return true;
    }
    return fail(std::string("unsupported value starting with '") + c + "'");
  }

  bool parseString(Literal &out) {
    char quote = text[pos++];
    out.kind = Literal::Kind::String;
    while (pos < text.size() && text[pos] != quote) {
      // dtype strings and key names have no escapes or line breaks.
      if (text[pos] == '\\' || text[pos] == '\n')
        return fail("unsupported character in a string");
      out.string += text[pos++];
    }
    if (!consume(quote))
      return fail("unterminated string");
    return true;
  }

  bool parseInt(Literal &out) {
    // ast.literal_eval takes one sign in front of a number, not "--3".
    bool negative = peek('-');
    if (peek('-') || peek('+')) {
      ++pos;
      skipSpace();
    }
    size_t start = pos;
    uint64_t magnitude = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (magnitude > (std::numeric_limits<uint64_t>::max() - 9) / 10)
        return fail("integer too large");
      magnitude = magnitude * 10 + uint64_t(text[pos] - '0');
      ++pos;
    }
    if (pos == start)
      return fail("expected an integer");
    // Python 3 has no octal "010" (a syntax error), but "00" is zero.
    if (text[start] == '0' && magnitude != 0)
      return fail("integer with a leading zero");
    if (pos < text.size() && (std::isalnum(static_cast<unsigned char>(text[pos])) ||
                              text[pos] == '_' || text[pos] == '.'))
      return fail("unsupported number syntax");
    if (magnitude > uint64_t(std::numeric_limits<int64_t>::max()))
      return fail("integer too large");
    out.kind = Literal::Kind::Int;
    out.integer = negative ? -int64_t(magnitude) : int64_t(magnitude);
    return true;
  }

  /// `()`, `(x,)`, `(x, y)`, `(x, y,)`; `(x)` is x itself.
  bool parseTuple(Literal &out, int depth) {
    if (depth > 8)
      return fail("nested too deeply");
    ++pos; // (
    skipSpace();
    std::vector<Literal> elements;
    bool sawComma = false;
    while (!consume(')')) {
      Literal element;
      if (!parseValue(element, depth + 1))
        return false;
      elements.push_back(std::move(element));
      skipSpace();
      if (consume(',')) {
        sawComma = true;
        skipSpace();
      } else if (!peek(')')) {
        return fail("expected ',' or ')' in a tuple");
      }
    }
    if (elements.size() == 1 && !sawComma) {
      out = std::move(elements[0]);
      return true;
    }
    out.kind = Literal::Kind::Tuple;
    out.elements = std::move(elements);
    return true;
  }
};

/// Bytes per element of a supported little-endian (or byte-order-free)
/// descr, nullopt otherwise.
std::optional<size_t> itemSizeOf(const std::string &descr) {
  if (descr.size() < 2)
    return std::nullopt;
  size_t at = 0;
  char order = descr[0];
  if (order == '<' || order == '=' || order == '|' || order == '>')
    at = 1;
  std::string code = descr.substr(at);
  static const struct {
    const char *code;
    size_t size;
  } kinds[] = {{"b1", 1}, {"i1", 1}, {"u1", 1}, {"i2", 2}, {"u2", 2},
               {"f2", 2}, {"i4", 4}, {"u4", 4}, {"f4", 4}, {"i8", 8},
               {"u8", 8}, {"f8", 8}};
  for (const auto &kind : kinds) {
    if (code != kind.code)
      continue;
    // '|' means "no byte order": numpy writes it for single bytes only.
    if (order == '|' && kind.size > 1)
      return std::nullopt;
    return kind.size;
  }
  return std::nullopt;
}

} // namespace

bool attnfuse::npy::parseNpyHeader(const std::string &header, NpyArray &out,
                                   bool &fortranOrder, std::string &error) {
  HeaderParser parser(header);
  std::vector<std::pair<std::string, Literal>> entries;
  if (!parser.parseDict(entries)) {
    error = "malformed .npy header: " + parser.error;
    return false;
  }
  const Literal *descr = nullptr, *fortran = nullptr, *shape = nullptr;
  for (const auto &[key, value] : entries) {
    if (key == "descr")
      descr = &value;
    else if (key == "fortran_order")
      fortran = &value;
    else if (key == "shape")
      shape = &value;
    else {
      error = "malformed .npy header: unexpected key '" + key +
              "' (the keys are 'descr', 'fortran_order' and 'shape')";
      return false;
    }
  }
  if (!descr || !fortran || !shape) {
    error = std::string("malformed .npy header: no '") +
            (!descr ? "descr" : !fortran ? "fortran_order" : "shape") + "' key";
    return false;
  }
  if (descr->kind != Literal::Kind::String) {
    error = "malformed .npy header: 'descr' is not a string";
    return false;
  }
  std::optional<size_t> itemSize = itemSizeOf(descr->string);
  if (!itemSize) {
    error = "unsupported dtype '" + descr->string + "'";
    return false;
  }
  // numpy checks isinstance(fortran_order, bool): 0 and 1 are rejected.
  if (fortran->kind != Literal::Kind::Bool) {
    error = "malformed .npy header: 'fortran_order' is not True or False";
    return false;
  }
  if (shape->kind != Literal::Kind::Tuple) {
    error = "malformed .npy header: 'shape' is not a tuple";
    return false;
  }
  out.shape.clear();
  for (const Literal &dim : shape->elements) {
    // (True, 2) passes numpy's header check but not the array constructor.
    if (dim.kind != Literal::Kind::Int) {
      error = "malformed .npy header: 'shape' holds a non-integer";
      return false;
    }
    int64_t size = dim.integer;
    if (size < 0) {
      error = "malformed .npy header: negative dimension " +
              std::to_string(size) + " in 'shape'";
      return false;
    }
    out.shape.push_back(size);
  }
  out.descr = descr->string;
  out.itemSize = *itemSize;
  out.bigEndian = descr->string[0] == '>' && *itemSize > 1;
  // The array is handed out little-endian (parseNpy swaps the bytes).
  if (out.bigEndian)
    out.descr[0] = '<';
  fortranOrder = fortran->boolean;
  return true;
}

bool attnfuse::npy::parseNpy(const char *bytes, size_t size, NpyArray &out,
                             std::string &error) {
  static const char magic[] = "\x93NUMPY";
  if (!bytes || size < 10 || std::memcmp(bytes, magic, 6) != 0) {
    error = "not a .npy file (bad magic)";
    return false;
  }
  auto byteAt = [&](size_t i) { return size_t(static_cast<uint8_t>(bytes[i])); };
  size_t major = byteAt(6), minor = byteAt(7);
  size_t headerLength, headerStart;
  if (major == 1 && minor == 0) {
    headerLength = byteAt(8) | byteAt(9) << 8;
    headerStart = 10;
  } else if ((major == 2 || major == 3) && minor == 0) {
    if (size < 12) {
      error = "truncated .npy header";
      return false;
    }
    headerLength = byteAt(8) | byteAt(9) << 8 | byteAt(10) << 16 | byteAt(11) << 24;
    headerStart = 12;
  } else {
    error = "unsupported .npy format version " + std::to_string(major) + "." +
            std::to_string(minor);
    return false;
  }
  if (headerLength > kMaxHeaderSize) {
    error = "the .npy header is " + std::to_string(headerLength) +
            " bytes, more than the " + std::to_string(kMaxHeaderSize) +
            " numpy reads";
    return false;
  }
  if (size - headerStart < headerLength) {
    error = "truncated .npy header";
    return false;
  }
  std::string header(bytes + headerStart, headerLength);
  bool fortranOrder = false;
  if (!parseNpyHeader(header, out, fortranOrder, error))
    return false;

  uint64_t count = 1, needed = 0;
  for (int64_t dim : out.shape)
    if (__builtin_mul_overflow(count, uint64_t(dim), &count)) {
      error = "the shape of the .npy array is too large";
      return false;
    }
  if (__builtin_mul_overflow(count, uint64_t(out.itemSize), &needed) ||
      needed > uint64_t(std::numeric_limits<int64_t>::max())) {
    error = "the shape of the .npy array is too large";
    return false;
  }
  size_t dataStart = headerStart + headerLength;
  if (size - dataStart < needed) {
    error = "the .npy file holds " + std::to_string(size - dataStart) +
            " data bytes, its shape needs " + std::to_string(needed);
    return false;
  }
  const char *data = bytes + dataStart;
  size_t rank = out.shape.size();
  auto toLittleEndian = [&] {
    if (out.bigEndian)
      for (size_t at = 0; at < out.data.size(); at += out.itemSize)
        std::reverse(out.data.begin() + at, out.data.begin() + at + out.itemSize);
    out.bigEndian = false;
  };
  if (!fortranOrder || rank < 2 || count == 0) {
    out.data.assign(data, data + needed);
    toLittleEndian();
    return true;
  }
  // Fortran order: the first index varies fastest. Walk the C-order indices
  // and keep the Fortran offset in step.
  out.data.resize(needed);
  std::vector<uint64_t> fortranStride(rank, 1);
  for (size_t i = 1; i < rank; ++i)
    fortranStride[i] = fortranStride[i - 1] * uint64_t(out.shape[i - 1]);
  std::vector<int64_t> index(rank, 0);
  uint64_t source = 0;
  for (uint64_t n = 0; n < count; ++n) {
    std::memcpy(out.data.data() + n * out.itemSize,
                data + source * out.itemSize, out.itemSize);
    for (size_t i = rank; i-- > 0;) {
      source += fortranStride[i];
      if (++index[i] < out.shape[i])
        break;
      source -= fortranStride[i] * uint64_t(out.shape[i]);
      index[i] = 0;
    }
  }
  toLittleEndian();
  return true;
}

std::string attnfuse::npy::writeNpy(const NpyArray &array) {
  std::string shape;
  for (size_t i = 0; i < array.shape.size(); ++i)
    shape += (i ? ", " : "") + std::to_string(array.shape[i]);
  if (array.shape.size() == 1)
    shape += ","; // a 1-tuple
  std::string header = "{'descr': '" + array.descr +
                       "', 'fortran_order': False, 'shape': (" + shape + "), }";
  // Pad with spaces and end with a newline so that the data starts at a
  // multiple of 64 bytes.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string file = "\x93NUMPY";
  file += char(1);
  file += char(0);
  file += char(header.size() & 0xff);
  file += char((header.size() >> 8) & 0xff);
  file += header;
  file.append(array.data.data(), array.data.size());
  return file;
}
