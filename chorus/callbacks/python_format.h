// The bits of Python's text formatting that Keras's callbacks show to users: repr() of a
// float (CSV cells, learning-rate messages) and str.format templates (checkpoint file
// names such as "ckpt-{epoch:02d}-{val_loss:.4f}.keras"). Immutable once built; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace chorus::callbacks {

// Python's repr(float): the shortest text that reads back to `value`, with ".0" on
// integral values ("0.1", "1.0", "1e-05", "1e+16", "nan", "inf", "-inf").
std::string python_repr(double value);
// Python's f"{value:.{precision}f}" (rounding ties to even on the exact binary value).
std::string python_fixed(double value, int precision);

// A str.format template with named fields only: "{name}", "{name:spec}" and the
// escapes "{{" and "}}". `spec` is Python's format mini-language as far as fmt shares it
// (fill, align, sign, '#', '0', width, precision and the types d, x, o, b, e, f, g, …).
class FormatTemplate {
 public:
  using Value = std::variant<int64_t, double>;
  using Arguments = std::vector<std::pair<std::string, Value>>;

  // Throws ValueError naming `what` and the template for a lone '{' or '}', an empty
  // field name, a conversion ("!r") or a nested field in a spec.
  FormatTemplate(std::string text, std::string_view what);

  // The text with every field replaced by the first argument of its name, formatted as
  // Python would: an int with a float type ("{epoch:.1f}") is converted, an empty spec
  // gives str() ("7", "0.25"). Throws ValueError naming the template and the missing
  // name with the names present, or the spec that does not apply to the value.
  std::string format(const Arguments& arguments) const;

  const std::string& text() const { return text_; }
  // The field names in order of appearance (repeats included).
  std::vector<std::string> field_names() const;

 private:
  struct Piece {
    bool is_field = false;
    std::string literal_or_name;
    std::string spec;
  };
  std::string text_;
  std::string what_;
  std::vector<Piece> pieces_;
};

}  // namespace chorus::callbacks
