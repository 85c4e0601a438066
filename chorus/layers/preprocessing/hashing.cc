#include "chorus/layers/preprocessing/hashing.h"

#include <cmath>

#include "chorus/core/ragged_tensor.h"
#include "chorus/layers/layer_util.h"
#include "chorus/layers/preprocessing/preprocessing_util.h"

namespace chorus::layers {
namespace {

// The text tf.as_string gives an integer (floats are truncated to int64 first) or a bool.
std::string as_string(double value) { return std::to_string(static_cast<int64_t>(std::trunc(value))); }

}  // namespace

Hashing::Hashing(int64_t num_bins, HashingOptions options)
    : Layer("Hashing", options.name), num_bins_(num_bins), options_(std::move(options)) {
  if (num_bins <= 0) throw_error<ValueError>("Hashing: expected num_bins > 0. Received: num_bins={}", num_bins);
  if (options_.output_mode == OutputMode::kTfIdf) {
    throw_error<ValueError>("Hashing: expected output_mode int, one_hot, multi_hot or count. Received: "
                            "output_mode=tf_idf");
  }
}

Tensor Hashing::hash_to_bins(const Tensor& x) const {
  const bool masked = options_.mask_value.has_value() && num_bins_ > 1;
  const uint64_t bins = static_cast<uint64_t>(masked ? num_bins_ - 1 : num_bins_);
  const bool strings = is_string(x.dtype());
  if (masked && strings != std::holds_alternative<std::string>(*options_.mask_value)) {
    throw_error<ValueError>("{}: mask_value is {} but the inputs are {}; give a mask_value of the inputs' kind",
                            name(), strings ? "an integer" : "a string", strings ? "strings" : "numbers");
  }
  std::optional<text::SipHashKey> salt = options_.salt;
  auto bin = [&](std::string_view s) {
    const uint64_t h = salt ? text::siphash64(*salt, s) : text::fingerprint64(s);
    return static_cast<int64_t>(h % bins) + (masked ? 1 : 0);
  };
  Tensor out = Tensor::empty(x.shape(), kInt64);
  int64_t* o = out.data<int64_t>();
  if (strings) {
    const auto values = x.strings();
    for (size_t i = 0; i < values.size(); ++i) {
      o[i] = masked && values[i] == std::get<std::string>(*options_.mask_value) ? 0 : bin(values[i]);
    }
    return out;
  }
  const auto values = x.to_vector<double>();
  const bool is_bool = x.dtype() == kBool;
  for (size_t i = 0; i < values.size(); ++i) {
    if (masked && values[i] == static_cast<double>(std::get<int64_t>(*options_.mask_value))) {
      o[i] = 0;
    } else if (is_bool) {
      o[i] = bin(values[i] != 0 ? "true" : "false");
    } else if (x.dtype() == kInt64) {  // exact: int64 does not fit in a double
      o[i] = bin(std::to_string(x.data<int64_t>()[i]));
    } else {
      o[i] = bin(as_string(values[i]));
    }
  }
  return out;
}

Tree Hashing::call(const Tree& inputs, bool /*training*/) {
  const OutputMode mode = options_.output_mode;
  if (RaggedTensor::is_ragged(inputs)) {
    const RaggedTensor rows = RaggedTensor::from_tree(inputs);
    const RaggedTensor bins = RaggedTensor::from_row_splits(hash_to_bins(rows.values()), rows.row_splits());
    if (mode == OutputMode::kInt) return bins.to_tree();
    return detail::encode_categorical_rows(bins, mode, num_bins_, {}, name());
  }
  Tensor x = detail::single_input(inputs, name());
  // one_hot encodes on a trailing dim of 1 (Keras squeezes it first).
  if (mode == OutputMode::kOneHot && x.rank() >= 1 && x.dim(-1) == 1) {
    x = x.view(Shape(std::vector<int64_t>(x.shape().begin(), x.shape().end() - 1)));
  }
  const Tensor bins = hash_to_bins(x);
  if (mode == OutputMode::kInt) return bins;
  return detail::encode_categorical(bins, mode, num_bins_);
}

nlohmann::json Hashing::get_config() const {
  nlohmann::json config = Layer::get_config();
  config["num_bins"] = num_bins_;
  config["salt"] = detail::salt_to_json(options_.salt);
  nlohmann::json mask;
  if (options_.mask_value) std::visit([&](const auto& v) { mask = v; }, *options_.mask_value);
  config["mask_value"] = mask;
  config["output_mode"] = output_mode_name(options_.output_mode);
  config["sparse"] = false;
  return config;
}

std::shared_ptr<Hashing> Hashing::from_config(const nlohmann::json& config) {
  ConfigReader r("Hashing", config);
  HashingOptions options;
  options.salt = detail::salt_from_config(r);
  if (const nlohmann::json* mask = r.find("mask_value"); mask != nullptr && !mask->is_null()) {
    if (mask->is_string()) {
      options.mask_value = mask->get<std::string>();
    } else if (mask->is_number_integer()) {
      options.mask_value = mask->get<int64_t>();
    } else {
      r.wrong_type("mask_value", "a string or an integer");
    }
  }
  options.output_mode = parse_output_mode(r.string("output_mode", "int"), "Hashing");
  if (r.boolean("sparse", false)) {
    throw_error<ValueError>("Hashing: sparse outputs are not supported (chorus has no SparseTensor). Received: "
                            "sparse=true");
  }
  options.name = detail::config_name(r);
  auto layer = std::make_shared<Hashing>(r.integer("num_bins", 0), std::move(options));
  detail::finish_config(*layer, r);
  return layer;
}

}  // namespace chorus::layers
