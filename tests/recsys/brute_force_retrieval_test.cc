// BruteForceRetrieval against a brute-force reference written here: exact ids and scores
// on integer-valued embeddings (exact float dot products, many ties), nearby scores on
// random ones, several query blocks, candidate ids, shared variables, and every error.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "chorus/autograd/tape.h"
#include "chorus/backend/cpu/parallel.h"
#include "chorus/backend/cpu/top_k_kernels.h"
#include "chorus/core/creation.h"
#include "chorus/ops/ops.h"
#include "chorus/recsys/brute_force_retrieval.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus::recsys {
namespace {

using namespace testing::test_names;

struct Reference {
  std::vector<float> scores;  // (B, k)
  std::vector<int32_t> ids;   // (B, k) row indices
};

// Scores in double, then a full sort by (score descending, index ascending).
Reference reference_top_k(const Tensor& query, const Tensor& candidates, int64_t k) {
  const int64_t b = query.dim(0), n = candidates.dim(0), d = candidates.dim(1);
  const std::vector<float> q = query.to_vector<float>(), c = candidates.to_vector<float>();
  Reference ref;
  for (int64_t r = 0; r < b; ++r) {
    std::vector<double> s(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) {
      double dot = 0;
      for (int64_t i = 0; i < d; ++i) dot += double{q[static_cast<size_t>(r * d + i)]} * c[static_cast<size_t>(j * d + i)];
      s[static_cast<size_t>(j)] = dot;
    }
    std::vector<int32_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t z) { return s[a] > s[z]; });
    for (int64_t j = 0; j < k; ++j) {
      ref.ids.push_back(order[static_cast<size_t>(j)]);
      ref.scores.push_back(static_cast<float>(s[order[static_cast<size_t>(j)]]));
    }
  }
  return ref;
}

// Random integers in [-3, 3] as float32: dot products are exact, and ties are common.
Tensor integer_valued(const Shape& shape, uint64_t seed) {
  Tensor t = testing::random_tensor(shape, seed, -3.5, 3.5);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = std::round(p[i]);
  return t;
}

void expect_exact(const Tree& out, const Reference& ref) {
  ASSERT_TRUE(out.is_list());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].tensor().dtype(), kInt32);
  EXPECT_EQ(out[1].tensor().to_vector<int32_t>(), ref.ids);
  EXPECT_EQ(out[0].tensor().to_vector<float>(), ref.scores);
}

TEST(BruteForceRetrievalTest, MatchesReferenceExactlyOnIntegerEmbeddingsWithTies) {
  for (int64_t n : {10, 11, 257}) {
    Tensor candidates = integer_valued(Shape{n, 7}, 1 + static_cast<uint64_t>(n));
    Tensor query = integer_valued(Shape{13, 7}, 2);
    BruteForceRetrieval retrieval(10);
    retrieval.update_candidates(candidates);
    expect_exact(retrieval(Tree(query)), reference_top_k(query, candidates, 10));
  }
}

TEST(BruteForceRetrievalTest, RandomEmbeddingsAtOddSizes) {
  for (auto [b, n, d, k] : std::vector<std::array<int64_t, 4>>{{1, 1, 1, 1}, {7, 1023, 7, 5}, {33, 100, 32, 100}}) {
    Tensor candidates = testing::random_tensor(Shape{n, d}, 3);
    Tensor query = testing::random_tensor(Shape{b, d}, 4);
    BruteForceRetrieval retrieval(k);
    retrieval.update_candidates(candidates);
    Tree out = retrieval(Tree(query));
    Reference ref = reference_top_k(query, candidates, k);
    EXPECT_EQ(out[0].tensor().shape(), (Shape{b, k}));
    EXPECT_TRUE(testing::tensors_near(out[0].tensor(), from_values<float>(ref.scores, Shape{b, k}), 1e-5));
    // Ids agree wherever the reference's neighbouring scores are not within rounding.
    const std::vector<int32_t> ids = out[1].tensor().to_vector<int32_t>();
    for (size_t i = 0; i < ids.size(); ++i) {
      const bool close_to_next = i % k + 1 < static_cast<size_t>(k) && ref.scores[i] - ref.scores[i + 1] < 1e-5f;
      const bool close_to_prev = i % k > 0 && ref.scores[i - 1] - ref.scores[i] < 1e-5f;
      if (!close_to_next && !close_to_prev) {
        EXPECT_EQ(ids[i], ref.ids[i]) << "position " << i;
      }
    }
  }
}

TEST(BruteForceRetrievalTest, AllEqualScoresGiveTheLowestIndices) {
  BruteForceRetrieval retrieval(4, /*return_scores=*/false);
  retrieval.update_candidates(ones(Shape{9, 3}));
  Tensor ids = retrieval(Tensor(ones(Shape{2, 3})));
  EXPECT_EQ(ids.to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 2, 3, 0, 1, 2, 3}));
}

TEST(BruteForceRetrievalTest, LongRowsOfTiesAndSortedScores) {
  // 1000 equal scores overflow the survivors' buffer many times; ascending and descending
  // rows move the running threshold at every score or never.
  const int64_t n = 1000;
  std::vector<float> values(static_cast<size_t>(3 * n));
  for (int64_t j = 0; j < n; ++j) {
    values[static_cast<size_t>(j)] = 1.0f;
    values[static_cast<size_t>(n + j)] = static_cast<float>(j);
    values[static_cast<size_t>(2 * n + j)] = static_cast<float>(n - j);
  }
  // Query i selects row i of the candidates' transpose: candidates (n, 3), queries e_i.
  Tensor candidates = Tensor::empty(Shape{n, 3});
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < 3; ++i) candidates.data<float>()[j * 3 + i] = values[static_cast<size_t>(i * n + j)];
  }
  Tensor query = from_values<float>({1, 0, 0, 0, 1, 0, 0, 0, 1}, Shape{3, 3});
  BruteForceRetrieval retrieval(10);
  retrieval.update_candidates(candidates);
  expect_exact(retrieval(Tree(query)), reference_top_k(query, candidates, 10));
  std::vector<int32_t> first_ten(10);
  std::iota(first_ten.begin(), first_ten.end(), 0);
  const std::vector<int32_t> ids = retrieval(Tree(query))[1].tensor().to_vector<int32_t>();
  EXPECT_EQ(std::vector<int32_t>(ids.begin(), ids.begin() + 10), first_ten);
}

TEST(BruteForceRetrievalTest, AllNaNRowsGiveTheLowestIndices) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  BruteForceRetrieval retrieval(3, false);
  retrieval.update_candidates(full(Shape{100, 2}, nan));
  EXPECT_EQ(retrieval(ones(Shape{1, 2})).to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 2}));
  // k equal to the number of candidates returns them all, best first.
  BruteForceRetrieval all(4, false);
  all.update_candidates(from_values<float>({2, nan, -1, 5}, Shape{4, 1}));
  EXPECT_EQ(all(ones(Shape{1, 1})).to_vector<int32_t>(), (std::vector<int32_t>{1, 3, 0, 2}));
}

TEST(BruteForceRetrievalTest, ManyQueryBlocksMatchTheReference) {
  // 200 queries take several query blocks, 3000 candidates several candidate blocks.
  const int64_t n = 3000, b = 200;
  ASSERT_LT(backend::cpu::kTopKScoreBlockBytes / (backend::cpu::kTopKQueryBlock * 4), n);
  ASSERT_LT(backend::cpu::kTopKQueryBlock, b / 2);
  Tensor candidates = integer_valued(Shape{n, 5}, 5);
  Tensor query = integer_valued(Shape{b, 5}, 6);
  BruteForceRetrieval retrieval(10);
  retrieval.update_candidates(candidates);
  expect_exact(retrieval(Tree(query)), reference_top_k(query, candidates, 10));
  // Queries given as a view (a slice of a larger batch) give the same rows.
  Tree slice = retrieval(Tree(query.first_axis_slice(100, 200)));
  const std::vector<int32_t> all = retrieval(Tree(query))[1].tensor().to_vector<int32_t>();
  EXPECT_EQ(slice[1].tensor().to_vector<int32_t>(), std::vector<int32_t>(all.begin() + 1000, all.end()));
}

TEST(BruteForceRetrievalTest, ResultsDoNotDependOnTheThreadCount) {
  Tensor candidates = testing::random_tensor(Shape{500, 8}, 19);
  Tensor query = testing::random_tensor(Shape{300, 8}, 20);
  BruteForceRetrieval retrieval(7);
  retrieval.update_candidates(candidates);
  const int saved = backend::cpu::intra_op_threads();
  backend::cpu::set_intra_op_threads(2);
  Tree parallel = retrieval(Tree(query));
  backend::cpu::set_intra_op_threads(1);
  Tree serial = retrieval(Tree(query));
  backend::cpu::set_intra_op_threads(saved);
  EXPECT_EQ(parallel[1].tensor().to_vector<int32_t>(), serial[1].tensor().to_vector<int32_t>());
  EXPECT_EQ(parallel[0].tensor().to_vector<float>(), serial[0].tensor().to_vector<float>());
}

TEST(BruteForceRetrievalTest, CandidateIdsAreReturnedInsteadOfIndices) {
  Tensor candidates = integer_valued(Shape{20, 4}, 7);
  Tensor query = integer_valued(Shape{5, 4}, 8);
  std::vector<int64_t> ids(20);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = 1000 + 7 * static_cast<int64_t>(i);
  BruteForceRetrieval retrieval(3, /*return_scores=*/false, {.candidate_ids = from_values<int64_t>(ids, Shape{20})});
  retrieval.update_candidates(candidates);
  Tensor got = retrieval(query);
  EXPECT_EQ(got.dtype(), kInt32);
  Reference ref = reference_top_k(query, candidates, 3);
  std::vector<int32_t> expected;
  for (int32_t row : ref.ids) expected.push_back(static_cast<int32_t>(ids[static_cast<size_t>(row)]));
  EXPECT_EQ(got.to_vector<int32_t>(), expected);
  // New ids replace the old ones; candidates without ids keep them.
  retrieval.update_candidates(candidates, arange(0, 20, 1, kInt32));
  EXPECT_EQ(retrieval(query).to_vector<int32_t>(), ref.ids);
}

TEST(BruteForceRetrievalTest, ConstructorCandidatesAreCopied) {
  Tensor candidates = integer_valued(Shape{12, 3}, 9);
  Tensor query = integer_valued(Shape{4, 3}, 10);
  BruteForceRetrieval retrieval(2, true, {.candidate_embeddings = candidates});
  Reference ref = reference_top_k(query, candidates, 2);
  candidates.data<float>()[0] = 1000;  // the layer kept its own copy
  expect_exact(retrieval(Tree(query)), ref);
  EXPECT_FALSE(retrieval.candidate_embeddings().trainable());
  EXPECT_TRUE(retrieval.weights().empty());
}

TEST(BruteForceRetrievalTest, SharedVariableUpdatesAreSeen) {
  Variable table("movies/embeddings", integer_valued(Shape{15, 4}, 11));
  Tensor query = integer_valued(Shape{3, 4}, 12);
  BruteForceRetrieval retrieval(5);
  retrieval.set_candidate_embeddings(table);
  expect_exact(retrieval(Tree(query)), reference_top_k(query, table.value(), 5));
  Tensor updated = integer_valued(Shape{15, 4}, 13);
  table.assign(updated);
  expect_exact(retrieval(Tree(query)), reference_top_k(query, updated, 5));
  EXPECT_EQ(retrieval.candidate_embeddings().value().impl(), table.value().impl());
}

TEST(BruteForceRetrievalTest, NaNScoresRankFirst) {
  Tensor candidates = from_values<float>({1, 2, std::numeric_limits<float>::quiet_NaN(), 3}, Shape{4, 1});
  BruteForceRetrieval retrieval(2, false);
  retrieval.update_candidates(candidates);
  EXPECT_EQ(retrieval(from_values<float>({1.0f}, Shape{1, 1})).to_vector<int32_t>(), (std::vector<int32_t>{2, 3}));
}

TEST(BruteForceRetrievalTest, EmptyBatchAndBFloat16) {
  BruteForceRetrieval retrieval(3);
  retrieval.update_candidates(integer_valued(Shape{8, 2}, 14));
  Tree empty = retrieval(Tree(Tensor::empty(Shape{0, 2})));
  EXPECT_EQ(empty[0].tensor().shape(), (Shape{0, 3}));
  EXPECT_EQ(empty[1].tensor().shape(), (Shape{0, 3}));

  Tensor candidates = integer_valued(Shape{30, 4}, 15);
  Tensor query = integer_valued(Shape{6, 4}, 16);
  BruteForceRetrieval bf16(4);
  bf16.update_candidates(ops::cast(candidates, kBFloat16));
  Tree out = bf16(Tree(ops::cast(query, kBFloat16)));  // small integers are exact in bfloat16
  EXPECT_EQ(out[0].tensor().dtype(), kBFloat16);
  Reference ref = reference_top_k(query, candidates, 4);
  EXPECT_EQ(out[1].tensor().to_vector<int32_t>(), ref.ids);
  EXPECT_EQ(out[0].tensor().to_vector<float>(), ref.scores);
}

TEST(BruteForceRetrievalTest, NothingIsRecordedOnTheTape) {
  Variable table("t/embeddings", testing::random_tensor(Shape{6, 3}, 17));
  Variable users("u/embeddings", testing::random_tensor(Shape{2, 3}, 18));
  BruteForceRetrieval retrieval(2);
  retrieval.set_candidate_embeddings(table);
  autograd::GradientTape tape;
  Tree out = retrieval(Tree(users.value()));
  EXPECT_FALSE(autograd::needs_gradient(out[0].tensor()));
  EXPECT_FALSE(autograd::needs_gradient(out[1].tensor()));
}

TEST(BruteForceRetrievalTest, Config) {
  BruteForceRetrieval retrieval(7, false, {.name = "top7"});
  EXPECT_EQ(retrieval.name(), "top7");
  EXPECT_EQ(retrieval.class_name(), "BruteForceRetrieval");
  nlohmann::json config = retrieval.get_config();
  EXPECT_EQ(config["k"], 7);
  EXPECT_EQ(config["return_scores"], false);
  EXPECT_EQ(config["name"], "top7");
  EXPECT_FALSE(retrieval.has_candidates());
  EXPECT_EQ(retrieval.num_candidates(), 0);
  // The round trip keeps k, return_scores and the name; candidates must be set again.
  auto rebuilt = BruteForceRetrieval::from_config(config);
  EXPECT_EQ(rebuilt->get_config(), config);
  EXPECT_FALSE(rebuilt->has_candidates());
  EXPECT_EQ(BruteForceRetrieval::from_config({{"name", "d"}})->k(), 10);
  EXPECT_THAT([] { BruteForceRetrieval::from_config({{"k", "ten"}}); },
              ThrowsMessage<ValueError>(HasSubstr("BruteForceRetrieval: config key 'k': expected an integer")));
  EXPECT_THAT([] { BruteForceRetrieval::from_config({{"k", 0}, {"name", "z"}}); },
              ThrowsMessage<ValueError>(HasSubstr("z: expected k >= 1, got 0")));
}

TEST(BruteForceRetrievalTest, Errors) {
  EXPECT_THAT([] { BruteForceRetrieval(0, true, {.name = "r"}); },
              ThrowsMessage<ValueError>(HasSubstr("r: expected k >= 1, got 0")));
  BruteForceRetrieval retrieval(10, true, {.name = "r"});
  EXPECT_THAT([&] { retrieval(Tree(ones(Shape{2, 4}))); },
              ThrowsMessage<ValueError>(HasSubstr("r: no candidates to retrieve from")));
  EXPECT_THAT([&] { retrieval.update_candidates(ones(Shape{5, 4})); },
              ThrowsMessage<ValueError>(HasSubstr(
                  "r: the number of candidates provided (5) is less than the number of candidates to retrieve (k=10)")));
  EXPECT_THAT([&] { retrieval.set_candidate_embeddings(Variable("v", ones(Shape{9, 4}))); },
              ThrowsMessage<ValueError>(HasSubstr("(9) is less than the number of candidates to retrieve (k=10)")));
  EXPECT_THAT([&] { retrieval.update_candidates(ones(Shape{20})); },
              ThrowsMessage<ShapeError>(HasSubstr("r: candidate_embeddings must be a tensor of rank 2")));
  EXPECT_THAT([&] { retrieval.update_candidates(zeros(Shape{20, 4}, kInt32)); },
              ThrowsMessage<DTypeError>(HasSubstr("r: expected float32 or bfloat16 candidate_embeddings, got int32")));
  EXPECT_THAT([&] { retrieval.update_candidates(ones(Shape{20, 4}), arange(0, 19, 1, kInt32)); },
              ThrowsMessage<ShapeError>(HasSubstr("must have the same number of rows, got shapes (20, 4) and (19,)")));
  EXPECT_THAT([&] { retrieval.update_candidates(ones(Shape{20, 4}), ones(Shape{20})); },
              ThrowsMessage<DTypeError>(HasSubstr("r: expected integer candidate_ids, got float32")));
  EXPECT_THAT([&] { retrieval.update_candidates(ones(Shape{20, 4}), full(Shape{20}, 1e10, kInt64)); },
              ThrowsMessage<ValueError>(HasSubstr("r: candidate id 10000000000 at position 0 does not fit in int32")));
  EXPECT_FALSE(retrieval.has_candidates());  // failed updates change nothing

  retrieval.update_candidates(ones(Shape{20, 4}));
  EXPECT_THAT([&] { retrieval(Tree(ones(Shape{2, 5}))); },
              ThrowsMessage<ShapeError>(HasSubstr("r: expected queries of shape (batch, 4), got (2, 5)")));
  EXPECT_THAT([&] { retrieval(Tree(ones(Shape{4}))); },
              ThrowsMessage<ShapeError>(HasSubstr("r: expected queries of shape (batch, 4), got (4,)")));
  EXPECT_THAT([&] { retrieval(Tree(ones(Shape{2, 4}, kBFloat16))); },
              ThrowsMessage<DTypeError>(HasSubstr("r: expected queries of the candidates' dtype float32, got bfloat16")));
  EXPECT_THAT([&] { retrieval(Tree::list({ones(Shape{2, 4}), ones(Shape{2, 4})})); },
              ThrowsMessage<ValueError>(HasSubstr("r: expected a single tensor as input")));
  // Ids given to the constructor must fit the candidates that arrive later.
  BruteForceRetrieval with_ids(1, true, {.candidate_ids = arange(0, 3, 1, kInt32), .name = "w"});
  EXPECT_THAT([&] { with_ids.update_candidates(ones(Shape{4, 2})); },
              ThrowsMessage<ShapeError>(HasSubstr("w: candidate_embeddings and candidate_ids must have the same")));
  EXPECT_THAT([] { BruteForceRetrieval(1, true, {.candidate_ids = ones(Shape{3}), .name = "f"}); },
              ThrowsMessage<DTypeError>(HasSubstr("f: expected integer candidate_ids, got float32")));
}

}  // namespace
}  // namespace chorus::recsys
