// A minimal JSON reader/writer: just what safetensors headers and metrics lines need (objects, arrays, strings
// with escapes, integers). Kept in-tree so the io layer needs no JSON dependency.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vt::io {

/// A parsed JSON value. Objects keep their keys in document order (duplicates are rejected by the parser).
struct JsonValue {
  enum class Kind { integer, string, array, object };

  Kind kind = Kind::integer;
  int64_t integer = 0;
  std::string string;
  std::vector<JsonValue> array;
  std::vector<std::pair<std::string, JsonValue>> object;

  static JsonValue make_int(int64_t v);
  static JsonValue make_string(std::string v);
  static JsonValue make_array(std::vector<JsonValue> v = {});
  static JsonValue make_object(std::vector<std::pair<std::string, JsonValue>> v = {});

  bool is_int() const { return kind == Kind::integer; }
  bool is_string() const { return kind == Kind::string; }
  bool is_array() const { return kind == Kind::array; }
  bool is_object() const { return kind == Kind::object; }
  /// The member named `key` of an object, or nullptr (also when this is not an object).
  const JsonValue* find(std::string_view key) const;
  /// "integer", "string", "array" or "object", for error messages.
  const char* kind_name() const;
};

/// Parses one JSON value; trailing whitespace is allowed, anything else after it is an error. Floats, true, false
/// and null are rejected (not needed). Throws vt::Error "[json] offset N: ..." on malformed input.
JsonValue parse_json(std::string_view text);

/// `s` as a JSON string literal with quotes, escaping ", \ and control characters (UTF-8 bytes pass through).
std::string json_quote(std::string_view s);

/// Compact serialization (no spaces), object keys in stored order.
std::string to_json(const JsonValue& v);

}  // namespace vt::io
