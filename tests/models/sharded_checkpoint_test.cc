// Checkpoints in shards (issue 39): a model split over a (2, 2) mesh, its optimizer state
// split by ZeRO, saves Hugging Face's sharded layout, which Python's own reading of the
// format finds equal to the whole weights; the set reloads on one device and onto another
// mesh and trains on as the uninterrupted model does; placed variables read the old
// whole-file format; a missing, truncated or mislisted shard is refused naming the file.
#include "chorus/models/sharded_checkpoint.h"

#include <cstdio>
#include <filesystem>
#include <numeric>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "chorus/chorus.h"
#include "chorus/io/atomic_file.h"
#include "chorus/models/object_paths.h"
#include "tests/testing/logical_devices.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_names.h"

namespace chorus::models {
namespace {

using namespace testing::test_names;
namespace dist = chorus::distribution;
namespace fs = std::filesystem;
using nlohmann::json;

using ShardedCheckpointTest = testing::LogicalDevicesTest<4, testing::TempDirTest>;

std::unique_ptr<Model> seeded_mlp(uint64_t seed = 5) {
  layers::set_random_seed(seed);
  Tensor x = layers::Input({16});
  Tensor h = layers::Dense(32, {.activation = "relu", .name = "d1"})(x);
  h = layers::Dense(8, {.activation = "tanh", .name = "d2"})(h);
  return std::make_unique<Model>(x, layers::Dense(3, {.name = "d3"})(h));
}

// Megatron's pair over the model axis of a (batch, model) mesh; with ZeRO, the replicated
// variables' Adam slots split over the batch axis.
std::shared_ptr<dist::Distribution> model_parallel(int64_t batch, int64_t model) {
  std::vector<Device> devices;
  for (int i = 0; i < batch * model; ++i) devices.push_back(Device::cpu(i));
  dist::LayoutMap layout_map(dist::DeviceMesh({batch, model}, {"batch", "model"}, devices));
  layout_map["d1/kernel"] = {std::nullopt, "model"};
  layout_map["d1/bias"] = {"model"};
  layout_map["d2/kernel"] = {"model", std::nullopt};
  return std::make_shared<dist::ModelParallel>(
      layout_map, dist::ModelParallelOptions{.batch_dim_name = "batch", .shard = dist::Shard::kOptimizerState});
}

// Compiles `model` with Adam under `distribution` (nullptr: one device).
void compile(Model& model, const std::shared_ptr<dist::Distribution>& distribution) {
  dist::set_distribution(distribution);
  model.compile({.optimizer = optimizers::Adam({.learning_rate = 0.01}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
  dist::set_distribution(nullptr);
}

// `rows` examples in batches of 8.
data::Dataset batches(int64_t rows, uint64_t seed) {
  Generator gen(seed);
  std::vector<int32_t> labels(static_cast<size_t>(rows));
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>(i * 7 % 3);
  return data::Dataset::from_tensor_slices(
             Tree::list({uniform(Shape{rows, 16}, gen, -1, 1), from_values<int32_t>(labels, Shape{rows})}))
      .batch(8);
}

void fit(Model& model, const data::Dataset& data) { model.fit(data, {.epochs = 1, .verbose = 0}); }

std::vector<std::vector<float>> values(const std::vector<autograd::Variable>& variables) {
  std::vector<std::vector<float>> out;
  for (const auto& v : variables) out.push_back(v.value().to_vector<float>());
  return out;
}

// Python's own reading of a shard set (its json and struct modules): for every tensor the
// index lists, its shape and the sum of its values, read from the file the index names.
json read_shards_with_python(const fs::path& dir, const std::string& prefix) {
  const fs::path script = dir.parent_path() / "read_shards.py";
  io::write_file_atomically(script, R"(import json, os, struct, sys
directory, prefix = sys.argv[1], sys.argv[2]
index = json.load(open(os.path.join(directory, prefix + ".safetensors.index.json")))
out = {}
for name, file in index["weight_map"].items():
    with open(os.path.join(directory, file), "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        entry = json.loads(f.read(length))[name]
        begin, end = entry["data_offsets"]
        f.seek(8 + length + begin)
        data = f.read(end - begin)
    code = {"F32": "f", "I32": "i", "I64": "q"}[entry["dtype"]]
    count = (end - begin) // struct.calcsize(code)
    out[name] = {"shape": entry["shape"], "sum": sum(struct.unpack("<%d%s" % (count, code), data))}
print(json.dumps(out))
)");
  FILE* pipe = ::popen(("python3 '" + script.string() + "' '" + dir.string() + "' " + prefix + " 2>&1").c_str(), "r");
  std::string text;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0;) text.append(buffer, n);
  EXPECT_EQ(::pclose(pipe), 0) << text;
  return json::parse(text);
}

// What read_shards_with_python should find: each variable's whole shape and value sum.
json expected_reading(const std::vector<autograd::Variable>& variables, const std::vector<std::string>& keys) {
  json out;
  for (size_t i = 0; i < variables.size(); ++i) {
    const std::vector<float> v = variables[i].value().to_vector<float>();
    out[keys[i]] = {{"shape", variables[i].whole_shape().to_vector()},
                    {"sum", std::accumulate(v.begin(), v.end(), 0.0)}};
  }
  return out;
}

TEST_F(ShardedCheckpointTest, ASplitModelSavesShardsThatPythonReadsAsItsWholeWeights) {
  auto model = seeded_mlp();
  compile(*model, model_parallel(2, 2));
  fit(*model, batches(32, 1));
  model->save(dir_ / "saved");
  // One process writes one file of each set: file K is rank K-1's.
  for (const char* file : {"model.safetensors.index.json", "model-00001-of-00001.safetensors",
                           "optimizer.safetensors.index.json", "optimizer-00001-of-00001.safetensors"}) {
    EXPECT_TRUE(fs::exists(dir_ / "saved" / file)) << file;
  }
  EXPECT_FALSE(fs::exists(dir_ / "saved" / "model.weights.safetensors"));
  EXPECT_EQ(read_shards_with_python(dir_ / "saved", "model"),
            expected_reading(model->weights(), weight_object_paths(*model)));
  EXPECT_EQ(read_shards_with_python(dir_ / "saved", "optimizer"),
            expected_reading(model->optimizer().variables(), optimizer_object_paths(model->optimizer(), *model)));
  const json index = json::parse(io::read_file(dir_ / "saved" / "model.safetensors.index.json"));
  EXPECT_EQ(index["metadata"]["total_size"], (16 * 32 + 32 + 32 * 8 + 8 + 8 * 3 + 3) * 4);
}

TEST_F(ShardedCheckpointTest, ShardsReloadOnOneDeviceAndOnAnotherMeshAndTrainOnAsTheUninterruptedModel) {
  auto model = seeded_mlp();
  compile(*model, model_parallel(2, 2));
  fit(*model, batches(32, 1));
  model->save(dir_ / "saved");
  fit(*model, batches(80, 2));  // 10 more steps
  const auto uninterrupted = values(model->weights());
  const auto uninterrupted_state = values(model->optimizer().variables());

  auto on_one_device = load_model(dir_ / "saved");
  fit(*on_one_device, batches(80, 2));
  EXPECT_LE(max_relative_difference(on_one_device->weights(), model->weights()), 1e-5);

  auto on_another_mesh = seeded_mlp(9);  // other initial weights: the load replaces them
  compile(*on_another_mesh, model_parallel(1, 2));
  fit(*on_another_mesh, batches(8, 3));  // placed on the mesh before the load
  on_another_mesh->load_weights(dir_ / "saved");
  on_another_mesh->load_optimizer_state(dir_ / "saved");
  fit(*on_another_mesh, batches(80, 2));
  // Another mesh sums the split products in another order: 1.08e-5 on an AVX2-only host.
  EXPECT_LE(max_relative_difference(on_another_mesh->weights(), model->weights()), 3e-5);
  EXPECT_LE(max_relative_difference(on_another_mesh->optimizer().variables(), model->optimizer().variables()), 3e-5);
  EXPECT_EQ(values(model->weights()), uninterrupted);  // reading them did not change them
  EXPECT_EQ(values(model->optimizer().variables()), uninterrupted_state);
}

TEST_F(ShardedCheckpointTest, PlacedVariablesReadTheWholeFileFormatBlockByBlock) {
  auto one = seeded_mlp();
  compile(*one, nullptr);
  fit(*one, batches(16, 4));
  one->save(dir_ / "whole");  // nothing split: one file per set, as before shards
  ASSERT_TRUE(fs::exists(dir_ / "whole" / "model.weights.safetensors"));
  auto split = seeded_mlp(9);
  compile(*split, model_parallel(2, 2));
  fit(*split, batches(16, 5));
  split->load_weights(dir_ / "whole");
  split->load_optimizer_state(dir_ / "whole");
  EXPECT_EQ(values(split->weights()), values(one->weights()));
  EXPECT_EQ(values(split->optimizer().variables()), values(one->optimizer().variables()));
}

TEST_F(ShardedCheckpointTest, SaveWeightsOfASplitModelWritesADirectoryOfShardsThatCheckpointsReplace) {
  auto model = seeded_mlp();
  compile(*model, model_parallel(2, 2));
  const fs::path path = dir_ / "best.weights.safetensors";
  model->fit(batches(16, 1), {.epochs = 2, .verbose = 0,
                              .callbacks = {callbacks::ModelCheckpoint(path.string(), {.save_weights_only = true})}});
  ASSERT_TRUE(fs::is_directory(path));  // the second epoch's save replaced the first's
  EXPECT_TRUE(fs::exists(path / "model-00001-of-00001.safetensors"));
  auto one = seeded_mlp(9);
  one->load_weights(path);
  EXPECT_EQ(values(one->weights()), values(model->weights()));
}

// Copies the saved model `from` to `to`, for a test to damage.
void copy_saved(const fs::path& from, const fs::path& to) { fs::copy(from, to, fs::copy_options::recursive); }

TEST_F(ShardedCheckpointTest, AMissingTruncatedOrMislistedShardIsRefusedNamingTheFile) {
  auto model = seeded_mlp();
  compile(*model, model_parallel(2, 2));
  fit(*model, batches(16, 1));
  model->save(dir_ / "saved");
  const std::string shard = "model-00001-of-00001.safetensors";

  copy_saved(dir_ / "saved", dir_ / "missing");
  fs::remove(dir_ / "missing" / shard);
  EXPECT_THAT([&] { load_model(dir_ / "missing"); },
              ThrowsMessage<IOError>(HasSubstr((dir_ / "missing" / shard).string() + ": cannot open")));

  copy_saved(dir_ / "saved", dir_ / "truncated");
  fs::resize_file(dir_ / "truncated" / shard, fs::file_size(dir_ / "truncated" / shard) - 4);
  EXPECT_THAT([&] { load_model(dir_ / "truncated"); },
              ThrowsMessage<IOError>(AllOf(HasSubstr((dir_ / "truncated" / shard).string()), HasSubstr("truncated"))));

  const auto with_index = [&](const std::string& name, const std::function<void(json&)>& edit) {
    copy_saved(dir_ / "saved", dir_ / name);
    const fs::path index = dir_ / name / "model.safetensors.index.json";
    json j = json::parse(io::read_file(index));
    edit(j);
    io::write_file_atomically(index, j.dump());
    return dir_ / name;
  };
  const fs::path escaping =
      with_index("escaping", [](json& j) { j["weight_map"]["dense/kernel"] = "../other.safetensors"; });
  EXPECT_THAT([&] { load_model(escaping); },
              ThrowsMessage<IOError>(HasSubstr("weight_map[\"dense/kernel\"] is \"../other.safetensors\", not the name of "
                                               "a file beside the index")));
  const fs::path unlisted = with_index("unlisted", [](json& j) { j["weight_map"].erase("dense_2/bias"); });
  EXPECT_THAT([&] { load_model(unlisted); },
              ThrowsMessage<IOError>(HasSubstr((unlisted / shard).string() + ": holds tensor 'dense_2/bias', which " +
                                               (unlisted / "model.safetensors.index.json").string() + " does not list")));
  const fs::path extra = with_index("extra", [&](json& j) { j["weight_map"]["dense_3/kernel"] = shard; });
  EXPECT_THAT([&] { load_model(extra); },
              ThrowsMessage<IOError>(HasSubstr((extra / shard).string() + ": lacks tensor 'dense_3/kernel'")));
}

}  // namespace
}  // namespace chorus::models
