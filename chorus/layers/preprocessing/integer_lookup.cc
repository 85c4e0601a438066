#include "chorus/layers/preprocessing/integer_lookup.h"

#include "chorus/layers/layer_util.h"
#include "chorus/layers/preprocessing/index_lookup_config.h"

namespace chorus::layers {

IntegerLookup::IntegerLookup(IntegerLookupOptions options)
    : IntegerLookup(detail::FullConfig{}, detail::index_lookup_config<int64_t>(std::move(options))) {}

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
