// DistributedEmbedding: embedding lookups in tables too large for one worker
// (keras_rs.layers.DistributedEmbedding). Under data parallelism across the workers of a
// job each table is split by rows: a worker keeps one block of rows and the optimizer
// state of those rows, a lookup asks each row's keeper for it (all-to-all), and a step's
// gradient rows travel to their keepers, which update only those. In one process the
// tables are whole, as Embedding's (its devices share one memory). Owns its tables; safe
// to call from several replica threads at once once built.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chorus/layers/initializers.h"
#include "chorus/layers/layer.h"

namespace chorus::recsys {

using autograd::Variable;

// One table (keras_rs.layers.TableConfig). keras-rs's `optimizer`, which TPU SparseCores
// apply, has no counterpart: the model's optimizer updates the tables, as keras-rs does
// on other hardware.
struct TableConfig {
  std::string name;
  int64_t vocabulary_size = 0;
  int64_t embedding_dim = 0;
  // Unset: truncated normal, mean 0, stddev 1 / sqrt(embedding_dim) (keras-rs's default).
  std::optional<layers::Initializer> initializer;
  // How a feature's several ids in one example combine: "mean", "sum" or "sqrtn".
  std::string combiner = "mean";
};

// One feature looked up in a table (keras_rs.layers.FeatureConfig); features may share
// a table. The shapes include the batch size first, which is not checked.
struct FeatureConfig {
  std::string name;
  std::shared_ptr<const TableConfig> table;
  Shape input_shape;   // (batch,) or (batch, ids per example)
  Shape output_shape;  // (batch, embedding_dim)
};

// Input: {feature name: ids} (or the ids alone when there is one feature), int32 or
// int64, of the feature's input_shape. Output: the same structure of (batch,
// embedding_dim) float32 rows: an example's one row, or its several combined.
//
//   auto users = std::make_shared<recsys::TableConfig>(recsys::TableConfig{
//       .name = "user_table", .vocabulary_size = 1'000'000, .embedding_dim = 32});
//   recsys::DistributedEmbedding embedding(
//       {{.name = "user_id", .table = users, .input_shape = {1000}, .output_shape = {1000, 32}}});
//   Tree out = embedding(Tree{{"user_id", ids}});  // out["user_id"]: (1000, 32)
class DistributedEmbedding : public layers::Layer {
 public:
  // Throws ValueError naming the feature or table for: no features, a feature without a
  // name or table, two features or two tables of one name, a vocabulary_size or
  // embedding_dim below 1, an unknown combiner, or shapes of the wrong rank or width.
  explicit DistributedEmbedding(std::vector<FeatureConfig> feature_configs, std::string name = "");

  // Table `table`'s variable, (vocabulary_size, embedding_dim) (this worker's block of
  // rows where split); undefined before build. Throws ValueError for an unknown table.
  const Variable& embeddings(const std::string& table) const;

  nlohmann::json get_config() const override;
  std::shared_ptr<Layer> move_to_heap() && override {
    return std::make_shared<DistributedEmbedding>(std::move(*this));
  }

 protected:
  void build(const Tree& inputs) override;
  // Throws ValueError for a missing or unexpected feature or a wrong shape, IndexError
  // for an id outside its table ("distributed_embedding: feature 'user_id': index 2000
  // out of range [0, 1683) in batch element 17").
  Tree call(const Tree& inputs, bool training) override;

 private:
  struct Exchange;
  // Feature f's ids as contiguous int64, checked.
  Tensor checked_ids(size_t f, const Tensor& ids) const;
  // Each feature's rows (ids' shape + (embedding_dim,)), recorded for the tables' gradients.
  std::vector<Tensor> lookup(const std::vector<Tensor>& ids);
  // The rows of tables split across workers, from their keepers (with every replica of
  // this worker, in one exchange per feature).
  std::vector<Tensor> exchanged_rows(const std::vector<Tensor>& ids);

  std::vector<FeatureConfig> features_;
  std::vector<std::shared_ptr<const TableConfig>> tables_;  // distinct, in the order features name them
  std::vector<size_t> table_of_;                            // per feature
  std::vector<Variable> embeddings_;                        // per table
  std::shared_ptr<Exchange> exchange_;
};

}  // namespace chorus::recsys
