#include "json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace course::tool {

std::string ParseError::describe() const {
  return "line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + message;
}

void locate(std::string_view text, ParseError& error) {
  error.line = 1;
  error.column = 1;
  for (std::size_t i = 0; i < error.offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++error.line;
      error.column = 1;
    } else {
      ++error.column;
    }
  }
}

// ----------------------------------------------------------------------------- values

JsonValue JsonValue::boolean(bool b) {
  JsonValue v;
  v.type_ = Type::Bool;
  v.bool_ = b;
  return v;
}

JsonValue JsonValue::number(double d) {
  JsonValue v;
  v.type_ = Type::Number;
  v.number_ = d;
  return v;
}

JsonValue JsonValue::string(std::string s) {
  JsonValue v;
  v.type_ = Type::String;
  v.string_ = std::move(s);
  return v;
}

JsonValue JsonValue::array(std::vector<JsonValue> items) {
  JsonValue v;
  v.type_ = Type::Array;
  v.items_ = std::move(items);
  return v;
}

JsonValue JsonValue::object(std::vector<Member> members) {
  JsonValue v;
  v.type_ = Type::Object;
  v.members_ = std::move(members);
  return v;
}

const JsonValue* JsonValue::get(std::string_view key) const {
  if (!is_object()) return nullptr;
  for (const Member& m : members_)
    if (m.first == key) return &m.second;
  return nullptr;
}

double JsonValue::number_or(std::string_view key, double fallback) const {
  const JsonValue* v = get(key);
  return v && v->is_number() ? v->as_number() : fallback;
}

std::string JsonValue::string_or(std::string_view key, std::string fallback) const {
  const JsonValue* v = get(key);
  return v && v->is_string() ? v->as_string() : fallback;
}

bool JsonValue::bool_or(std::string_view key, bool fallback) const {
  const JsonValue* v = get(key);
  return v && v->is_bool() ? v->as_bool() : fallback;
}

JsonValue& JsonValue::push_back(JsonValue v) {
  if (!is_array()) *this = array();
  items_.push_back(std::move(v));
  return items_.back();
}

JsonValue& JsonValue::set(std::string key, JsonValue v) {
  if (!is_object()) *this = object();
  for (Member& m : members_) {
    if (m.first == key) {
      m.second = std::move(v);
      return m.second;
    }
  }
  members_.emplace_back(std::move(key), std::move(v));
  return members_.back().second;
}

// ----------------------------------------------------------------------------- parser

namespace {

// Deeper nesting than this is refused rather than risking the stack on a hostile file.
constexpr int kMaxDepth = 256;

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  std::optional<JsonValue> document(ParseError* error) {
    std::optional<JsonValue> v;
    skip_space();
    v = value(0);
    if (v) {
      skip_space();
      if (pos_ != text_.size()) {
        fail("unexpected text after the end of the JSON document");
        v.reset();
      }
    }
    if (!v && error) {
      *error = error_;
      locate(text_, *error);
    }
    return v;
  }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
  ParseError error_;
  bool failed_ = false;

  std::nullopt_t fail(std::string message) {
    if (!failed_) {  // keep the first, innermost error
      failed_ = true;
      error_.message = std::move(message);
      error_.offset = pos_;
    }
    return std::nullopt;
  }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  void skip_space() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) ++pos_;
  }

  bool consume_word(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  std::optional<JsonValue> value(int depth) {
    if (depth > kMaxDepth) return fail("nested deeper than " + std::to_string(kMaxDepth) + " levels");
    if (at_end()) return fail("unexpected end of input: expected a value");
    const char c = peek();
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') {
      std::optional<std::string> s = string();
      if (!s) return std::nullopt;
      return JsonValue::string(std::move(*s));
    }
    if (consume_word("true")) return JsonValue::boolean(true);
    if (consume_word("false")) return JsonValue::boolean(false);
    if (consume_word("null")) return JsonValue();
    // Google Benchmark writes non-finite counters as bare NaN / Infinity / -Infinity.
    if (consume_word("NaN")) return JsonValue::number(std::numeric_limits<double>::quiet_NaN());
    if (consume_word("Infinity")) return JsonValue::number(std::numeric_limits<double>::infinity());
    if (consume_word("-Infinity")) return JsonValue::number(-std::numeric_limits<double>::infinity());
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    return fail(std::string("unexpected character '") + c + "': expected a value");
  }

  std::optional<JsonValue> object(int depth) {
    ++pos_;  // '{'
    JsonValue obj = JsonValue::object();
    skip_space();
    if (peek() == '}') {
      ++pos_;
      return obj;
    }
    while (true) {
      skip_space();
      if (peek() != '"') return fail("expected a string key in the object");
      std::optional<std::string> key = string();
      if (!key) return std::nullopt;
      skip_space();
      if (peek() != ':') return fail("expected ':' after the object key \"" + *key + "\"");
      ++pos_;
      skip_space();
      std::optional<JsonValue> v = value(depth + 1);
      if (!v) return std::nullopt;
      obj.set(std::move(*key), std::move(*v));
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == '}') {
        ++pos_;
        return obj;
      }
      return at_end() ? fail("unexpected end of input inside an object") : fail("expected ',' or '}' in the object");
    }
  }

  std::optional<JsonValue> array(int depth) {
    ++pos_;  // '['
    JsonValue arr = JsonValue::array();
    skip_space();
    if (peek() == ']') {
      ++pos_;
      return arr;
    }
    while (true) {
      skip_space();
      std::optional<JsonValue> v = value(depth + 1);
      if (!v) return std::nullopt;
      arr.push_back(std::move(*v));
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == ']') {
        ++pos_;
        return arr;
      }
      return at_end() ? fail("unexpected end of input inside an array") : fail("expected ',' or ']' in the array");
    }
  }

  std::optional<JsonValue> number() {
    const std::size_t start = pos_;
    auto digits = [&] {
      const std::size_t from = pos_;
      while (!at_end() && peek() >= '0' && peek() <= '9') ++pos_;
      return pos_ > from;
    };
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else if (!digits()) {
      return fail("expected a digit in the number");
    }
    if (peek() == '.') {
      ++pos_;
      if (!digits()) return fail("expected a digit after the decimal point");
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!digits()) return fail("expected a digit in the exponent");
    }
    const std::string literal(text_.substr(start, pos_ - start));
    return JsonValue::number(std::strtod(literal.c_str(), nullptr));
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

  std::optional<unsigned> hex4() {
    if (pos_ + 4 > text_.size()) return fail("expected four hex digits after \\u");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<unsigned>(c - 'A' + 10);
      else return fail("expected four hex digits after \\u");
      ++pos_;
    }
    return v;
  }

  std::optional<std::string> string() {
    ++pos_;  // opening quote
    std::string out;
    while (true) {
      if (at_end()) return fail("unterminated string");
      const char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) return fail("control character inside a string (escape it)");
      if (c != '\\') {
        out += c;
        ++pos_;
        continue;
      }
      const std::size_t escape = pos_;  // errors of a whole escape point at its backslash
      ++pos_;
      if (at_end()) return fail("unterminated escape in a string");
      const char e = text_[pos_++];
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
          std::optional<unsigned> cp = hex4();
          if (!cp) return std::nullopt;
          if (*cp >= 0xD800 && *cp <= 0xDBFF) {  // a UTF-16 surrogate pair
            if (!consume_word("\\u")) {
              pos_ = escape;
              return fail("a high surrogate must be followed by \\u and a low surrogate");
            }
            std::optional<unsigned> low = hex4();
            if (!low) return std::nullopt;
            if (*low < 0xDC00 || *low > 0xDFFF) {
              pos_ = escape;
              return fail("invalid low surrogate");
            }
            *cp = 0x10000 + ((*cp - 0xD800) << 10) + (*low - 0xDC00);
          } else if (*cp >= 0xDC00 && *cp <= 0xDFFF) {
            pos_ = escape;
            return fail("lone low surrogate");
          }
          append_utf8(out, *cp);
          break;
        }
        default:
          pos_ = escape;
          return fail(std::string("unknown escape \\") + e + " in a string");
      }
    }
  }
};

void write(std::string& out, const JsonValue& v, int indent, int level) {
  const auto newline = [&](int lvl) {
    if (indent <= 0) return;
    out += '\n';
    out.append(static_cast<std::size_t>(indent * lvl), ' ');
  };
  switch (v.type()) {
    case JsonValue::Type::Null: out += "null"; break;
    case JsonValue::Type::Bool: out += v.as_bool() ? "true" : "false"; break;
    case JsonValue::Type::Number: {
      const double d = v.as_number();
      if (!std::isfinite(d)) {
        out += "null";
      } else if (d == std::floor(d) && std::fabs(d) < 1e15) {
        out += std::to_string(static_cast<long long>(d));
      } else {
        // The shortest of 15 or 17 significant digits that reads back as the same double.
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.15g", d);
        if (std::strtod(buf, nullptr) != d) std::snprintf(buf, sizeof buf, "%.17g", d);
        out += buf;
      }
      break;
    }
    case JsonValue::Type::String: out += json_quote(v.as_string()); break;
    case JsonValue::Type::Array:
      out += '[';
      for (std::size_t i = 0; i < v.items().size(); ++i) {
        if (i) out += ',';
        newline(level + 1);
        write(out, v.items()[i], indent, level + 1);
      }
      if (!v.items().empty()) newline(level);
      out += ']';
      break;
    case JsonValue::Type::Object:
      out += '{';
      for (std::size_t i = 0; i < v.members().size(); ++i) {
        if (i) out += ',';
        newline(level + 1);
        out += json_quote(v.members()[i].first);
        out += indent > 0 ? ": " : ":";
        write(out, v.members()[i].second, indent, level + 1);
      }
      if (!v.members().empty()) newline(level);
      out += '}';
      break;
  }
}

}  // namespace

std::optional<JsonValue> parse_json(std::string_view text, ParseError* error) {
  return Parser(text).document(error);
}

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

std::string to_json(const JsonValue& value, int indent) {
  std::string out;
  write(out, value, indent, 0);
  if (indent > 0) out += '\n';
  return out;
}

}  // namespace course::tool
