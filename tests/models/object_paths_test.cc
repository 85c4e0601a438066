// Object paths (Keras 3's saving keys): layers keyed by class name, counted per parent; a
// second instance of a subclassed, functional or Sequential model loads the first one's
// weights and optimizer state and the other way round; another architecture is refused
// naming the first path that differs; files keyed by the old global names still load.
#include "chorus/models/object_paths.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/chorus.h"
#include "tests/models/model_test_util.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus::models {
namespace {

using namespace testing::test_names;

// Dense(8, relu) -> Dense(3), written by subclassing.
class TwoDense : public Model {
 public:
  TwoDense() : hidden_(add<layers::Dense>(8, layers::DenseOptions{.activation = "relu"})), out_(add<layers::Dense>(3)) {}
  Tree call(const Tree& x, bool training) override { return (*out_)((*hidden_)(x.tensor(), training), training); }

 private:
  layers::Dense* hidden_;
  layers::Dense* out_;
};

// A layer whose build() makes two Dense sublayers: paths nest under its key.
class Block : public layers::Layer {
 public:
  Block() : Layer("Block", "") {}

 protected:
  void build(const Tree& /*inputs*/) override {
    first_ = add<layers::Dense>(4);
    second_ = add<layers::Dense>(4);
  }
  Tree call(const Tree& x, bool training) override { return (*second_)((*first_)(x.tensor(), training), training); }

 private:
  layers::Dense* first_ = nullptr;
  layers::Dense* second_ = nullptr;
};

class Blocks : public Model {
 public:
  Blocks() : a_(add<Block>()), b_(add<Block>()), out_(add<layers::Dense>(3)) {}
  Tree call(const Tree& x, bool training) override {
    return (*out_)((*b_)((*a_)(x.tensor(), training), training), training);
  }

 private:
  Block* a_;
  Block* b_;
  layers::Dense* out_;
};

// A layer of any class name with one weight "scale", passing its inputs through.
class Scale : public layers::Layer {
 public:
  explicit Scale(std::string class_name) : Layer(std::move(class_name), "") {}

 protected:
  void build(const Tree& x) override { add_weight("scale", Shape{x.tensor().dim(-1)}, "ones"); }
  Tree call(const Tree& x, bool /*training*/) override { return x; }
};

class Scales : public Model {
 public:
  Scales() {
    for (const char* name : {"MyLSTMCell", "EinsumDense", "EinsumDense", "Dense"}) scales_.push_back(add<Scale>(name));
  }
  Tree call(const Tree& x, bool training) override {
    Tree y = x;
    for (Scale* s : scales_) y = (*s)(y, training);
    return y;
  }

 private:
  std::vector<Scale*> scales_;
};

std::unique_ptr<Model> subclassed() { return std::make_unique<TwoDense>(); }
std::unique_ptr<Model> functional() { return testing::small_mlp(); }
std::unique_ptr<Model> sequential(int64_t outputs = 3) {
  return std::make_unique<Sequential>(std::vector<Shared<layers::Layer>>{
      layers::InputLayer({4}), layers::Dense(8, {.activation = "relu"}), layers::Dropout(0.5), layers::Dense(outputs)});
}

void expect_same_values(const std::vector<autograd::Variable>& a, const std::vector<autograd::Variable>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(testing::same_bits(a[i].value(), b[i].value())) << b[i].path();
}

class ObjectPathsTest : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    layers::Layer::reset_names();
    layers::set_random_seed(7);
  }
  // Compiled (Adam) and built.
  static std::unique_ptr<Model> ready(std::unique_ptr<Model> model) {
    model->compile({.optimizer = optimizers::Adam(0.01), .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
    (*model)(testing::random_tensor({2, 4}, 1));
    return model;
  }
  // `from` trains a step (so its Adam slots are not zero) and saves; `to` loads its
  // weights and optimizer state and then holds the same values.
  void expect_loads(Model& from, Model& to, uint64_t seed) {
    const auto data = testing::separable_blobs(16, seed);
    from.fit(data.x, data.y, {.batch_size = 16, .verbose = 0});
    ASSERT_FALSE(testing::same_bits(from.optimizer().variables()[1].value(),
                                    zeros(from.optimizer().variables()[1].shape())));
    from.save_weights(dir_ / "w.weights.safetensors");
    from.save(dir_ / "saved");
    to.load_weights(dir_ / "w.weights.safetensors");
    to.load_optimizer_state(dir_ / "saved" / "optimizer.safetensors");
    expect_same_values(from.weights(), to.weights());
    expect_same_values(from.optimizer().variables(), to.optimizer().variables());
    EXPECT_EQ(to.optimizer().iterations(), from.optimizer().iterations());
    Tensor x = testing::random_tensor({3, 4}, seed);
    EXPECT_TRUE(testing::same_bits(from(x), to(x)));
  }
  // Two instances of one model class (their layers' global names differ) load each other's files.
  void expect_instances_share_files(const std::function<std::unique_ptr<Model>()>& make) {
    auto first = ready(make()), second = ready(make());
    ASSERT_NE(first->weights()[0].path(), second->weights()[0].path());
    ASSERT_EQ(weight_object_paths(*first), weight_object_paths(*second));
    {
      SCOPED_TRACE("the second loads the first's");
      expect_loads(*first, *second, 1);
    }
    SCOPED_TRACE("the first loads the second's");
    expect_loads(*second, *first, 2);
  }
};

TEST_F(ObjectPathsTest, LayersAreKeyedByClassNameCountedWithinTheirParent) {
  Blocks earlier;
  earlier(testing::random_tensor({2, 4}, 1));
  Blocks model;
  model(testing::random_tensor({2, 4}, 1));
  EXPECT_EQ(model.weights()[0].path(), "block_2/dense_6/kernel");  // global names go on counting
  EXPECT_THAT(weight_object_paths(model),
              ElementsAre("block/dense/kernel", "block/dense/bias", "block/dense_1/kernel", "block/dense_1/bias",
                          "block_1/dense/kernel", "block_1/dense/bias", "block_1/dense_1/kernel",
                          "block_1/dense_1/bias", "dense/kernel", "dense/bias"));
}

TEST_F(ObjectPathsTest, ClassNamesAreSnakeCasedAsKerasDoes) {
  Scales model;
  model(testing::random_tensor({2, 4}, 1));
  EXPECT_THAT(weight_object_paths(model),
              ElementsAre("my_lstm_cell/scale", "einsum_dense/scale", "einsum_dense_1/scale", "dense/scale"));
}

TEST_F(ObjectPathsTest, OptimizerSlotsAreKeyedByTheirVariablesObjectPath) {
  auto earlier = ready(functional());
  auto model = ready(functional());
  const auto data = testing::separable_blobs(16, 1);
  model->fit(data.x, data.y, {.batch_size = 16, .verbose = 0});
  const auto keys = optimizer_object_paths(model->optimizer(), *model);
  ASSERT_EQ(keys.size(), 9u);
  EXPECT_THAT(std::vector(keys.begin(), keys.begin() + 3),
              ElementsAre("optimizer/iterations", "optimizer/dense/kernel/momentum", "optimizer/dense/kernel/velocity"));
  EXPECT_EQ(keys.back(), "optimizer/dense_1/bias/velocity");
}

TEST_F(ObjectPathsTest, TwoSubclassedModelsLoadEachOthersFiles) { expect_instances_share_files(subclassed); }

TEST_F(ObjectPathsTest, TwoFunctionalModelsLoadEachOthersFiles) { expect_instances_share_files(functional); }

TEST_F(ObjectPathsTest, TwoSequentialModelsLoadEachOthersFiles) {
  expect_instances_share_files([] { return sequential(); });
}

TEST_F(ObjectPathsTest, AnotherArchitectureIsRefusedNamingTheFirstPathThatDiffers) {
  auto narrow = ready(testing::small_mlp(4, 8, 3));
  const auto data = testing::separable_blobs(16, 1);
  narrow->fit(data.x, data.y, {.batch_size = 16, .verbose = 0});
  narrow->save(dir_ / "narrow");
  auto wide = ready(testing::small_mlp(4, 5, 3));
  EXPECT_THAT([&] { wide->load_weights(dir_ / "narrow"); },
              ThrowsMessage<ValueError>(HasSubstr(fmt::format(
                  "does not match: the first path that differs is 'dense/kernel' (file (4, 8) float32, model '{}' (4, "
                  "5) float32)",
                  wide->name()))));
  EXPECT_THAT([&] { wide->load_optimizer_state(dir_ / "narrow" / "optimizer.safetensors"); },
              ThrowsMessage<ValueError>(HasSubstr("the first path that differs is 'optimizer/dense/kernel/momentum' "
                                                  "(file (4, 8) float32, optimizer 'adam' (4, 5) float32)")));
  auto deeper = ready(std::make_unique<Sequential>(std::vector<Shared<layers::Layer>>{
      layers::InputLayer({4}), layers::Dense(8), layers::Dense(3), layers::Dense(3)}));
  EXPECT_THAT([&] { deeper->load_weights(dir_ / "narrow"); },
              ThrowsMessage<ValueError>(AllOf(HasSubstr("the first path that differs is 'dense_2/kernel' (model '" +
                                                        deeper->name() + "' (3, 3) float32, not in the file)"),
                                              HasSubstr("missing from the file: dense_2/kernel, dense_2/bias"))));
}

// What chorus wrote before object paths: Variable::path() keys and no "keys" metadata.
void save_with_old_keys(const std::filesystem::path& file, const std::vector<autograd::Variable>& variables,
                        const char* format) {
  io::NamedTensors tensors;
  for (const autograd::Variable& v : variables) tensors.emplace_back(v.path(), v.value().clone());
  io::save_safetensors(file, tensors, {{"format", format}});
}

TEST_F(ObjectPathsTest, FilesKeyedByTheOldGlobalNamesStillLoad) {
  auto unused = functional();
  auto old = ready(functional());  // dense_2, dense_3: its old keys are not its object paths
  const auto data = testing::separable_blobs(16, 1);
  old->fit(data.x, data.y, {.batch_size = 16, .verbose = 0});
  save_with_old_keys(dir_ / "old.weights.safetensors", old->weights(), "chorus.weights");
  save_with_old_keys(dir_ / "old_optimizer.safetensors", old->optimizer().variables(), "chorus.optimizer");

  layers::Layer::reset_names();  // the same program again: the same global names
  auto unused_again = functional();
  auto again = ready(functional());
  ASSERT_EQ(again->weights()[0].path(), "dense_2/kernel");
  again->load_weights(dir_ / "old.weights.safetensors");
  again->load_optimizer_state(dir_ / "old_optimizer.safetensors");
  expect_same_values(old->weights(), again->weights());
  expect_same_values(old->optimizer().variables(), again->optimizer().variables());
}

// Dense(8) -> Dense(3) with the output layer made first: its global name "dense" is the
// hidden layer's object path, so old keys and object paths are the same set, meaning
// different layers.
std::unique_ptr<Model> made_backwards() {
  std::shared_ptr<layers::Layer> out = std::make_shared<layers::Dense>(3);
  std::shared_ptr<layers::Layer> hidden = std::make_shared<layers::Dense>(8);
  Tensor x = layers::Input({4});
  Tensor y = layers::call_shared(out, layers::call_shared(hidden, x)).tensor();
  return std::make_unique<Model>(x, y);
}

TEST_F(ObjectPathsTest, AnOldFileIsReadByItsOldKeysEvenWhereTheyAreObjectPathsToo) {
  auto old = ready(made_backwards());
  ASSERT_EQ(old->weights()[0].path(), "dense_1/kernel");
  ASSERT_EQ(weight_object_paths(*old)[0], "dense/kernel");
  save_with_old_keys(dir_ / "old.weights.safetensors", old->weights(), "chorus.weights");
  old->save_weights(dir_ / "new.weights.safetensors");

  layers::Layer::reset_names();
  auto again = ready(made_backwards());
  again->load_weights(dir_ / "old.weights.safetensors");
  expect_same_values(old->weights(), again->weights());
  auto another = ready(made_backwards());  // dense_3, dense_2
  another->load_weights(dir_ / "new.weights.safetensors");
  expect_same_values(old->weights(), another->weights());
}

}  // namespace
}  // namespace chorus::models
