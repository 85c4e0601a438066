#include <fstream>
#include <functional>

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

class SavingTest : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    layers::Layer::reset_names();
    layers::set_random_seed(11);
  }
  std::filesystem::path root() const { return dir(); }
  CompileOptions options() {
    return {.optimizer = optimizers::Adam(0.01), .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
            .metrics = {metrics::SparseCategoricalAccuracy()}};
  }
};

TEST_F(SavingTest, SaveThenLoadModelIsBitExact) {
  auto model = testing::small_mlp();
  model->compile(options());
  auto data = testing::separable_blobs(64, 1);
  model->fit(data.x, data.y, {.batch_size = 16, .verbose = 0});
  model->save(root() / "ckpt-1.keras");

  auto restored = load_model(root() / "ckpt-1.keras");
  auto a = model->weights(), b = restored->weights();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].path(), b[i].path());
    EXPECT_TRUE(testing::same_bits(a[i].value(), b[i].value())) << a[i].path();
  }
  EXPECT_TRUE(testing::same_bits((*model)(data.x), (*restored)(data.x)));
  EXPECT_EQ(restored->optimizer().iterations(), 4);
  EXPECT_EQ(restored->optimizer().class_name(), "Adam");
  EXPECT_EQ(restored->metrics()[1]->name(), "sparse_categorical_accuracy");
}

TEST_F(SavingTest, ResumingFromACheckpointEqualsUninterruptedTraining) {
  auto data = testing::separable_blobs(96, 2);
  auto uninterrupted = testing::small_mlp();
  uninterrupted->compile(options());
  auto start = root() / "start";
  uninterrupted->save(start);
  uninterrupted->fit(data.x, data.y, {.epochs = 3, .batch_size = 16, .verbose = 0, .shuffle = false});

  auto first = load_model(start);
  first->fit(data.x, data.y, {.epochs = 1, .batch_size = 16, .verbose = 0, .shuffle = false});
  first->save(root() / "ckpt-1");
  auto resumed = load_model(root() / "ckpt-1");
  resumed->fit(data.x, data.y, {.epochs = 3, .batch_size = 16, .verbose = 0, .shuffle = false, .initial_epoch = 1});

  auto a = uninterrupted->weights(), b = resumed->weights();
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(testing::same_bits(a[i].value(), b[i].value())) << a[i].path();
  auto sa = uninterrupted->optimizer().variables(), sb = resumed->optimizer().variables();
  ASSERT_EQ(sa.size(), sb.size());
  ASSERT_EQ(sa.size(), 1 + 2 * a.size());  // iterations, then Adam's two moments per weight
  for (size_t i = 0; i < sa.size(); ++i) EXPECT_TRUE(testing::same_bits(sa[i].value(), sb[i].value())) << sa[i].path();
}

TEST_F(SavingTest, WeightsRoundTripAndMismatchListsEveryDifference) {
  auto model = testing::small_mlp(4, 8, 3);
  model->save_weights(root() / "w.weights.safetensors");
  auto same = testing::small_mlp(4, 8, 3);  // dense_2, dense_3: other names, the same object paths
  same->load_weights(root() / "w.weights.safetensors");
  EXPECT_TRUE(testing::same_bits((*model)(testing::random_tensor({3, 4}, 2)), (*same)(testing::random_tensor({3, 4}, 2))));

  layers::Layer::reset_names();
  auto other = testing::small_mlp(4, 5, 3);
  EXPECT_THAT([&] { other->load_weights(root() / "w.weights.safetensors"); },
              ThrowsMessage<ValueError>(HasSubstr("mismatched: dense/kernel (file (4, 8) float32, model 'functional' (4, 5) float32)")));

  layers::Layer::reset_names();
  auto twin = testing::small_mlp(4, 8, 3);
  twin->load_weights(root() / "w.weights.safetensors");
  Tensor x = testing::random_tensor({3, 4}, 2);
  EXPECT_TRUE(testing::same_bits((*model)(x), (*twin)(x)));
}

TEST_F(SavingTest, SequentialRoundTrip) {
  Sequential seq({layers::InputLayer({4}), layers::Dense(8, {.activation = "relu"}), layers::Dropout(0.5), layers::Dense(3)});
  seq.save(root() / "seq");
  auto restored = load_model(root() / "seq");
  EXPECT_EQ(restored->class_name(), "Sequential");
  Tensor x = testing::random_tensor({3, 4}, 2);
  EXPECT_TRUE(testing::same_bits(seq(x), (*restored)(x)));
}

TEST_F(SavingTest, SubclassedModelsCannotBeRebuiltFromConfig) {
  class Tiny : public Model {
   public:
    Tiny() : dense_(add<layers::Dense>(2)) {}
    Tree call(const Tree& x, bool) override { return (*dense_)(x.tensor()); }

   private:
    layers::Dense* dense_;
  };
  Tiny tiny;
  tiny(testing::random_tensor({1, 3}, 1));
  tiny.save(root() / "tiny");
  EXPECT_THAT([&] { load_model(root() / "tiny"); }, ThrowsMessage<ValueError>(HasSubstr("call load_weights")));
  Tiny again;  // its Dense is dense_1, keyed "dense" as the first one's
  again(testing::random_tensor({1, 3}, 1));
  again.load_weights(root() / "tiny");
  EXPECT_TRUE(testing::same_bits(tiny(testing::random_tensor({1, 3}, 2)), again(testing::random_tensor({1, 3}, 2))));
}

TEST_F(SavingTest, LoadModelOfAMissingOrCorruptDirectoryIsAnIOError) {
  EXPECT_THAT([&] { load_model(root() / "nope"); }, ThrowsMessage<IOError>(HasSubstr("nope is not a saved model directory")));
  std::filesystem::create_directories(root() / "bad");
  std::ofstream(root() / "bad/state.json") << R"({"format": "chorus.model", "version": 1})";
  std::ofstream(root() / "bad/config.json") << "{not json";
  EXPECT_THAT([&] { load_model(root() / "bad"); }, ThrowsMessage<IOError>(HasSubstr("config.json: not valid JSON")));
}

// A checkpoint that was compiled and trained, so every file of a saved model is there.
class DamagedCheckpointTest : public SavingTest {
 protected:
  void SetUp() override {
    SavingTest::SetUp();
    auto model = testing::small_mlp();
    model->compile(options());
    auto data = testing::separable_blobs(32, 1);
    model->fit(data.x, data.y, {.batch_size = 16, .verbose = 0});
    model->save(ckpt());
  }
  std::filesystem::path ckpt() const { return root() / "ckpt"; }
  std::string file(const char* name) const { return (ckpt() / name).string(); }
  nlohmann::json read(const char* name) const { return nlohmann::json::parse(std::ifstream(ckpt() / name)); }
  void write(const char* name, const std::string& text) const { std::ofstream(ckpt() / name) << text; }
  // Rewrites config.json as `edit` changes it.
  void edit_config(const std::function<void(nlohmann::json&)>& edit) const {
    nlohmann::json config = read("config.json");
    edit(config);
    write("config.json", config.dump());
  }
};

TEST_F(DamagedCheckpointTest, StateJsonMustExistParseAndHaveTheFormatAndAKnownVersion) {
  EXPECT_EQ(read("state.json"), nlohmann::json::parse(R"({"format": "chorus.model", "version": 1, "optimizer": true})"));
  const nlohmann::json state = read("state.json");
  std::filesystem::remove(ckpt() / "state.json");
  EXPECT_THAT([&] { load_model(ckpt()); },
              ThrowsMessage<IOError>(HasSubstr(file("state.json") + " is missing: " + ckpt().string() +
                                               " is not a complete saved model")));
  write("state.json", "garbage");
  EXPECT_THAT([&] { load_model(ckpt()); }, ThrowsMessage<IOError>(HasSubstr(file("state.json") + ": not valid JSON")));
  write("state.json", R"({"format": "keras", "version": 1})");
  EXPECT_THAT([&] { load_model(ckpt()); },
              ThrowsMessage<IOError>(HasSubstr(file("state.json") + ": expected \"format\": \"chorus.model\", found \"keras\"")));
  write("state.json", R"({"format": "chorus.model", "version": 99})");
  EXPECT_THAT([&] { load_model(ckpt()); },
              ThrowsMessage<IOError>(HasSubstr(
                  file("state.json") + ": version 99 is not supported: this build of chorus reads version 1")));
  write("state.json", R"({"format": "chorus.model", "version": 1, "optimizer": "yes"})");
  EXPECT_THAT([&] { load_model(ckpt()); },
              ThrowsMessage<IOError>(HasSubstr(file("state.json") + ": \"optimizer\": expected true or false, found \"yes\"")));
  write("state.json", state.dump());
  EXPECT_EQ(load_model(ckpt())->optimizer().iterations(), 2);
}

TEST_F(DamagedCheckpointTest, AMissingWeightsFileIsAnError) {
  std::filesystem::remove(ckpt() / "model.weights.safetensors");
  EXPECT_THAT([&] { load_model(ckpt(), {.compile = false}); },
              ThrowsMessage<IOError>(HasSubstr(file("model.weights.safetensors") + " is missing: " + ckpt().string() +
                                               " is not a complete saved model")));
}

TEST_F(DamagedCheckpointTest, AMissingOptimizerFileIsAnErrorUnlessCompileIsOff) {
  std::filesystem::remove(ckpt() / "optimizer.safetensors");
  EXPECT_THAT([&] { load_model(ckpt()); },
              ThrowsMessage<IOError>(HasSubstr(file("optimizer.safetensors") + " is missing, but " + file("state.json") +
                                               " says the optimizer's state was saved")));
  auto weights_only = load_model(ckpt(), {.compile = false});
  EXPECT_FALSE(weights_only->compiled());
  layers::Layer::reset_names();
  auto twin = testing::small_mlp();
  twin->load_weights(ckpt());
  Tensor x = testing::random_tensor({3, 4}, 2);
  EXPECT_TRUE(testing::same_bits((*twin)(x), (*weights_only)(x)));
}

TEST_F(DamagedCheckpointTest, CompileOffSkipsABrokenCompileConfig) {
  edit_config([](nlohmann::json& c) { c["compile_config"].erase("optimizer"); });
  EXPECT_THAT([&] { load_model(ckpt()); },
              ThrowsMessage<ValueError>(HasSubstr(file("config.json") + ": compile_config.optimizer: missing")));
  EXPECT_FALSE(load_model(ckpt(), {.compile = false})->compiled());
}

TEST_F(DamagedCheckpointTest, AnUntrainedOptimizerNeedsNoFile) {
  auto model = testing::small_mlp();
  model->compile(options());
  model->save(root() / "untrained");
  EXPECT_FALSE(std::filesystem::exists(root() / "untrained/optimizer.safetensors"));
  EXPECT_EQ(load_model(root() / "untrained")->optimizer().iterations(), 0);
}

TEST_F(DamagedCheckpointTest, ConfigOfTheWrongShapeNamesTheFileAndField) {
  const std::string config = file("config.json");
  write("config.json", "[1,2,3]");
  EXPECT_THAT([&] { load_model(ckpt()); },
              ThrowsMessage<IOError>(HasSubstr(config + ": expected an object with \"class_name\" and \"config\", found array")));
  edit_config([](nlohmann::json& c) { c = {{"class_name", 5}}; });
  EXPECT_THAT([&] { load_model(ckpt()); }, ThrowsMessage<IOError>(HasSubstr(config + ": class_name: expected a string, found 5")));
  edit_config([](nlohmann::json& c) { c = {{"class_name", "Functional"}, {"config", nullptr}}; });
  EXPECT_THAT([&] { load_model(ckpt()); }, ThrowsMessage<ValueError>(HasSubstr(config + ": config: expected an object, found null")));
}

TEST_F(DamagedCheckpointTest, FunctionalNodeIndicesAreChecked) {
  const std::string config = file("config.json");
  ASSERT_EQ(read("config.json")["config"]["layers"].size(), 3);
  edit_config([](nlohmann::json& c) { c["config"]["nodes"][2]["layer"] = 99; });
  EXPECT_THAT([&] { load_model(ckpt()); },
              ThrowsMessage<ValueError>(HasSubstr(config + ": config.nodes[2].layer: index 99 but there are 3 layers")));
  edit_config([](nlohmann::json& c) { c["config"]["nodes"][2]["layer"] = -1; });
  EXPECT_THAT([&] { load_model(ckpt()); },
              ThrowsMessage<ValueError>(HasSubstr(config + ": config.nodes[2].layer: index -1 but there are 3 layers")));
  edit_config([](nlohmann::json& c) {
    c["config"]["nodes"][2]["layer"] = 2;
    c["config"]["nodes"][2]["inputs"]["ref"] = {7, 0};
  });
  EXPECT_THAT([&] { load_model(ckpt()); },
              ThrowsMessage<ValueError>(HasSubstr(config + ": config.nodes[2].inputs.ref[0]: index 7 but there are 2 nodes before it")));
  edit_config([](nlohmann::json& c) {
    c["config"]["nodes"][2]["inputs"]["ref"] = {1, 0};
    c["config"]["outputs"] = "dense_1";
  });
  EXPECT_THAT([&] { load_model(ckpt()); },
              ThrowsMessage<ValueError>(HasSubstr(config + ": config.outputs: expected a ref, a list or a dict, found \"dense_1\"")));
}

// check_saved_model is load_model's checks without the weights: it accepts what
// load_model accepts and refuses what it refuses, with the same message.
TEST_F(DamagedCheckpointTest, CheckSavedModelRunsLoadModelsChecks) {
  check_saved_model(ckpt());
  const nlohmann::json original = read("config.json");
  const std::string config = file("config.json");
  write("config.json", "[1,2,3]");
  const std::string array = config + ": expected an object with \"class_name\" and \"config\", found array";
  EXPECT_THAT([&] { load_model(ckpt()); }, ThrowsMessage<IOError>(HasSubstr(array)));
  EXPECT_THAT([&] { check_saved_model(ckpt()); }, ThrowsMessage<IOError>(HasSubstr(array)));
  // The compile config is read strictly too.
  edit_config([&](nlohmann::json& c) {
    c = original;
    c["compile_config"]["optimizer"]["config"]["learning_rat"] = 0.1;
  });
  const std::string typo = "unexpected config key 'learning_rat' (did you mean 'learning_rate'?)";
  EXPECT_THAT([&] { load_model(ckpt()); }, ThrowsMessage<ValueError>(HasSubstr(typo)));
  EXPECT_THAT([&] { check_saved_model(ckpt()); }, ThrowsMessage<ValueError>(HasSubstr(config + ": compile_config")));
  EXPECT_THAT([&] { check_saved_model(ckpt()); }, ThrowsMessage<ValueError>(HasSubstr(typo)));
}

TEST_F(DamagedCheckpointTest, LayerConfigsCheckTypesAndRanges) {
  const std::string config = file("config.json");
  edit_config([](nlohmann::json& c) { c["config"]["layers"][1]["config"]["units"] = 10.7; });
  EXPECT_THAT([&] { load_model(ckpt()); },
              ThrowsMessage<ValueError>(HasSubstr(config + ": config.layers[1]: Dense: config key 'units': expected an "
                                                           "integer, got 10.7 (a float)")));
  // A config may not make the model allocate more bytes of weights than the weights file
  // holds (a fuzzer editing config.json would trip libFuzzer's malloc limit otherwise).
  const auto bytes = std::filesystem::file_size(ckpt() / "model.weights.safetensors");
  edit_config([](nlohmann::json& c) { c["config"]["layers"][1]["config"]["units"] = 3'000'000'000; });
  EXPECT_THAT([&] { load_model(ckpt()); },
              ThrowsMessage<ValueError>(HasSubstr(fmt::format(
                  "{}: config.nodes[1]: dense/kernel: a weight of shape (4, 3000000000) float32 needs 48000000000 "
                  "bytes, but {} holds {} bytes, and {} of them are left",
                  config, file("model.weights.safetensors"), bytes, bytes))));
  edit_config([](nlohmann::json& c) { c["config"]["layers"][1]["config"]["units"] = -3; });
  EXPECT_THAT([&] { load_model(ckpt()); },
              ThrowsMessage<ValueError>(HasSubstr(config + ": config.layers[1]: Dense: expected units > 0. Received: units=-3")));
  edit_config([](nlohmann::json& c) {
    c["config"]["layers"][1]["config"]["units"] = 8;
    c["config"]["layers"][0]["config"]["batch_shape"] = {nullptr, 4.5};
  });
  EXPECT_THAT([&] { load_model(ckpt()); },
              ThrowsMessage<ValueError>(HasSubstr(config + ": config.layers[0]: InputLayer: config key 'batch_shape': "
                                                           "expected a list of integers or nulls, got [null,4.5] (a list)")));
}

TEST_F(DamagedCheckpointTest, ANegativeLearningRateIsRefused) {
  edit_config([](nlohmann::json& c) { c["compile_config"]["optimizer"]["config"]["learning_rate"] = -0.01; });
  EXPECT_THAT([&] { load_model(ckpt()); },
              ThrowsMessage<ValueError>(HasSubstr(file("config.json") + ": compile_config.optimizer: Adam: config key "
                                                                        "'learning_rate': expected a learning rate >= 0, got -0.01")));
}

}  // namespace
}  // namespace chorus::models
