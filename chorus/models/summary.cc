// Model::summary: Keras 3's table, drawn with the same box characters.
// GCC 12 at -O3 reports a false -Wrestrict in std::string concatenation (GCC bug 105329).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
#include <iostream>
#include <sstream>

#include <fmt/format.h>

#include "chorus/layers/input_layer.h"
#include "chorus/models/model.h"
#include "chorus/models/state_bytes.h"

namespace chorus::models {
namespace {

constexpr size_t kWidths[] = {33, 24, 15};

// "269,322"
std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// Keras's readable_memory_size: "1.03 MB".
std::string readable_size(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  return fmt::format("{:.2f} {}", bytes, units[unit]);
}

std::string shape_text(const std::vector<Shape>& shapes) {
  if (shapes.empty()) return "?";
  auto one = [](const Shape& s) {
    std::string text = "(";
    for (int i = 0; i < s.rank(); ++i) {
      text += (i ? ", " : "") + (s[i] < 0 ? std::string("None") : std::to_string(s[i]));
    }
    return text + (s.rank() == 1 ? ",)" : ")");
  };
  if (shapes.size() == 1) return one(shapes[0]);
  std::string text = "[";
  for (size_t i = 0; i < shapes.size(); ++i) text += (i ? ", " : "") + one(shapes[i]);
  return text + "]";
}

// Pads to the column width in display characters (the box characters are 3 bytes).
std::string cell(const std::string& text, size_t width, bool right) {
  std::string clipped = text.size() > width - 2 ? text.substr(0, width - 3) + "…" : text;
  size_t shown = clipped.size() - (clipped.size() >= 3 && clipped.ends_with("…") ? 2 : 0);
  std::string pad(width - 2 > shown ? width - 2 - shown : 0, ' ');
  return " " + (right ? pad + clipped : clipped + pad) + " ";
}

std::string rule(const char* left, const char* fill, const char* mid, const char* right) {
  std::string out = left;
  for (size_t c = 0; c < 3; ++c) {
    for (size_t i = 0; i < kWidths[c]; ++i) out += fill;
    out += c < 2 ? mid : right;
  }
  return out + "\n";
}

std::string row(const std::string& sep, const std::string& a, const std::string& b, const std::string& c) {
  return sep + cell(a, kWidths[0], false) + sep + cell(b, kWidths[1], false) + sep + cell(c, kWidths[2], true) + sep + "\n";
}

}  // namespace

void Model::summary(std::ostream& out) const {
  std::ostringstream s;
  s << "Model: \"" << name() << "\"\n";
  s << rule("┏", "━", "┳", "┓");
  s << row("┃", "Layer (type)", "Output Shape", "Param #");
  s << rule("┡", "━", "╇", "┩");
  const auto& rows = layers();
  for (size_t i = 0; i < rows.size(); ++i) {
    const layers::Layer& layer = *rows[i];
    std::vector<Shape> shapes = layer.output_shapes();
    if (const auto* input = dynamic_cast<const layers::InputLayer*>(&layer)) {
      Shape batched{0};
      for (int64_t d : input->shape()) batched.push_back(d);
      batched[0] = -1;  // None
      shapes = {batched};
    }
    s << row("│", layer.name() + " (" + layer.class_name() + ")", shape_text(shapes),
             with_commas(layer.count_params()));
    s << (i + 1 < rows.size() ? rule("├", "─", "┼", "┤") : rule("└", "─", "┴", "┘"));
  }
  if (rows.empty()) s << rule("└", "─", "┴", "┘");
  auto bytes = [](const std::vector<Variable>& vars) {
    double total = 0;
    for (const Variable& v : vars) total += static_cast<double>(v.shape().numel()) * dtype_size(v.dtype());
    return total;
  };
  auto count = [](const std::vector<Variable>& vars) {
    int64_t total = 0;
    for (const Variable& v : vars) total += v.shape().numel();
    return total;
  };
  auto all = weights(), trainable = trainable_weights(), frozen = non_trainable_weights();
  s << " Total params: " << with_commas(count(all)) << " (" << readable_size(bytes(all)) << ")\n";
  s << " Trainable params: " << with_commas(count(trainable)) << " (" << readable_size(bytes(trainable)) << ")\n";
  s << " Non-trainable params: " << with_commas(count(frozen)) << " (" << readable_size(bytes(frozen)) << ")\n";
  if (optimizer_ && optimizer_->built()) {
    std::vector<Variable> opt = optimizer_->variables();
    s << " Optimizer params: " << with_commas(count(opt)) << " (" << readable_size(bytes(opt)) << ")\n";
  }
  if (const std::optional<DeviceStatePlan> plan = device_state_plan(*this)) {
    const auto parts = [&](const StateParts& p) {
      return fmt::format("parameters {}, gradients {}, optimizer state {}", readable_size(p.parameters),
                         readable_size(p.gradients), readable_size(p.optimizer));
    };
    s << " Per device (the largest of " << plan->devices << "): " << parts(plan->largest_device) << "\n";
    s << " On one device alone: " << parts(plan->one_device) << "\n";
  }
  out << s.str();
}

void Model::summary() const { summary(std::cout); }

}  // namespace chorus::models
