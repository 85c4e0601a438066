#include "chorus/core/tree.h"

#include "chorus/core/creation.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus {
namespace {

using namespace testing::test_names;

TEST(TreeTest, DictBuiltLikeTheRetrievalModel) {
  Tensor emb = zeros({4, 32});
  Tree out{{"user_embeddings", emb}};
  out["predictions"] = zeros({4, 10}, kInt64);
  EXPECT_TRUE(out.is_dict());
  EXPECT_EQ(out.size(), 2u);
  EXPECT_TRUE(out["user_embeddings"].tensor().same(emb));
  EXPECT_EQ(out.to_string(), "{\"predictions\": (4, 10) int64, \"user_embeddings\": (4, 32) float32}");
}

TEST(TreeTest, ListAndNestedFlattenInSortedKeyOrder) {
  Tree batch = Tree::list({Tree{{"b", full({1}, 2)}, {"a", full({1}, 1)}}, full({1}, 3)});
  std::vector<float> order;
  for (const Tensor& t : batch.flatten()) order.push_back(t.item<float>());
  EXPECT_EQ(order, (std::vector<float>{1, 2, 3}));
  Tree doubled = batch.map([](const Tensor& t) { return full(t.shape(), t.item<float>() * 2); });
  EXPECT_TRUE(doubled.same_structure(batch));
  EXPECT_EQ(doubled[0]["b"].tensor().item<float>(), 4);
  Tree back = batch.unflatten(doubled.flatten());
  EXPECT_EQ(back[1].tensor().item<float>(), 6);
}

TEST(TreeTest, StructureComparison) {
  Tree a{{"x", zeros({1})}};
  Tree b{{"y", zeros({1})}};
  EXPECT_FALSE(a.same_structure(b));
  EXPECT_FALSE(a.same_structure(Tree(zeros({1}))));
  EXPECT_TRUE(Tree::list({zeros({1}), zeros({2})}).same_structure(Tree::list({ones({3}), ones({3})})));
}

TEST(TreeTest, ErrorsNameWhatIsThere) {
  Tree t{{"pixels", zeros({1})}, {"label", zeros({1})}};
  const Tree& ct = t;
  EXPECT_THAT([&] { ct["image"]; }, ThrowsMessage<ValueError>(HasSubstr("no key 'image'; the dict has keys [label, pixels]")));
  EXPECT_THAT([&] { t.tensor(); }, ThrowsMessage<ValueError>(HasSubstr("expected a tensor, but the tree is a dict")));
  Tree l = Tree::list({zeros({1})});
  EXPECT_THAT([&] { l[3]; }, ThrowsMessage<IndexError>(HasSubstr("index 3 is out of range for a list of 1")));
  EXPECT_THAT([&] { l.unflatten({}); }, ThrowsMessage<ValueError>(HasSubstr("the structure has 1 leaves, got 0 tensors")));
  Tree leaf(zeros({1}));
  EXPECT_THAT([&] { leaf["x"]; }, ThrowsMessage<ValueError>(HasSubstr("cannot look up key 'x': the tree is a tensor")));
}

}  // namespace
}  // namespace chorus
