// Tensor printing: a header line, then the elements laid out as NumPy's str() does with
// np.set_printoptions(precision=4) and its other defaults (line width 75, summary with
// "..." and 3 edge items per axis above 1000 elements). Chosen because NumPy's layout is
// what Keras users read every day, and 4 decimals keep float32 noise out of sight.
//
//   Tensor(shape=(2, 3), dtype=float32, device=cpu:0)
//   [[ 1.     2.5   -3.   ]
//    [ 0.125  4.     5.   ]]
//
// Floats: each value is its shortest round-trip decimal (for its own dtype: bfloat16
// values print the shortest decimal that reads back as the same bfloat16), rounded to at
// most 4 decimals, trailing zeros dropped, aligned on the point; scientific notation
// when the largest magnitude is >= 1e8, the smallest nonzero one < 1e-4, or their ratio
// > 1000 (NumPy's rule). Ints are right-aligned; bools print " True"/"False". Strings
// print as Python's bytes literals, as TensorFlow shows tf.string values (b'caf\xc3\xa9',
// quotes and backslashes escaped, bytes outside printable ASCII as \xNN), unpadded, as
// NumPy prints its string arrays: [b'a' b'bc']. A scalar
// prints its single element alone (NumPy prints a rank-0 array's full repr instead); an
// empty tensor prints "[]". The formatting decisions look only at the elements shown.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "chorus/core/tensor.h"

namespace chorus {
namespace {

constexpr int64_t kSummaryThreshold = 1000;  // NumPy's threshold: summarise above this many elements
constexpr int64_t kEdgeItems = 3;            // shown at each end of a summarised axis
constexpr size_t kLineWidth = 75;            // NumPy's linewidth
constexpr int kPrecision = 4;                // decimals shown at most

// --- floats ---------------------------------------------------------------------------

template <class T>
std::string chars(T value, std::chars_format format, int precision = -1) {
  char buf[64];
  const auto result = precision < 0 ? std::to_chars(buf, buf + sizeof buf, value, format)
                                    : std::to_chars(buf, buf + sizeof buf, value, format, precision);
  return std::string(buf, result.ptr);
}

// The shortest decimal that reads back as the same value of the tensor's dtype, as a
// double (so to_chars of it prints exactly those digits).
double shortest(double value, DType dtype) {
  if (dtype == kFloat32) {
    return std::strtod(chars(static_cast<float>(value), std::chars_format::scientific).c_str(), nullptr);
  }
  const bfloat16 target(static_cast<float>(value));
  for (int digits = 0; digits < 9; ++digits) {
    const std::string s = chars(value, std::chars_format::scientific, digits);
    if (bfloat16(std::strtof(s.c_str(), nullptr)).bits == target.bits) return std::strtod(s.c_str(), nullptr);
  }
  return value;
}

// One finite value as its digits: int part (with sign), fraction, and exponent with its
// sign ("" when positional, "-05" when scientific).
struct FloatDigits {
  std::string int_part, frac, exp;
};

FloatDigits split_digits(std::string s) {
  FloatDigits d;
  if (const size_t e = s.find('e'); e != std::string::npos) {
    d.exp = s.substr(e + 1);
    s.resize(e);
  }
  const size_t dot = s.find('.');
  d.int_part = s.substr(0, dot);
  if (dot != std::string::npos) d.frac = s.substr(dot + 1);
  return d;
}

// The shortest digits of `value`, or, when they need more than kPrecision decimals, the
// exact value rounded to kPrecision decimals (half to even, as NumPy's Dragon4) with
// trailing zeros dropped; integral values in full.
FloatDigits float_digits(double value, DType dtype, bool scientific) {
  // NumPy prints every digit of an integral value (float32 98056656, whose shortest
  // form is 98056660): its positional Dragon4 runs at least to the units digit.
  if (!scientific && std::trunc(value) == value) return {chars(value, std::chars_format::fixed, 0), "", ""};
  const std::chars_format format = scientific ? std::chars_format::scientific : std::chars_format::fixed;
  FloatDigits d = split_digits(chars(shortest(value, dtype), format));
  if (d.frac.size() > static_cast<size_t>(kPrecision)) {
    d = split_digits(chars(value, format, kPrecision));
    while (!d.frac.empty() && d.frac.back() == '0') d.frac.pop_back();
  }
  return d;
}

// NumPy's FloatingFormat (floatmode "maxprec"): one layout for all shown elements.
class FloatFormat {
 public:
  FloatFormat(const std::vector<double>& values, DType dtype) : dtype_(dtype) {
    double max_abs = 0, min_abs = std::numeric_limits<double>::infinity();
    bool any_non_finite = false, negative_inf = false;
    for (double v : values) {
      if (!std::isfinite(v)) {
        any_non_finite = true;
        negative_inf = negative_inf || v < 0;
      } else if (v != 0) {
        max_abs = std::max(max_abs, std::abs(v));
        min_abs = std::min(min_abs, std::abs(v));
      }
    }
    scientific_ = max_abs > 0 && (max_abs >= 1e8 || min_abs < 1e-4 || max_abs / min_abs > 1e3);
    size_t frac = 0, exp_chars = 0;
    for (double v : values) {
      if (!std::isfinite(v)) continue;
      const FloatDigits d = float_digits(v, dtype_, scientific_);
      pad_left_ = std::max(pad_left_, d.int_part.size());
      frac = std::max(frac, d.frac.size());
      exp_chars = std::max(exp_chars, d.exp.size());
    }
    if (scientific_) {
      precision_ = frac;
      exp_digits_ = exp_chars - 1;
      pad_right_ = exp_digits_ + 2 + precision_;
    } else {
      pad_right_ = frac;
    }
    if (any_non_finite) {  // "nan" and "[-]inf" right-aligned in the same width
      const size_t width = std::max<size_t>(pad_left_ + pad_right_ + 1, negative_inf ? 4 : 3);
      pad_left_ = width - pad_right_ - 1;
    }
  }

  std::string operator()(double v) const {
    if (!std::isfinite(v)) {
      const std::string word = std::isnan(v) ? "nan" : v < 0 ? "-inf" : "inf";
      return fmt::format("{:>{}}", word, pad_left_ + pad_right_ + 1);
    }
    const FloatDigits d = float_digits(v, dtype_, scientific_);
    if (!scientific_) return fmt::format("{:>{}}.{:<{}}", d.int_part, pad_left_, d.frac, pad_right_);
    const char sign = d.exp[0];
    return fmt::format("{:>{}}.{:0<{}}e{}{:0>{}}", d.int_part, pad_left_, d.frac, precision_, sign, d.exp.substr(1),
                       exp_digits_);
  }

 private:
  DType dtype_;
  bool scientific_ = false;
  size_t pad_left_ = 0, pad_right_ = 0, precision_ = 0, exp_digits_ = 0;
};

// --- layout ---------------------------------------------------------------------------

// The indices shown along an axis of `size`: all, or the edges around a "...".
bool summarised_axis(int64_t size, bool summarise) { return summarise && size > 2 * kEdgeItems; }

// Flat indices of the shown elements, in printing order.
void gather_shown(const Shape& shape, int axis, int64_t base, bool summarise, std::vector<int64_t>& out) {
  if (axis == shape.rank()) {
    out.push_back(base);
    return;
  }
  const int64_t size = shape[axis];
  const int64_t stride = contiguous_strides(shape)[axis];
  for (int64_t i = 0; i < size; ++i) {
    if (summarised_axis(size, summarise) && i == kEdgeItems) i = size - kEdgeItems;
    gather_shown(shape, axis + 1, base + i * stride, summarise, out);
  }
}

// Appends `word` to `line`, first moving `line` into `text` when the word would pass
// `width` (NumPy's _extendLine: never wraps a line that holds only the indent).
void extend_line(std::string& text, std::string& line, const std::string& word, size_t width,
                 const std::string& indent) {
  if (line.size() + word.size() > width && line.size() > indent.size()) {
    text += line.substr(0, line.find_last_not_of(' ') + 1) + "\n";
    line = indent;
  }
  line += word;
}

// NumPy's _formatArray with separator " ": nested brackets, rows wrapped at kLineWidth,
// blank lines between blocks of rank >= 3. Consumes `words` in printing order.
class Layout {
 public:
  Layout(const Shape& shape, bool summarise, const std::vector<std::string>& words)
      : shape_(shape), summarise_(summarise), words_(words) {}

  std::string format(int axis, const std::string& indent, size_t width) {
    if (axis == shape_.rank()) return words_[next_++];
    const int64_t size = shape_[axis];
    const bool summary = summarised_axis(size, summarise_);
    const int64_t shown = summary ? 2 * kEdgeItems : size;
    std::string text;
    if (axis == shape_.rank() - 1) {
      std::string line = indent;
      for (int64_t i = 0; i < shown; ++i) {
        if (summary && i == kEdgeItems) {
          extend_line(text, line, "...", width - 1, indent);
          line += ' ';
        }
        extend_line(text, line, format(axis + 1, indent + ' ', width - 1), width - 1, indent);
        if (i + 1 < shown) line += ' ';
      }
      text += line;
    } else {
      const std::string separator(static_cast<size_t>(shape_.rank() - axis - 1), '\n');
      for (int64_t i = 0; i < shown; ++i) {
        if (summary && i == kEdgeItems) text += indent + "..." + separator;
        text += indent + format(axis + 1, indent + ' ', width - 1);
        if (i + 1 < shown) text += separator;
      }
    }
    std::string bracketed(1, '[');  // built by append: GCC 12 misreports "[" + string (-Wrestrict)
    bracketed.append(text, indent.size());
    bracketed += ']';
    return bracketed;
  }

 private:
  const Shape& shape_;
  bool summarise_;
  const std::vector<std::string>& words_;
  size_t next_ = 0;
};

}  // namespace

std::string bytes_literal(std::string_view value) {
  std::string out = "b'";
  for (const char c : value) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\'' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (byte < 0x20 || byte >= 0x7f) {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

namespace {

// The shown elements as words of a common width, per dtype (strings: their own widths).
std::vector<std::string> format_elements(const Tensor& t, const std::vector<int64_t>& shown) {
  std::vector<std::string> words;
  words.reserve(shown.size());
  if (t.dtype() == kString) {
    const auto strings = t.strings();
    for (int64_t i : shown) words.push_back(bytes_literal(strings[static_cast<size_t>(i)]));
    return words;
  }
  visit_dtype(t.dtype(), [&](auto v) {
    using T = decltype(v);
    const T* data = static_cast<const T*>(t.raw_data());
    if constexpr (std::is_same_v<T, bool>) {
      const bool bare = t.rank() == 0;  // " True" pads to the width of "False" in arrays only
      for (int64_t i : shown) words.push_back(data[i] ? (bare ? "True" : " True") : "False");
    } else if constexpr (std::is_integral_v<T>) {
      size_t width = 0;
      for (int64_t i : shown) width = std::max(width, fmt::formatted_size("{}", data[i]));
      for (int64_t i : shown) words.push_back(fmt::format("{:>{}}", data[i], width));
    } else {
      std::vector<double> values;
      for (int64_t i : shown) values.push_back(static_cast<double>(static_cast<float>(data[i])));
      const FloatFormat format(values, t.dtype());
      for (double value : values) words.push_back(format(value));
    }
  });
  return words;
}

// The element text without the header line.
std::string format_body(const Tensor& t) {
  if (t.numel() == 0) return "[]";
  const bool summarise = t.numel() > kSummaryThreshold;
  std::vector<int64_t> shown;
  gather_shown(t.shape(), 0, 0, summarise, shown);
  const std::vector<std::string> words = format_elements(t, shown);
  if (t.rank() == 0) return words[0];
  return Layout(t.shape(), summarise, words).format(0, " ", kLineWidth);
}

}  // namespace

std::string Tensor::to_string() const {
  if (!defined()) return "Tensor(undefined)";
  return fmt::format("Tensor(shape={}, dtype={}, device={})\n{}", shape().to_string(), dtype_name(dtype()),
                     device().to_string(), format_body(*this));
}

std::ostream& operator<<(std::ostream& os, const Tensor& tensor) { return os << tensor.to_string(); }

}  // namespace chorus
