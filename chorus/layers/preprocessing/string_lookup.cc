#include "chorus/layers/preprocessing/string_lookup.h"

#include "chorus/layers/layer_util.h"

namespace chorus::layers {
namespace {

detail::IndexLookupConfig<std::string> to_config(StringLookupOptions o) {
  detail::IndexLookupConfig<std::string> c;
  c.max_tokens = o.max_tokens;
  c.num_oov_indices = o.num_oov_indices;
  c.mask_token = std::move(o.mask_token);
  c.oov_token = std::move(o.oov_token);
  c.vocabulary = std::move(o.vocabulary);
  c.vocabulary_file = std::move(o.vocabulary_file);
  c.idf_weights = std::move(o.idf_weights);
  c.invert = o.invert;
  c.output_mode = o.output_mode;
  c.pad_to_max_tokens = o.pad_to_max_tokens;
  c.salt = o.salt;
  c.name = std::move(o.name);
  return c;
}

}  // namespace

StringLookup::StringLookup(StringLookupOptions options)
    : StringLookup(detail::FullConfig{}, to_config(std::move(options))) {}

StringLookup::StringLookup(detail::FullConfig, detail::IndexLookupConfig<std::string> config)
    : IndexLookup<std::string>("StringLookup", std::move(config)) {}

nlohmann::json StringLookup::get_config() const {
  nlohmann::json config = IndexLookup<std::string>::get_config();
  config["encoding"] = "utf-8";
  return config;
}

std::shared_ptr<StringLookup> StringLookup::from_config(const nlohmann::json& config) {
  ConfigReader r("StringLookup", config);
  const std::string encoding = r.string("encoding", "utf-8");
  if (encoding != "utf-8") {
    throw_error<ValueError>("StringLookup: only the utf-8 encoding is supported. Received: encoding={}", encoding);
  }
  auto c = config_from_json(r, "[UNK]");
  auto layer = std::shared_ptr<StringLookup>(new StringLookup(detail::FullConfig{}, std::move(c)));
  detail::finish_config(*layer, r);
  return layer;
}

}  // namespace chorus::layers
