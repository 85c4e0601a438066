// DataParallel training equals one device: the same weights after N steps (relative
// difference <= 1e-5) for 1-4 logical devices, uneven and empty slices included; the
// same bits run to run; exact metrics; distributed evaluate and predict; bad input.
#include <gmock/gmock.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "chorus/backend/cpu/parallel.h"
#include "chorus/chorus.h"
#include "chorus/replicas/gradient_reducer.h"
#include "chorus/replicas/replica_runner.h"
#include "tests/distribute/two_tower_util.h"
#include "tests/models/model_test_util.h"
#include "tests/testing/logical_devices.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus {
namespace {

using namespace testing::test_names;
namespace dist = chorus::distribution;

using DataParallelTest = testing::LogicalDevicesTest<4>;

std::vector<Device> first_devices(int n) {
  std::vector<Device> out;
  for (int i = 0; i < n; ++i) out.push_back(Device::cpu(i));
  return out;
}

struct MlpRun {
  std::unique_ptr<models::Model> model;
  models::History history;
};

// Trains the small MLP on 103 rows in batches of 16 (the last has 7 rows) for 3 epochs,
// with `devices` replicas (0: no distribution at all).
MlpRun train_mlp(int devices, int64_t batch_size = 16, Shared<optimizers::Optimizer> optimizer = "adam") {
  layers::set_random_seed(7);
  std::shared_ptr<dist::Distribution> distribution;
  if (devices > 0) distribution = std::make_shared<dist::DataParallel>(first_devices(devices));
  dist::set_distribution(distribution);
  MlpRun run{testing::small_mlp(), {}};
  run.model->compile({.optimizer = std::move(optimizer),
                      .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                      .metrics = {"sparse_categorical_accuracy"}});
  dist::set_distribution(nullptr);
  auto blobs = testing::separable_blobs(103, 3);
  run.history = run.model->fit(blobs.x, blobs.y, {.epochs = 3, .batch_size = batch_size, .verbose = 0, .shuffle = false});
  return run;
}

TEST_F(DataParallelTest, MlpMatchesOneDeviceOnOneToFourReplicas) {
  MlpRun reference = train_mlp(0);
  for (int devices = 1; devices <= 4; ++devices) {
    SCOPED_TRACE(devices);
    MlpRun run = train_mlp(devices);
    EXPECT_LE(testing::max_relative_difference(run.model->weights(), reference.model->weights()), 1e-5);
    testing::expect_same_history(run.history, reference.history);
  }
}

TEST_F(DataParallelTest, SgdWithMomentumMatchesOneDevice) {
  // Unlike Adam, SGD's step is proportional to the gradient: a wrong scale shows.
  auto sgd = [] { return optimizers::SGD({.learning_rate = 0.1, .momentum = 0.9, .nesterov = true}); };
  MlpRun reference = train_mlp(0, 16, sgd());
  for (int devices = 2; devices <= 3; ++devices) {
    SCOPED_TRACE(devices);
    MlpRun run = train_mlp(devices, 16, sgd());
    // Nesterov momentum amplifies summation-order noise: 1.29e-5 with AVX2 (8-lane) kernels
    // on an AMD EPYC host, under 1e-5 with AVX-512. A wrong gradient scale shows as > 1e-2.
    EXPECT_LE(testing::max_relative_difference(run.model->weights(), reference.model->weights()), 3e-5);
  }
}

TEST_F(DataParallelTest, BatchSmallerThanReplicaCountIsExact) {
  // Batches of 2 rows over 4 replicas: two replicas get nothing in every step.
  MlpRun reference = train_mlp(0, 2);
  MlpRun run = train_mlp(4, 2);
  EXPECT_LE(testing::max_relative_difference(run.model->weights(), reference.model->weights()), 1e-5);
}

TEST_F(DataParallelTest, SameRunTwiceGivesIdenticalBits) {
  MlpRun a = train_mlp(3), b = train_mlp(3);
  const auto wa = a.model->weights(), wb = b.model->weights();
  for (size_t k = 0; k < wa.size(); ++k) EXPECT_TRUE(testing::same_bits(wa[k].value(), wb[k].value())) << wa[k].path();
}

// Large: tables of GradientReducer::kRowExchangeMinRows rows and more, of width 2, whose
// gradients the replicas exchange as rows.
constexpr int64_t kLargeUsers = replicas::GradientReducer::kRowExchangeMinRows, kLargeMovies = kLargeUsers + 500;

// `optimizer`: "adagrad", "sgd" or "adam".
std::unique_ptr<testing::TwoTower> train_two_tower(int devices, bool large = false,
                                                   const std::string& optimizer = "adagrad") {
  layers::set_random_seed(11);
  if (devices > 0) dist::set_distribution(dist::DataParallel(first_devices(devices)));
  const int64_t users = large ? kLargeUsers : 30, movies = large ? kLargeMovies : 40;
  auto model = std::make_unique<testing::TwoTower>(users, movies, large ? 2 : 8);
  if (optimizer == "sgd") {
    model->compile({.optimizer = optimizers::SGD(0.5)});
  } else if (optimizer == "adam") {
    model->compile({.optimizer = optimizers::Adam(0.01)});
  } else {
    model->compile({.optimizer = optimizers::Adagrad(0.2)});
  }
  dist::set_distribution(nullptr);
  // Batches of 64, 64, 64, 58.
  model->fit(testing::two_tower_ratings(250, users, movies).batch(64), {.epochs = 4, .verbose = 0});
  return model;
}

TEST_F(DataParallelTest, TwoTowerMatchesOneDeviceOnOneToFourReplicas) {
  auto reference = train_two_tower(0);
  for (int devices = 1; devices <= 4; ++devices) {
    SCOPED_TRACE(devices);
    auto model = train_two_tower(devices);
    EXPECT_LE(testing::max_relative_difference(model->weights(), reference->weights()), 1e-5);
  }
}

TEST_F(DataParallelTest, LargeTablesExchangeRowsAndMatchOneDevice) {
  // The replicas hand over the rows they read (rows repeat within a slice and now and
  // then across slices; most are disjoint). Adagrad and plain SGD update only those rows
  // (their grouped kernels); Adam's moments decay in every row, so it updates them all,
  // as Keras does. The same bits run to run.
  for (const std::string optimizer : {"adagrad", "sgd", "adam"}) {
    SCOPED_TRACE(optimizer);
    auto reference = train_two_tower(0, /*large=*/true, optimizer);
    for (int devices = 1; devices <= 4; ++devices) {
      SCOPED_TRACE(devices);
      auto model = train_two_tower(devices, /*large=*/true, optimizer);
      // Adam divides by sqrt(v): a row's last-bit gradient differences (slices summed in
      // another order) pass into its updates undamped.
      EXPECT_LE(testing::max_relative_difference(model->weights(), reference->weights()),
                optimizer == "adam" ? 2e-5 : 1e-6);
    }
    auto a = train_two_tower(3, true, optimizer), b = train_two_tower(3, true, optimizer);
    const auto wa = a->weights(), wb = b->weights();
    for (size_t k = 0; k < wa.size(); ++k) EXPECT_TRUE(testing::same_bits(wa[k].value(), wb[k].value())) << wa[k].path();
  }
}

// TwoTower with Keras's train_step written out by hand: dense gradients for every weight
// (no sparse request), which the replicas then exchange as all of a large table's rows.
class DenseTwoTower : public testing::TwoTower {
 public:
  using TwoTower::TwoTower;
  models::Logs train_step(const Tree& batch) override {
    const Tree& x = batch[0];
    const Tree& y = batch[1];
    autograd::GradientTape tape;
    const Tree y_pred = (*this)(x, /*training=*/true);
    const Tensor loss = compute_loss(x, y, y_pred, Tensor());
    const std::vector<autograd::Variable> variables = trainable_weights();
    const std::vector<Tensor> sources(variables.begin(), variables.end());
    optimizer().apply_gradients(tape.gradient(loss, sources), variables);
    update_metrics(loss, y, y_pred, Tensor());
    return get_metrics_result();
  }
};

TEST_F(DataParallelTest, DenseTableGradientsFromACustomTrainStepMatchOneDevice) {
  auto train = [](int devices) {
    layers::set_random_seed(11);
    if (devices > 0) dist::set_distribution(dist::DataParallel(first_devices(devices)));
    auto model = std::make_unique<DenseTwoTower>(kLargeUsers, kLargeMovies, 2);
    model->compile({.optimizer = optimizers::Adagrad(0.2)});
    dist::set_distribution(nullptr);
    model->fit(testing::two_tower_ratings(250, kLargeUsers, kLargeMovies).batch(64), {.epochs = 2, .verbose = 0});
    return model;
  };
  auto reference = train(0);
  auto model = train(3);
  EXPECT_LE(testing::max_relative_difference(model->weights(), reference->weights()), 1e-5);
}

// Plain gradient descent whose update records the threads its chunks run on; replica 0's
// chunk waits (up to 10 s) for another thread to take one, so that the test does not
// depend on how the threads are scheduled.
class ThreadRecordingSgd : public optimizers::Optimizer {
 public:
  explicit ThreadRecordingSgd(std::thread::id replica_0) : Optimizer("SGD", "sgd", 0.1, {}), replica_0_(replica_0) {}
  std::set<std::thread::id> threads;

 protected:
  void build_slots(const autograd::Variable&) override {}
  void update_step(const Tensor& grad, const autograd::Variable& variable, size_t, double lr, int64_t) override {
    float* var = variable.value().data<float>();
    const float* g = grad.data<float>();
    const auto rate = static_cast<float>(lr);
    std::atomic<int> others{0};
    backend::cpu::parallel_for(grad.numel(), 4096, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) var[i] -= g[i] * rate;
      {
        std::lock_guard lock(mutex_);
        threads.insert(std::this_thread::get_id());
      }
      if (std::this_thread::get_id() != replica_0_ || grad.numel() < 2 * 4096) {
        others.fetch_add(1);
        return;
      }
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (others.load() == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    });
  }

 private:
  std::thread::id replica_0_;
  std::mutex mutex_;
};

TEST_F(DataParallelTest, TheOtherReplicasRunChunksOfTheUpdateWithOneThreadsBits) {
  // A 512x64 kernel (32,768 elements): its update splits into 2 chunks on 2 replicas.
  auto train = [](Shared<optimizers::Optimizer> optimizer) {
    layers::set_random_seed(5);
    dist::set_distribution(dist::DataParallel(first_devices(2)));
    std::unique_ptr<models::Model> model = testing::small_mlp(512, 64, 3);
    model->compile({.optimizer = std::move(optimizer),
                    .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
    dist::set_distribution(nullptr);
    const Tensor x = testing::random_tensor({40, 512}, 3);
    const Tensor y = ops::cast(testing::random_tensor({40}, 4, 0, 2.99), kInt32);
    model->fit(x, y, {.epochs = 2, .batch_size = 20, .verbose = 0, .shuffle = false});
    return model;
  };
  auto recording = std::make_shared<ThreadRecordingSgd>(std::this_thread::get_id());
  auto lent = train(recording);
  auto plain = train(optimizers::SGD(0.1));
  EXPECT_EQ(recording->threads.size(), 2u);  // replica 0 (this thread) and replica 1
  const auto a = lent->weights(), b = plain->weights();
  for (size_t k = 0; k < a.size(); ++k) EXPECT_TRUE(testing::same_bits(a[k].value(), b[k].value())) << a[k].path();
}

TEST_F(DataParallelTest, EvaluateAndPredictAreDistributedInInputOrder) {
  MlpRun reference = train_mlp(0);
  MlpRun run = train_mlp(3);
  auto blobs = testing::separable_blobs(41, 9);
  models::Logs want = reference.model->evaluate(blobs.x, blobs.y, {.batch_size = 10, .verbose = 0});
  models::Logs got = run.model->evaluate(blobs.x, blobs.y, {.batch_size = 10, .verbose = 0});
  EXPECT_NEAR(got.at("loss"), want.at("loss"), 1e-5);
  EXPECT_DOUBLE_EQ(got.at("sparse_categorical_accuracy"), want.at("sparse_categorical_accuracy"));
  Tensor p_want = reference.model->predict(blobs.x, {.batch_size = 10}).tensor();
  Tensor p_got = run.model->predict(blobs.x, {.batch_size = 10}).tensor();
  ASSERT_EQ(p_got.shape(), p_want.shape());
  const auto a = p_got.to_vector<float>(), b = p_want.to_vector<float>();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-4) << i;
}

TEST_F(DataParallelTest, MirroredStrategyScopeIsCapturedByCompile) {
  MlpRun reference = train_mlp(0);
  distribute::MirroredStrategy strategy(first_devices(2));
  EXPECT_EQ(strategy.num_replicas_in_sync(), 2);
  layers::set_random_seed(7);
  std::unique_ptr<models::Model> model;
  {
    auto scope = strategy.scope();
    model = testing::small_mlp();
    model->compile({.optimizer = "adam", .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                    .metrics = {"sparse_categorical_accuracy"}});
  }
  EXPECT_EQ(dist::distribution(), nullptr);  // the scope restored the previous one
  ASSERT_NE(model->distribution(), nullptr);
  EXPECT_EQ(model->distribution()->num_replicas(), 2);
  auto blobs = testing::separable_blobs(103, 3);
  model->fit(blobs.x, blobs.y, {.epochs = 3, .batch_size = 16, .verbose = 0, .shuffle = false});
  EXPECT_LE(testing::max_relative_difference(model->weights(), reference.model->weights()), 1e-5);
}

TEST_F(DataParallelTest, VariablesCreatedOutsideTheScopeAreMirroredToo) {
  // On a CPU host the mirrors share one buffer, so a model built before the strategy
  // existed trains data-parallel once it is compiled in the scope.
  MlpRun reference = train_mlp(0);
  layers::set_random_seed(7);
  auto model = testing::small_mlp();
  distribute::MirroredStrategy strategy(first_devices(3));
  {
    auto scope = strategy.scope();
    model->compile({.optimizer = "adam", .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                    .metrics = {"sparse_categorical_accuracy"}});
  }
  auto blobs = testing::separable_blobs(103, 3);
  model->fit(blobs.x, blobs.y, {.epochs = 3, .batch_size = 16, .verbose = 0, .shuffle = false});
  EXPECT_EQ(model->distribution()->num_replicas(), 3);
  EXPECT_LE(testing::max_relative_difference(model->weights(), reference.model->weights()), 1e-5);
}

// The moving statistics a BatchNormalization(momentum 0.99) over `x` ends with after one
// pass in batches of `batch` rows split over `replicas`: each step moves them towards the
// row-weighted mean of the slices' means and (biased) variances, as TF's MirroredStrategy
// averages the replicas' updates. Returns {moving_mean, moving_variance} per channel.
std::pair<std::vector<double>, std::vector<double>> expected_moving_statistics(const Tensor& x, int64_t batch,
                                                                               int replicas) {
  const int64_t rows = x.dim(0), channels = x.dim(1);
  const float* px = x.data<float>();
  std::vector<double> mean(static_cast<size_t>(channels), 0.0), variance(static_cast<size_t>(channels), 1.0);
  for (int64_t start = 0; start < rows; start += batch) {
    const int64_t size = std::min(batch, rows - start);
    for (int64_t c = 0; c < channels; ++c) {
      double slice_mean = 0, slice_variance = 0;
      for (const auto& [begin, end] : replicas::ReplicaRunner::split(size, replicas)) {
        if (end == begin) continue;
        double m = 0, v = 0;
        for (int64_t i = start + begin; i < start + end; ++i) m += px[i * channels + c];
        m /= static_cast<double>(end - begin);
        for (int64_t i = start + begin; i < start + end; ++i) v += std::pow(px[i * channels + c] - m, 2);
        v /= static_cast<double>(end - begin);
        slice_mean += m * static_cast<double>(end - begin) / static_cast<double>(size);
        slice_variance += v * static_cast<double>(end - begin) / static_cast<double>(size);
      }
      const auto k = static_cast<size_t>(c);
      mean[k] = 0.99 * mean[k] + 0.01 * slice_mean;
      variance[k] = 0.99 * variance[k] + 0.01 * slice_variance;
    }
  }
  return {mean, variance};
}

// Trains BatchNormalization -> Dense(2) with SGD on (x, y) in batches of `batch`, on one
// device (0) or `devices` replicas; returns the model.
std::unique_ptr<models::Model> train_batch_norm(int devices, const Tensor& x, const Tensor& y, int64_t batch) {
  layers::set_random_seed(3);
  if (devices > 0) dist::set_distribution(dist::DataParallel(first_devices(devices)));
  Tensor in = layers::Input({x.dim(1)});
  Tensor h = layers::BatchNormalization()(in);
  auto model = std::make_unique<models::Model>(in, layers::Dense(2)(h));
  model->compile({.optimizer = "sgd", .loss = "mse"});
  dist::set_distribution(nullptr);
  model->fit(x, y, {.batch_size = batch, .verbose = 0, .shuffle = false});
  return model;
}

// The values of the BatchNormalization variable whose path ends in `name`; fails if none.
std::vector<float> batch_norm_weight(const models::Model& model, const std::string& name) {
  for (const auto& v : model.weights()) {
    if (v.path().ends_with("/" + name)) return v.value().to_vector<float>();
  }
  ADD_FAILURE() << "no variable named " << name;
  return {};
}

TEST_F(DataParallelTest, BatchNormMovingStatisticsAreTheSlicesRowWeightedMeans) {
  Generator gen(4);
  const Tensor x = uniform(Shape{30, 4}, gen, -2, 3), y = uniform(Shape{30, 2}, gen);
  // Batches of 15 rows: slices of 8 and 7 on 2 replicas, of 5 on 3.
  for (int devices : {0, 2, 3}) {
    SCOPED_TRACE(devices);
    auto model = train_batch_norm(devices, x, y, 15);
    const auto [mean, variance] = expected_moving_statistics(x, 15, std::max(devices, 1));
    const auto moving_mean = batch_norm_weight(*model, "moving_mean");
    const auto moving_variance = batch_norm_weight(*model, "moving_variance");
    ASSERT_EQ(moving_mean.size(), 4u);
    ASSERT_EQ(moving_variance.size(), 4u);
    for (size_t c = 0; c < 4; ++c) {
      EXPECT_NEAR(moving_mean[c], mean[c], 1e-6) << c;
      EXPECT_NEAR(moving_variance[c], variance[c], 1e-6) << c;
      // Two steps moved them off their initial 0 and 1.
      EXPECT_GT(std::abs(moving_mean[c]), 1e-4) << c;
      EXPECT_GT(std::abs(moving_variance[c] - 1), 1e-3) << c;
    }
  }
}

TEST_F(DataParallelTest, BatchNormOverSlicesWithTheGlobalBatchsStatisticsMatchesOneDevice) {
  // Each batch of 16 is 8 rows and the same rows reversed: both replicas' slices have the
  // global batch's statistics, so every weight (gamma, beta, the moving statistics and the
  // Dense layer's) must equal one device's.
  Generator gen(4);
  const Tensor reversed = from_values<int32_t>({7, 6, 5, 4, 3, 2, 1, 0}, Shape{8});
  std::vector<Tensor> xs, ys;
  for (int b = 0; b < 2; ++b) {
    const Tensor bx = uniform(Shape{8, 4}, gen, -2, 3), by = uniform(Shape{8, 2}, gen);
    xs.push_back(ops::concatenate({bx, ops::take(bx, reversed, 0)}, 0));
    ys.push_back(ops::concatenate({by, ops::take(by, reversed, 0)}, 0));
  }
  const Tensor x = ops::concatenate(xs, 0), y = ops::concatenate(ys, 0);
  auto reference = train_batch_norm(0, x, y, 16), model = train_batch_norm(2, x, y, 16);
  for (const char* name : {"gamma", "beta", "moving_mean", "moving_variance"}) {
    const auto a = batch_norm_weight(*model, name), b = batch_norm_weight(*reference, name);
    ASSERT_EQ(a.size(), 4u) << name;
    ASSERT_EQ(b.size(), 4u) << name;
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_NEAR(a[i], b[i], 1e-5 * std::max(1.0f, std::abs(b[i]))) << name << " " << i;
    }
  }
  EXPECT_LE(testing::max_relative_difference(model->weights(), reference->weights()), 1e-5);
  // Training moved gamma and beta off their initial 1 and 0.
  for (float g : batch_norm_weight(*reference, "gamma")) EXPECT_GT(std::abs(g - 1), 1e-4);
  for (float b : batch_norm_weight(*reference, "beta")) EXPECT_GT(std::abs(b), 1e-4);
}

// Trains Dense(16, relu) -> Dropout(rate) -> Dense(3) on `devices` replicas (0: one
// device); returns the initial and the final weights.
std::pair<std::vector<std::vector<float>>, std::unique_ptr<models::Model>> train_with_dropout(int devices,
                                                                                             double rate) {
  layers::set_random_seed(5);
  if (devices > 0) dist::set_distribution(dist::DataParallel(first_devices(devices)));
  Tensor x = layers::Input({4});
  Tensor h = layers::Dropout(rate)(layers::Dense(16, {.activation = "relu"})(x));
  auto model = std::make_unique<models::Model>(x, layers::Dense(3)(h));
  model->compile({.optimizer = "sgd", .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
  dist::set_distribution(nullptr);
  std::vector<std::vector<float>> initial;
  for (const auto& v : model->weights()) initial.push_back(v.value().to_vector<float>());
  auto blobs = testing::separable_blobs(50, 3);
  model->fit(blobs.x, blobs.y, {.epochs = 2, .batch_size = 25, .verbose = 0, .shuffle = false});
  return {std::move(initial), std::move(model)};
}

// `count` float32 variables of `size` zeros.
std::vector<autograd::Variable> dp_zero_variables(int count, int64_t size) {
  std::vector<autograd::Variable> out;
  for (int k = 0; k < count; ++k) out.emplace_back("v" + std::to_string(k), zeros(Shape{size}));
  return out;
}

TEST(MaxRelativeDifferenceTest, ListsOrVariablesOfDifferentSizesFailTheComparison) {
  // A comparison over the shorter list alone would pass: the weights below all agree.
  EXPECT_NONFATAL_FAILURE(testing::max_relative_difference(dp_zero_variables(2, 3), dp_zero_variables(1, 3)),
                          "max_relative_difference: 2 variables against 1");
  EXPECT_NONFATAL_FAILURE(testing::max_relative_difference(dp_zero_variables(1, 3), dp_zero_variables(1, 4)),
                          "max_relative_difference: 'v0' has shape (3,), 'v0' (4,)");
  EXPECT_EQ(testing::max_relative_difference(dp_zero_variables(2, 3), dp_zero_variables(2, 3)), 0.0);
}

TEST_F(DataParallelTest, DropoutMasksDoNotDependOnTheReplicaCount) {
  auto [two_initial, two] = train_with_dropout(2, 0.5);
  auto [three_initial, three] = train_with_dropout(3, 0.5);
  EXPECT_LE(testing::max_relative_difference(two->weights(), three->weights()), 1e-5);
  // Nor on whether the batch is split at all: replicas number their calls as one device.
  auto [one_initial, one] = train_with_dropout(0, 0.5);
  EXPECT_LE(testing::max_relative_difference(two->weights(), one->weights()), 1e-5);
  // The same start without dropout ends elsewhere: the masks changed the training.
  auto [plain_initial, plain] = train_with_dropout(2, 0.0);
  ASSERT_EQ(plain_initial, two_initial);
  EXPECT_GT(testing::max_relative_difference(two->weights(), plain->weights()), 1e-2);
}

TEST_F(DataParallelTest, ReplicaErrorsReachTheCaller) {
  dist::set_distribution(dist::DataParallel(first_devices(2)));
  auto model = testing::small_mlp();
  model->compile({.optimizer = "adam", .loss = "sparse_categorical_crossentropy"});
  auto blobs = testing::separable_blobs(8, 1);
  blobs.y.data<int32_t>()[6] = 12;  // in replica 1's slice
  EXPECT_THAT([&] { model->fit(blobs.x, blobs.y, {.batch_size = 8, .verbose = 0}); },
              ThrowsMessage<IndexError>(HasSubstr("12")));
  // The model still trains afterwards (a fresh communicator group).
  blobs.y.data<int32_t>()[6] = 1;
  EXPECT_NO_THROW(model->fit(blobs.x, blobs.y, {.batch_size = 8, .verbose = 0}));
}

TEST_F(DataParallelTest, DevicesAndBadDevices) {
  EXPECT_EQ(chorus::list_devices().size(), 4u);
  EXPECT_EQ(devices()[3], Device::cpu(3));
  chorus::set_cpu_devices(0);
  EXPECT_EQ(static_cast<int>(devices().size()), chorus::physical_cores());
  EXPECT_THAT([] { dist::DataParallel({Device::cpu(0), Device::cpu(99)}); },
              ThrowsMessage<IndexError>(HasSubstr("cpu:99 does not exist")));
  EXPECT_THAT([] { dist::DataParallel({Device::cpu(0), Device::cpu(0)}); },
              ThrowsMessage<ValueError>(HasSubstr("cpu:0 is listed twice")));
  EXPECT_THAT([] { dist::DeviceMesh({2, 2}, {"batch"}, {Device::cpu(0)}); },
              ThrowsMessage<ValueError>(HasSubstr("2 dimensions but 1 axis names")));
  EXPECT_THAT([] { chorus::list_devices("tpu"); }, ThrowsMessage<ValueError>(HasSubstr("unknown device type")));
}

TEST_F(DataParallelTest, LayoutsOfDataParallel) {
  dist::DataParallel dp(first_devices(2));
  EXPECT_EQ(dp.batch_dim_name(), "batch");
  auto layout = dp.get_data_layout(Shape{64, 784});
  ASSERT_EQ(layout.axes().size(), 2u);
  EXPECT_EQ(layout.axes()[0], "batch");
  EXPECT_FALSE(layout.axes()[1].has_value());
  dist::DeviceMesh mesh({2}, {"data"}, first_devices(2));
  EXPECT_EQ(dist::DataParallel(mesh).batch_dim_name(), "data");
  EXPECT_THAT([&] { dist::DataParallel(dist::DeviceMesh({1, 2}, {"a", "b"}, first_devices(2))); },
              ThrowsMessage<ValueError>(HasSubstr("1-D device mesh")));
}

}  // namespace
}  // namespace chorus
