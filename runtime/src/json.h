// Minimal self-contained JSON reader for the AttnFuse runtime (no third-party dependencies).
#ifndef ATTNFUSE_RUNTIME_JSON_H
#define ATTNFUSE_RUNTIME_JSON_H

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace afr {

class Json {
public:
  enum class Type { Null, Bool, Number, String, Array, Object };

  Type type = Type::Null;
  bool boolean = false;
  double number = 0;
  bool isInteger = false; // number written without fraction / exponent and fits int64
  int64_t integer = 0;
  std::string string;
  std::vector<Json> array;
  std::vector<std::pair<std::string, Json>> object; // in document order

  bool isNull() const { return type == Type::Null; }
  bool isString() const { return type == Type::String; }
  bool isNumber() const { return type == Type::Number; }
  bool isArray() const { return type == Type::Array; }
  bool isObject() const { return type == Type::Object; }
  bool isBool() const { return type == Type::Bool; }

  // Member lookup; nullptr when this is not an object or has no such key.
  const Json *get(const std::string &key) const;

  // Compact JSON text of this value.
  std::string dump() const;

  // Parses `text`; on failure returns false and sets `error` ("line L column C: ...").
  static bool parse(const std::string &text, Json &out, std::string &error);
};

} // namespace afr

#endif
