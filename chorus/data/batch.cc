// batch, padded_batch and unbatch. batch copies each element's leaves into one new
// tensor per leaf as the elements arrive (one memcpy per leaf per element — string
// leaves copy their std::string elements — no ops, no autograd) — except over in-memory arrays read in order, whose rows it returns as views; padded_batch first collects the batch to know its longest element; unbatch
// returns views. batch and padded_batch save their input's position nested; unbatch
// replays its input up to the current batch.
#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "chorus/core/ragged_tensor.h"
#include "chorus/data/dataset_impl.h"

namespace chorus::data {
namespace {

[[noreturn]] void structure_error(const char* op, int64_t index, const Tree& element, const Tree& first) {
  throw_error<ValueError>("{}: element {} of the batch has structure {}, but element 0 has {}", op, index,
                          element.to_string(), first.to_string());
}

[[noreturn]] void dtype_error(const char* op, int64_t index, const Tree& first, size_t leaf, DType got, DType want) {
  throw_error<DTypeError>("{}: element {} of the batch has dtype {} at {}, but element 0 has {}", op, index,
                          dtype_name(got), leaf_paths(first)[leaf], dtype_name(want));
}

// Input elements that make `n` batches of `size`, saturating instead of overflowing.
int64_t times(int64_t n, int64_t size) {
  return n > std::numeric_limits<int64_t>::max() / size ? std::numeric_limits<int64_t>::max() : n * size;
}

// Skips n batches of an input read with `input->advance`; returns the batches skipped.
int64_t advance_batches(IteratorImpl& input, int64_t n, int64_t size, bool drop_remainder) {
  const int64_t skipped = input.advance(times(n, size));
  return drop_remainder ? skipped / size : (skipped + size - 1) / size;
}

int64_t batched_cardinality(int64_t n, int64_t size, bool drop_remainder) {
  if (n < 0) return n;
  return drop_remainder ? n / size : (n + size - 1) / size;
}

class BatchDataset final : public UnaryDataset {
 public:
  BatchDataset(DatasetPtr input, int64_t batch_size, bool drop_remainder)
      : UnaryDataset(std::move(input)), batch_size_(batch_size), drop_remainder_(drop_remainder) {}
  std::unique_ptr<IteratorImpl> make_iterator(int64_t epoch) const override;
  int64_t cardinality() const override {
    return batched_cardinality(input_->cardinality(), batch_size_, drop_remainder_);
  }
  std::string name() const override { return "batch"; }
  DatasetPtr with_input(DatasetPtr input) const override {
    return std::make_shared<BatchDataset>(std::move(input), batch_size_, drop_remainder_);
  }
  int64_t batch_size() const override { return batch_size_; }
  DatasetPtr with_batch_size(int64_t batch_size) const override {
    return std::make_shared<BatchDataset>(input_, batch_size, drop_remainder_);
  }
  bool drop_remainder() const { return drop_remainder_; }

 private:
  int64_t batch_size_;
  bool drop_remainder_;
};

class BatchIterator final : public IteratorImpl {
 public:
  BatchIterator(std::shared_ptr<const BatchDataset> ds, int64_t epoch)
      : ds_(std::move(ds)), input_(ds_->input().make_iterator(epoch)) {}

  std::optional<Tree> next() override {
    const int64_t size = ds_->batch_size();
    if (fast_ != Fast::kNo) {
      // In-memory arrays read in order: the batch is a view of their rows.
      std::optional<Tree> rows = input_->next_rows(size);
      if (rows) {
        fast_ = Fast::kYes;
        if (ds_->drop_remainder() && rows->flatten()[0].dim(0) < size) return std::nullopt;
        return rows;
      }
      if (fast_ == Fast::kYes) return std::nullopt;  // the end of the pass
      fast_ = Fast::kNo;
    }
    std::optional<Tree> first = input_->next();
    if (!first) return std::nullopt;
    leaves_.clear();
    collect_leaves_like(*first, *first, leaves_);
    outputs_.clear();
    row_bytes_.clear();
    for (const Tensor* leaf : leaves_) {
      Shape shape{size};
      for (int64_t d : leaf->shape().dims()) shape.push_back(d);
      outputs_.push_back(Tensor::empty(shape, leaf->dtype()));
      row_bytes_.push_back(leaf->nbytes());
      copy_elements(outputs_.back().element_data(), leaf->element_data(), static_cast<size_t>(leaf->numel()),
                    leaf->dtype());
    }
    int64_t rows = 1;
    for (; rows < size; ++rows) {
      std::optional<Tree> element = input_->next();
      if (!element) break;
      append(*element, *first, rows);
    }
    if (rows < size && ds_->drop_remainder()) return std::nullopt;
    return transform_leaves(*first, [&](size_t k, const Tensor&) {
      return rows < size ? outputs_[k].first_axis_slice(0, rows) : outputs_[k];
    });
  }

  int64_t advance(int64_t n) override {
    return advance_batches(*input_, n, ds_->batch_size(), ds_->drop_remainder());
  }
  nlohmann::json position() const override { return {{"op", "batch"}, {"input", input_->position()}}; }
  void restore(const nlohmann::json& state) override {
    check_op(state, "batch");
    input_->restore(state.at("input"));
  }

 private:
  // Copies `element`'s leaves into row `row` of outputs_, checking them against `first`.
  void append(const Tree& element, const Tree& first, int64_t row) {
    const size_t count = leaves_.size();
    if (!collect_leaves_like(element, first, leaves_)) structure_error("batch", row, element, first);
    for (size_t k = 0; k < count; ++k) {
      const Tensor& leaf = *leaves_[count + k];
      const Tensor& reference = *leaves_[k];
      if (leaf.dtype() != reference.dtype()) dtype_error("batch", row, first, k, leaf.dtype(), reference.dtype());
      if (leaf.shape() != reference.shape()) {
        throw_error<ShapeError>(
            "batch: element {} of the batch has shape {} at {}, but element 0 has shape {} (padded_batch batches "
            "elements of different lengths)",
            row, leaf.shape().to_string(), leaf_paths(first)[k], reference.shape().to_string());
      }
      copy_elements(static_cast<char*>(outputs_[k].element_data()) + row * row_bytes_[k], leaf.element_data(),
                    static_cast<size_t>(leaf.numel()), leaf.dtype());
    }
    leaves_.resize(count);
  }

  std::shared_ptr<const BatchDataset> ds_;
  std::unique_ptr<IteratorImpl> input_;
  // Whether the input hands out stacked views (next_rows); unknown until the first batch.
  enum class Fast : uint8_t { kUnknown, kYes, kNo };
  Fast fast_ = Fast::kUnknown;
  // Scratch reused across batches (no per-element allocation): element 0's leaves, then
  // the current element's; the batch's tensors; bytes per row of each.
  std::vector<const Tensor*> leaves_;
  std::vector<Tensor> outputs_;
  std::vector<size_t> row_bytes_;
};

std::unique_ptr<IteratorImpl> BatchDataset::make_iterator(int64_t epoch) const {
  return std::make_unique<BatchIterator>(shared_self(this), epoch);
}

// ---- padded_batch ----

// "(4, -1)": a padded shape as Python prints the tuple (Shape cannot hold -1).
std::string dims_string(const std::vector<int64_t>& dims) {
  return dims.size() == 1 ? fmt::format("({},)", dims[0]) : fmt::format("({})", fmt::join(dims, ", "));
}

// Fills every element of `out` with `value` converted to its dtype; a string tensor
// keeps the empty strings it was made with (strings pad with "", as tf.data's default).
void fill_value(const Tensor& out, double value) {
  if (out.dtype() == kString) return;
  visit_dtype(out.dtype(), [&](auto v) {
    using T = decltype(v);
    T converted;
    if constexpr (std::is_same_v<T, bfloat16>) {
      converted = bfloat16(static_cast<float>(value));
    } else {
      converted = static_cast<T>(value);
    }
    std::fill_n(static_cast<T*>(out.raw_data()), out.numel(), converted);
  });
}

// Copies `src` into the leading corner of `dst` (same rank, each dim of dst >= src's).
void copy_into_corner(const Tensor& src, char* dst, const Shape& dst_shape) {
  const DType dtype = src.dtype();
  const size_t elem = dtype_size(dtype);
  const int rank = src.rank();
  const char* from = static_cast<const char*>(src.element_data());
  if (rank == 0 || src.numel() == 0) {
    copy_elements(dst, from, static_cast<size_t>(src.numel()), dtype);
    return;
  }
  const auto dst_strides = contiguous_strides(dst_shape);
  const int64_t row_len = src.dim(rank - 1);
  const int64_t rows = src.numel() / row_len;
  std::array<int64_t, kMaxRank> index{};
  for (int64_t r = 0; r < rows; ++r) {
    int64_t offset = 0;
    for (int a = 0; a + 1 < rank; ++a) offset += index[a] * dst_strides[a];
    copy_elements(dst + offset * elem, from + r * row_len * elem, static_cast<size_t>(row_len), dtype);
    for (int a = rank - 2; a >= 0 && ++index[a] == src.dim(a); --a) index[a] = 0;
  }
}

class PaddedBatchDataset final : public UnaryDataset {
 public:
  PaddedBatchDataset(DatasetPtr input, int64_t batch_size, PaddedBatchOptions options)
      : UnaryDataset(std::move(input)), batch_size_(batch_size), options_(std::move(options)) {}
  std::unique_ptr<IteratorImpl> make_iterator(int64_t epoch) const override;
  int64_t cardinality() const override {
    return batched_cardinality(input_->cardinality(), batch_size_, options_.drop_remainder);
  }
  std::string name() const override { return "padded_batch"; }
  DatasetPtr with_input(DatasetPtr input) const override {
    return std::make_shared<PaddedBatchDataset>(std::move(input), batch_size_, options_);
  }
  int64_t batch_size() const override { return batch_size_; }
  DatasetPtr with_batch_size(int64_t batch_size) const override {
    return std::make_shared<PaddedBatchDataset>(input_, batch_size, options_);
  }
  const PaddedBatchOptions& options() const { return options_; }

  // Stacks `elements` (1 to batch_size of them), padding each leaf.
  Tree stack(const std::vector<Tree>& elements) const;

 private:
  // The padded shape of leaf k (without the batch axis) for `leaves` (one per element).
  Shape padded_shape(size_t k, const std::vector<const Tensor*>& leaves, const Tree& first) const;

  int64_t batch_size_;
  PaddedBatchOptions options_;
};

Shape PaddedBatchDataset::padded_shape(size_t k, const std::vector<const Tensor*>& leaves, const Tree& first) const {
  const Tensor& reference = *leaves[0];
  const int rank = reference.rank();
  std::vector<int64_t> target(rank, -1);
  if (!options_.padded_shapes.empty()) {
    const auto& wanted = options_.padded_shapes[k];
    if (static_cast<int>(wanted.size()) != rank) {
      throw_error<ShapeError>("padded_batch: padded shape of rank {} for {}, but its elements have rank {}",
                              wanted.size(), leaf_paths(first)[k], rank);
    }
    target = wanted;
  }
  for (size_t e = 0; e < leaves.size(); ++e) {
    const Tensor& leaf = *leaves[e];
    if (leaf.dtype() != reference.dtype()) dtype_error("padded_batch", e, first, k, leaf.dtype(), reference.dtype());
    if (leaf.rank() != rank) {
      throw_error<ShapeError>("padded_batch: element {} of the batch has shape {} at {}, but element 0 has rank {}",
                              e, leaf.shape().to_string(), leaf_paths(first)[k], rank);
    }
  }
  Shape shape;
  for (int a = 0; a < rank; ++a) {
    int64_t longest = 0;
    for (const Tensor* leaf : leaves) longest = std::max(longest, leaf->dim(a));
    if (target[a] >= 0 && longest > target[a]) {
      const auto it =
          std::find_if(leaves.begin(), leaves.end(), [&](const Tensor* l) { return l->dim(a) > target[a]; });
      throw_error<ShapeError>(
          "padded_batch: element {} of the batch has shape {} at {}, longer than the padded shape {}",
                              it - leaves.begin(), (*it)->shape().to_string(), leaf_paths(first)[k],
                              dims_string(target));
    }
    shape.push_back(target[a] >= 0 ? target[a] : longest);
  }
  return shape;
}

Tree PaddedBatchDataset::stack(const std::vector<Tree>& elements) const {
  const Tree& first = elements[0];
  std::vector<const Tensor*> all;  // element-major: all[e * leaves + k]
  for (size_t e = 0; e < elements.size(); ++e) {
    if (!collect_leaves_like(elements[e], first, all)) structure_error("padded_batch", e, elements[e], first);
  }
  const size_t num_leaves = all.size() / elements.size();
  if (!options_.padded_shapes.empty() && options_.padded_shapes.size() != num_leaves) {
    throw_error<ValueError>("padded_batch: expected one padded shape per leaf ({}). Received: {} padded shapes",
                            num_leaves, options_.padded_shapes.size());
  }
  std::vector<Tensor> outputs;
  std::vector<const Tensor*> leaves(elements.size());
  for (size_t k = 0; k < num_leaves; ++k) {
    for (size_t e = 0; e < elements.size(); ++e) leaves[e] = all[e * num_leaves + k];
    const Shape row_shape = padded_shape(k, leaves, first);
    Shape shape{static_cast<int64_t>(elements.size())};
    for (int64_t d : row_shape.dims()) shape.push_back(d);
    Tensor out = Tensor::empty(shape, leaves[0]->dtype());
    fill_value(out, options_.padding_value);
    const size_t row_bytes = static_cast<size_t>(row_shape.numel()) * dtype_size(out.dtype());
    for (size_t e = 0; e < elements.size(); ++e) {
      copy_into_corner(*leaves[e], static_cast<char*>(out.element_data()) + e * row_bytes, row_shape);
    }
    outputs.push_back(std::move(out));
  }
  return transform_leaves(first, [&](size_t k, const Tensor&) { return outputs[k]; });
}

class PaddedBatchIterator final : public IteratorImpl {
 public:
  PaddedBatchIterator(std::shared_ptr<const PaddedBatchDataset> ds, int64_t epoch)
      : ds_(std::move(ds)), input_(ds_->input().make_iterator(epoch)) {}
  std::optional<Tree> next() override {
    auto elements = next_elements(*input_, ds_->batch_size(), ds_->options().drop_remainder);
    if (!elements) return std::nullopt;
    return ds_->stack(*elements);
  }
  int64_t advance(int64_t n) override {
    return advance_batches(*input_, n, ds_->batch_size(), ds_->options().drop_remainder);
  }
  nlohmann::json position() const override { return {{"op", "padded_batch"}, {"input", input_->position()}}; }
  void restore(const nlohmann::json& state) override {
    check_op(state, "padded_batch");
    input_->restore(state.at("input"));
  }

 private:
  std::shared_ptr<const PaddedBatchDataset> ds_;
  std::unique_ptr<IteratorImpl> input_;
};

std::unique_ptr<IteratorImpl> PaddedBatchDataset::make_iterator(int64_t epoch) const {
  return std::make_unique<PaddedBatchIterator>(shared_self(this), epoch);
}

// ---- unbatch ----

class UnbatchDataset final : public UnaryDataset {
 public:
  explicit UnbatchDataset(DatasetPtr input) : UnaryDataset(std::move(input)) {}
  std::unique_ptr<IteratorImpl> make_iterator(int64_t epoch) const override;
  int64_t cardinality() const override {
    const int64_t n = input_->cardinality();
    return n == 0 || n == kInfiniteCardinality ? n : kUnknownCardinality;
  }
  std::string name() const override { return "unbatch"; }
  DatasetPtr with_input(DatasetPtr input) const override { return std::make_shared<UnbatchDataset>(std::move(input)); }
};

class UnbatchIterator final : public IteratorImpl {
 public:
  UnbatchIterator(std::shared_ptr<const UnbatchDataset> ds, int64_t epoch)
      : ds_(std::move(ds)), epoch_(epoch), input_(ds_->input().make_iterator(epoch)) {}

  std::optional<Tree> next() override {
    while (row_ >= rows_) {
      if (!pull()) return std::nullopt;
    }
    const int64_t row = row_++;
    if (ragged_.empty()) {
      return transform_leaves(batch_, [row](size_t, const Tensor& leaf) { return row_view(leaf, row); });
    }
    size_t r = 0;
    return row_of(batch_, row, r);
  }
  nlohmann::json position() const override {
    return {{"op", "unbatch"}, {"batches", batches_}, {"row", row_}};
  }
  void restore(const nlohmann::json& state) override {
    check_op(state, "unbatch");
    const int64_t batches = state.at("batches").get<int64_t>();
    const int64_t row = state.at("row").get<int64_t>();
    batch_ = Tree();
    rows_ = row_ = batches_ = 0;
    input_ = replay_input(ds_->input(), epoch_, std::max<int64_t>(0, batches - 1), "unbatch");
    batches_ = std::max<int64_t>(0, batches - 1);
    if (batches > 0) {
      if (!pull()) throw_error<ValueError>("unbatch: cannot restore: input element {} is missing", batches - 1);
      row_ = std::min(row, rows_);
    }
  }

 private:
  // Reads the next batch into batch_; false at the end of the input.
  bool pull() {
    std::optional<Tree> batch = input_->next();
    if (!batch) return false;
    const int64_t index = batches_++;
    int64_t rows = -1;
    size_t k = 0;
    ragged_.clear();
    check_rows(*batch, *batch, index, rows, k);
    batch_ = std::move(*batch);
    rows_ = std::max<int64_t>(rows, 0);
    row_ = 0;
    return true;
  }

  // Checks that every component of `tree` (a tensor of rank >= 1, or a RaggedTensor in
  // Tree form, collected into ragged_) has `rows` rows (-1: not known yet); k counts the
  // leaves of `batch` passed, for error paths.
  void check_rows(const Tree& tree, const Tree& batch, int64_t index, int64_t& rows, size_t& k) {
    if (RaggedTensor::is_ragged(tree)) {
      ragged_.push_back(RaggedTensor::from_tree(tree));
      check_count(ragged_.back().nrows(), "a RaggedTensor with " + std::to_string(ragged_.back().nrows()) + " rows",
                  batch, index, rows, k);
      k += 2;
    } else if (tree.is_tensor()) {
      const Tensor& leaf = tree.tensor();
      if (leaf.rank() == 0) {
        throw_error<ShapeError>("unbatch: expected tensors of rank >= 1. Received: a scalar at {} in input element {}",
                                leaf_paths(batch)[k], index);
      }
      check_count(leaf.dim(0), "shape " + leaf.shape().to_string(), batch, index, rows, k);
      ++k;
    } else if (tree.is_dict()) {
      for (const auto& [key, child] : tree.dict()) check_rows(child, batch, index, rows, k);
    } else if (tree.is_list()) {
      for (const Tree& child : tree.list()) check_rows(child, batch, index, rows, k);
    }
  }
  void check_count(int64_t count, const std::string& what, const Tree& batch, int64_t index, int64_t& rows,
                   size_t k) {
    if (rows >= 0 && count != rows) {
      throw_error<ShapeError>(
          "unbatch: expected every tensor to have the same first dimension. Received: {} at {} in input "
          "element {}, where the first tensor has {} rows",
          what, leaf_paths(batch)[k], index, rows);
    }
    rows = count;
  }
  // Row `row` of `tree`: tensors' row views, and ragged_[r++]'s row for each RaggedTensor.
  Tree row_of(const Tree& tree, int64_t row, size_t& r) const {
    if (RaggedTensor::is_ragged(tree)) return Tree(ragged_[r++].row(row));
    if (tree.is_tensor()) return Tree(row_view(tree.tensor(), row));
    if (tree.is_dict()) {
      Tree::Dict out;
      for (const auto& [key, child] : tree.dict()) out.emplace_hint(out.end(), key, row_of(child, row, r));
      return Tree(std::move(out));
    }
    if (tree.is_list()) {
      Tree::List out;
      for (const Tree& child : tree.list()) out.push_back(row_of(child, row, r));
      return Tree(std::move(out));
    }
    return Tree();
  }

  std::shared_ptr<const UnbatchDataset> ds_;
  int64_t epoch_;
  std::unique_ptr<IteratorImpl> input_;
  std::vector<RaggedTensor> ragged_;  // batch_'s RaggedTensors, in flatten order
  Tree batch_;          // the input element being sliced
  int64_t rows_ = 0;    // its first dimension
  int64_t row_ = 0;     // the next row to return
  int64_t batches_ = 0;  // input elements read
};

std::unique_ptr<IteratorImpl> UnbatchDataset::make_iterator(int64_t epoch) const {
  return std::make_unique<UnbatchIterator>(shared_self(this), epoch);
}

}  // namespace

DatasetPtr make_batch_dataset(DatasetPtr input, int64_t batch_size, bool drop_remainder) {
  return std::make_shared<BatchDataset>(std::move(input), batch_size, drop_remainder);
}

DatasetPtr make_padded_batch_dataset(DatasetPtr input, int64_t batch_size, PaddedBatchOptions options) {
  return std::make_shared<PaddedBatchDataset>(std::move(input), batch_size, std::move(options));
}

DatasetPtr make_unbatch_dataset(DatasetPtr input) { return std::make_shared<UnbatchDataset>(std::move(input)); }

}  // namespace chorus::data
