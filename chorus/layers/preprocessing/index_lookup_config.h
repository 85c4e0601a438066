// index_lookup_config: the IndexLookupConfig of StringLookup's or IntegerLookup's options,
// and their from_config, written once for both. Internal to chorus/layers/preprocessing
// (their .cc files include it); pure functions of their arguments.
#pragma once

#include <utility>

#include "chorus/layers/layer_util.h"
#include "chorus/layers/preprocessing/index_lookup.h"

namespace chorus::layers {

template <class Token>
template <class Make>
auto IndexLookup<Token>::lookup_from_config(const char* class_name, const nlohmann::json& config, Token default_oov,
                                            Make make) {
  ConfigReader reader(class_name, config);
  auto layer = make(config_from_json(reader, std::move(default_oov)));
  detail::finish_config(*layer, reader);
  return layer;
}

}  // namespace chorus::layers

namespace chorus::layers::detail {

// The fields StringLookupOptions and IntegerLookupOptions share, moved out of `o`;
// oov_method too where `Options` has one (IntegerLookup's).
template <class Token, class Options>
IndexLookupConfig<Token> index_lookup_config(Options o) {
  IndexLookupConfig<Token> c;
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
  if constexpr (requires { o.oov_method; }) c.oov_method = o.oov_method;
  c.salt = o.salt;
  c.name = std::move(o.name);
  return c;
}

}  // namespace chorus::layers::detail
