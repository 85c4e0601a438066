#include "chorus/data/text_line_dataset.h"

#include <memory>
#include <optional>

#include "chorus/core/error.h"
#include "chorus/data/line_reader.h"

namespace chorus::data {
namespace {

// The lines of a list of files, opened one after another. Belongs to one iterator.
class LineSource {
 public:
  explicit LineSource(std::shared_ptr<const std::vector<std::string>> files) : files_(std::move(files)) {}

  std::optional<Tree> next() {
    while (true) {
      if (!reader_) {
        if (next_file_ == files_->size()) return std::nullopt;
        reader_ = std::make_unique<LineReader>((*files_)[next_file_++]);
      }
      if (const auto line = reader_->next()) {
        std::optional<Tree> element(std::in_place, string_to_bytes(*line));
        return element;
      }
      reader_.reset();
    }
  }

 private:
  std::shared_ptr<const std::vector<std::string>> files_;
  size_t next_file_ = 0;
  std::unique_ptr<LineReader> reader_;
};

}  // namespace

Dataset text_line_dataset(const std::vector<std::string>& files) {
  if (files.empty()) throw_error<ValueError>("text_line_dataset: expected at least one file, got none");
  for (const std::string& file : files) check_readable(file);
  auto shared_files = std::make_shared<const std::vector<std::string>>(files);
  return Dataset::from_generator([shared_files](int64_t /*epoch*/) -> Dataset::Generator {
    auto source = std::make_shared<LineSource>(shared_files);
    return [source] { return source->next(); };
  });
}

Tensor string_to_bytes(std::string_view text) {
  Tensor out = Tensor::empty({static_cast<int64_t>(text.size())}, kInt32);
  int32_t* values = out.data<int32_t>();
  for (size_t i = 0; i < text.size(); ++i) values[i] = static_cast<unsigned char>(text[i]);
  return out;
}

std::string bytes_to_string(const Tensor& bytes) {
  if (bytes.dtype() != kInt32) {
    throw_error<DTypeError>("bytes_to_string: expected an int32 tensor of byte values, got {}",
                            dtype_name(bytes.dtype()));
  }
  if (bytes.rank() != 1) {
    throw_error<ShapeError>("bytes_to_string: expected a 1-D tensor of byte values, got shape {}",
                            bytes.shape().to_string());
  }
  const int32_t* values = bytes.data<int32_t>();
  std::string out(static_cast<size_t>(bytes.numel()), '\0');
  for (size_t i = 0; i < out.size(); ++i) {
    if (values[i] < 0 || values[i] > 255) {
      throw_error<ValueError>("bytes_to_string: expected byte values 0-255, found {} at position {}", values[i], i);
    }
    out[i] = static_cast<char>(values[i]);
  }
  return out;
}

}  // namespace chorus::data
