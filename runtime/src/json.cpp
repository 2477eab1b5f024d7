#include "json.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace afr {

const Json *Json::get(const std::string &key) const {
  if (type != Type::Object)
    return nullptr;
  for (const auto &kv : object)
    if (kv.first == key)
      return &kv.second;
  return nullptr;
}

static void dumpString(const std::string &s, std::string &out) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    case '\b': out += "\\b"; break;
    case '\f': out += "\\f"; break;
    default:
      if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out += static_cast<char>(c);
      }
    }
  }
  out += '"';
}

static void dumpValue(const Json &v, std::string &out) {
  switch (v.type) {
  case Json::Type::Null: out += "null"; break;
  case Json::Type::Bool: out += v.boolean ? "true" : "false"; break;
  case Json::Type::Number:
    if (v.isInteger) {
      out += std::to_string(v.integer);
    } else {
      char buf[40];
      std::snprintf(buf, sizeof buf, "%.17g", v.number);
      out += buf;
    }
    break;
  case Json::Type::String: dumpString(v.string, out); break;
  case Json::Type::Array:
    out += '[';
    for (size_t i = 0; i < v.array.size(); ++i) {
      if (i)
        out += ',';
      dumpValue(v.array[i], out);
    }
    out += ']';
    break;
  case Json::Type::Object:
    out += '{';
    for (size_t i = 0; i < v.object.size(); ++i) {
      if (i)
        out += ',';
      dumpString(v.object[i].first, out);
      out += ':';
      dumpValue(v.object[i].second, out);
    }
    out += '}';
    break;
  }
}

std::string Json::dump() const {
  std::string out;
  dumpValue(*this, out);
  return out;
}

namespace {

class Parser {
public:
  explicit Parser(const std::string &text) : s(text) {}

  bool run(Json &out, std::string &error) {
    skipWs();
    if (!value(out, 0))
      return fail(error);
    skipWs();
    if (pos != s.size()) {
      err = "unexpected text after the JSON value";
      return fail(error);
    }
    return true;
  }

private:
  const std::string &s;
  size_t pos = 0;
  std::string err;

  bool fail(std::string &error) {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos && i < s.size(); ++i) {
      if (s[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    error = "line " + std::to_string(line) + " column " + std::to_string(col) + ": " + err;
    return false;
  }

  void skipWs() {
    while (pos < s.size() &&
           (s[pos] == ' ' || s[pos] == '\t' || s[pos] == '\n' || s[pos] == '\r'))
      ++pos;
  }

  bool expectWord(const char *w) {
    size_t n = std::strlen(w);
    if (s.compare(pos, n, w) != 0) {
      err = std::string("invalid literal (expected '") + w + "')";
      return false;
    }
    pos += n;
    return true;
  }

  bool value(Json &out, int depth) {
    if (depth > 200) {
      err = "nesting too deep";
      return false;
    }
    if (pos >= s.size()) {
      err = "unexpected end of input";
      return false;
    }
    char c = s[pos];
    if (c == '{')
      return objectValue(out, depth);
    if (c == '[')
      return arrayValue(out, depth);
    if (c == '"') {
      out.type = Json::Type::String;
      return stringValue(out.string);
    }
    if (c == 't') {
      out.type = Json::Type::Bool;
      out.boolean = true;
      return expectWord("true");
    }
    if (c == 'f') {
      out.type = Json::Type::Bool;
      out.boolean = false;
      return expectWord("false");
    }
    if (c == 'n') {
      out.type = Json::Type::Null;
      return expectWord("null");
    }
    if (c == '-' || (c >= '0' && c <= '9'))
      return numberValue(out);
    err = std::string("unexpected character '") + c + "'";
    return false;
  }

  bool objectValue(Json &out, int depth) {
    out.type = Json::Type::Object;
    ++pos; // {
    skipWs();
    if (pos < s.size() && s[pos] == '}') {
      ++pos;
      return true;
    }
    while (true) {
      skipWs();
      if (pos >= s.size() || s[pos] != '"') {
        err = "expected a string key";
        return false;
      }
      std::string key;
      if (!stringValue(key))
        return false;
      skipWs();
      if (pos >= s.size() || s[pos] != ':') {
        err = "expected ':'";
        return false;
      }
      ++pos;
      skipWs();
      Json member;
      if (!value(member, depth + 1))
        return false;
      out.object.emplace_back(std::move(key), std::move(member));
      skipWs();
      if (pos < s.size() && s[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < s.size() && s[pos] == '}') {
        ++pos;
        return true;
      }
      err = "expected ',' or '}'";
      return false;
    }
  }

  bool arrayValue(Json &out, int depth) {
    out.type = Json::Type::Array;
    ++pos; // [
    skipWs();
    if (pos < s.size() && s[pos] == ']') {
      ++pos;
      return true;
    }
    while (true) {
      skipWs();
      Json element;
      if (!value(element, depth + 1))
        return false;
      out.array.push_back(std::move(element));
      skipWs();
      if (pos < s.size() && s[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < s.size() && s[pos] == ']') {
        ++pos;
        return true;
      }
      err = "expected ',' or ']'";
      return false;
    }
  }

  static void appendUtf8(uint32_t cp, std::string &out) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  bool hex4(uint32_t &v) {
    if (pos + 4 > s.size()) {
      err = "truncated \\u escape";
      return false;
    }
    v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = s[pos++];
      v <<= 4;
      if (c >= '0' && c <= '9')
        v |= c - '0';
      else if (c >= 'a' && c <= 'f')
        v |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        v |= c - 'A' + 10;
      else {
        err = "invalid \\u escape";
        return false;
      }
    }
    return true;
  }

  bool stringValue(std::string &out) {
    ++pos; // opening quote
    while (true) {
      if (pos >= s.size()) {
        err = "unterminated string";
        return false;
      }
      char c = s[pos++];
      if (c == '"')
        return true;
      if (static_cast<unsigned char>(c) < 0x20) {
        err = "control character in string";
        --pos;
        return false;
      }
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos >= s.size()) {
        err = "unterminated string";
        return false;
      }
      char e = s[pos++];
      switch (e) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '/': out += '/'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        uint32_t cp;
        if (!hex4(cp))
          return false;
        if (cp >= 0xD800 && cp < 0xDC00 && pos + 1 < s.size() && s[pos] == '\\' &&
            s[pos + 1] == 'u') {
          pos += 2;
          uint32_t lo;
          if (!hex4(lo))
            return false;
          if (lo >= 0xDC00 && lo < 0xE000)
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        appendUtf8(cp, out);
        break;
      }
      default:
        err = std::string("invalid escape '\\") + e + "'";
        return false;
      }
    }
  }

  bool numberValue(Json &out) {
    size_t start = pos;
    bool integral = true;
    if (s[pos] == '-')
      ++pos;
    if (pos >= s.size() || !(s[pos] >= '0' && s[pos] <= '9')) {
      err = "invalid number";
      return false;
    }
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9')
      ++pos;
    if (pos < s.size() && s[pos] == '.') {
      integral = false;
      ++pos;
      if (pos >= s.size() || !(s[pos] >= '0' && s[pos] <= '9')) {
        err = "invalid number";
        return false;
      }
      while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9')
        ++pos;
    }
    if (pos < s.size() && (s[pos] == 'e' || s[pos] == 'E')) {
      integral = false;
      ++pos;
      if (pos < s.size() && (s[pos] == '+' || s[pos] == '-'))
        ++pos;
      if (pos >= s.size() || !(s[pos] >= '0' && s[pos] <= '9')) {
        err = "invalid number";
        return false;
      }
      while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9')
        ++pos;
    }
    std::string text = s.substr(start, pos - start);
    out.type = Json::Type::Number;
    out.number = std::strtod(text.c_str(), nullptr);
    if (integral) {
      errno = 0;
      long long v = std::strtoll(text.c_str(), nullptr, 10);
      if (errno == 0) {
        out.isInteger = true;
        out.integer = v;
      }
    }
    return true;
  }
};

} // namespace

bool Json::parse(const std::string &text, Json &out, std::string &error) {
  out = Json();
  Parser p(text);
  return p.run(out, error);
}

} // namespace afr
