#include "chorus/data/shuffle_buffer.h"

#include <cstring>

#include "chorus/data/dataset_impl.h"

namespace chorus::data {
namespace {

// Bytes of output chunk per allocation: taken elements' tensors are views into it, so one
// Storage serves many elements (it is freed when the last of them is).
constexpr size_t kChunkBytes = 16 * 1024;

size_t align_up(size_t n, size_t alignment) { return (n + alignment - 1) / alignment * alignment; }

}  // namespace

void ShuffleBuffer::choose_layout(const Tree& element) {
  layout_chosen_ = true;
  leaves_.clear();
  size_t offset = 0;
  bool ok = true;
  for_each_leaf(element, [&](const Tensor& leaf) {
    if (!leaf.defined() || leaf.dtype() == kString) {  // strings are objects, not bytes to pack
      ok = false;
      return;
    }
    const size_t size = dtype_size(leaf.dtype());
    offset = align_up(offset, size);
    leaves_.push_back({leaf.shape(), leaf.dtype(), offset, leaf.nbytes()});
    offset += leaf.nbytes();
  });
  slot_size_ = align_up(std::max<size_t>(offset, 1), 8);
  packed_ = ok && !leaves_.empty() && offset <= kMaxPackedBytes;
  if (packed_) structure_ = element;
}

bool ShuffleBuffer::fits(const Tree& element) {
  leaves_scratch_.clear();
  if (!collect_leaves_like(element, structure_, leaves_scratch_)) return false;
  for (size_t k = 0; k < leaves_.size(); ++k) {
    const Tensor& leaf = *leaves_scratch_[k];
    if (!leaf.defined() || leaf.dtype() != leaves_[k].dtype || leaf.shape() != leaves_[k].shape) return false;
  }
  return true;
}

void ShuffleBuffer::pack(int64_t slot, const Tree&) {
  std::byte* out = slot_bytes(slot);
  for (size_t k = 0; k < leaves_.size(); ++k) {
    std::memcpy(out + leaves_[k].offset, leaves_scratch_[k]->raw_data(), leaves_[k].nbytes);
  }
}

Tree ShuffleBuffer::unpack(int64_t slot) {
  if (!chunk_ || chunk_used_ + slot_size_ > chunk_->nbytes()) {
    chunk_ = Storage::allocate(std::max(kChunkBytes, slot_size_), Device::cpu());
    chunk_used_ = 0;
  }
  const size_t base = chunk_used_;
  std::memcpy(static_cast<std::byte*>(chunk_->data()) + base, slot_bytes(slot), slot_size_);
  chunk_used_ += slot_size_;
  return transform_leaves(structure_, [&](size_t k, const Tensor&) {
    auto impl = std::make_shared<TensorImpl>();
    impl->storage = chunk_;
    impl->offset = base + leaves_[k].offset;
    impl->shape = leaves_[k].shape;
    impl->dtype = leaves_[k].dtype;
    return Tensor(std::move(impl));
  });
}

void ShuffleBuffer::unpack_all() {
  trees_.clear();
  trees_.reserve(static_cast<size_t>(size_));
  for (int64_t s = 0; s < size_; ++s) trees_.push_back(unpack(s));
  packed_ = false;
  arena_.clear();
  arena_.shrink_to_fit();
}

void ShuffleBuffer::push_back(Tree element) {
  if (!layout_chosen_) choose_layout(element);
  if (packed_ && !fits(element)) unpack_all();
  ++size_;
  if (packed_) {
    arena_.resize(static_cast<size_t>(size_) * slot_size_);
    pack(size_ - 1, element);
  } else {
    trees_.push_back(std::move(element));
  }
}

void ShuffleBuffer::push_rows(const Tree& rows) {
  const std::vector<Tensor> columns = rows.flatten();
  const int64_t n = columns.empty() ? 0 : columns[0].dim(0);
  auto row = [&](int64_t r) { return transform_leaves(rows, [r](size_t, const Tensor& c) { return row_view(c, r); }); };
  if (n == 0) return;
  push_back(row(0));  // chooses the layout, or finds row 0 fits it
  if (!packed_) {  // trees: one by one
    for (int64_t r = 1; r < n; ++r) push_back(row(r));
    return;
  }
  // Every row has row 0's layout (the leaves are stacked), and tensors are contiguous:
  // each leaf's rows are back to back.
  const int64_t first = size_;
  size_ += n - 1;
  arena_.resize(static_cast<size_t>(size_) * slot_size_);
  for (size_t k = 0; k < leaves_.size(); ++k) {
    const auto* in = static_cast<const std::byte*>(columns[k].raw_data()) + leaves_[k].nbytes;
    for (int64_t r = 1; r < n; ++r, in += leaves_[k].nbytes) {
      std::memcpy(slot_bytes(first + r - 1) + leaves_[k].offset, in, leaves_[k].nbytes);
    }
  }
}

void ShuffleBuffer::put_rows(const Tree& rows, std::span<const std::pair<int64_t, size_t>> placements) {
  const std::vector<Tensor> columns = rows.flatten();
  auto row = [&](int64_t r) { return transform_leaves(rows, [r](size_t, const Tensor& c) { return row_view(c, r); }); };
  for (size_t i = 0; i < placements.size(); ++i) {
    const auto [r, slot] = placements[i];
    if (i == 0 || !packed_) {  // the first chooses the layout (or finds it fits)
      put(static_cast<int64_t>(slot), row(r));
      continue;
    }
    for (size_t k = 0; k < leaves_.size(); ++k) {
      std::memcpy(slot_bytes(static_cast<int64_t>(slot)) + leaves_[k].offset,
                  static_cast<const std::byte*>(columns[k].raw_data()) + static_cast<size_t>(r) * leaves_[k].nbytes,
                  leaves_[k].nbytes);
    }
  }
}

std::vector<Tensor> ShuffleBuffer::make_columns(int64_t rows) const {
  std::vector<Tensor> columns;
  for (const Leaf& leaf : leaves_) {
    Shape shape{rows};
    for (int64_t d : leaf.shape.dims()) shape.push_back(d);
    columns.push_back(Tensor::empty(shape, leaf.dtype));
  }
  return columns;
}

void ShuffleBuffer::copy_slot_to_row(int64_t slot, const std::vector<Tensor>& columns, int64_t row) {
  const std::byte* in = slot_bytes(slot);
  for (size_t k = 0; k < leaves_.size(); ++k) {
    std::memcpy(static_cast<std::byte*>(columns[k].raw_data()) + static_cast<size_t>(row) * leaves_[k].nbytes,
                in + leaves_[k].offset, leaves_[k].nbytes);
  }
}

Tree ShuffleBuffer::stacked(const std::vector<Tensor>& columns) const {
  return transform_leaves(structure_, [&](size_t k, const Tensor&) { return columns[k]; });
}

void ShuffleBuffer::resize(int64_t n) {
  size_ = n;
  if (packed_) {
    arena_.resize(static_cast<size_t>(n) * slot_size_);
  } else {
    trees_.resize(static_cast<size_t>(n));
  }
}

void ShuffleBuffer::put(int64_t slot, Tree element) {
  if (!layout_chosen_) {
    choose_layout(element);
    if (packed_) {
      trees_.clear();
      arena_.resize(static_cast<size_t>(size_) * slot_size_);
    }
  }
  if (packed_ && !fits(element)) unpack_all();
  if (packed_) {
    pack(slot, element);
  } else {
    trees_[static_cast<size_t>(slot)] = std::move(element);
  }
}

Tree ShuffleBuffer::take(int64_t slot) {
  if (packed_) return unpack(slot);
  return std::move(trees_[static_cast<size_t>(slot)]);
}

void ShuffleBuffer::move_last_to(int64_t slot) {
  if (slot != size_ - 1) {
    if (packed_) {
      std::memcpy(slot_bytes(slot), slot_bytes(size_ - 1), slot_size_);
    } else {
      trees_[static_cast<size_t>(slot)] = std::move(trees_.back());
    }
  }
  --size_;
  if (packed_) {
    arena_.resize(static_cast<size_t>(size_) * slot_size_);
  } else {
    trees_.pop_back();
  }
}

void ShuffleBuffer::clear() { *this = ShuffleBuffer(); }

}  // namespace chorus::data
