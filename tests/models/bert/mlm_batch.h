// A preprocessed masked-LM batch that BERT models of any vocabulary over 12 can learn,
// for the tests of BertMaskedLM alone and under a distribution.
#pragma once

#include <vector>

#include "chorus/chorus.h"

namespace chorus::testing {

// `rows` sequences of length 6, each one random token (5..12) repeated, with positions 1
// and 4 masked ([MASK] = 3): learnable from the context. A list (x, y, sample_weight).
inline Tree mlm_batch(int64_t rows, uint64_t seed) {
  Generator gen(seed);
  const Tensor draws = uniform(Shape{rows}, gen);
  std::vector<int32_t> ids, positions, labels;
  for (int64_t r = 0; r < rows; ++r) {
    const int32_t token = 5 + static_cast<int32_t>(draws.data<float>()[r] * 8);
    ids.insert(ids.end(), {token, 3, token, token, 3, token});
    positions.insert(positions.end(), {1, 4});
    labels.insert(labels.end(), {token, token});
  }
  const Tree x = Tree{{"token_ids", from_values<int32_t>(ids, Shape{rows, 6})},
                      {"segment_ids", zeros({rows, 6}, kInt32)},
                      {"padding_mask", ones({rows, 6}, kInt32)},
                      {"mask_positions", from_values<int32_t>(positions, Shape{rows, 2})}};
  return Tree::list({x, from_values<int32_t>(labels, Shape{rows, 2}), ones({rows, 2})});
}

}  // namespace chorus::testing
