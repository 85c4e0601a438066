// CSVLogger: writes one CSV row per epoch with every logged value (Keras's CSVLogger).
// Owns the open file between on_train_begin and on_train_end. One training thread.
#pragma once

#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "chorus/models/callback.h"
#include "chorus/models/logs.h"

namespace chorus::callbacks {

struct CSVLoggerOptions {
  char separator = ',';
  // Appends to an existing file (continuing a run); the header is written only if the
  // file is empty. false: the file is truncated at the start of fit.
  bool append = false;
};

// The file as Python's csv module writes it for Keras: a header "epoch,<names sorted>"
// where, if the first epoch has no val_ names, a val_<name> column is added for each
// name (so later validation epochs fit); then rows of the 0-based epoch and the values
// as Python's repr ("0.25", "nan"), "NA" for a missing one; lines end in "\r\n"; each
// row is flushed.
//
//   model.fit(train, {.callbacks = {CSVLogger("run/log.csv")}});
class CSVLogger : public models::Callback {
 public:
  explicit CSVLogger(std::string filename, CSVLoggerOptions options = {});

  // Opens the file. Throws IOError naming it when it cannot be opened.
  void on_train_begin(const models::Logs& logs) override;
  // Throws IOError naming the file when a row cannot be written.
  void on_epoch_end(int epoch, const models::Logs& logs) override;
  void on_train_end(const models::Logs& logs) override;
  bool implements_train_batch_hooks() const override { return false; }
  bool implements_test_batch_hooks() const override { return false; }

 private:
  void write_row(const std::vector<std::string>& cells);

  std::string filename_;
  CSVLoggerOptions options_;
  std::ofstream file_;
  std::optional<std::vector<std::string>> keys_;
  bool append_header_ = true;
};

}  // namespace chorus::callbacks
