#include "chorus/callbacks/csv_logger.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "chorus/callbacks/python_format.h"
#include "chorus/core/error.h"

namespace chorus::callbacks {

CSVLogger::CSVLogger(std::string filename, CSVLoggerOptions options)
    : filename_(std::move(filename)), options_(options) {}

void CSVLogger::on_train_begin(const models::Logs& /*logs*/) {
  if (options_.append && std::filesystem::exists(filename_)) {
    std::ifstream existing(filename_, std::ios::binary);
    std::string first_line;
    std::getline(existing, first_line);
    append_header_ = first_line.empty();
  }
  if (file_.is_open()) file_.close();
  // Binary: the "\r\n" line ends are written as they are, as Python's csv module does.
  file_.open(filename_, std::ios::binary | (options_.append ? std::ios::app : std::ios::trunc));
  if (!file_) throw_error<IOError>("CSVLogger: cannot open {} for writing: {}", filename_, std::strerror(errno));
  keys_.reset();
}

void CSVLogger::on_epoch_end(int epoch, const models::Logs& logs) {
  const bool first_row = !keys_;
  if (first_row) {
    std::vector<std::string> keys;
    for (const auto& [name, value] : logs) keys.push_back(name);
    std::sort(keys.begin(), keys.end());
    const bool has_val = std::any_of(keys.begin(), keys.end(), [](const std::string& k) { return k.starts_with("val_"); });
    if (!has_val && !keys.empty()) {
      const size_t n = keys.size();
      for (size_t i = 0; i < n; ++i) keys.push_back("val_" + keys[i]);
    }
    keys_ = std::move(keys);
    if (append_header_) {
      std::vector<std::string> header = {"epoch"};
      header.insert(header.end(), keys_->begin(), keys_->end());
      write_row(header);
    }
  }
  std::vector<std::string> row = {std::to_string(epoch)};
  for (const std::string& key : *keys_) row.push_back(logs.contains(key) ? python_repr(logs.at(key)) : "NA");
  write_row(row);
  file_.flush();
  if (!file_) throw_error<IOError>("CSVLogger: cannot write to {}: {}", filename_, std::strerror(errno));
}

void CSVLogger::on_train_end(const models::Logs& /*logs*/) {
  if (file_.is_open()) file_.close();
}

// Python's csv "excel" dialect: a cell holding the separator, a quote or a line break is
// quoted, with quotes doubled.
void CSVLogger::write_row(const std::vector<std::string>& cells) {
  for (size_t i = 0; i < cells.size(); ++i) {
    if (i > 0) file_ << options_.separator;
    const std::string& cell = cells[i];
    if (cell.find_first_of(std::string{options_.separator, '"', '\r', '\n'}) == std::string::npos) {
      file_ << cell;
      continue;
    }
    file_ << '"';
    for (char c : cell) file_ << (c == '"' ? "\"\"" : std::string(1, c));
    file_ << '"';
  }
  file_ << "\r\n";
}

}  // namespace chorus::callbacks
