// CSV files (RFC 4180) read into typed column tensors, and a Dataset of records over
// them (tf.data.experimental.make_csv_dataset without its batching and shuffling: chain
// .shuffle() and .batch()). Stateless functions; thread-safe.
//
//   auto ds = make_csv_dataset("houses.csv", {.select_columns = {"rooms", "price"},
//                                             .column_types = {{"rooms", kInt32}},
//                                             .label_name = "price"});
//   // elements: [{"rooms": () int32}, price () float32]
//   auto reviews = make_csv_dataset("reviews.csv", {.infer_column_types = true});
//   // elements: {"stars": () int32, "text": () string}
#pragma once

#include <map>
#include <string>
#include <vector>

#include "chorus/core/tree.h"
#include "chorus/data/dataset.h"

namespace chorus::data {

struct CsvOptions {
  // ---- layout ----
  // Field separator. Default ','.
  char delimiter = ',';
  // Whether the first row holds the column names (it is never read as data). Default true.
  bool header = true;
  // The columns' names, in file order. Required when header is false; when header is
  // true they replace the header's names (same count). Default: the header's names.
  std::vector<std::string> column_names{};

  // ---- what is read ----
  // The columns to read; empty (the default) reads all. Columns left out are never parsed.
  std::vector<std::string> select_columns{};
  // Per-column dtype: float32, int32, int64 or string (UTF-8 text: an empty field is "",
  // invalid UTF-8 an IOError). Columns not listed get default_dtype, or an inferred type.
  std::map<std::string, DType> column_types{};
  DType default_dtype = kFloat32;
  // Whether columns not in column_types get the narrowest of int32, int64, float32 and
  // string that reads all their non-empty fields (tf.data's make_csv_dataset inference);
  // a column of empty fields only gets default_dtype. Costs a copy of the fields until
  // the file is read. Default false: default_dtype, so a stray word is an error.
  bool infer_column_types = false;
  // The value of an empty field, per numeric column. An empty field in a numeric column
  // without a default is an error (there is no sensible silent value).
  std::map<std::string, double> column_defaults{};

  // ---- make_csv_dataset only ----
  // If set, elements are [features, label] pairs: this column is the label and the
  // others the features dict (Keras's (x, y)). Default: elements are feature dicts.
  std::string label_name{};
};

// Reads the selected columns of the CSV file at `path` as a dict of (N,) tensors, one
// per column, N being the number of records (blank lines are skipped). Fields may be
// quoted with '"': a quoted field may hold delimiters, newlines and doubled quotes ("").
// Line endings may be "\n" or "\r\n"; the last line needs no ending.
// Throws IOError naming the file and line: a record with the wrong number of fields
// ("data.csv:5: expected 4 fields, found 3"), a field that does not parse
// ("data.csv:17: column 'price': expected a float32, found 'abc'"), an empty field
// without a default, a text field that is not UTF-8; and file:line:column (the byte in
// the line) for a quote that is never closed or text after a closing quote
// ("data.csv:3:6: expected a delimiter or the end of the line after a closing quote,
// found 'x'"). Throws ValueError for options naming columns that do not exist,
// DTypeError for a column type other than float32, int32, int64 or string.
Tree read_csv(const std::string& path, const CsvOptions& options = {});

// Dataset::from_tensor_slices over read_csv's columns (the file is read once, now):
// each element is a dict of scalars, or a [features, label] pair if label_name is set.
Dataset make_csv_dataset(const std::string& path, const CsvOptions& options = {});

}  // namespace chorus::data
