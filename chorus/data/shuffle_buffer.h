// ShuffleBuffer: the slots of a shuffle stage. Small elements of one fixed layout (the
// common case: a record of scalars, as MovieLens ratings) are packed as raw bytes in one
// arena, so a buffer of 100,000 elements is a few MB instead of 100,000 trees of heap
// nodes; that keeps a full-dataset shuffle in cache. An element that does not fit the
// layout (or holds a string leaf) turns the buffer into a plain vector of trees. Elements taken from a packed
// buffer are fresh tensors (views into a shared output chunk), not the input's views; a
// whole in-memory array goes in and comes out as stacked rows (push_rows, put_rows,
// take_rows), with no tree per element. Internal to chorus/data; one thread.
#pragma once

#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "chorus/core/tree.h"

namespace chorus::data {

class ShuffleBuffer {
 public:
  // Elements whose leaves total more bytes than this are kept as trees: packing them
  // would copy large data that views would share.
  static constexpr size_t kMaxPackedBytes = 256;

  int64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Whether the slots are packed bytes (small elements of one layout), not trees.
  bool packed() const { return packed_; }

  // Appends an element as a new last slot.
  void push_back(Tree element);
  // Appends each row of `rows` (every leaf stacked along a new first axis, as
  // IteratorImpl::next_rows gives them) as a new last slot, in order.
  void push_rows(const Tree& rows);
  // Stores row r of `rows` (stacked as push_rows takes them) in slot s, for each (r, s)
  // of `placements`. REQUIRES: every s < size().
  void put_rows(const Tree& rows, std::span<const std::pair<int64_t, size_t>> placements);
  // Takes up to `n` elements stacked along a new first axis, one after another as take()
  // and move_last_to() would: element i is the slot draw(size()) names, whose place the
  // last slot then takes. nullopt when empty. REQUIRES: packed().
  template <class Draw>
  std::optional<Tree> take_rows(int64_t n, Draw&& draw) {
    if (size_ == 0) return std::nullopt;
    std::vector<Tensor> columns = make_columns(std::min(n, size_));
    const int64_t count = columns[0].dim(0);
    for (int64_t row = 0; row < count; ++row) {
      const int64_t slot = draw(size_);
      copy_slot_to_row(slot, columns, row);
      move_last_to(slot);
    }
    return stacked(columns);
  }
  // Makes `n` slots whose contents are unset until put() (for restoring).
  void resize(int64_t n);
  // Stores `element` in slot `slot`, replacing what was there. REQUIRES: slot < size().
  void put(int64_t slot, Tree element);
  // Returns the element in slot `slot` (leaving the slot unset). REQUIRES: slot < size().
  Tree take(int64_t slot);
  // Moves the last slot into `slot` and drops the last slot. REQUIRES: slot < size().
  void move_last_to(int64_t slot);
  void clear();

 private:
  struct Leaf {
    Shape shape;
    DType dtype;
    size_t offset;  // within a slot
    size_t nbytes;
  };

  // Decides the packed layout from the first element (or stays with trees).
  void choose_layout(const Tree& element);
  // Whether `element` has the packed layout; fills leaves_scratch_.
  bool fits(const Tree& element);
  void pack(int64_t slot, const Tree& element);  // REQUIRES: fits(element) just returned true
  Tree unpack(int64_t slot);
  // Packed mode: empty stacked leaves of `rows` rows; a slot copied into row `row` of
  // them; them as a tree of the layout's structure.
  std::vector<Tensor> make_columns(int64_t rows) const;
  void copy_slot_to_row(int64_t slot, const std::vector<Tensor>& columns, int64_t row);
  Tree stacked(const std::vector<Tensor>& columns) const;
  // Turns every slot into a tree, for an element that does not fit the layout.
  void unpack_all();
  std::byte* slot_bytes(int64_t slot) { return arena_.data() + static_cast<size_t>(slot) * slot_size_; }

  bool layout_chosen_ = false;
  bool packed_ = false;
  int64_t size_ = 0;
  // Tree mode.
  std::vector<Tree> trees_;
  // Packed mode: the layout (structure + leaves), the arena, and the chunk that taken
  // elements' tensors view (a new chunk when it is full).
  Tree structure_;
  std::vector<Leaf> leaves_;
  size_t slot_size_ = 0;
  std::vector<std::byte> arena_;
  std::shared_ptr<Storage> chunk_;
  size_t chunk_used_ = 0;
  std::vector<const Tensor*> leaves_scratch_;
};

}  // namespace chorus::data
