// A Dataset of the lines of text files (tf.data.TextLineDataset): each line is a scalar
// string tensor, which the text/ tokenizers turn into token ids. Stateless functions;
// thread-safe.
//
//   auto lines = text_line_dataset({"wiki.train.tokens"});
//   for (auto it = lines.iterator(); auto line = it.next();) use(line->tensor().string_at(0));
#pragma once

#include <string>
#include <vector>

#include "chorus/core/tensor.h"
#include "chorus/data/dataset.h"

namespace chorus::data {

// One element per line of `files`, file after file: a scalar string tensor holding the
// line without its ending ("\n" or "\r\n"); an empty line is "" and a last line without
// an ending still counts. A line that is not valid UTF-8 is an IOError from next()
// naming file:line and the byte ("text_line_dataset: a.txt:3: invalid UTF-8 at byte 5
// of the line (byte 0xff)"): tf.data passes such bytes through, but every consumer of
// text here (tokenizers, Unicode normalisation) needs valid UTF-8, and the line number is
// only known here. The files are read lazily, a buffer at a
// time, on each pass; cardinality() is unknown (as in tf.data). Restoring an iterator's
// position re-reads the lines before it in its file; a position of another file list
// (another worker's share under FILE sharding, auto_shard.h) is a ValueError naming
// both files. The stage reports its files, so shard_by_file can give each worker some.
// Throws ValueError for an empty list and IOError when a file cannot be opened (checked
// here, so a typo fails before training starts).
Dataset text_line_dataset(const std::vector<std::string>& files);

}  // namespace chorus::data
