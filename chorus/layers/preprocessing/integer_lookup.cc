#include "chorus/layers/preprocessing/integer_lookup.h"

#include "chorus/layers/preprocessing/index_lookup_config.h"

namespace chorus::layers {

IntegerLookup::IntegerLookup(IntegerLookupOptions options)
    : IntegerLookup(detail::FullConfig{}, detail::index_lookup_config<int64_t>(std::move(options))) {}

IntegerLookup::IntegerLookup(detail::FullConfig, detail::IndexLookupConfig<int64_t> config)
    : IndexLookup<int64_t>("IntegerLookup", std::move(config)) {}

std::shared_ptr<IntegerLookup> IntegerLookup::from_config(const nlohmann::json& config) {
  return lookup_from_config("IntegerLookup", config, -1, [](detail::IndexLookupConfig<int64_t> c) {
    return std::shared_ptr<IntegerLookup>(new IntegerLookup(detail::FullConfig{}, std::move(c)));
  });
}

}  // namespace chorus::layers
