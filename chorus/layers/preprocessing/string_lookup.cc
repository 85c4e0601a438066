#include "chorus/layers/preprocessing/string_lookup.h"

#include "chorus/layers/layer_util.h"
#include "chorus/layers/preprocessing/index_lookup_config.h"

namespace chorus::layers {

StringLookup::StringLookup(StringLookupOptions options)
    : StringLookup(detail::FullConfig{}, detail::index_lookup_config<std::string>(std::move(options))) {}

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
