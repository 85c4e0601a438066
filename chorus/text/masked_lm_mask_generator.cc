// Random draws per row: Philox keyed by fork(seed, epoch, element); position p uses block
// p, whose four words are (selection score, mask/random/keep draw, random id high, low).
// Choosing the k smallest scores picks a uniform k-subset; ties fall to the lower position.
#include "chorus/text/masked_lm_mask_generator.h"

#include <algorithm>
#include <cmath>

#include "chorus/core/error.h"
#include "chorus/core/random.h"

namespace chorus::text {
namespace {

double unit_draw(uint32_t bits) { return static_cast<double>(bits) * 0x1.0p-32; }  // [0, 1)

}  // namespace

MaskedLMMaskGenerator::MaskedLMMaskGenerator(MaskedLMMaskGeneratorOptions options)
    : options_(std::move(options)), key_(Generator(options_.seed).key()) {
  const auto& o = options_;
  if (o.vocabulary_size <= 0) {
    throw_error<ValueError>("MaskedLMMaskGenerator: expected vocabulary_size > 0. Received: vocabulary_size={}",
                            o.vocabulary_size);
  }
  if (o.mask_selection_length <= 0) {
    throw_error<ValueError>(
        "MaskedLMMaskGenerator: expected mask_selection_length > 0. Received: mask_selection_length={}",
        o.mask_selection_length);
  }
  for (const auto& [name, rate] : {std::pair{"mask_selection_rate", o.mask_selection_rate},
                                   std::pair{"mask_token_rate", o.mask_token_rate},
                                   std::pair{"random_token_rate", o.random_token_rate}}) {
    if (!(rate >= 0 && rate <= 1)) {
      throw_error<ValueError>("MaskedLMMaskGenerator: expected {} in [0, 1]. Received: {}={}", name, name, rate);
    }
  }
  if (o.mask_token_rate + o.random_token_rate > 1) {
    throw_error<ValueError>("MaskedLMMaskGenerator: expected mask_token_rate + random_token_rate <= 1. Received: "
                            "mask_token_rate={}, random_token_rate={}",
                            o.mask_token_rate, o.random_token_rate);
  }
}

bool MaskedLMMaskGenerator::selectable(int32_t id) const {
  const auto& u = options_.unselectable_token_ids;
  return std::find(u.begin(), u.end(), id) == u.end();
}

int64_t MaskedLMMaskGenerator::num_to_select(int64_t selectable) const {
  // The epsilon keeps 0.15 * 20 (3.0000000000000004 in binary) at 3.
  const auto wanted = static_cast<int64_t>(std::ceil(options_.mask_selection_rate * static_cast<double>(selectable) - 1e-9));
  return std::min(std::max<int64_t>(wanted, 0), options_.mask_selection_length);
}

void MaskedLMMaskGenerator::mask(std::span<const int32_t> ids, uint64_t epoch, uint64_t element, int32_t* token_ids,
                                 int32_t* mask_positions, int32_t* mask_ids, float* mask_weights) const {
  const uint64_t key = Generator(key_, 0).fork(epoch).fork(element).key();
  struct Candidate {
    uint32_t score;
    uint32_t position;
  };
  std::vector<Candidate> candidates;
  candidates.reserve(ids.size());
  for (size_t p = 0; p < ids.size(); ++p) {
    if (selectable(ids[p])) candidates.push_back({philox4x32(key, p)[0], static_cast<uint32_t>(p)});
  }
  const auto k = static_cast<size_t>(num_to_select(static_cast<int64_t>(candidates.size())));
  const auto by_score = [](const Candidate& a, const Candidate& b) {
    return a.score != b.score ? a.score < b.score : a.position < b.position;
  };
  std::partial_sort(candidates.begin(), candidates.begin() + static_cast<ptrdiff_t>(k), candidates.end(), by_score);
  std::sort(candidates.begin(), candidates.begin() + static_cast<ptrdiff_t>(k),
            [](const Candidate& a, const Candidate& b) { return a.position < b.position; });
  std::copy(ids.begin(), ids.end(), token_ids);
  const auto m = static_cast<size_t>(options_.mask_selection_length);
  for (size_t i = 0; i < m; ++i) {
    if (i >= k) {
      mask_positions[i] = 0;
      mask_ids[i] = 0;
      mask_weights[i] = 0;
      continue;
    }
    const uint32_t p = candidates[i].position;
    const std::array<uint32_t, 4> draw = philox4x32(key, p);
    const double u = unit_draw(draw[1]);
    if (u < options_.mask_token_rate) {
      token_ids[p] = options_.mask_token_id;
    } else if (u < options_.mask_token_rate + options_.random_token_rate) {
      const uint64_t bits = (static_cast<uint64_t>(draw[2]) << 32) | draw[3];
      token_ids[p] = static_cast<int32_t>(bits % static_cast<uint64_t>(options_.vocabulary_size));
    }
    mask_positions[i] = static_cast<int32_t>(p);
    mask_ids[i] = ids[p];
    mask_weights[i] = 1;
  }
}

MaskedLMRow MaskedLMMaskGenerator::mask(std::span<const int32_t> ids, uint64_t epoch, uint64_t element) const {
  const auto m = static_cast<size_t>(options_.mask_selection_length);
  MaskedLMRow row{std::vector<int32_t>(ids.size()), std::vector<int32_t>(m), std::vector<int32_t>(m),
                  std::vector<float>(m)};
  mask(ids, epoch, element, row.token_ids.data(), row.mask_positions.data(), row.mask_ids.data(),
       row.mask_weights.data());
  return row;
}

Tree MaskedLMMaskGenerator::mask_batch(const Tensor& token_ids, uint64_t epoch, uint64_t first_element) const {
  if (token_ids.rank() != 2 || token_ids.dtype() != kInt32) {
    throw_error<ValueError>("MaskedLMMaskGenerator: expected (B, L) int32 token ids. Received: {}",
                            Tree(token_ids).to_string());
  }
  const int64_t rows = token_ids.dim(0);
  const int64_t length = token_ids.dim(1);
  const int64_t m = options_.mask_selection_length;
  Tensor out = Tensor::empty(token_ids.shape(), kInt32);
  Tensor positions = Tensor::empty(Shape{rows, m}, kInt32);
  Tensor labels = Tensor::empty(Shape{rows, m}, kInt32);
  Tensor weights = Tensor::empty(Shape{rows, m}, kFloat32);
  const int32_t* in = token_ids.data<int32_t>();
  for (int64_t b = 0; b < rows; ++b) {
    mask({in + b * length, static_cast<size_t>(length)}, epoch, first_element + static_cast<uint64_t>(b),
         out.data<int32_t>() + b * length, positions.data<int32_t>() + b * m, labels.data<int32_t>() + b * m,
         weights.data<float>() + b * m);
  }
  return Tree{{"token_ids", out}, {"mask_positions", positions}, {"mask_ids", labels}, {"mask_weights", weights}};
}

}  // namespace chorus::text
