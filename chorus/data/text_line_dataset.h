// A Dataset of the lines of text files (tf.data.TextLineDataset). chorus has no string
// dtype, so a line is a 1-D int32 tensor of its UTF-8 bytes (values 0-255); the text/
// tokenizers turn those into token ids. Stateless functions; thread-safe.
//
//   auto lines = text_line_dataset({"wiki.train.tokens"});
//   for (auto it = lines.iterator(); auto line = it.next();) use(bytes_to_string(line->tensor()));
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "chorus/core/tensor.h"
#include "chorus/data/dataset.h"

namespace chorus::data {

// One element per line of `files`, file after file: a (length,) int32 tensor of the
// line's bytes without its ending ("\n" or "\r\n"); an empty line is a (0,) tensor and
// a last line without an ending still counts. The files are read lazily, a buffer at a
// time, on each pass; cardinality() is unknown (as in tf.data). Restoring an iterator's
// position re-reads the lines before it in its file; a position of another file list
// (another worker's share under FILE sharding, auto_shard.h) is a ValueError naming
// both files. The stage reports its files, so shard_by_file can give each worker some.
// Throws ValueError for an empty list and IOError when a file cannot be opened (checked
// here, so a typo fails before training starts).
Dataset text_line_dataset(const std::vector<std::string>& files);

// The bytes of `text` as a (size,) int32 tensor with values 0-255: a line as
// text_line_dataset yields it.
Tensor string_to_bytes(std::string_view text);

// The inverse: the bytes of a 1-D int32 tensor of values 0-255 as a string. Throws
// DTypeError for another dtype, ShapeError for another rank and ValueError for a value
// outside 0-255.
std::string bytes_to_string(const Tensor& bytes);

}  // namespace chorus::data
