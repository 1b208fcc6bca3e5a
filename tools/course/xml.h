// A small XML reader, enough for the JUnit files ctest writes: elements, attributes, text,
// the five named entities and numeric character references, CDATA, comments, the XML
// declaration and a DOCTYPE (skipped). No namespaces, no DTD processing.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "json.h"  // ParseError

namespace course::tool {

struct XmlElement {
  std::string name;
  std::vector<std::pair<std::string, std::string>> attributes;
  std::vector<XmlElement> children;
  std::string text;  // all character data directly inside this element, entities decoded

  // The attribute's value, or nullptr.
  const std::string* attribute(std::string_view key) const;
  std::string attribute_or(std::string_view key, std::string fallback) const;
  // The first child element named `child_name`, or nullptr.
  const XmlElement* child(std::string_view child_name) const;
};

// Parses a whole document and returns its root element.
std::optional<XmlElement> parse_xml(std::string_view text, ParseError* error = nullptr);

}  // namespace course::tool
