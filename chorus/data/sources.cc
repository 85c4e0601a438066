// Source stages: from_tensor_slices, range, from_generator, and zip (which combines
// several pipelines). Slices and range restore in O(1); generators restore by replaying.
#include <algorithm>

#include <fmt/format.h>

#include "chorus/data/dataset_impl.h"

namespace chorus::data {
namespace {

// ---- from_tensor_slices ----

class TensorSlicesDataset final : public SourceDataset {
 public:
  TensorSlicesDataset(Tree tree, int64_t rows) : tree_(std::move(tree)), rows_(rows) {}
  std::unique_ptr<IteratorImpl> make_iterator(int64_t epoch) const override;
  int64_t cardinality() const override { return rows_; }
  std::string name() const override { return "from_tensor_slices"; }

  // Element `row`: every leaf's row as a view.
  Tree element(int64_t row) const {
    return transform_leaves(tree_, [row](size_t, const Tensor& leaf) { return row_view(leaf, row); });
  }
  int64_t rows() const { return rows_; }
  // Elements [begin, end) stacked: every leaf's rows as one view.
  Tree rows_between(int64_t begin, int64_t end) const {
    return transform_leaves(tree_, [=](size_t, const Tensor& leaf) { return leaf.first_axis_slice(begin, end); });
  }

 private:
  Tree tree_;
  int64_t rows_;
};

class TensorSlicesIterator final : public IteratorImpl {
 public:
  explicit TensorSlicesIterator(std::shared_ptr<const TensorSlicesDataset> ds) : ds_(std::move(ds)) {}
  std::optional<Tree> next() override {
    if (index_ >= ds_->rows()) return std::nullopt;
    return ds_->element(index_++);
  }
  int64_t advance(int64_t n) override {
    const int64_t skipped = std::clamp<int64_t>(ds_->rows() - index_, 0, n);
    index_ += skipped;
    return skipped;
  }
  std::optional<Tree> next_rows(int64_t n) override {
    const int64_t begin = index_, count = advance(n);
    if (count == 0) return std::nullopt;
    return ds_->rows_between(begin, begin + count);
  }
  nlohmann::json position() const override { return {{"op", "from_tensor_slices"}, {"index", index_}}; }
  void restore(const nlohmann::json& state) override {
    check_op(state, "from_tensor_slices");
    const int64_t index = state.at("index").get<int64_t>();
    if (index < 0 || index > ds_->rows()) {
      throw_error<ValueError>("from_tensor_slices: cannot restore to element {} of a dataset of {} elements", index,
                              ds_->rows());
    }
    index_ = index;
  }

 private:
  std::shared_ptr<const TensorSlicesDataset> ds_;
  int64_t index_ = 0;
};

std::unique_ptr<IteratorImpl> TensorSlicesDataset::make_iterator(int64_t) const {
  return std::make_unique<TensorSlicesIterator>(
      std::static_pointer_cast<const TensorSlicesDataset>(shared_from_this()));
}

// ---- range ----

class RangeDataset final : public SourceDataset {
 public:
  RangeDataset(int64_t start, int64_t stop, int64_t step) : start_(start), step_(step) {
    const int64_t span = step > 0 ? stop - start : start - stop;
    const int64_t abs_step = step > 0 ? step : -step;
    size_ = span <= 0 ? 0 : (span + abs_step - 1) / abs_step;
  }
  std::unique_ptr<IteratorImpl> make_iterator(int64_t epoch) const override;
  int64_t cardinality() const override { return size_; }
  std::string name() const override { return "range"; }
  int64_t value(int64_t index) const { return start_ + index * step_; }

 private:
  int64_t start_, step_, size_;
};

class RangeIterator final : public IteratorImpl {
 public:
  explicit RangeIterator(std::shared_ptr<const RangeDataset> ds) : ds_(std::move(ds)) {}
  std::optional<Tree> next() override {
    if (index_ >= ds_->cardinality()) return std::nullopt;
    return Tree(int64_scalar(ds_->value(index_++)));
  }
  int64_t advance(int64_t n) override {
    const int64_t skipped = std::clamp<int64_t>(ds_->cardinality() - index_, 0, n);
    index_ += skipped;
    return skipped;
  }
  nlohmann::json position() const override { return {{"op", "range"}, {"index", index_}}; }
  void restore(const nlohmann::json& state) override {
    check_op(state, "range");
    const int64_t index = state.at("index").get<int64_t>();
    if (index < 0 || index > ds_->cardinality()) {
      throw_error<ValueError>("range: cannot restore to element {} of a range of {} elements", index,
                              ds_->cardinality());
    }
    index_ = index;
  }

 private:
  std::shared_ptr<const RangeDataset> ds_;
  int64_t index_ = 0;
};

std::unique_ptr<IteratorImpl> RangeDataset::make_iterator(int64_t) const {
  return std::make_unique<RangeIterator>(std::static_pointer_cast<const RangeDataset>(shared_from_this()));
}

// ---- from_generator ----

class GeneratorDataset final : public SourceDataset {
 public:
  GeneratorDataset(std::function<ElementGenerator(int64_t)> make, int64_t cardinality)
      : make_(std::move(make)), cardinality_(cardinality) {}
  std::unique_ptr<IteratorImpl> make_iterator(int64_t epoch) const override;
  int64_t cardinality() const override { return cardinality_; }
  std::string name() const override { return "from_generator"; }
  ElementGenerator start(int64_t epoch) const { return make_(epoch); }

 private:
  std::function<ElementGenerator(int64_t)> make_;
  int64_t cardinality_;
};

// The generator is made on the first next(), so restoring never makes one twice.
class GeneratorIterator final : public IteratorImpl {
 public:
  GeneratorIterator(std::shared_ptr<const GeneratorDataset> ds, int64_t epoch) : ds_(std::move(ds)), epoch_(epoch) {}
  std::optional<Tree> next() override {
    if (done_) return std::nullopt;
    if (!generator_) generator_ = ds_->start(epoch_);
    std::optional<Tree> element = generator_();
    if (!element) {
      done_ = true;
      return std::nullopt;
    }
    ++count_;
    return element;
  }
  nlohmann::json position() const override { return {{"op", "from_generator"}, {"count", count_}, {"done", done_}}; }
  // Replays a fresh generator up to the saved count.
  void restore(const nlohmann::json& state) override {
    check_op(state, "from_generator");
    const int64_t count = state.at("count").get<int64_t>();
    const bool done = state.at("done").get<bool>();
    generator_ = nullptr;
    count_ = 0;
    done_ = false;
    if (advance(count) != count) {
      throw_error<ValueError>(
          "from_generator: cannot restore to element {}: the generator of pass {} ended after {} elements", count,
          epoch_, count_);
    }
    done_ = done;
  }

 private:
  std::shared_ptr<const GeneratorDataset> ds_;
  int64_t epoch_;
  ElementGenerator generator_;
  int64_t count_ = 0;
  bool done_ = false;
};

std::unique_ptr<IteratorImpl> GeneratorDataset::make_iterator(int64_t epoch) const {
  return std::make_unique<GeneratorIterator>(std::static_pointer_cast<const GeneratorDataset>(shared_from_this()),
                                             epoch);
}

// ---- zip ----

class ZipDataset final : public DatasetImpl {
 public:
  explicit ZipDataset(std::vector<DatasetPtr> inputs) : inputs_(std::move(inputs)) {}
  std::unique_ptr<IteratorImpl> make_iterator(int64_t epoch) const override;
  // tf.data's rule: the shortest finite input; unknown if any input is unknown.
  int64_t cardinality() const override {
    int64_t result = kInfiniteCardinality;
    for (const DatasetPtr& input : inputs_) {
      const int64_t n = input->cardinality();
      if (n == kUnknownCardinality) return kUnknownCardinality;
      if (n != kInfiniteCardinality && (result == kInfiniteCardinality || n < result)) result = n;
    }
    return result;
  }
  std::string name() const override { return "zip"; }
  std::vector<const DatasetImpl*> inputs() const override {
    std::vector<const DatasetImpl*> out;
    for (const DatasetPtr& input : inputs_) out.push_back(input.get());
    return out;
  }
  const std::vector<DatasetPtr>& input_stages() const { return inputs_; }
  DatasetPtr with_inputs(std::vector<DatasetPtr> inputs) const override {
    if (inputs.size() != inputs_.size()) {
      throw_error<Error>("zip: expected {} input stages, got {}", inputs_.size(), inputs.size());
    }
    return std::make_shared<ZipDataset>(std::move(inputs));
  }

 private:
  std::vector<DatasetPtr> inputs_;
};

class ZipIterator final : public IteratorImpl {
 public:
  ZipIterator(std::shared_ptr<const ZipDataset> ds, int64_t epoch) : ds_(std::move(ds)) {
    for (const DatasetPtr& input : ds_->input_stages()) inputs_.push_back(input->make_iterator(epoch));
  }
  std::optional<Tree> next() override {
    if (done_) return std::nullopt;
    Tree::List parts;
    parts.reserve(inputs_.size());
    for (auto& input : inputs_) {
      std::optional<Tree> part = input->next();
      if (!part) {
        done_ = true;
        return std::nullopt;
      }
      parts.push_back(std::move(*part));
    }
    return Tree(std::move(parts));
  }
  int64_t advance(int64_t n) override {
    if (done_) return 0;
    int64_t skipped = n;
    for (auto& input : inputs_) skipped = std::min(skipped, input->advance(n));
    if (skipped < n) done_ = true;
    return skipped;
  }
  nlohmann::json position() const override {
    nlohmann::json states = nlohmann::json::array();
    for (const auto& input : inputs_) states.push_back(input->position());
    return {{"op", "zip"}, {"done", done_}, {"inputs", std::move(states)}};
  }
  void restore(const nlohmann::json& state) override {
    check_op(state, "zip");
    const auto& states = state.at("inputs");
    if (!states.is_array() || states.size() != inputs_.size()) {
      throw_error<ValueError>("zip: cannot restore a position of {} inputs into a zip of {}", states.size(),
                              inputs_.size());
    }
    for (size_t i = 0; i < inputs_.size(); ++i) inputs_[i]->restore(states[i]);
    done_ = state.at("done").get<bool>();
  }

 private:
  std::shared_ptr<const ZipDataset> ds_;
  std::vector<std::unique_ptr<IteratorImpl>> inputs_;
  bool done_ = false;
};

std::unique_ptr<IteratorImpl> ZipDataset::make_iterator(int64_t epoch) const {
  return std::make_unique<ZipIterator>(std::static_pointer_cast<const ZipDataset>(shared_from_this()), epoch);
}

}  // namespace

DatasetPtr make_tensor_slices_dataset(const Tree& tree) {
  std::vector<Tensor> leaves;
  for_each_leaf(tree, [&](const Tensor& leaf) { leaves.push_back(leaf); });
  if (leaves.empty()) {
    throw_error<ValueError>("from_tensor_slices: expected a tree with at least one tensor. Received: {}",
                            tree.to_string());
  }
  const auto paths = leaf_paths(tree);
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (!leaves[i].defined()) {
      throw_error<ValueError>("from_tensor_slices: expected defined tensors. Received: an undefined tensor at {}",
                              paths[i]);
    }
    if (leaves[i].rank() == 0) {
      throw_error<ValueError>(
          "from_tensor_slices: expected tensors of rank >= 1 to slice along the first axis. Received: a scalar at {}",
          paths[i]);
    }
    if (leaves[i].dim(0) != leaves[0].dim(0)) {
      throw_error<ValueError>(
          "from_tensor_slices: expected every tensor to have the same first dimension. Received: shape {} at {} "
          "and shape {} at {}",
          leaves[0].shape().to_string(), paths[0], leaves[i].shape().to_string(), paths[i]);
    }
  }
  return std::make_shared<TensorSlicesDataset>(tree, leaves[0].dim(0));
}

DatasetPtr make_range_dataset(int64_t start, int64_t stop, int64_t step) {
  return std::make_shared<RangeDataset>(start, stop, step);
}

DatasetPtr make_generator_dataset(std::function<ElementGenerator(int64_t)> make, int64_t cardinality) {
  return std::make_shared<GeneratorDataset>(std::move(make), cardinality);
}

DatasetPtr make_zip_dataset(std::vector<DatasetPtr> inputs) { return std::make_shared<ZipDataset>(std::move(inputs)); }

}  // namespace chorus::data
