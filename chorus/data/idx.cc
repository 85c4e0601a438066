// IDX layout (every integer big-endian):
//   bytes 0-1   0x00 0x00
//   byte  2     element type: 0x08 ubyte, 0x09 sbyte, 0x0B int16, 0x0C int32,
//               0x0D float32, 0x0E float64
//   byte  3     rank r (chorus reads 1..kMaxRank)
//   bytes 4..   r dimension sizes, uint32 each
//   then        prod(dims) elements of the type, row-major, each big-endian
// The whole file may be gzipped (one or more gzip members).
#include "chorus/data/idx.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include <libdeflate.h>
#include <zlib.h>

#include "chorus/data/line_reader.h"

namespace chorus::data {
namespace {

struct IdxType {
  uint8_t code;
  const char* name;
  size_t size;
  bool floating;
};

constexpr IdxType kTypes[] = {{0x08, "ubyte", 1, false}, {0x09, "sbyte", 1, false}, {0x0B, "int16", 2, false},
                              {0x0C, "int32", 4, false}, {0x0D, "float32", 4, true}, {0x0E, "float64", 8, true}};

const IdxType* find_type(uint8_t code) {
  for (const IdxType& type : kTypes) {
    if (type.code == code) return &type;
  }
  return nullptr;
}

// Bytes of a file, decompressed if it is gzipped. read() fills `n` bytes unless the
// data ends first.
class Source {
 public:
  virtual ~Source() = default;
  virtual size_t read(uint8_t* dst, size_t n) = 0;
  // More bytes than this cannot remain: refuses absurd dimensions before allocating.
  virtual uint64_t max_remaining() const = 0;
  // Whether max_remaining() is exact (a plain file) rather than a bound (gzip).
  virtual bool exact() const = 0;
  // The bytes not yet read as a uint8 tensor without copying them, where the source holds
  // them in memory; else nullopt.
  virtual std::optional<Tensor> take_rest() { return std::nullopt; }
};

class RawSource final : public Source {
 public:
  RawSource(const std::string& path, uint64_t size) : file_(std::fopen(path.c_str(), "rb"), &std::fclose), size_(size) {
    if (!file_) throw_error<IOError>("{}: cannot open: {}", path, std::strerror(errno));
  }
  size_t read(uint8_t* dst, size_t n) override {
    const size_t got = std::fread(dst, 1, n, file_.get());
    consumed_ += got;
    return got;
  }
  uint64_t max_remaining() const override { return size_ - consumed_; }
  bool exact() const override { return true; }

 private:
  std::unique_ptr<std::FILE, decltype(&std::fclose)> file_;
  uint64_t size_;
  uint64_t consumed_ = 0;
};

class GzipSource final : public Source {
 public:
  GzipSource(std::string path, std::string compressed) : path_(std::move(path)), compressed_(std::move(compressed)) {
    if (inflateInit2(&stream_, 15 + 16) != Z_OK) throw_error<IOError>("{}: cannot start zlib", path_);
  }
  ~GzipSource() override { inflateEnd(&stream_); }
  GzipSource(const GzipSource&) = delete;
  GzipSource& operator=(const GzipSource&) = delete;

  size_t read(uint8_t* dst, size_t n) override;
  // Deflate expands at most 1032:1.
  uint64_t max_remaining() const override { return (compressed_.size() - in_offset()) * 1032 + 65536; }
  bool exact() const override { return false; }

 private:
  uint64_t in_offset() const { return fed_ - stream_.avail_in; }
  bool start_next_member();

  std::string path_;
  std::string compressed_;
  z_stream stream_{};
  uint64_t fed_ = 0;  // compressed bytes handed to zlib so far
  bool member_ended_ = false;
};

size_t GzipSource::read(uint8_t* dst, size_t n) {
  stream_.next_out = dst;
  stream_.avail_out = static_cast<uInt>(n);  // callers read in chunks far below 4 GiB
  while (stream_.avail_out > 0) {
    if (member_ended_ && !start_next_member()) break;
    if (stream_.avail_in == 0 && fed_ < compressed_.size()) {
      const uint64_t chunk = std::min<uint64_t>(compressed_.size() - fed_, 1u << 30);
      stream_.next_in = reinterpret_cast<Bytef*>(compressed_.data() + fed_);
      stream_.avail_in = static_cast<uInt>(chunk);
      fed_ += chunk;
    }
    const int status = inflate(&stream_, Z_NO_FLUSH);
    if (status == Z_STREAM_END) {
      member_ended_ = true;
    } else if (status == Z_BUF_ERROR && stream_.avail_in == 0) {
      break;  // the compressed data ends inside a member: a truncated file
    } else if (status != Z_OK) {
      throw_error<IOError>("{}: corrupt gzip data at compressed byte {}: {}", path_, in_offset(),
                           stream_.msg != nullptr ? stream_.msg : zError(status));
    }
  }
  return n - stream_.avail_out;
}

// After one gzip member ends: true if another follows (concatenated .gz files).
bool GzipSource::start_next_member() {
  const uint64_t offset = in_offset();
  if (offset == compressed_.size()) return false;
  const auto* next = reinterpret_cast<const uint8_t*>(compressed_.data() + offset);
  if (compressed_.size() - offset < 2 || next[0] != 0x1f || next[1] != 0x8b) {
    throw_error<IOError>("{}: expected another gzip member or the end of the file, found other data at byte {}",
                         path_, offset);
  }
  inflateReset(&stream_);
  member_ended_ = false;
  return true;
}

// A gzip file inflated whole, in memory.
class InflatedSource final : public Source {
 public:
  explicit InflatedSource(Tensor bytes) : bytes_(std::move(bytes)) {}
  size_t read(uint8_t* dst, size_t n) override {
    n = static_cast<size_t>(std::min<uint64_t>(n, max_remaining()));
    std::memcpy(dst, bytes_.data<uint8_t>() + consumed_, n);
    consumed_ += n;
    return n;
  }
  uint64_t max_remaining() const override { return static_cast<uint64_t>(bytes_.numel()) - consumed_; }
  bool exact() const override { return true; }
  std::optional<Tensor> take_rest() override {
    Tensor rest = bytes_.first_axis_slice(static_cast<int64_t>(consumed_), bytes_.numel());
    consumed_ = static_cast<uint64_t>(bytes_.numel());
    return rest;
  }

 private:
  Tensor bytes_;  // uint8, 1-D
  uint64_t consumed_ = 0;
};

// `compressed` inflated by libdeflate (about 3x zlib's speed) into one buffer sized by
// the ISIZE field that ends the file; nullopt where libdeflate cannot do it in one call
// (a corrupt or truncated file, several members, 4 GiB or more of data): the zlib reader
// then reads the file and names what is wrong.
std::optional<Tensor> inflate_whole(const std::string& compressed) {
  if (compressed.size() < 18) return std::nullopt;  // a gzip header and trailer
  const auto* end = reinterpret_cast<const uint8_t*>(compressed.data() + compressed.size());
  const uint32_t isize = uint32_t{end[-4]} | (uint32_t{end[-3]} << 8) | (uint32_t{end[-2]} << 16) |
                         (uint32_t{end[-1]} << 24);
  if (isize > compressed.size() * uint64_t{1032}) return std::nullopt;  // deflate expands at most 1032:1
  std::unique_ptr<libdeflate_decompressor, decltype(&libdeflate_free_decompressor)> inflater(
      libdeflate_alloc_decompressor(), &libdeflate_free_decompressor);
  if (inflater == nullptr) return std::nullopt;
  Tensor out = Tensor::empty(Shape{static_cast<int64_t>(isize)}, kUInt8);
  size_t in_used = 0, out_used = 0;
  const libdeflate_result result = libdeflate_gzip_decompress_ex(
      inflater.get(), compressed.data(), compressed.size(), out.data<uint8_t>(), isize, &in_used, &out_used);
  if (result != LIBDEFLATE_SUCCESS || in_used != compressed.size() || out_used != isize) return std::nullopt;
  return out;
}

std::unique_ptr<Source> open_source(const std::string& path) {
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) throw_error<IOError>("{}: cannot open: {}", path, ec.message());
  uint8_t magic[2] = {0, 0};
  {
    RawSource probe(path, size);
    probe.read(magic, 2);
  }
  if (magic[0] == 0x1f && magic[1] == 0x8b) {
    std::string compressed = read_file(path);
    if (std::optional<Tensor> bytes = inflate_whole(compressed)) return std::make_unique<InflatedSource>(*std::move(bytes));
    return std::make_unique<GzipSource>(path, std::move(compressed));
  }
  return std::make_unique<RawSource>(path, size);
}

uint32_t load_be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// One big-endian element of type S (the C++ type of the IDX type code) at p.
template <class S>
S load_element(const uint8_t* p) {
  if constexpr (std::is_same_v<S, uint8_t> || std::is_same_v<S, int8_t>) {
    return static_cast<S>(*p);
  } else if constexpr (std::is_same_v<S, int16_t>) {
    return static_cast<int16_t>((p[0] << 8) | p[1]);
  } else if constexpr (std::is_same_v<S, int32_t>) {
    return static_cast<int32_t>(load_be32(p));
  } else if constexpr (std::is_same_v<S, float>) {
    return std::bit_cast<float>(load_be32(p));
  } else {
    return std::bit_cast<double>((uint64_t{load_be32(p)} << 32) | load_be32(p + 4));
  }
}

template <class S, class D>
void convert(const uint8_t* src, D* dst, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    const S value = load_element<S>(src + i * sizeof(S));
    if constexpr (std::is_same_v<D, bfloat16>) {
      dst[i] = bfloat16(static_cast<float>(value));
    } else {
      dst[i] = static_cast<D>(value);
    }
  }
}

template <class Fn>
void with_source_type(uint8_t code, Fn&& fn) {
  switch (code) {
    case 0x08: return fn(uint8_t{});
    case 0x09: return fn(int8_t{});
    case 0x0B: return fn(int16_t{});
    case 0x0C: return fn(int32_t{});
    case 0x0D: return fn(float{});
    default: return fn(double{});
  }
}

struct Header {
  const IdxType* type = nullptr;
  Shape shape;
  uint64_t data_bytes = 0;
};

Header read_header(Source& source, const std::string& path) {
  uint8_t magic[4];
  const size_t got = source.read(magic, 4);
  if (got < 4) {
    throw_error<IOError>("{}: expected a 4-byte IDX header, found {} bytes (file truncated?)", path, got);
  }
  Header header;
  header.type = find_type(magic[2]);
  if (magic[0] != 0 || magic[1] != 0 || header.type == nullptr) {
    throw_error<IOError>("{}: expected IDX magic 0x0000 and a known type code, found 0x{:08x} at byte 0", path,
                         load_be32(magic));
  }
  const int rank = magic[3];
  if (rank < 1 || rank > kMaxRank) {
    throw_error<IOError>("{}: expected an IDX rank from 1 to {}, found {} at byte 3", path, kMaxRank, rank);
  }
  uint8_t dims[4 * kMaxRank];
  const size_t dims_got = source.read(dims, 4 * static_cast<size_t>(rank));
  if (dims_got < 4 * static_cast<size_t>(rank)) {
    throw_error<IOError>("{}: expected {} dimension sizes (4 bytes each) after the magic number, found {} bytes "
                         "(file truncated?)",
                         path, rank, dims_got);
  }
  uint64_t elements = 1;
  for (int i = 0; i < rank; ++i) {
    const uint32_t dim = load_be32(dims + 4 * i);
    header.shape.push_back(dim);
    if (__builtin_mul_overflow(elements, uint64_t{dim}, &elements) || elements > (uint64_t{1} << 56)) {
      throw_error<IOError>("{}: IDX dimensions {} are too large", path, header.shape.to_string());
    }
  }
  header.data_bytes = elements * header.type->size;
  return header;
}

[[noreturn]] void throw_short(const std::string& path, uint64_t expected, uint64_t found, const Shape& shape) {
  throw_error<IOError>("{}: expected {} bytes of data after the header (dims {}), found {} (file truncated?)", path,
                       expected, shape.to_string(), found);
}

constexpr size_t kChunk = 1 << 20;  // bytes; a multiple of every element size

// ubyte data read as uint8: the bytes go straight from the file (or from zlib) into the
// tensor's buffer, with no chunk and no per-element pass.
void read_bytes(Source& source, const Header& header, uint8_t* out, const std::string& path) {
  uint64_t done = 0;
  while (done < header.data_bytes) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(uint64_t{1} << 30, header.data_bytes - done));
    const size_t got = source.read(out + done, want);
    done += got;
    if (got < want) throw_short(path, header.data_bytes, done, header.shape);
  }
}

// Throws IOError if `source` holds bytes after the data.
void check_end(Source& source, const Header& header, const std::string& path) {
  std::vector<uint8_t> chunk(kChunk);
  uint64_t extra = source.read(chunk.data(), kChunk);
  if (extra == 0) return;
  while (size_t more = source.read(chunk.data(), kChunk)) extra += more;
  throw_error<IOError>("{}: expected {} bytes of data after the header (dims {}), found {} (the dimensions do not "
                       "match the file size)",
                       path, header.data_bytes, header.shape.to_string(), header.data_bytes + extra);
}

// Decodes the data into `out`, one chunk at a time (the chunk stays in cache between
// the read and the conversion).
template <class D>
void decode(Source& source, const Header& header, D* out, const std::string& path) {
  if constexpr (std::is_same_v<D, uint8_t>) {
    if (header.type->code == 0x08) return read_bytes(source, header, out, path);
  }
  std::vector<uint8_t> chunk(kChunk);
  const size_t size = header.type->size;
  uint64_t done = 0;
  with_source_type(header.type->code, [&](auto s) {
    using S = decltype(s);
    while (done < header.data_bytes) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, header.data_bytes - done));
      const size_t got = source.read(chunk.data(), want);
      convert<S>(chunk.data(), out + done / size, got / size);
      done += got;
      if (got < want) throw_short(path, header.data_bytes, done, header.shape);
    }
  });
}

DType natural_dtype(const IdxType& type) { return type.floating ? kFloat32 : type.code == 0x08 ? kUInt8 : kInt32; }

// Throws DTypeError unless IDX data of `type` reads as `dtype` with every value kept.
void check_readable_as(const IdxType& type, DType dtype, const std::string& path) {
  const char* expected = type.floating      ? "float32 or bfloat16"
                         : type.code == 0x08 ? "a numeric dtype"
                                             : "float32, bfloat16, int32 or int64";
  const bool ok = type.floating ? is_floating(dtype) : dtype != kBool && (dtype != kUInt8 || type.code == 0x08);
  if (!ok) {
    throw_error<DTypeError>("read_idx: {}: cannot read IDX {} data as {} (expected {})", path, type.name,
                            dtype_name(dtype), expected);
  }
}

Tensor read(const std::string& path, std::optional<DType> requested) {
  std::unique_ptr<Source> source = open_source(path);
  const Header header = read_header(*source, path);
  const DType dtype = requested.value_or(natural_dtype(*header.type));
  check_readable_as(*header.type, dtype, path);
  if (header.data_bytes > source->max_remaining()) {
    if (source->exact()) throw_short(path, header.data_bytes, source->max_remaining(), header.shape);
    throw_error<IOError>("{}: expected {} bytes of data after the header (dims {}), more than the rest of this gzip "
                         "file can hold (file truncated?)",
                         path, header.data_bytes, header.shape.to_string());
  }
  if (dtype == kUInt8 && header.type->code == 0x08 && source->exact() &&
      source->max_remaining() == header.data_bytes) {
    if (std::optional<Tensor> bytes = source->take_rest()) return bytes->view(header.shape);  // no copy
  }
  Tensor out = Tensor::empty(header.shape, dtype);
  visit_dtype(dtype, [&](auto d) {
    using D = decltype(d);
    if constexpr (!std::is_same_v<D, bool>) decode<D>(*source, header, out.data<D>(), path);
  });
  check_end(*source, header, path);
  return out;
}

}  // namespace

Tensor read_idx(const std::string& path) { return read(path, std::nullopt); }

Tensor read_idx(const std::string& path, DType dtype) { return read(path, dtype); }

}  // namespace chorus::data
