// Reads TFRecord and TensorBoard event files back in tests: every frame is checked byte
// by byte (both masked CRC-32Cs) and the events parsed with the protobuf classes generated
// from chorus/io/proto/tensorboard_event.proto. Header-only; throws std::runtime_error
// naming the file and byte offset of a bad frame.
#pragma once

#include <bit>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "chorus/io/atomic_file.h"
#include "chorus/io/crc32c.h"
#include "chorus/io/proto/tensorboard_event.pb.h"

namespace chorus::testing {

inline uint64_t read_le(const std::string& bytes, size_t at, int width) {
  uint64_t value = 0;
  for (int i = 0; i < width; ++i) value |= uint64_t{static_cast<unsigned char>(bytes[at + i])} << (8 * i);
  return value;
}

// The records of a TFRecord file, in order.
inline std::vector<std::string> read_tfrecords(const std::filesystem::path& path) {
  const std::string bytes = io::read_file(path);
  std::vector<std::string> records;
  size_t at = 0;
  auto fail = [&](const std::string& what) {
    throw std::runtime_error(path.string() + ": byte " + std::to_string(at) + ": " + what);
  };
  while (at < bytes.size()) {
    if (bytes.size() - at < 12) fail("truncated header");
    const uint64_t length = read_le(bytes, at, 8);
    const auto length_crc = static_cast<uint32_t>(read_le(bytes, at + 8, 4));
    if (length_crc != io::crc32c::mask(io::crc32c::value(std::string_view(bytes).substr(at, 8)))) fail("bad length CRC");
    if (bytes.size() - at - 12 < length + 4) fail("truncated record");
    std::string data = bytes.substr(at + 12, length);
    const auto data_crc = static_cast<uint32_t>(read_le(bytes, at + 12 + length, 4));
    if (data_crc != io::crc32c::mask(io::crc32c::value(data))) fail("bad data CRC");
    records.push_back(std::move(data));
    at += 12 + length + 4;
  }
  return records;
}

inline std::vector<tensorboard::Event> read_events(const std::filesystem::path& path) {
  std::vector<tensorboard::Event> events;
  for (const std::string& record : read_tfrecords(path)) {
    if (!events.emplace_back().ParseFromString(record)) throw std::runtime_error(path.string() + ": not an Event");
  }
  return events;
}

// One scalar summary: what TensorBoard's scalars dashboard shows.
struct Scalar {
  std::string tag;
  int64_t step;
  float value;
  bool operator==(const Scalar&) const = default;
};

// The scalars of `events` (the summaries of the "scalars" plugin holding a DT_FLOAT
// scalar tensor); throws for a summary of any other shape.
inline std::vector<Scalar> scalars(const std::vector<tensorboard::Event>& events) {
  std::vector<Scalar> out;
  for (const tensorboard::Event& event : events) {
    if (!event.has_summary()) continue;
    for (const auto& value : event.summary().value()) {
      const tensorboard::TensorProto& tensor = value.tensor();
      if (value.metadata().plugin_data().plugin_name() != "scalars" || tensor.dtype() != tensorboard::DT_FLOAT ||
          tensor.tensor_shape().dim_size() != 0 || tensor.tensor_content().size() != 4) {
        throw std::runtime_error("not a scalar summary: " + value.DebugString());
      }
      const auto bits = static_cast<uint32_t>(read_le(tensor.tensor_content(), 0, 4));
      out.push_back({value.tag(), event.step(), std::bit_cast<float>(bits)});
    }
  }
  return out;
}

// The one file in `dir` whose name starts "events.out.tfevents."; throws if there is not exactly one.
inline std::filesystem::path the_events_file(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> found;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().filename().string().starts_with("events.out.tfevents.")) found.push_back(entry.path());
  }
  if (found.size() != 1) throw std::runtime_error(dir.string() + ": expected one events file, found " + std::to_string(found.size()));
  return found[0];
}

}  // namespace chorus::testing
