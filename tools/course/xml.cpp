#include "xml.h"

namespace course::tool {

const std::string* XmlElement::attribute(std::string_view key) const {
  for (const auto& a : attributes)
    if (a.first == key) return &a.second;
  return nullptr;
}

std::string XmlElement::attribute_or(std::string_view key, std::string fallback) const {
  const std::string* v = attribute(key);
  return v ? *v : fallback;
}

const XmlElement* XmlElement::child(std::string_view child_name) const {
  for (const XmlElement& c : children)
    if (c.name == child_name) return &c;
  return nullptr;
}

namespace {

constexpr int kMaxDepth = 256;

class XmlParser {
 public:
  explicit XmlParser(std::string_view text) : text_(text) {}

  std::optional<XmlElement> document(ParseError* error) {
    std::optional<XmlElement> root;
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;  // UTF-8 byte order mark
    if (skip_misc()) {
      if (at_end()) {
        fail("no root element (the file is empty?)");
      } else if (peek() != '<') {
        fail("expected '<' to start the root element");
      } else {
        root = element(0);
        if (root && skip_misc() && !at_end()) {
          fail("unexpected content after the root element");
          root.reset();
        }
      }
    }
    if (failed_) root.reset();
    if (!root && error) {
      *error = error_;
      locate(text_, *error);
    }
    return root;
  }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
  ParseError error_;
  bool failed_ = false;

  std::nullopt_t fail(std::string message) {
    if (!failed_) {
      failed_ = true;
      error_.message = std::move(message);
      error_.offset = pos_;
    }
    return std::nullopt;
  }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }
  bool starts_with(std::string_view s) const { return text_.substr(pos_, s.size()) == s; }
  static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
  void skip_space() {
    while (!at_end() && is_space(peek())) ++pos_;
  }

  // Skips up to and including `end`; false (and an error) if it never comes.
  bool skip_past(std::string_view end, const char* what) {
    const std::size_t found = text_.find(end, pos_);
    if (found == std::string_view::npos) {
      fail(std::string("unterminated ") + what);
      return false;
    }
    pos_ = found + end.size();
    return true;
  }

  // White space, comments, processing instructions (<?xml ...?>) and a DOCTYPE.
  bool skip_misc() {
    while (true) {
      skip_space();
      if (starts_with("<?")) {
        if (!skip_past("?>", "processing instruction")) return false;
      } else if (starts_with("<!--")) {
        if (!skip_past("-->", "comment")) return false;
      } else if (starts_with("<!DOCTYPE")) {
        if (!skip_past(">", "DOCTYPE")) return false;
      } else {
        return true;
      }
    }
  }

  static bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.' || c == ':' || static_cast<unsigned char>(c) >= 0x80;
  }

  std::optional<std::string> name(const char* what) {
    const std::size_t start = pos_;
    while (!at_end() && is_name_char(peek())) ++pos_;
    if (pos_ == start) return fail(std::string("expected ") + what);
    return std::string(text_.substr(start, pos_ - start));
  }

  static void append_utf8(std::string& out, unsigned long cp) {
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

  // At '&': decodes one entity into `out`.
  bool entity(std::string& out) {
    const std::size_t semi = text_.find(';', pos_);
    if (semi == std::string_view::npos || semi - pos_ > 12) {
      fail("'&' that does not start an entity (write &amp;)");
      return false;
    }
    const std::string_view ent = text_.substr(pos_ + 1, semi - pos_ - 1);
    if (ent == "lt") out += '<';
    else if (ent == "gt") out += '>';
    else if (ent == "amp") out += '&';
    else if (ent == "quot") out += '"';
    else if (ent == "apos") out += '\'';
    else if (ent.size() > 1 && ent[0] == '#') {
      const bool hex = ent[1] == 'x' || ent[1] == 'X';
      const std::string digits(ent.substr(hex ? 2 : 1));
      if (digits.empty() || digits.find_first_not_of(hex ? "0123456789abcdefABCDEF" : "0123456789") != std::string::npos) {
        fail("malformed character reference &" + std::string(ent) + ";");
        return false;
      }
      const unsigned long cp = std::stoul(digits, nullptr, hex ? 16 : 10);
      if (cp > 0x10FFFF) {
        fail("character reference out of range");
        return false;
      }
      append_utf8(out, cp);
    } else {
      fail("unknown entity &" + std::string(ent) + ";");
      return false;
    }
    pos_ = semi + 1;
    return true;
  }

  std::optional<XmlElement> element(int depth) {
    if (depth > kMaxDepth) return fail("elements nested too deeply");
    ++pos_;  // '<'
    XmlElement e;
    std::optional<std::string> n = name("an element name after '<'");
    if (!n) return std::nullopt;
    e.name = std::move(*n);
    // Attributes.
    while (true) {
      const std::size_t before = pos_;
      skip_space();
      if (at_end()) return fail("unexpected end of input inside the tag <" + e.name + ">");
      if (starts_with("/>")) {
        pos_ += 2;
        return e;
      }
      if (peek() == '>') {
        ++pos_;
        break;
      }
      if (pos_ == before) return fail("expected white space before an attribute of <" + e.name + ">");
      std::optional<std::string> key = name("an attribute name");
      if (!key) return std::nullopt;
      skip_space();
      if (peek() != '=') return fail("expected '=' after the attribute " + *key);
      ++pos_;
      skip_space();
      const char quote = peek();
      if (quote != '"' && quote != '\'') return fail("expected a quoted value for the attribute " + *key);
      ++pos_;
      std::string value;
      while (true) {
        if (at_end()) return fail("unterminated value of the attribute " + *key);
        const char c = peek();
        if (c == quote) {
          ++pos_;
          break;
        }
        if (c == '<') return fail("'<' inside the value of the attribute " + *key);
        if (c == '&') {
          if (!entity(value)) return std::nullopt;
        } else {
          value += c;
          ++pos_;
        }
      }
      e.attributes.emplace_back(std::move(*key), std::move(value));
    }
    // Content, up to the matching end tag.
    while (true) {
      if (at_end()) return fail("unexpected end of input: <" + e.name + "> is never closed");
      const char c = peek();
      if (c == '&') {
        if (!entity(e.text)) return std::nullopt;
      } else if (c != '<') {
        e.text += c;
        ++pos_;
      } else if (starts_with("</")) {
        pos_ += 2;
        std::optional<std::string> end = name("an element name after '</'");
        if (!end) return std::nullopt;
        if (*end != e.name) return fail("</" + *end + "> closes <" + e.name + ">");
        skip_space();
        if (peek() != '>') return fail("expected '>' to end </" + e.name);
        ++pos_;
        return e;
      } else if (starts_with("<!--")) {
        if (!skip_past("-->", "comment")) return std::nullopt;
      } else if (starts_with("<![CDATA[")) {
        const std::size_t start = pos_ + 9;
        if (!skip_past("]]>", "CDATA section")) return std::nullopt;
        e.text.append(text_.substr(start, pos_ - 3 - start));
      } else if (starts_with("<?")) {
        if (!skip_past("?>", "processing instruction")) return std::nullopt;
      } else {
        std::optional<XmlElement> child = element(depth + 1);
        if (!child) return std::nullopt;
        e.children.push_back(std::move(*child));
      }
    }
  }
};

}  // namespace

std::optional<XmlElement> parse_xml(std::string_view text, ParseError* error) {
  return XmlParser(text).document(error);
}

}  // namespace course::tool
