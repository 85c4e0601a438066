#include "chorus/recsys/distributed_embedding.h"

#include <cmath>
#include <map>
#include <mutex>
#include <set>

#include "chorus/autograd/tape.h"
#include "chorus/backend/cpu/gather_kernels.h"
#include "chorus/ops/ops.h"
#include "chorus/replicas/sparse_exchange.h"
#include "chorus/step/replica_context.h"

namespace chorus::recsys {

// The step's lookups of this worker's replicas: each posts its ids, replica 0 exchanges
// them all with the other workers and posts the rows back.
struct DistributedEmbedding::Exchange {
  struct Post {
    uint64_t step = 0;
    std::vector<Tensor> tensors;  // per feature
  };
  std::mutex mutex;
  std::map<int, Post> ids, rows;  // by replica, in replica order
};

namespace {

void check_shape(const Shape& shape, const std::string& what, const std::string& feature, int64_t min_rank,
                 int64_t max_rank) {
  if (shape.rank() != 0 && (shape.rank() < min_rank || shape.rank() > max_rank)) {
    throw_error<ValueError>("DistributedEmbedding: feature '{}': {} {} must have {} dimensions", feature, what,
                            shape.to_string(), min_rank == max_rank ? fmt::format("{}", min_rank) : "1 or 2");
  }
}

void check_table(const TableConfig& table) {
  if (table.name.empty()) throw_error<ValueError>("DistributedEmbedding: a table has no name");
  if (table.vocabulary_size < 1 || table.embedding_dim < 1) {
    throw_error<ValueError>("DistributedEmbedding: table '{}': expected vocabulary_size >= 1 and embedding_dim >= 1, "
                            "got {} and {}",
                            table.name, table.vocabulary_size, table.embedding_dim);
  }
  if (table.combiner != "mean" && table.combiner != "sum" && table.combiner != "sqrtn") {
    throw_error<ValueError>("DistributedEmbedding: table '{}': unknown combiner '{}' (expected mean, sum or sqrtn)",
                            table.name, table.combiner);
  }
}

}  // namespace

DistributedEmbedding::DistributedEmbedding(std::vector<FeatureConfig> feature_configs, std::string name)
    : Layer("DistributedEmbedding", std::move(name)),
      features_(std::move(feature_configs)),
      exchange_(std::make_shared<Exchange>()) {
  set_autocast(false);  // call() casts the combined rows, not the tables
  if (features_.empty()) throw_error<ValueError>("DistributedEmbedding: expected at least one feature config");
  std::set<std::string> feature_names;
  std::map<std::string, const TableConfig*> table_names;
  for (const FeatureConfig& f : features_) {
    if (f.name.empty()) throw_error<ValueError>("DistributedEmbedding: a feature has no name");
    if (!feature_names.insert(f.name).second) {
      throw_error<ValueError>("DistributedEmbedding: two features are named '{}'", f.name);
    }
    if (f.table == nullptr) throw_error<ValueError>("DistributedEmbedding: feature '{}' has no table", f.name);
    check_table(*f.table);
    auto [it, added] = table_names.emplace(f.table->name, f.table.get());
    if (!added && it->second != f.table.get()) {
      throw_error<ValueError>("DistributedEmbedding: two tables are named '{}'", f.table->name);
    }
    check_shape(f.input_shape, "input_shape", f.name, 1, 2);
    check_shape(f.output_shape, "output_shape", f.name, 2, 2);
    if (f.output_shape.rank() != 0 && f.output_shape[1] != f.table->embedding_dim) {
      throw_error<ValueError>("DistributedEmbedding: feature '{}': output_shape {} does not end in table '{}''s "
                              "embedding_dim {}",
                              f.name, f.output_shape.to_string(), f.table->name, f.table->embedding_dim);
    }
    size_t t = 0;
    while (t < tables_.size() && tables_[t] != f.table) ++t;
    if (t == tables_.size()) tables_.push_back(f.table);
    table_of_.push_back(t);
  }
}

const Variable& DistributedEmbedding::embeddings(const std::string& table) const {
  for (size_t t = 0; t < tables_.size(); ++t) {
    if (tables_[t]->name == table) {
      static const Variable kUnbuilt;
      return t < embeddings_.size() ? embeddings_[t] : kUnbuilt;
    }
  }
  throw_error<ValueError>("{}: no table named '{}'", name(), table);
}

void DistributedEmbedding::build(const Tree& /*inputs*/) {
  for (const auto& table : tables_) {
    const layers::Initializer initializer = table->initializer.value_or(
        layers::initializers::truncated_normal(0.0, 1.0 / std::sqrt(static_cast<double>(table->embedding_dim))));
    Variable v = add_weight(table->name, Shape{table->vocabulary_size, table->embedding_dim}, initializer);
    v.set_sparse_gradients(true);
    v.set_splits_rows_across_workers(true);
    embeddings_.push_back(v);
  }
}

Tensor DistributedEmbedding::checked_ids(size_t f, const Tensor& ids) const {
  const FeatureConfig& feature = features_[f];
  if (ids.rank() < 1 || ids.rank() > 2 || (feature.input_shape.rank() != 0 && ids.rank() != feature.input_shape.rank()) ||
      (ids.rank() == 2 && feature.input_shape.rank() != 0 && ids.dim(1) != feature.input_shape[1])) {
    throw_error<ValueError>("{}: feature '{}': expected ids of shape {}, got {}", name(), feature.name,
                            feature.input_shape.rank() == 0 ? "(batch,) or (batch, n)" : feature.input_shape.to_string(),
                            ids.shape().to_string());
  }
  Tensor out = ids.dtype() == kInt64 ? ids : ops::cast(ids, kInt64);
  const int64_t vocabulary = feature.table->vocabulary_size;
  const int64_t i = backend::cpu::find_out_of_range(out.data<int64_t>(), out.numel(), vocabulary);
  if (i >= 0) {
    const int64_t per_example = ids.rank() == 2 ? ids.dim(1) : 1;
    throw_error<IndexError>("{}: feature '{}': index {} out of range [0, {}) in batch element {}", name(), feature.name,
                            out.data<int64_t>()[i], vocabulary, i / std::max<int64_t>(per_example, 1));
  }
  return out;
}

Tree DistributedEmbedding::call(const Tree& inputs, bool /*training*/) {
  std::vector<Tensor> ids(features_.size());
  if (inputs.is_tensor() && features_.size() == 1) {
    ids[0] = checked_ids(0, inputs.tensor());
  } else {
    if (!inputs.is_dict() || inputs.dict().size() != features_.size()) {
      std::vector<std::string> names;
      for (const auto& f : features_) names.push_back(f.name);
      throw_error<ValueError>("{}: expected a dict of the features {}, got {}", name(), fmt::join(names, ", "),
                              inputs.to_string());
    }
    for (size_t f = 0; f < features_.size(); ++f) ids[f] = checked_ids(f, inputs[features_[f].name].tensor());
  }
  std::vector<Tensor> rows = lookup(ids);
  Tree::Dict out;
  for (size_t f = 0; f < features_.size(); ++f) {
    Tensor r = rows[f];
    if (ids[f].rank() == 2) {  // (batch, n, dim): the combiner
      const std::string& combiner = features_[f].table->combiner;
      r = combiner == "mean" ? ops::mean(r, {1}) : ops::sum(r, {1});
      if (combiner == "sqrtn" && ids[f].dim(1) > 0) r = r * (1.0 / std::sqrt(static_cast<double>(ids[f].dim(1))));
    }
    out[features_[f].name] = r.dtype() == compute_dtype() ? r : ops::cast(r, compute_dtype());
  }
  if (inputs.is_tensor()) return out.begin()->second;
  return Tree(std::move(out));
}

std::vector<Tensor> DistributedEmbedding::lookup(const std::vector<Tensor>& ids) {
  bool split = false;
  for (const Variable& table : embeddings_) split = split || table.row_shard().has_value();
  if (!split) {
    std::vector<Tensor> rows;
    for (size_t f = 0; f < features_.size(); ++f) rows.push_back(ops::take(embeddings_[table_of_[f]].value(), ids[f], 0));
    return rows;
  }
  std::vector<Tensor> rows = exchanged_rows(ids);
  for (size_t f = 0; f < features_.size(); ++f) {
    const Variable& table = embeddings_[table_of_[f]];
    autograd::record("distributed_embedding_lookup", {table.value()}, {rows[f]}, [&] {
      return [indices = ids[f].view(Shape{ids[f].numel()}), whole = table.whole_shape(),
              path = table.path()](std::span<const Tensor> g, const autograd::BackwardContext& context) {
        if (!context.accepts_indexed_slices(0)) {
          throw_error<ValueError>("{}: the gradient of a table split across workers comes only as rows (sparse "
                                  "gradients, as fit's steps ask for)",
                                  path);
        }
        context.add_indexed_slices(0, {.values = g[0].view(Shape{indices.numel(), whole[1]}),
                                       .indices = indices,
                                       .dense_shape = whole});
        return std::vector<Tensor>{Tensor()};
      };
    });
  }
  return rows;
}

std::vector<Tensor> DistributedEmbedding::exchanged_rows(const std::vector<Tensor>& ids) {
  step::ReplicaContext* replica = step::ReplicaContext::current();
  comm::Communicator* workers = replica != nullptr ? replica->workers() : nullptr;
  if (workers == nullptr) {
    throw_error<ValueError>("{}: its tables are split across the workers of a job: look them up inside the "
                            "model's fit, evaluate or predict",
                            name());
  }
  Exchange& exchange = *exchange_;
  const int me = replica->replica_id();
  const uint64_t step = replica->step();
  {
    std::lock_guard lock(exchange.mutex);
    exchange.ids[me] = {step, ids};
  }
  replica->run_once([&] {
    std::lock_guard lock(exchange.mutex);
    for (size_t f = 0; f < features_.size(); ++f) {
      std::vector<int64_t> all;
      for (const auto& [r, post] : exchange.ids) {
        if (post.step != step) continue;  // a replica that sat this step out
        const Tensor& t = post.tensors[f];
        all.insert(all.end(), t.data<int64_t>(), t.data<int64_t>() + t.numel());
      }
      const Variable& table = embeddings_[table_of_[f]];
      const Tensor rows = replicas::lookup_rows(table.value(), table.row_shard()->begin, all, *workers);
      int64_t at = 0;
      for (const auto& [r, post] : exchange.ids) {
        if (post.step != step) continue;
        const Tensor& t = post.tensors[f];
        Shape shape = t.shape();
        shape.push_back(table.shape()[1]);
        Exchange::Post& out = exchange.rows[r];
        out.step = step;
        out.tensors.resize(features_.size());
        out.tensors[f] = rows.first_axis_slice(at, at + t.numel()).view(shape);
        at += t.numel();
      }
    }
  });
  std::lock_guard lock(exchange.mutex);
  std::vector<Tensor> rows = std::move(exchange.rows.at(me).tensors);
  exchange.rows.erase(me);
  exchange.ids.erase(me);
  return rows;
}

nlohmann::json DistributedEmbedding::get_config() const {
  nlohmann::json config = Layer::get_config();
  nlohmann::json features = nlohmann::json::array();
  for (const FeatureConfig& f : features_) {
    features.push_back({{"name", f.name},
                        {"table",
                         {{"name", f.table->name},
                          {"vocabulary_size", f.table->vocabulary_size},
                          {"embedding_dim", f.table->embedding_dim},
                          {"combiner", f.table->combiner}}},
                        {"input_shape", f.input_shape.dims()},
                        {"output_shape", f.output_shape.dims()}});
  }
  config["feature_configs"] = features;
  return config;
}

}  // namespace chorus::recsys
