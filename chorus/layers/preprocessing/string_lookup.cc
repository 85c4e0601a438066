#include "chorus/layers/preprocessing/string_lookup.h"

#include "chorus/layers/preprocessing/index_lookup_config.h"

namespace chorus::layers {

StringLookup::StringLookup(StringLookupOptions options)
    : StringLookup(detail::FullConfig{}, detail::index_lookup_config<std::string>(std::move(options))) {}

StringLookup::StringLookup(detail::FullConfig, detail::IndexLookupConfig<std::string> config)
    : IndexLookup<std::string>("StringLookup", std::move(config)) {}

std::shared_ptr<StringLookup> StringLookup::from_config(const nlohmann::json& config) {
  return lookup_from_config("StringLookup", config, "[UNK]", [](detail::IndexLookupConfig<std::string> c) {
    return std::shared_ptr<StringLookup>(new StringLookup(detail::FullConfig{}, std::move(c)));
  });
}

}  // namespace chorus::layers
