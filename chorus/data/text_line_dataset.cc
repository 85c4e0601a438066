#include "chorus/data/text_line_dataset.h"

#include <memory>
#include <optional>

#include "chorus/core/error.h"
#include "chorus/data/dataset_impl.h"
#include "chorus/data/line_reader.h"
#include "chorus/data/utf8.h"

namespace chorus::data {
namespace {

// The stage: a file list shared (immutable) by every iterator and by the stages that
// with_files() makes for workers.
class TextLineDataset final : public SourceDataset {
 public:
  explicit TextLineDataset(std::vector<std::string> files) : files_(std::move(files)) {}
  std::unique_ptr<IteratorImpl> make_iterator(int64_t epoch) const override;
  int64_t cardinality() const override { return kUnknownCardinality; }
  std::string name() const override { return "text_line_dataset"; }
  std::vector<std::string> files() const override { return files_; }
  DatasetPtr with_files(std::vector<std::string> files) const override {
    if (files.empty()) throw_error<ValueError>("text_line_dataset: expected at least one file, got none");
    return std::make_shared<TextLineDataset>(std::move(files));
  }
  const std::vector<std::string>& file_list() const { return files_; }

 private:
  std::vector<std::string> files_;
};

// The lines of the files, opened one after another on the first next() (making an
// iterator does no I/O). The position is (file, lines read from it) plus the file's
// path, so a position of another file list (another worker's share) is refused rather
// than read from the wrong file.
class TextLineIterator final : public IteratorImpl {
 public:
  explicit TextLineIterator(std::shared_ptr<const TextLineDataset> ds) : ds_(std::move(ds)) {}

  std::optional<Tree> next() override {
    const std::optional<std::string_view> line = next_line();
    if (!line) return std::nullopt;
    if (const std::optional<size_t> bad = find_invalid_utf8(*line)) {
      throw_error<IOError>("text_line_dataset: {}:{}: invalid UTF-8 at byte {} of the line (byte {:#04x})",
                              ds_->file_list()[file_], line_, *bad, static_cast<unsigned char>((*line)[*bad]));
    }
    std::optional<Tree> element(std::in_place, Tensor::from_string(std::string(*line)));
    return element;
  }
  // Reads lines without making their tensors: cheap replays for batch and restore.
  int64_t advance(int64_t n) override {
    int64_t skipped = 0;
    while (skipped < n && next_line()) ++skipped;
    return skipped;
  }
  nlohmann::json position() const override {
    const auto& files = ds_->file_list();
    return {{"op", "text_line_dataset"},
            {"file", file_},
            {"path", file_ < files.size() ? files[file_] : ""},
            {"line", line_}};
  }
  void restore(const nlohmann::json& state) override {
    check_op(state, "text_line_dataset");
    const auto& files = ds_->file_list();
    const size_t file = state.at("file").get<size_t>();
    const auto path = state.at("path").get<std::string>();
    const int64_t line = state.at("line").get<int64_t>();
    if (file > files.size()) {
      throw_error<ValueError>(
          "text_line_dataset: cannot restore a position in file {} ('{}'): this dataset reads {} files", file, path,
          files.size());
    }
    if (file < files.size() && path != files[file]) {
      throw_error<ValueError>(
          "text_line_dataset: cannot restore a position in '{}' (file {}): this dataset's file {} is '{}'", path, file,
          file, files[file]);
    }
    file_ = file;
    line_ = 0;
    reader_.reset();
    if (line <= 0) return;
    if (file == files.size()) {
      throw_error<ValueError>("text_line_dataset: cannot restore to line {} after the last file", line);
    }
    reader_ = std::make_unique<LineReader>(files[file]);
    while (line_ < line && reader_->next()) ++line_;
    if (line_ < line) {
      throw_error<ValueError>("text_line_dataset: cannot restore to line {} of '{}': it now has {} lines", line, path,
                              line_);
    }
  }

 private:
  // The next line of the current file or the ones after it; nullopt after the last. The
  // view is valid until the next call.
  std::optional<std::string_view> next_line() {
    const auto& files = ds_->file_list();
    while (file_ < files.size()) {
      if (!reader_) reader_ = std::make_unique<LineReader>(files[file_]);
      if (const auto line = reader_->next()) {
        ++line_;
        return line;
      }
      reader_.reset();
      ++file_;
      line_ = 0;
    }
    return std::nullopt;
  }

  std::shared_ptr<const TextLineDataset> ds_;
  size_t file_ = 0;                     // the file being read (files.size() at the end)
  int64_t line_ = 0;                    // lines read from it
  std::unique_ptr<LineReader> reader_;  // open on file_, or null before its first line
};

std::unique_ptr<IteratorImpl> TextLineDataset::make_iterator(int64_t) const {
  return std::make_unique<TextLineIterator>(shared_self(this));
}

}  // namespace

Dataset text_line_dataset(const std::vector<std::string>& files) {
  if (files.empty()) throw_error<ValueError>("text_line_dataset: expected at least one file, got none");
  for (const std::string& file : files) check_readable(file);
  return Dataset(std::make_shared<TextLineDataset>(files));
}

}  // namespace chorus::data
