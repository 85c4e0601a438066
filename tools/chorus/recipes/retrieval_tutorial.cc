#include "tools/chorus/recipes/retrieval_tutorial.h"

#include <algorithm>
#include <iostream>
#include <map>
#include <optional>

namespace chorus::recipes {
namespace ch = chorus;
namespace ml = datasets::movielens_100k;

namespace {

const autograd::Variable& table_of(const layers::Layer& tower, const std::string& feature) {
  if (const auto* embedding = dynamic_cast<const layers::Embedding*>(&tower)) return embedding->embeddings();
  return dynamic_cast<const recsys::DistributedEmbedding&>(tower).embeddings(feature + "_table");
}

}  // namespace

RetrievalModel::RetrievalModel(int64_t num_users, int64_t num_candidates, int64_t embedding_dimension,
                               bool retrieve_in_evaluation, bool distributed_embedding)
    : Model("RetrievalModel", ""),
      // Our query tower, simply an embedding table.
      user_(add_tower("user_id", num_users, embedding_dimension, distributed_embedding)),
      // Our candidate tower, simply an embedding table.
      movie_(add_tower("movie_id", num_candidates, embedding_dimension, distributed_embedding)),
      // The layer that performs the retrieval.
      retrieval_(add<recsys::BruteForceRetrieval>(/*k=*/10, /*return_scores=*/false)),
      retrieve_in_evaluation_(retrieve_in_evaluation) {}

layers::Layer* RetrievalModel::add_tower(const std::string& feature, int64_t rows, int64_t dim,
                                         bool distributed_embedding) {
  if (!distributed_embedding) return add<layers::Embedding>(rows, dim);
  auto table = std::make_shared<recsys::TableConfig>(recsys::TableConfig{
      .name = feature + "_table", .vocabulary_size = rows, .embedding_dim = dim, .initializer = "uniform"});
  return add<recsys::DistributedEmbedding>(std::vector<recsys::FeatureConfig>{{.name = feature, .table = table}});
}

const autograd::Variable& RetrievalModel::user_table() const { return table_of(*user_, "user_id"); }
const autograd::Variable& RetrievalModel::candidate_table() const { return table_of(*movie_, "movie_id"); }

void RetrievalModel::build(const Tree& inputs) {
  user_->build_from(inputs);
  movie_->build_from(inputs);
  // In this case, the candidates are directly the movie embeddings: the retrieval
  // reads the table itself, so it always sees the trained weights.
  retrieval_->set_candidate_embeddings(candidate_table());
}

Tree RetrievalModel::call(const Tree& x, bool training) {
  Tree result{{"user_embeddings", (*user_)(x.tensor())}};
  // Skip the retrieval of top movies during training as the predictions are not used.
  if (!training) result["predictions"] = (*retrieval_)(result["user_embeddings"].tensor());
  return result;
}

Tensor RetrievalModel::compute_loss(const Tree& /*x*/, const Tree& y, const Tree& y_pred,
                                    const Tensor& sample_weight) {
  const Tensor& user_embeddings = y_pred["user_embeddings"].tensor();  // (B, dim)
  Tensor candidate_embeddings = (*movie_)(y["movie_id"].tensor());    // (B, dim)
  Tensor labels = ops::expand_dims(y["rating"].tensor(), -1);         // (B, 1)
  // The affinity score: the dot product of the two embeddings.
  Tensor scores = ops::sum(ops::multiply(user_embeddings, candidate_embeddings), /*axis=*/1, /*keepdims=*/true);
  return loss_fn_(labels, scores, sample_weight);
}

models::Logs RetrievalModel::test_step(const Tree& batch) {
  // metrics() holds the loss tracker, then any compiled metrics.
  if (retrieve_in_evaluation_ || metrics().size() > 1 || !batch.is_list() || batch.size() != 2) {
    return Model::test_step(batch);
  }
  const Tree& x = batch[0];
  const Tree& y = batch[1];
  autograd::NoGradGuard no_grad;
  Tree y_pred{{"user_embeddings", (*user_)(x.tensor())}};
  const Tensor loss = compute_loss(x, y, y_pred);
  update_metrics(loss, y, y_pred, Tensor());
  return get_metrics_result();
}

namespace {

// The tutorial's preprocess_rating: x = the user id, y = the movie id and the rating
// scaled from 1..5 to 0..1. Tensor ops, as the tutorial's: one rating or a column of them.
Tree preprocess_rating(const Tree& rating) {
  const Tensor scaled = (rating["user_rating"].tensor() - 1.0) / 4.0;
  return Tree::list({rating["user_id"], Tree{{"movie_id", rating["movie_id"]}, {"rating", scaled}}});
}

std::string resolve_data_dir(const std::string& dir) { return dir.empty() ? data::fetch("movielens-100k") : dir; }

}  // namespace

RetrievalDatasets get_retrieval_datasets(const std::string& dir, int64_t batch_size, uint64_t seed) {
  const Tree columns = ml::load_ratings(dir);  // the ratings, read once for the count and the dataset
  // User, movie counts for defining vocabularies.
  const std::vector<int32_t> users = columns["user_id"].tensor().to_vector<int32_t>();
  const int64_t users_count = users.empty() ? 0 : *std::max_element(users.begin(), users.end());
  const auto movies_count = static_cast<int64_t>(ml::load_movies(dir).size());
  // Preprocess the dataset, and split it into train-test datasets. The tutorial maps
  // preprocess_rating over the ratings one by one; applied to the columns at once it
  // gives every rating the same values, and the shuffle then batches whole rows
  // (Dataset's fast path for in-memory arrays) instead of a tree per rating: 0.37 s of
  // loading becomes ~0.02 s (docs/benchmarks.md).
  data::Dataset shuffled = data::Dataset::from_tensor_slices(preprocess_rating(columns))
                               .shuffle(100'000, seed, /*reshuffle_each_iteration=*/false);
  return {.train = shuffled.take(80'000).batch(batch_size).cache(),
          .test = shuffled.skip(80'000).take(20'000).batch(batch_size).cache(),
          .users_count = users_count,
          .movies_count = movies_count};
}

RetrievalTutorialResult run_retrieval_tutorial(const RetrievalTutorialOptions& options) {
  // The tutorial's change for data parallelism: a DataParallel distribution over the
  // devices, current while the model is compiled (which captures it). Under a launcher
  // (chorus launch, torchrun, mpirun, Slurm, TF_CONFIG) keras.distribution.initialize()
  // joins the job first, and DataParallel then spans every worker.
  const cluster::ClusterSpec cluster = cluster::discover_cluster();
  distribution::initialize(cluster);
  std::optional<distribution::DistributionScope> data_parallel;
  if (options.devices != 1 || cluster.multi_worker()) {
    std::vector<Device> devices = chorus::list_devices();
    if (options.devices > 1) {
      for (int i = 0; i < options.devices; ++i) chorus::check_device(Device::cpu(i));
      devices.resize(static_cast<size_t>(options.devices));
    }
    data_parallel.emplace(distribution::DataParallel(devices).scope());
  }
  const std::string dir = resolve_data_dir(options.data_dir);
  layers::set_random_seed(options.seed);  // the same initial weights every run
  PhaseTimes* timings = options.timings;
  RetrievalDatasets data = timed(timings ? &timings->data_s : nullptr, [&] {
    RetrievalDatasets datasets = get_retrieval_datasets(dir, options.batch_size, options.seed);
    if (timings != nullptr) {
      // The pipeline is lazy: read it once here (cache() records it) so that its cost is
      // the data phase's rather than the first epoch's. Untimed runs leave it to fit.
      for (auto it = datasets.train.iterator(0); it.next();) {
      }
      for (auto it = datasets.test.iterator(0); it.next();) {
      }
    }
    return datasets;
  });

  if (options.table_rows != 0 && options.table_rows < std::max(data.users_count, data.movies_count) + 1) {
    throw_error<ValueError>("retrieval tutorial: table_rows {} is fewer than the data's ids need ({})",
                            options.table_rows, std::max(data.users_count, data.movies_count) + 1);
  }
  if (options.distributed_embedding && options.retrieve_in_validation && cluster.multi_worker()) {
    throw_error<ValueError>("retrieval tutorial: retrieve_in_validation would retrieve from one worker's rows of "
                            "the movie table split by distributed_embedding");
  }
  RetrievalModel model(options.table_rows != 0 ? options.table_rows : data.users_count + 1,
                       options.table_rows != 0 ? options.table_rows : data.movies_count + 1,
                       /*embedding_dimension=*/32, options.retrieve_in_validation, options.distributed_embedding);
  model.compile({.optimizer = ch::optimizers::Adagrad(options.learning_rate)});
  apply_jit_compile(model, options.run);
  RetrievalTutorialResult result;
  std::vector<Shared<models::Callback>> callbacks;
  if (timings != nullptr) callbacks.push_back(timings->validation_timer());
  result.history = timed(timings ? &timings->fit_s : nullptr, [&] {
    return model.fit(data.train, {.epochs = options.epochs,
                                  .verbose = options.verbose,
                                  .callbacks = with_run_callbacks(callbacks, options.run),
                                  .validation_data = data.test,
                                  .validation_freq = options.validation_freq});
  });
  save_final_weights(model, options.run);
  result.movie_rows_kept = model.candidate_table().shape()[0];

  result.recommendations = timed(timings ? &timings->predict_s : nullptr,
                                 [&] { return recommend(model, dir, options.sample_users); });
  return result;
}

std::vector<Recommendations> recommend(RetrievalModel& model, const std::string& dir,
                                       const std::vector<int32_t>& user_ids) {
  if (user_ids.empty()) return {};
  const ml::Movies movies = ml::load_movies(dir);
  std::map<int32_t, std::string> movie_id_to_movie_title = {{0, ""}};  // because id 0 is not in the dataset
  const std::vector<int32_t> movie_ids = movies.movie_id.to_vector<int32_t>();
  for (size_t i = 0; i < movies.size(); ++i) movie_id_to_movie_title[movie_ids[i]] = movies.titles[i];
  if (model.candidate_table().row_shard()) {  // split across workers: retrieve from all of it
    model.retrieval().update_candidates(
        models::whole_values({model.candidate_table()}, distribution::worker_group().get())[0].second);
  }
  const auto n = static_cast<int64_t>(user_ids.size());
  const Tensor predictions = model.predict(from_values<int32_t>(user_ids, Shape{n}))["predictions"].tensor();
  std::vector<Recommendations> recommendations;
  for (int64_t i = 0; i < n; ++i) {
    Recommendations recs{.user_id = user_ids[static_cast<size_t>(i)]};
    for (int32_t movie_id : predictions.first_axis_slice(i, i + 1).to_vector<int32_t>()) {
      const auto title = movie_id_to_movie_title.find(movie_id);
      recs.titles.push_back(title != movie_id_to_movie_title.end() ? title->second : "");
    }
    recommendations.push_back(std::move(recs));
  }
  return recommendations;
}

void print_recommendations(const std::vector<Recommendations>& recommendations) {
  for (const Recommendations& recs : recommendations) {
    std::cout << "\n==Recommended movies for user " << recs.user_id << "==\n";
    for (const std::string& title : recs.titles) std::cout << title << "\n";
  }
}

}  // namespace chorus::recipes
