#include "chorus/layers/preprocessing/integer_lookup.h"

#include "chorus/layers/layer_util.h"

namespace chorus::layers {
namespace {

detail::IndexLookupConfig<int64_t> to_config(IntegerLookupOptions o) {
  detail::IndexLookupConfig<int64_t> c;
  c.max_tokens = o.max_tokens;
  c.num_oov_indices = o.num_oov_indices;
  c.mask_token = o.mask_token;
  c.oov_token = o.oov_token;
  c.vocabulary = std::move(o.vocabulary);
  c.vocabulary_file = std::move(o.vocabulary_file);
  c.idf_weights = std::move(o.idf_weights);
  c.invert = o.invert;
  c.output_mode = o.output_mode;
  c.pad_to_max_tokens = o.pad_to_max_tokens;
  c.oov_method = o.oov_method;
  c.salt = o.salt;
  c.name = std::move(o.name);
  return c;
}

}  // namespace

IntegerLookup::IntegerLookup(IntegerLookupOptions options)
    : IntegerLookup(detail::FullConfig{}, to_config(std::move(options))) {}

IntegerLookup::IntegerLookup(detail::FullConfig, detail::IndexLookupConfig<int64_t> config)
    : IndexLookup<int64_t>("IntegerLookup", std::move(config)) {}

nlohmann::json IntegerLookup::get_config() const {
  nlohmann::json config = IndexLookup<int64_t>::get_config();
  config["vocabulary_dtype"] = "int64";
  return config;
}

std::shared_ptr<IntegerLookup> IntegerLookup::from_config(const nlohmann::json& config) {
  ConfigReader r("IntegerLookup", config);
  const std::string dtype = r.string("vocabulary_dtype", "int64");
  if (dtype != "int64") {
    throw_error<ValueError>("IntegerLookup: only vocabulary_dtype int64 is supported. Received: vocabulary_dtype={}",
                            dtype);
  }
  auto c = config_from_json(r, -1);
  auto layer = std::shared_ptr<IntegerLookup>(new IntegerLookup(detail::FullConfig{}, std::move(c)));
  detail::finish_config(*layer, r);
  return layer;
}

}  // namespace chorus::layers
