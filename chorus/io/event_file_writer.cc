// An events file is a TFRecord file (tfrecord_writer.cc) of serialised tensorboard.Event
// messages (proto/tensorboard_event.proto):
//
//   record 0   Event{wall_time, file_version: "brain.Event:2", source_metadata.writer: "chorus"}
//   record k   Event{wall_time, step, summary: Summary{value: [Value{
//                tag, metadata: {plugin_data: {plugin_name: "scalars", content: ""}},
//                tensor: TensorProto{dtype: DT_FLOAT, tensor_shape: {} (a scalar),
//                                    tensor_content: the float32, 4 bytes little-endian}}]}}
//
// This is what TensorFlow's summary writer emits for tf.summary.scalar (the scalar plugin's
// metadata with an empty ScalarPluginData, the value as tensor_content), which Keras's
// TensorBoard callback calls.
#include "chorus/io/event_file_writer.h"

#include <atomic>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <system_error>

#include <fmt/format.h>
#include <unistd.h>

#include "chorus/core/error.h"
#include "chorus/io/proto/tensorboard_event.pb.h"
#include "chorus/io/tfrecord_writer.h"

namespace chorus::io {
namespace {

constexpr const char* kFileVersion = "brain.Event:2";
constexpr const char* kScalarPlugin = "scalars";

double wall_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// TensorFlow's events_writer.cc names files with a process-wide counter, so two writers
// opened in the same second never collide.
std::filesystem::path new_file_name(const std::filesystem::path& log_dir) {
  static std::atomic<int64_t> file_counter{0};
  const auto seconds = static_cast<long long>(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  return log_dir / fmt::format("events.out.tfevents.{:010d}.{}.{}.{}.v2", seconds, host_name(),
                               static_cast<long long>(::getpid()), file_counter.fetch_add(1));
}

std::string float_le_bytes(float value) {
  const auto bits = std::bit_cast<uint32_t>(value);
  std::string bytes(4, '\0');
  for (int i = 0; i < 4; ++i) bytes[i] = static_cast<char>((bits >> (8 * i)) & 0xffu);
  return bytes;
}

void write_event(TFRecordWriter& records, const tensorboard::Event& event) {
  std::string bytes;
  if (!event.SerializeToString(&bytes)) {
    throw_error<IOError>("EventFileWriter: cannot serialise an event for {}", records.path().string());
  }
  records.write(bytes);
}

}  // namespace

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

EventFileWriter::EventFileWriter(const std::filesystem::path& log_dir) {
  std::error_code error;
  std::filesystem::create_directories(log_dir, error);
  if (error) throw_error<IOError>("EventFileWriter: cannot create log directory {}: {}", log_dir.string(), error.message());
  records_ = std::make_unique<TFRecordWriter>(new_file_name(log_dir));
  tensorboard::Event event;
  event.set_wall_time(wall_time());
  event.set_file_version(kFileVersion);
  event.mutable_source_metadata()->set_writer("chorus");
  write_event(*records_, event);
  records_->flush();
}

EventFileWriter::~EventFileWriter() = default;

void EventFileWriter::add_scalar(const std::string& tag, double value, int64_t step) {
  tensorboard::Event event;
  event.set_wall_time(wall_time());
  event.set_step(step);
  tensorboard::Summary::Value* summary = event.mutable_summary()->add_value();
  summary->set_tag(tag);
  summary->mutable_metadata()->mutable_plugin_data()->set_plugin_name(kScalarPlugin);
  tensorboard::TensorProto* tensor = summary->mutable_tensor();
  tensor->set_dtype(tensorboard::DT_FLOAT);
  tensor->mutable_tensor_shape();  // present and empty: a scalar
  tensor->set_tensor_content(float_le_bytes(static_cast<float>(value)));
  write_event(*records_, event);
}

void EventFileWriter::flush() { records_->flush(); }

void EventFileWriter::close() { records_->close(); }

const std::filesystem::path& EventFileWriter::path() const { return records_->path(); }

}  // namespace chorus::io
