// ShuffleBuffer: the slots of a shuffle stage. Small elements of one fixed layout (the
// common case: a record of scalars, as MovieLens ratings) are packed as raw bytes in one
// arena, so a buffer of 100,000 elements is a few MB instead of 100,000 trees of heap
// nodes; that keeps a full-dataset shuffle in cache. An element that does not fit the
// layout (or holds a string leaf) turns the buffer into a plain vector of trees. Elements taken from a packed
// buffer are fresh tensors (views into a shared output chunk), not the input's views.
// Internal to chorus/data; one thread.
#pragma once

#include <cstddef>
#include <cstdint>
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

  // Appends an element as a new last slot.
  void push_back(Tree element);
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
