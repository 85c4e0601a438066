// Copy kernels: move elements between contiguous row-major arrays (or tensors) without
// looking at them, so every dtype goes through them by element size (1, 2, 4 or 8 bytes).
// Used by the shape ops (transpose, concatenate, stack, split, slice) and the sharded
// ops' redistributions. Threaded for big arrays through parallel_for; thread-safe as long
// as destinations do not overlap sources.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "chorus/core/shape.h"
#include "chorus/core/tensor.h"

namespace chorus::backend::cpu {

// Copies the box of extent `block` that starts at `src_start` in `src` (a contiguous
// array of shape `src_shape`) into `dst` (a contiguous array of shape `dst_shape`) at
// `dst_start`. Runs of the box that are contiguous in both arrays are merged into one
// memcpy, so concatenating or splitting along axis 0 is a single copy per part.
// REQUIRES: equal ranks; start + block <= shape on every axis of both arrays;
// elem_size in {1, 2, 4, 8}; src and dst do not overlap.
void copy_block(const void* src, const Shape& src_shape, std::span<const int64_t> src_start, void* dst,
                const Shape& dst_shape, std::span<const int64_t> dst_start, const Shape& block, size_t elem_size);

// copy_block on tensors. A fresh tensor of x's dtype and device holding the block of x
// that starts at `start` with extent `block` (no gradient is recorded)...
Tensor extract_block(const Tensor& x, std::span<const int64_t> start, const Shape& block);
// ...and all of `part` copied into `dst` at `start`, part read as having shape
// `as_shape` (same elements: lets stack write a (2, 3) tensor as a (2, 1, 3) block).
// REQUIRES: the block fits; equal dtypes; part does not overlap dst.
void insert_block(const Tensor& dst, std::span<const int64_t> start, const Tensor& part, const Shape& as_shape);

// dst = src with its axes permuted: axis d of dst is axis perm[d] of src (NumPy's
// transpose). Axes that stay in order are merged first; what remains is a copy of
// contiguous rows, or a batch of 2-D transposes done in cache-sized tiles.
// REQUIRES: perm is a permutation of [0, src_shape.rank()); elem_size in {1, 2, 4, 8};
// dst holds src_shape.numel() elements and does not overlap src.
void permute(const void* src, const Shape& src_shape, std::span<const int> perm, void* dst, size_t elem_size);

// dst[i * dst_ld + j] = src[j * src_ld + i] for i < rows, j < cols: the tiled 2-D
// transpose that permute() is built on (exposed for tests and benchmarks). Single-threaded.
// REQUIRES: elem_size in {1, 2, 4, 8}; no overlap.
void transpose_2d(const void* src, int64_t src_ld, void* dst, int64_t dst_ld, int64_t rows, int64_t cols,
                  size_t elem_size);

}  // namespace chorus::backend::cpu
