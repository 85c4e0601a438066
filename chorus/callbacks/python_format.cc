#include "chorus/callbacks/python_format.h"

#include <cmath>
#include <cstdio>

#include <fmt/format.h>

#include "chorus/core/error.h"

namespace chorus::callbacks {
namespace {

bool is_float_type(char type) {
  return type == 'e' || type == 'E' || type == 'f' || type == 'F' || type == 'g' || type == 'G';
}

std::string format_value(const FormatTemplate::Value& value, const std::string& spec) {
  if (spec.empty()) {
    if (const auto* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
    return python_repr(std::get<double>(value));
  }
  const std::string format = "{:" + spec + "}";
  if (const auto* i = std::get_if<int64_t>(&value)) {
    // Python formats an int with a float presentation type as a float.
    if (is_float_type(spec.back())) return fmt::format(fmt::runtime(format), static_cast<double>(*i));
    return fmt::format(fmt::runtime(format), *i);
  }
  return fmt::format(fmt::runtime(format), std::get<double>(value));
}

std::string value_type_name(const FormatTemplate::Value& value) {
  return std::holds_alternative<int64_t>(value) ? "int" : "float";
}

}  // namespace

std::string python_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // fmt's shortest round-trip form switches to exponents where repr() does (exponent
  // < -4 or >= 16); repr() adds ".0" to integral values written without an exponent.
  std::string text = fmt::format("{}", value);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

std::string python_fixed(double value, int precision) {
  if (std::isnan(value)) return "nan";
  // printf rounds the exact binary value correctly, as Python does.
  const int n = std::snprintf(nullptr, 0, "%.*f", precision, value);
  std::string text(static_cast<size_t>(n) + 1, '\0');
  std::snprintf(text.data(), text.size(), "%.*f", precision, value);
  text.pop_back();
  return text;
}

FormatTemplate::FormatTemplate(std::string text, std::string_view what) : text_(std::move(text)), what_(what) {
  auto fail = [&](std::string_view reason) {
    throw_error<ValueError>("{}: bad template \"{}\": {}", what_, text_, reason);
  };
  std::string literal;
  for (size_t i = 0; i < text_.size(); ++i) {
    const char c = text_[i];
    if (c == '}') {
      if (i + 1 < text_.size() && text_[i + 1] == '}') {
        literal += '}';
        ++i;
        continue;
      }
      fail("Single '}' encountered in format string");
    }
    if (c != '{') {
      literal += c;
      continue;
    }
    if (i + 1 < text_.size() && text_[i + 1] == '{') {
      literal += '{';
      ++i;
      continue;
    }
    const size_t close = text_.find('}', i + 1);
    if (close == std::string::npos) fail("expected '}' before end of string");
    const std::string field = text_.substr(i + 1, close - i - 1);
    if (field.find('{') != std::string::npos) fail("nested fields in a format spec are not supported");
    const size_t colon = field.find(':');
    Piece piece{.is_field = true, .literal_or_name = field.substr(0, colon)};
    if (colon != std::string::npos) piece.spec = field.substr(colon + 1);
    if (piece.literal_or_name.find('!') != std::string::npos) fail("conversions (\"!r\", \"!s\") are not supported");
    if (piece.literal_or_name.empty()) fail("empty field name \"{}\": only named fields are supported");
    if (!literal.empty()) pieces_.push_back(Piece{.literal_or_name = std::move(literal)});
    literal.clear();
    pieces_.push_back(std::move(piece));
    i = close;
  }
  if (!literal.empty()) pieces_.push_back(Piece{.literal_or_name = std::move(literal)});
}

std::string FormatTemplate::format(const Arguments& arguments) const {
  std::string result;
  for (const Piece& piece : pieces_) {
    if (!piece.is_field) {
      result += piece.literal_or_name;
      continue;
    }
    const Value* value = nullptr;
    for (const auto& [name, v] : arguments) {
      if (name == piece.literal_or_name) {
        value = &v;
        break;
      }
    }
    if (value == nullptr) {
      std::string names;
      for (const auto& [name, v] : arguments) names += (names.empty() ? "" : ", ") + name;
      throw_error<ValueError>("{}: failed to format \"{}\": no value named '{}'; the values are: {}", what_, text_,
                              piece.literal_or_name, names.empty() ? "none" : names);
    }
    try {
      result += format_value(*value, piece.spec);
    } catch (const fmt::format_error& e) {
      throw_error<ValueError>("{}: failed to format \"{}\": format spec '{}' does not apply to {} '{}' ({})", what_,
                              text_, piece.spec, value_type_name(*value), piece.literal_or_name, e.what());
    }
  }
  return result;
}

std::vector<std::string> FormatTemplate::field_names() const {
  std::vector<std::string> names;
  for (const Piece& piece : pieces_) {
    if (piece.is_field) names.push_back(piece.literal_or_name);
  }
  return names;
}

}  // namespace chorus::callbacks
