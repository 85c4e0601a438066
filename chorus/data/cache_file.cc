// Cache file format (version 3). Integers are little-endian (the byte order of every
// machine chorus runs on); numeric tensor data is the tensors' raw row-major bytes.
//
//   header:
//     8 bytes   magic "CHRSCACH"
//     u32       version (3; version 1 files, which cannot hold strings, and version 2
//               files, which cannot hold uint8, still read)
//     u32       L: length of the pipeline description
//     L bytes   pipeline description (DatasetImpl::describe() of the cached input, UTF-8)
//     i64       the pass (epoch) the elements were recorded from
//   elements, each:
//     u8        0xE1 (element marker)
//     tree      u8 kind, then by kind:
//                 0 empty:  nothing
//                 1 tensor: u8 dtype (chorus::DType value), u8 rank, rank x i64 dims,
//                           then numel * dtype_size bytes of data, or for dtype 5
//                           (string, version >= 2) numel x (u64 length, length bytes)
//                           in row-major order; dtype 6 (uint8) needs version 3
//                 2 dict:   u32 n, then n x (u32 key length, key bytes, tree), keys sorted
//                 3 list:   u32 n, then n x tree
//   trailer (17 bytes, at the very end):
//     u8        0xEE (end marker)
//     i64       number of elements
//     8 bytes   magic "CHRSEND!"
//
// A file is written under a temporary name and renamed into place only after the
// trailer is written and fsync'ed, so a file with the final name is always complete; a
// reader still checks every length against the file size, and reports a truncated or
// corrupt file as an IOError naming the file and byte offset.
#include "chorus/data/cache_file.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "chorus/core/error.h"

namespace chorus::data {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'C', 'H', 'R', 'S', 'C', 'A', 'C', 'H'};
constexpr char kEndMagic[8] = {'C', 'H', 'R', 'S', 'E', 'N', 'D', '!'};
constexpr uint32_t kVersion = 3;

// The last dtype value a file of `version` may hold: strings came in version 2, uint8 in 3.
DType last_dtype(uint32_t version) {
  return version >= 3 ? DType::kUInt8 : version == 2 ? DType::kString : DType::kBool;
}
constexpr uint8_t kElementMarker = 0xE1;
constexpr uint8_t kEndMarker = 0xEE;
constexpr uint64_t kTrailerBytes = 1 + 8 + 8;
constexpr int kMaxDepth = 64;  // nesting a reader accepts; deeper means corruption
constexpr size_t kStdioBuffer = size_t{1} << 20;

enum Kind : uint8_t { kEmpty = 0, kTensor = 1, kDict = 2, kList = 3 };

}  // namespace

// ---- writer ----

CacheFileWriter::CacheFileWriter(std::string path, const std::string& pipeline, int64_t epoch)
    : path_(std::move(path)) {
  static std::atomic<uint64_t> counter{0};
  std::error_code ec;
  const fs::path dir = fs::path(path_).parent_path();
  if (!dir.empty()) fs::create_directories(dir, ec);
  if (ec) throw_error<IOError>("cache: cannot create the directory {}: {}", dir.string(), ec.message());
  temp_path_ = fmt::format("{}.tmp.{}.{}", path_, ::getpid(), counter++);
  file_.reset(std::fopen(temp_path_.c_str(), "wb"));
  if (!file_) throw_error<IOError>("cache: cannot create {}: {}", temp_path_, std::strerror(errno));
  std::setvbuf(file_.get(), nullptr, _IOFBF, kStdioBuffer);
  try {
    put(kMagic, sizeof kMagic);
    put(&kVersion, sizeof kVersion);
    const auto length = static_cast<uint32_t>(pipeline.size());
    put(&length, sizeof length);
    put(pipeline.data(), pipeline.size());
    put(&epoch, sizeof epoch);
  } catch (...) {
    file_.reset();
    std::remove(temp_path_.c_str());
    throw;
  }
}

CacheFileWriter::~CacheFileWriter() {
  if (file_) {
    file_.reset();
    std::remove(temp_path_.c_str());
  }
}

void CacheFileWriter::put(const void* data, size_t size) {
  if (size != 0 && std::fwrite(data, 1, size, file_.get()) != size) {
    throw_error<IOError>("cache: cannot write {}: {}", temp_path_, std::strerror(errno));
  }
}

void CacheFileWriter::put_tree(const Tree& tree) {
  if (tree.is_tensor()) {
    const Tensor& t = tree.tensor();
    const uint8_t header[3] = {kTensor, static_cast<uint8_t>(t.dtype()), static_cast<uint8_t>(t.rank())};
    put(header, sizeof header);
    put(t.shape().dims().data(), sizeof(int64_t) * t.rank());
    if (t.dtype() == kString) {
      for (const std::string& s : t.strings()) {
        const uint64_t length = s.size();
        put(&length, sizeof length);
        put(s.data(), s.size());
      }
    } else {
      put(t.raw_data(), t.nbytes());
    }
  } else if (tree.is_dict()) {
    const uint8_t kind = kDict;
    const auto n = static_cast<uint32_t>(tree.dict().size());
    put(&kind, 1);
    put(&n, sizeof n);
    for (const auto& [key, child] : tree.dict()) {
      const auto length = static_cast<uint32_t>(key.size());
      put(&length, sizeof length);
      put(key.data(), key.size());
      put_tree(child);
    }
  } else if (tree.is_list()) {
    const uint8_t kind = kList;
    const auto n = static_cast<uint32_t>(tree.list().size());
    put(&kind, 1);
    put(&n, sizeof n);
    for (const Tree& child : tree.list()) put_tree(child);
  } else {
    const uint8_t kind = kEmpty;
    put(&kind, 1);
  }
}

void CacheFileWriter::write(const Tree& element) {
  put(&kElementMarker, 1);
  put_tree(element);
  ++count_;
}

void CacheFileWriter::commit() {
  put(&kEndMarker, 1);
  put(&count_, sizeof count_);
  put(kEndMagic, sizeof kEndMagic);
  const bool flushed = std::fflush(file_.get()) == 0 && ::fsync(::fileno(file_.get())) == 0;
  const int error = errno;
  file_.reset();
  if (!flushed || std::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    const std::string reason = std::strerror(flushed ? errno : error);
    std::remove(temp_path_.c_str());
    throw_error<IOError>("cache: cannot write {}: {}", path_, reason);
  }
}

// ---- reader ----

CacheFileReader::CacheFileReader(std::string path, const std::string& pipeline) : path_(std::move(path)) {
  file_.reset(std::fopen(path_.c_str(), "rb"));
  if (!file_) throw_error<IOError>("cache: cannot open {}: {}", path_, std::strerror(errno));
  std::setvbuf(file_.get(), nullptr, _IOFBF, kStdioBuffer);
  std::error_code ec;
  const uint64_t size = fs::file_size(path_, ec);
  if (ec) throw_error<IOError>("cache: cannot stat {}: {}", path_, ec.message());
  elements_end_ = size;  // until the trailer is read, reads are bounded by the file size

  char magic[8];
  get(magic, sizeof magic, "the magic number");
  if (std::memcmp(magic, kMagic, sizeof magic) != 0) corrupt(0, "expected the magic number \"CHRSCACH\"");
  version_ = get_value<uint32_t>("the version");
  if (version_ < 1 || version_ > kVersion) {
    corrupt(8, fmt::format("expected version 1 to {}, found {} (written by a newer chorus?)", kVersion, version_));
  }
  const auto length = get_value<uint32_t>("the pipeline length");
  std::string saved(length, '\0');
  get(saved.data(), length, "the pipeline description");
  epoch_ = get_value<int64_t>("the epoch");
  elements_begin_ = offset_;
  if (size < elements_begin_ + kTrailerBytes) {
    corrupt(size, fmt::format("truncated: expected a {}-byte trailer after the header", kTrailerBytes));
  }

  const uint64_t trailer = size - kTrailerBytes;
  std::fseek(file_.get(), static_cast<long>(trailer), SEEK_SET);
  offset_ = trailer;
  const auto marker = get_value<uint8_t>("the end marker");
  count_ = get_value<int64_t>("the element count");
  get(magic, sizeof magic, "the end magic");
  if (marker != kEndMarker || std::memcmp(magic, kEndMagic, sizeof magic) != 0 || count_ < 0) {
    corrupt(trailer, "truncated or corrupt: expected the trailer (end marker, count, \"CHRSEND!\")");
  }
  if (saved != pipeline) {
    throw_error<ValueError>("cache: {} holds elements of the pipeline '{}', not of '{}' (delete it or cache elsewhere)",
                            path_, saved, pipeline);
  }
  elements_end_ = trailer;
  seek(0, elements_begin_);
}

void CacheFileReader::corrupt(uint64_t at, const std::string& what) const {
  throw_error<IOError>("cache: {}: byte offset {}: {}", path_, at, what);
}

void CacheFileReader::get(void* data, size_t size, const char* what) {
  if (offset_ + size > elements_end_ || (size != 0 && std::fread(data, 1, size, file_.get()) != size)) {
    corrupt(offset_, fmt::format("truncated: expected {} bytes of {}, the data ends at byte {}", size, what,
                                 elements_end_));
  }
  offset_ += size;
}

Tree CacheFileReader::get_tree(int depth) {
  const uint64_t at = offset_;
  if (depth > kMaxDepth) corrupt(at, fmt::format("expected trees nested at most {} deep", kMaxDepth));
  const auto kind = get_value<uint8_t>("a tree kind");
  switch (kind) {
    case kEmpty: return Tree();
    case kTensor: {
      const auto dtype = get_value<uint8_t>("a dtype");
      const auto rank = get_value<uint8_t>("a rank");
      const DType last = last_dtype(version_);
      if (dtype > static_cast<uint8_t>(last)) {
        corrupt(at + 1, fmt::format("expected a dtype (0-{}) for a version {} file, found {}",
                                    static_cast<int>(last), version_, dtype));
      }
      if (rank > kMaxRank) corrupt(at + 2, fmt::format("expected a rank <= {}, found {}", kMaxRank, rank));
      std::array<int64_t, kMaxRank> dims{};
      get(dims.data(), sizeof(int64_t) * rank, "the dimensions");
      uint64_t numel = 1;
      for (int a = 0; a < rank; ++a) {
        if (dims[a] < 0 || (dims[a] != 0 && numel > (elements_end_ - offset_) / static_cast<uint64_t>(dims[a]))) {
          corrupt(at + 3, fmt::format("dimension {} of {} exceeds the file", a, dims[a]));
        }
        numel *= static_cast<uint64_t>(dims[a]);
      }
      Tensor t = Tensor::empty(Shape(std::span<const int64_t>(dims.data(), rank)), static_cast<DType>(dtype));
      if (t.dtype() == kString) {
        get_strings(t);
      } else {
        get(t.raw_data(), t.nbytes(), "tensor data");
      }
      return Tree(std::move(t));
    }
    case kDict: {
      const auto n = get_value<uint32_t>("a dict size");
      Tree::Dict dict;
      for (uint32_t i = 0; i < n; ++i) {
        const auto length = get_value<uint32_t>("a key length");
        if (length > elements_end_ - offset_) {
          corrupt(offset_ - 4, fmt::format("key length {} exceeds the file", length));
        }
        std::string key(length, '\0');
        get(key.data(), length, "a key");
        dict.emplace_hint(dict.end(), std::move(key), get_tree(depth + 1));
      }
      return Tree(std::move(dict));
    }
    case kList: {
      const auto n = get_value<uint32_t>("a list size");
      if (n > elements_end_ - offset_) corrupt(offset_ - 4, fmt::format("list size {} exceeds the file", n));
      Tree::List list;
      list.reserve(n);
      for (uint32_t i = 0; i < n; ++i) list.push_back(get_tree(depth + 1));
      return Tree(std::move(list));
    }
    default: corrupt(at, fmt::format("expected a tree kind (0-3), found {}", kind));
  }
}

void CacheFileReader::get_strings(const Tensor& t) {
  std::string* out = t.data<std::string>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    const auto length = get_value<uint64_t>("a string length");
    if (length > elements_end_ - offset_) {
      corrupt(offset_ - 8, fmt::format("string length {} exceeds the file", length));
    }
    out[i].resize(length);
    get(out[i].data(), length, "string data");
  }
}

std::optional<Tree> CacheFileReader::next() {
  if (offset_ == elements_end_) {
    if (index_ != count_) {
      corrupt(offset_, fmt::format("expected {} elements as the trailer says, found {}", count_, index_));
    }
    return std::nullopt;
  }
  const uint64_t at = offset_;
  const auto marker = get_value<uint8_t>("an element marker");
  if (marker != kElementMarker) corrupt(at, fmt::format("expected an element marker (0xE1), found {:#04x}", marker));
  Tree element = get_tree(0);
  ++index_;
  return element;
}

void CacheFileReader::seek(int64_t index, uint64_t offset) {
  if (index < 0 || index > count_ || offset < elements_begin_ || offset > elements_end_) {
    throw_error<ValueError>("cache: cannot restore to element {} at byte {} of {} ({} elements, bytes {} to {})",
                            index, offset, path_, count_, elements_begin_, elements_end_);
  }
  if (std::fseek(file_.get(), static_cast<long>(offset), SEEK_SET) != 0) {
    throw_error<IOError>("cache: cannot seek in {}: {}", path_, std::strerror(errno));
  }
  index_ = index;
  offset_ = offset;
}

}  // namespace chorus::data
