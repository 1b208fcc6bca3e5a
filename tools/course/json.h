// A small JSON reader and writer for the course tool: Google Benchmark's output and the
// tool's own result files. Standard JSON (RFC 8259) plus the three words Google Benchmark
// writes for non-finite numbers (NaN, Infinity, -Infinity). Objects keep their key order.
//
//   course::tool::ParseError error;
//   std::optional<course::tool::JsonValue> doc = course::tool::parse_json(text, &error);
//   if (!doc) std::cerr << file << ": " << error.describe() << "\n";
//   double us = doc->get("benchmarks")->at(0).number_or("median_us", 0.0);
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace course::tool {

// Where and why a parse failed; line and column count from 1.
struct ParseError {
  std::string message;
  std::size_t offset = 0;
  std::size_t line = 0;
  std::size_t column = 0;
  // "line 3, column 7: expected ':' after an object key"
  std::string describe() const;
};

// Fills line and column of `error` from its offset into `text`.
void locate(std::string_view text, ParseError& error);

class JsonValue {
 public:
  enum class Type { Null, Bool, Number, String, Array, Object };
  using Member = std::pair<std::string, JsonValue>;

  JsonValue() = default;
  static JsonValue boolean(bool b);
  static JsonValue number(double d);
  static JsonValue string(std::string s);
  static JsonValue array(std::vector<JsonValue> items = {});
  static JsonValue object(std::vector<Member> members = {});

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::Null; }
  bool is_bool() const { return type_ == Type::Bool; }
  bool is_number() const { return type_ == Type::Number; }
  bool is_string() const { return type_ == Type::String; }
  bool is_array() const { return type_ == Type::Array; }
  bool is_object() const { return type_ == Type::Object; }

  bool as_bool() const { return bool_; }
  double as_number() const { return number_; }
  const std::string& as_string() const { return string_; }
  const std::vector<JsonValue>& items() const { return items_; }
  const std::vector<Member>& members() const { return members_; }
  std::size_t size() const { return is_object() ? members_.size() : items_.size(); }
  const JsonValue& at(std::size_t i) const { return items_.at(i); }

  // The member named `key` of an object (the first one, if repeated); nullptr if absent or
  // if this is not an object.
  const JsonValue* get(std::string_view key) const;
  // Typed look-ups that fall back when the member is absent or of another type.
  double number_or(std::string_view key, double fallback) const;
  std::string string_or(std::string_view key, std::string fallback) const;
  bool bool_or(std::string_view key, bool fallback) const;

  // Building: append to an array, set (replace or append) a member of an object.
  JsonValue& push_back(JsonValue v);
  JsonValue& set(std::string key, JsonValue v);

 private:
  Type type_ = Type::Null;
  bool bool_ = false;
  double number_ = 0.0;
  std::string string_;
  std::vector<JsonValue> items_;
  std::vector<Member> members_;
};

// Parses one JSON document (surrounding white space allowed, nothing else after it). On
// failure returns nullopt and, if `error` is given, says what and where.
std::optional<JsonValue> parse_json(std::string_view text, ParseError* error = nullptr);

// Writes `value` as JSON; indent > 0 pretty-prints with that many spaces per level. Non-finite
// numbers are written as null (standard JSON has no NaN).
std::string to_json(const JsonValue& value, int indent = 2);

// `s` as a JSON string literal, quotes included.
std::string json_quote(std::string_view s);

}  // namespace course::tool
