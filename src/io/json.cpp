// Recursive-descent JSON parser (depth-limited so a hostile header cannot overflow the stack) and writer.
#include "io/json.h"

#include <cstdio>
#include <limits>

#include "core/error.h"

namespace vt::io {

JsonValue JsonValue::make_int(int64_t v) {
  JsonValue j;
  j.kind = Kind::integer;
  j.integer = v;
  return j;
}

JsonValue JsonValue::make_string(std::string v) {
  JsonValue j;
  j.kind = Kind::string;
  j.string = std::move(v);
  return j;
}

JsonValue JsonValue::make_array(std::vector<JsonValue> v) {
  JsonValue j;
  j.kind = Kind::array;
  j.array = std::move(v);
  return j;
}

JsonValue JsonValue::make_object(std::vector<std::pair<std::string, JsonValue>> v) {
  JsonValue j;
  j.kind = Kind::object;
  j.object = std::move(v);
  return j;
}

const JsonValue* JsonValue::find(std::string_view key) const {
  if (kind != Kind::object) return nullptr;
  for (const auto& [k, v] : object)
    if (k == key) return &v;
  return nullptr;
}

const char* JsonValue::kind_name() const {
  switch (kind) {
    case Kind::integer: return "integer";
    case Kind::string: return "string";
    case Kind::array: return "array";
    case Kind::object: return "object";
  }
  return "?";
}

namespace {

constexpr int kMaxDepth = 64;

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  JsonValue parse_document() {
    JsonValue v = parse_value(0);
    skip_ws();
    if (pos_ != s_.size()) fail("unexpected '", s_[pos_], "' after the value");
    return v;
  }

 private:
  template <typename... Args>
  [[noreturn]] void fail(const Args&... args) const {
    VT_FAIL("[json] offset ", pos_, ": ", args...);
  }

  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }

  char peek() {
    if (pos_ >= s_.size()) fail("unexpected end of input");
    return s_[pos_];
  }

  void expect(char c) {
    if (peek() != c) fail("expected '", c, "', got '", s_[pos_], "'");
    ++pos_;
  }

  JsonValue parse_value(int depth) {
    if (depth > kMaxDepth) fail("nesting deeper than ", kMaxDepth);
    skip_ws();
    char c = peek();
    if (c == '{') return parse_object(depth);
    if (c == '[') return parse_array(depth);
    if (c == '"') return JsonValue::make_string(parse_string());
    if (c == '-' || (c >= '0' && c <= '9')) return JsonValue::make_int(parse_int());
    fail("unexpected '", c, "' (only objects, arrays, strings and integers are supported)");
  }

  JsonValue parse_object(int depth) {
    expect('{');
    JsonValue obj = JsonValue::make_object();
    skip_ws();
    if (peek() == '}') {
      ++pos_;
      return obj;
    }
    while (true) {
      skip_ws();
      if (peek() != '"') fail("expected a string key");
      size_t key_pos = pos_;
      std::string key = parse_string();
      if (obj.find(key)) {
        pos_ = key_pos;
        fail("duplicate key \"", key, "\"");
      }
      skip_ws();
      expect(':');
      JsonValue v = parse_value(depth + 1);
      obj.object.emplace_back(std::move(key), std::move(v));
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect('}');
      return obj;
    }
  }

  JsonValue parse_array(int depth) {
    expect('[');
    JsonValue arr = JsonValue::make_array();
    skip_ws();
    if (peek() == ']') {
      ++pos_;
      return arr;
    }
    while (true) {
      arr.array.push_back(parse_value(depth + 1));
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect(']');
      return arr;
    }
  }

  int64_t parse_int() {
    size_t start = pos_;
    bool neg = false;
    if (s_[pos_] == '-') {
      neg = true;
      ++pos_;
    }
    if (pos_ >= s_.size() || s_[pos_] < '0' || s_[pos_] > '9') fail("expected a digit");
    if (s_[pos_] == '0' && pos_ + 1 < s_.size() && s_[pos_ + 1] >= '0' && s_[pos_ + 1] <= '9')
      fail("leading zeros are not allowed");
    // Accumulate as a negative number so INT64_MIN parses too.
    int64_t v = 0;
    constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      int d = s_[pos_] - '0';
      if (v < (kMin + d) / 10) {
        pos_ = start;
        fail("integer out of the 64-bit range");
      }
      v = v * 10 - d;
      ++pos_;
    }
    if (pos_ < s_.size() && (s_[pos_] == '.' || s_[pos_] == 'e' || s_[pos_] == 'E'))
      fail("floating-point numbers are not supported");
    if (!neg) {
      if (v == kMin) {
        pos_ = start;
        fail("integer out of the 64-bit range");
      }
      v = -v;
    }
    return v;
  }

  unsigned parse_hex4() {
    if (pos_ + 4 > s_.size()) fail("truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = s_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<unsigned>(c - 'A' + 10);
      else fail("bad hex digit in \\u escape");
    }
    return v;
  }

  static void append_utf8(std::string& out, unsigned cp) {
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

  std::string parse_string() {
    expect('"');
    std::string out;
    while (true) {
      char c = peek();
      ++pos_;
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) {
        --pos_;
        fail("unescaped control character in a string");
      }
      if (c != '\\') {
        out += c;
        continue;
      }
      char e = peek();
      ++pos_;
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
          unsigned cp = parse_hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {  // high surrogate: a low one must follow
            if (pos_ + 2 > s_.size() || s_[pos_] != '\\' || s_[pos_ + 1] != 'u') fail("unpaired surrogate");
            pos_ += 2;
            unsigned lo = parse_hex4();
            if (lo < 0xDC00 || lo >= 0xE000) fail("unpaired surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            fail("unpaired surrogate");
          }
          append_utf8(out, cp);
          break;
        }
        default: --pos_; fail("bad escape '\\", e, "'");
      }
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
};

void write(std::string& out, const JsonValue& v) {
  switch (v.kind) {
    case JsonValue::Kind::integer: out += std::to_string(v.integer); break;
    case JsonValue::Kind::string: out += json_quote(v.string); break;
    case JsonValue::Kind::array:
      out += '[';
      for (size_t i = 0; i < v.array.size(); ++i) {
        if (i) out += ',';
        write(out, v.array[i]);
      }
      out += ']';
      break;
    case JsonValue::Kind::object:
      out += '{';
      for (size_t i = 0; i < v.object.size(); ++i) {
        if (i) out += ',';
        out += json_quote(v.object[i].first);
        out += ':';
        write(out, v.object[i].second);
      }
      out += '}';
      break;
  }
}

}  // namespace

JsonValue parse_json(std::string_view text) { return Parser(text).parse_document(); }

std::string json_quote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

std::string to_json(const JsonValue& v) {
  std::string out;
  write(out, v);
  return out;
}

}  // namespace vt::io
