// IDX files (the format of MNIST and Fashion-MNIST), plain or gzipped, read into one
// tensor. Stateless functions; thread-safe.
#pragma once

#include <string>

#include "chorus/core/tensor.h"

namespace chorus::data {

// Reads the IDX file at `path` into a tensor whose shape is the file's dimensions.
// Gzip is detected by content (bytes 1f 8b), not by the file name. ubyte data comes back
// as uint8 (its bytes go straight into the tensor), the other integer data (sbyte, short,
// int) as int32 (chorus has no int8 or int16 dtype), and float data (float, double) as
// float32 (a double file is rounded).
//   read_idx("train-labels-idx1-ubyte.gz")  // (60000,) uint8, values 0-9
// Throws IOError naming the file and the byte offset on a wrong magic number
// ("expected IDX magic 0x0000 and a known type code, found 0x1f8b0803 at byte 0"), an
// unsupported rank, a file shorter than its dimensions say ("expected 47040000 bytes of
// data after the header (dims (60000, 28, 28)), found 1000 (file truncated?)"), a longer
// one, or corrupt gzip data.
Tensor read_idx(const std::string& path);

// The same, converting each element to `dtype` while decoding (MNIST labels straight to
// int32). ubyte data converts to any dtype but bool, other integer data to any but bool
// and uint8, float data to float32 or bfloat16 only (DTypeError otherwise: it would
// truncate or wrap silently).
Tensor read_idx(const std::string& path, DType dtype);

}  // namespace chorus::data
