// index_lookup_config: the IndexLookupConfig of StringLookup's or IntegerLookup's options,
// written once for both. Internal to chorus/layers/preprocessing (their .cc files include
// it); a pure function of its argument.
#pragma once

#include <utility>

#include "chorus/layers/preprocessing/index_lookup.h"

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
