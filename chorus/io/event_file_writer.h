// EventFileWriter: one TensorBoard events file ("events.out.tfevents.…") in a log
// directory, holding scalar summaries as TensorFlow 2's tf.summary.scalar writes them.
// Owns its TFRecordWriter; one thread at a time.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

namespace chorus::io {

class TFRecordWriter;

class EventFileWriter {
 public:
  // Creates `log_dir` (and its parents) and in it a new file named as TensorFlow names
  // them, events.out.tfevents.<seconds, 10 digits>.<host>.<pid>.<n>.v2 where n counts the
  // files this process has opened; writes the first event (file_version "brain.Event:2")
  // and flushes it. Throws IOError naming the directory or file.
  explicit EventFileWriter(const std::filesystem::path& log_dir);
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  // Appends an event at `step` holding one summary value: tag `tag`, metadata plugin
  // "scalars", and `value` as a DT_FLOAT scalar tensor (rounded to float32, as
  // tf.summary.scalar casts it). Buffered until flush(). Throws IOError.
  void add_scalar(const std::string& tag, double value, int64_t step);
  // Throws IOError naming the file.
  void flush();
  // Flushes, syncs and closes the file; later calls do nothing. Throws IOError.
  void close();

  const std::filesystem::path& path() const;

 private:
  std::unique_ptr<TFRecordWriter> records_;
};

// This machine's name, as TensorBoard's file names carry it ("localhost" if unknown).
std::string host_name();

}  // namespace chorus::io
