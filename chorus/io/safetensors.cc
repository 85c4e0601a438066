// The safetensors layout (https://github.com/huggingface/safetensors), every integer
// little-endian:
//
//   [0, 8)         u64 N: the header's length in bytes (readers cap it at 100 MB)
//   [8, 8 + N)     UTF-8 JSON object, padded with spaces so that 8 + N is a multiple of 8:
//                  {"__metadata__": {"key": "value", ...},
//                   "name": {"dtype": "F32", "shape": [784, 256], "data_offsets": [b, e]}, ...}
//   [8 + N, EOF)   the data buffer: each tensor's row-major bytes at [b, e), offsets
//                  relative to the buffer's start. Tensors tile the buffer exactly: no
//                  byte belongs to two tensors or to none (the spec forbids holes so
//                  that a file cannot hide a second format inside it).
//
// The writer lays the tensors out in the order given. The reader trusts nothing: it checks
// the header length against the file size before allocating, then every entry, then
// reads each tensor's bytes straight into that tensor's storage (one pread each).
#include "chorus/io/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <optional>
#include <set>
#include <unordered_set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "chorus/io/atomic_file.h"

namespace chorus::io {
namespace {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian, as is this host");

namespace fs = std::filesystem;
using nlohmann::json;

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the reference reader's limit
constexpr std::string_view kMetadataKey = "__metadata__";
constexpr std::string_view kSupported = "F32, BF16, I32, I64, BOOL, U8";

constexpr std::string_view safetensors_name(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "F32";
    case DType::kBFloat16:
      return "BF16";
    case DType::kInt32:
      return "I32";
    case DType::kInt64:
      return "I64";
    case DType::kBool:
      return "BOOL";
    case DType::kUInt8:
      return "U8";
    case DType::kString:
      return "?";  // refused by check_savable: safetensors has no string dtype
  }
  return "?";
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (DType dtype : {kFloat32, kBFloat16, kInt32, kInt64, kBool, kUInt8}) {
    if (safetensors_name(dtype) == name) return dtype;
  }
  return std::nullopt;
}

// ---- writing ----

// Throws ValueError unless a tensor `entry` can be saved; `names` holds the names seen so far.
void check_savable(const fs::path& path, const TensorEntry& entry, std::unordered_set<std::string_view>& names) {
  const std::string file = path.string();
  const std::string& name = entry.name;
  if (name == kMetadataKey) {
    throw_error<ValueError>("save_safetensors: {}: '{}' is reserved, not a tensor name", file, name);
  }
  if (!names.insert(name).second) {
    throw_error<ValueError>("save_safetensors: {}: duplicate tensor name '{}'", file, name);
  }
  if (entry.dtype == kString) {
    throw_error<DTypeError>("save_safetensors: {}: tensor '{}' has dtype string; expected one of {}", file, name,
                            kSupported);
  }
}

// Throws ValueError unless `tensor` (named `name`) holds bytes that can be written.
void check_writable(const fs::path& path, const std::string& name, const Tensor& tensor) {
  if (!tensor.defined()) throw_error<ValueError>("save_safetensors: {}: tensor '{}' is undefined", path.string(), name);
  if (!tensor.device().is_cpu()) {
    throw_error<ValueError>("save_safetensors: {}: tensor '{}' is on {}, expected cpu", path.string(), name,
                            tensor.device().to_string());
  }
}

std::vector<TensorEntry> entries_of(const fs::path& path, const NamedTensors& tensors) {
  std::vector<TensorEntry> entries;
  entries.reserve(tensors.size());
  for (const auto& [name, tensor] : tensors) {
    check_writable(path, name, tensor);
    entries.push_back({name, tensor.dtype(), tensor.shape()});
  }
  return entries;
}

// ---- reading ----

// Throws IOError "<path>: <message>".
template <class... Args>
[[noreturn]] void corrupt(const fs::path& path, fmt::format_string<Args...> format, Args&&... args) {
  throw_error<IOError>("{}: {}", path.string(), fmt::format(format, std::forward<Args>(args)...));
}

class Reader {
 public:
  explicit Reader(const fs::path& path) : path_(path), fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (fd_ < 0) corrupt(path_, "cannot open: {}", std::strerror(errno));
  }
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;
  ~Reader() { ::close(fd_); }

  uint64_t size() const {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) corrupt(path_, "cannot stat: {}", std::strerror(errno));
    if (!S_ISREG(st.st_mode)) corrupt(path_, "not a regular file");
    return static_cast<uint64_t>(st.st_size);
  }

  // Reads exactly `size` bytes at `offset`.
  void read_at(void* out, uint64_t size, uint64_t offset) const {
    auto* bytes = static_cast<char*>(out);
    while (size > 0) {
      const ssize_t n = ::pread(fd_, bytes, size, static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) corrupt(path_, "read failed at byte {}: {}", offset, std::strerror(errno));
      if (n == 0) corrupt(path_, "unexpected end of file at byte {} (was it truncated while being read?)", offset);
      bytes += n;
      size -= static_cast<uint64_t>(n);
      offset += static_cast<uint64_t>(n);
    }
  }

 private:
  fs::path path_;
  int fd_;
};

// The parsed header and its top-level keys in the order they appear: json's object sorts
// its keys, and the text order breaks ties between empty tensors at one offset.
struct Header {
  json object;
  std::vector<std::string> keys;
};

// Parses the header, rejecting duplicate keys at any level (the spec forbids them and
// json would silently keep the last one).
Header parse_header(const fs::path& path, const std::string& text) {
  if (text.empty() || text[0] != '{') corrupt(path, "the header does not start with '{{' (not a safetensors file?)");
  Header header;
  struct OpenObject {
    std::set<std::string> keys;  // the keys seen so far
    std::string last;            // the latest, naming where an error is
  };
  std::vector<OpenObject> open_objects;
  std::string duplicate;
  auto on_event = [&](int depth, json::parse_event_t event, json& value) {
    if (event == json::parse_event_t::object_start) open_objects.emplace_back();
    if (event == json::parse_event_t::object_end) open_objects.pop_back();
    if (event == json::parse_event_t::key) {
      const auto& key = value.get_ref<const std::string&>();
      if (!open_objects.back().keys.insert(key).second && duplicate.empty()) duplicate = key;
      open_objects.back().last = key;
      if (depth == 1) header.keys.push_back(key);
    }
    return true;
  };
  try {
    header.object = json::parse(text, on_event);
  } catch (const json::exception& e) {
    // A syntax error (parse_error) or a number too large for a double (out_of_range.406,
    // which names no position: the key being read says where).
    const std::string_view what = e.what();  // "[json.exception.parse_error.101] parse error at ..."
    std::string field;
    for (const OpenObject& object : open_objects) {
      if (!field.empty()) field += '.';
      field += json(object.last).dump(-1, ' ', false, json::error_handler_t::replace);
    }
    corrupt(path, "the header is not valid JSON: {}{}", what.substr(what.find(']') + 2),
            field.empty() ? "" : " (in " + field + ")");
  }
  if (!duplicate.empty()) corrupt(path, "the header has the key \"{}\" twice", duplicate);
  return header;
}

std::map<std::string, std::string> parse_metadata(const fs::path& path, const json& value) {
  if (!value.is_object()) corrupt(path, "\"__metadata__\" must be an object of strings, got {}", value.dump());
  std::map<std::string, std::string> metadata;
  for (const auto& [key, item] : value.items()) {
    if (!item.is_string()) corrupt(path, "\"__metadata__\" entry \"{}\" must be a string, got {}", key, item.dump());
    metadata.emplace(key, item.get<std::string>());
  }
  return metadata;
}

// The shape of tensor `name` and its byte count for `dtype` (overflow-checked).
std::pair<Shape, uint64_t> parse_shape(const fs::path& path, const std::string& name, const json& shape_json,
                                       DType dtype) {
  const bool ok = shape_json.is_array() && std::all_of(shape_json.begin(), shape_json.end(), [](const json& d) {
    return d.is_number_unsigned() && d.get<uint64_t>() <= uint64_t{std::numeric_limits<int64_t>::max()};
  });
  if (!ok) corrupt(path, "tensor {}: shape {} is not a list of non-negative integers", name, shape_json.dump());
  if (shape_json.size() > static_cast<size_t>(kMaxRank)) {
    corrupt(path, "tensor {}: shape {} has rank {}, more than chorus's maximum {}", name, shape_json.dump(),
            shape_json.size(), kMaxRank);
  }
  uint64_t nbytes = dtype_size(dtype);
  bool overflow = false;
  for (const json& d : shape_json) overflow |= __builtin_mul_overflow(nbytes, d.get<uint64_t>(), &nbytes);
  if (overflow) {
    corrupt(path, "tensor {}: shape {} of {} has more bytes than fit in 64 bits", name, shape_json.dump(),
            safetensors_name(dtype));
  }
  return {Shape(shape_json.get<std::vector<int64_t>>()), nbytes};
}

// Checks one tensor's entry on its own: types, dtype, shape, and that the offsets span
// exactly the shape's bytes. Placement in the buffer is checked by check_layout.
TensorEntry parse_entry(const fs::path& path, const std::string& name, const json& value) {
  if (!value.is_object()) {
    corrupt(path, "tensor {}: expected an object with dtype, shape and data_offsets, got {}", name, value.dump());
  }
  for (const char* field : {"dtype", "shape", "data_offsets"}) {
    if (!value.contains(field)) corrupt(path, "tensor {}: missing \"{}\"", name, field);
  }
  const json& dtype_json = value["dtype"];
  const auto dtype = dtype_json.is_string() ? dtype_from_name(dtype_json.get<std::string>()) : std::nullopt;
  if (!dtype) {
    corrupt(path, "tensor {}: dtype {} is not supported (expected one of {})", name, dtype_json.dump(), kSupported);
  }
  const auto [shape, nbytes] = parse_shape(path, name, value["shape"], *dtype);

  const json& offsets = value["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned()) {
    corrupt(path, "tensor {}: data_offsets {} is not a pair of non-negative integers", name, offsets.dump());
  }
  const uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
  if (end < begin || end - begin != nbytes) {
    corrupt(path, "tensor {}: data offsets [{}, {}) do not match shape {} of {} ({} bytes)", name, begin, end,
            shape.to_string(), safetensors_name(*dtype), nbytes);
  }
  return {name, *dtype, shape, begin, end};
}

// Checks that `entries`, sorted by offset, tile [0, data_size) exactly.
void check_layout(const fs::path& path, const std::vector<TensorEntry>& entries, uint64_t data_size) {
  uint64_t covered = 0;  // bytes [0, covered) belong to the tensors seen so far
  const TensorEntry* previous = nullptr;
  for (const TensorEntry& e : entries) {
    if (e.end > data_size) {
      corrupt(path, "tensor {}: data offsets [{}, {}) lie outside the data buffer of {} bytes (truncated file?)",
              e.name, e.begin, e.end, data_size);
    }
    if (e.begin < covered) {
      corrupt(path, "tensor {}: data offsets [{}, {}) overlap tensor {} at [{}, {})", e.name, e.begin, e.end,
              previous->name, previous->begin, previous->end);
    }
    if (e.begin > covered) {
      corrupt(path, "tensor {}: data offsets [{}, {}) leave bytes [{}, {}) of the data buffer unused", e.name, e.begin,
              e.end, covered, e.begin);
    }
    covered = e.end;
    previous = &e;
  }
  if (covered != data_size) {
    corrupt(path, "the data buffer has {} bytes but the tensors cover only [0, {})", data_size, covered);
  }
}

// Reads and checks the header of the file `reader` reads.
SafetensorsHeader read_header(const fs::path& path, const Reader& reader) {
  const uint64_t file_size = reader.size();
  if (file_size < 8) corrupt(path, "the file has {} bytes, too few for the 8-byte header length", file_size);
  uint64_t header_size = 0;
  reader.read_at(&header_size, 8, 0);
  if (header_size > file_size - 8) {
    corrupt(path, "the header length is {} bytes but only {} bytes follow it (truncated or not a safetensors file)",
            header_size, file_size - 8);
  }
  if (header_size > kMaxHeaderBytes) {
    corrupt(path, "the header length {} exceeds the limit of {} bytes", header_size, kMaxHeaderBytes);
  }
  std::string text(header_size, '\0');
  reader.read_at(text.data(), header_size, 8);
  const Header header = parse_header(path, text);

  SafetensorsHeader out;
  for (const std::string& name : header.keys) {
    if (name == kMetadataKey) {
      out.metadata = parse_metadata(path, header.object.at(name));
    } else {
      out.tensors.push_back(parse_entry(path, name, header.object.at(name)));
    }
  }
  std::stable_sort(out.tensors.begin(), out.tensors.end(), [](const TensorEntry& a, const TensorEntry& b) {
    return std::pair(a.begin, a.end) < std::pair(b.begin, b.end);
  });
  out.data_start = 8 + header_size;
  check_layout(path, out.tensors, file_size - out.data_start);
  return out;
}

}  // namespace

std::string safetensors_header(const fs::path& path, const std::vector<TensorEntry>& tensors,
                               const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();  // keys in file order
  if (!metadata.empty()) header[std::string(kMetadataKey)] = metadata;
  std::unordered_set<std::string_view> names;
  uint64_t offset = 0;
  for (const TensorEntry& entry : tensors) {
    check_savable(path, entry, names);
    const uint64_t end = offset + static_cast<uint64_t>(entry.shape.numel()) * dtype_size(entry.dtype);
    header[entry.name] = {{"dtype", safetensors_name(entry.dtype)},
                          {"shape", entry.shape.to_vector()},
                          {"data_offsets", {offset, end}}};
    offset = end;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const json::exception& e) {  // only invalid UTF-8 can fail here
    throw_error<ValueError>("save_safetensors: {}: tensor names and metadata must be valid UTF-8: {}", path.string(),
                            e.what());
  }
  text.resize((text.size() + 7) / 8 * 8, ' ');
  const uint64_t length = text.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &length, 8);
  return out + text;
}

std::string safetensors_bytes(const fs::path& path, const NamedTensors& tensors,
                              const std::map<std::string, std::string>& metadata) {
  const std::string header = safetensors_header(path, entries_of(path, tensors), metadata);
  size_t data_size = 0;
  for (const auto& [name, tensor] : tensors) data_size += tensor.nbytes();

  std::string bytes = header;
  bytes.resize(header.size() + data_size);
  char* out = bytes.data() + header.size();
  for (const auto& [name, tensor] : tensors) {
    if (tensor.nbytes() > 0) std::memcpy(out, tensor.raw_data(), tensor.nbytes());
    out += tensor.nbytes();
  }
  return bytes;
}

void save_safetensors(const fs::path& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata) {
  write_file_atomically(path, safetensors_bytes(path, tensors, metadata));
}

void check_bool_bytes(const fs::path& path, const TensorEntry& entry, std::span<const std::byte> bytes) {
  const auto bad = std::find_if(bytes.begin(), bytes.end(), [](std::byte b) { return std::to_integer<int>(b) > 1; });
  if (bad != bytes.end()) {
    corrupt(path, "tensor {}: BOOL element {} has byte value {}, expected 0 or 1", entry.name, bad - bytes.begin(),
            std::to_integer<int>(*bad));
  }
}

SafetensorsHeader read_safetensors_header(const fs::path& path) {
  const Reader reader(path);
  return read_header(path, reader);
}

SafetensorsContents load_safetensors(const fs::path& path) {
  const Reader reader(path);
  SafetensorsHeader header = read_header(path, reader);
  SafetensorsContents contents{.metadata = std::move(header.metadata)};
  contents.tensors.reserve(header.tensors.size());
  for (const TensorEntry& entry : header.tensors) {
    Tensor tensor = Tensor::empty(entry.shape, entry.dtype);
    reader.read_at(tensor.raw_data(), entry.end - entry.begin, header.data_start + entry.begin);
    if (entry.dtype == kBool) {
      check_bool_bytes(path, entry, {static_cast<const std::byte*>(tensor.raw_data()), tensor.nbytes()});
    }
    contents.tensors.emplace_back(entry.name, std::move(tensor));
  }
  return contents;
}

}  // namespace chorus::io
