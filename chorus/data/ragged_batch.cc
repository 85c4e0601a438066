// ragged_batch (tf.data's Dataset.ragged_batch): batches elements whose leaves differ in
// their first dimension. A leaf of rank >= 1 becomes a RaggedTensor (in its Tree form,
// ragged_tensor.h) whose rows are the elements' leaves; a scalar leaf is stacked densely,
// as batch() does. Saves its input's position nested, as batch() does.
#include <limits>

#include "chorus/core/ragged_tensor.h"
#include "chorus/data/dataset_impl.h"

namespace chorus::data {
namespace {

class RaggedBatchDataset final : public UnaryDataset {
 public:
  RaggedBatchDataset(DatasetPtr input, int64_t batch_size, bool drop_remainder)
      : UnaryDataset(std::move(input)), batch_size_(batch_size), drop_remainder_(drop_remainder) {}
  std::unique_ptr<IteratorImpl> make_iterator(int64_t epoch) const override;
  int64_t cardinality() const override {
    const int64_t n = input_->cardinality();
    if (n < 0) return n;
    return drop_remainder_ ? n / batch_size_ : (n + batch_size_ - 1) / batch_size_;
  }
  std::string name() const override { return "ragged_batch"; }
  DatasetPtr with_input(DatasetPtr input) const override {
    return std::make_shared<RaggedBatchDataset>(std::move(input), batch_size_, drop_remainder_);
  }
  int64_t batch_size() const override { return batch_size_; }
  DatasetPtr with_batch_size(int64_t batch_size) const override {
    return std::make_shared<RaggedBatchDataset>(input_, batch_size, drop_remainder_);
  }
  bool drop_remainder() const { return drop_remainder_; }

  // The batch of `elements` (1 to batch_size of them).
  Tree stack(const std::vector<Tree>& elements) const;

 private:
  int64_t batch_size_;
  bool drop_remainder_;
};

// Throws ValueError if `tree` already holds a RaggedTensor (a ragged batch of ragged
// elements would need two ragged dimensions).
void check_not_ragged(const Tree& tree, int64_t index) {
  if (RaggedTensor::is_ragged(tree)) {
    throw_error<ValueError>(
        "ragged_batch: element {} of the batch already holds a RaggedTensor; expected dense tensors (unbatch() "
        "it first)",
        index);
  }
  if (tree.is_dict()) {
    for (const auto& [key, child] : tree.dict()) check_not_ragged(child, index);
  } else if (tree.is_list()) {
    for (const Tree& child : tree.list()) check_not_ragged(child, index);
  }
}

// Leaf k of every element (`leaves` holds them element-major) as one batched Tree.
Tree stack_leaf(const std::vector<const Tensor*>& all, size_t num_leaves, size_t k, size_t count,
                const std::string& path) {
  const Tensor& first = *all[k];
  std::vector<Tensor> rows;
  rows.reserve(count);
  for (size_t e = 0; e < count; ++e) {
    const Tensor& leaf = *all[e * num_leaves + k];
    if (leaf.dtype() != first.dtype()) {
      throw_error<DTypeError>("ragged_batch: element {} of the batch has dtype {} at {}, but element 0 has {}", e,
                              dtype_name(leaf.dtype()), path, dtype_name(first.dtype()));
    }
    if (leaf.rank() != first.rank()) {
      throw_error<ShapeError>("ragged_batch: element {} of the batch has shape {} at {}, but element 0 has rank {}",
                              e, leaf.shape().to_string(), path, first.rank());
    }
    rows.push_back(leaf);
  }
  if (first.rank() == 0) {  // scalars batch densely
    Tensor out = Tensor::empty(Shape{static_cast<int64_t>(count)}, first.dtype());
    const size_t size = dtype_size(first.dtype());
    for (size_t e = 0; e < count; ++e) {
      copy_elements(static_cast<char*>(out.element_data()) + e * size, rows[e].element_data(), 1, first.dtype());
    }
    return Tree(std::move(out));
  }
  try {
    return RaggedTensor::from_rows(rows).to_tree();
  } catch (const ShapeError& e) {
    throw ShapeError(std::string("ragged_batch: at ") + path + ": " + e.what());
  }
}

// A tree with `structure`'s nesting whose k-th leaf is outputs[k] (a tensor or a ragged dict).
Tree rebuild(const Tree& structure, std::vector<Tree>& outputs, size_t& k) {
  if (structure.is_tensor()) return std::move(outputs[k++]);
  if (structure.is_dict()) {
    Tree::Dict out;
    for (const auto& [key, child] : structure.dict()) out.emplace_hint(out.end(), key, rebuild(child, outputs, k));
    return Tree(std::move(out));
  }
  if (structure.is_list()) {
    Tree::List out;
    for (const Tree& child : structure.list()) out.push_back(rebuild(child, outputs, k));
    return Tree(std::move(out));
  }
  return Tree();
}

Tree RaggedBatchDataset::stack(const std::vector<Tree>& elements) const {
  const Tree& first = elements[0];
  std::vector<const Tensor*> all;  // element-major: all[e * num_leaves + k]
  for (size_t e = 0; e < elements.size(); ++e) {
    check_not_ragged(elements[e], static_cast<int64_t>(e));
    if (!collect_leaves_like(elements[e], first, all)) {
      throw_error<ValueError>("ragged_batch: element {} of the batch has structure {}, but element 0 has {}", e,
                              elements[e].to_string(), first.to_string());
    }
  }
  const size_t num_leaves = all.size() / elements.size();
  const std::vector<std::string> paths = leaf_paths(first);
  std::vector<Tree> outputs;
  for (size_t k = 0; k < num_leaves; ++k) outputs.push_back(stack_leaf(all, num_leaves, k, elements.size(), paths[k]));
  size_t k = 0;
  return rebuild(first, outputs, k);
}

class RaggedBatchIterator final : public IteratorImpl {
 public:
  RaggedBatchIterator(std::shared_ptr<const RaggedBatchDataset> ds, int64_t epoch)
      : ds_(std::move(ds)), input_(ds_->input().make_iterator(epoch)) {}

  std::optional<Tree> next() override {
    auto elements = next_elements(*input_, ds_->batch_size(), ds_->drop_remainder());
    if (!elements) return std::nullopt;
    return ds_->stack(*elements);
  }
  int64_t advance(int64_t n) override {
    const int64_t size = ds_->batch_size();
    const int64_t want = n > std::numeric_limits<int64_t>::max() / size ? std::numeric_limits<int64_t>::max() : n * size;
    const int64_t skipped = input_->advance(want);
    return ds_->drop_remainder() ? skipped / size : (skipped + size - 1) / size;
  }
  nlohmann::json position() const override { return {{"op", "ragged_batch"}, {"input", input_->position()}}; }
  void restore(const nlohmann::json& state) override {
    check_op(state, "ragged_batch");
    input_->restore(state.at("input"));
  }

 private:
  std::shared_ptr<const RaggedBatchDataset> ds_;
  std::unique_ptr<IteratorImpl> input_;
};

std::unique_ptr<IteratorImpl> RaggedBatchDataset::make_iterator(int64_t epoch) const {
  return std::make_unique<RaggedBatchIterator>(shared_self(this), epoch);
}

}  // namespace

DatasetPtr make_ragged_batch_dataset(DatasetPtr input, int64_t batch_size, bool drop_remainder) {
  return std::make_shared<RaggedBatchDataset>(std::move(input), batch_size, drop_remainder);
}

}  // namespace chorus::data
