// CSV grammar read here (RFC 4180, with "\n" or "\r\n" endings and a delimiter option):
//   file   = record *(ending record) [ending]
//   record = field *(delimiter field)
//   field  = quoted / plain
//   quoted = '"' *(any byte but '"' / '""') '"'     (may span lines)
//   plain  = *(any byte but delimiter, '\n')         (a '"' inside is kept as is)
// Blank lines between records are skipped. The file is read whole and scanned once;
// plain fields are views into it, quoted ones are unescaped into per-record storage.
// Scanner errors name file:line:column, the column being the 1-based byte in the line.
#include "chorus/data/csv.h"

#include <algorithm>
#include <charconv>
#include <deque>
#include <optional>
#include <string_view>

#include "chorus/core/creation.h"
#include "chorus/core/error.h"
#include "chorus/data/line_reader.h"
#include "chorus/data/utf8.h"

namespace chorus::data {
namespace {

struct Field {
  std::string_view text;
  int64_t line;  // where the field starts (1-based)
};

// Splits a CSV buffer into records. One per read_csv call; not thread-safe.
class CsvScanner {
 public:
  CsvScanner(const std::string& path, std::string_view text, char delimiter)
      : path_(path), text_(text), delimiter_(delimiter) {}

  // The next record's fields (views valid until the next call), false at the end.
  bool next_record(std::vector<Field>& fields);
  // The line where the record last returned starts.
  int64_t record_line() const { return record_line_; }

 private:
  bool at_line_end(size_t pos) const {
    return pos == text_.size() || text_[pos] == '\n' ||
           (text_[pos] == '\r' && (pos + 1 == text_.size() || text_[pos + 1] == '\n'));
  }
  // Moves past the line ending at pos_ (if any).
  void skip_line_end() {
    if (pos_ < text_.size() && text_[pos_] == '\r') ++pos_;
    if (pos_ < text_.size() && text_[pos_] == '\n') ++pos_, ++line_, line_start_ = pos_;
  }
  // The 1-based column of byte `pos` in its line (REQUIRES: pos is on line_).
  size_t column(size_t pos) const { return pos - line_start_ + 1; }
  std::string_view read_quoted();
  std::string_view read_plain();

  const std::string& path_;
  std::string_view text_;
  char delimiter_;
  size_t pos_ = 0;
  int64_t line_ = 1;
  size_t line_start_ = 0;  // where line_ starts
  int64_t record_line_ = 0;
  std::deque<std::string> unescaped_;  // a deque: growing it keeps earlier strings in place
};

bool CsvScanner::next_record(std::vector<Field>& fields) {
  fields.clear();
  unescaped_.clear();
  while (pos_ < text_.size() && at_line_end(pos_)) skip_line_end();
  if (pos_ >= text_.size()) return false;
  record_line_ = line_;
  while (true) {
    const int64_t line = line_;
    const std::string_view text = text_[pos_] == '"' ? read_quoted() : read_plain();
    fields.push_back({text, line});
    if (pos_ < text_.size() && text_[pos_] == delimiter_) {
      ++pos_;
      continue;
    }
    skip_line_end();
    return true;
  }
}

std::string_view CsvScanner::read_quoted() {
  const int64_t opened = line_;
  const size_t opened_column = column(pos_);
  std::string& out = unescaped_.emplace_back();
  ++pos_;  // the opening quote
  while (true) {
    const size_t quote = text_.find('"', pos_);
    if (quote == std::string_view::npos) {
      throw_error<IOError>("{}:{}:{}: a quoted field is never closed (expected '\"' before the end of the file)",
                           path_, opened, opened_column);
    }
    const std::string_view part = text_.substr(pos_, quote - pos_);
    line_ += std::count(part.begin(), part.end(), '\n');
    if (const size_t newline = part.rfind('\n'); newline != std::string_view::npos) line_start_ = pos_ + newline + 1;
    out.append(part);
    pos_ = quote + 1;
    if (pos_ < text_.size() && text_[pos_] == '"') {  // a doubled quote stands for one
      out.push_back('"');
      ++pos_;
      continue;
    }
    break;
  }
  if (!at_line_end(pos_) && text_[pos_] != delimiter_) {
    throw_error<IOError>("{}:{}:{}: expected a delimiter or the end of the line after a closing quote, found '{}'",
                         path_, line_, column(pos_), text_[pos_]);
  }
  return out;
}

std::string_view CsvScanner::read_plain() {
  const size_t start = pos_;
  while (pos_ < text_.size() && text_[pos_] != delimiter_ && text_[pos_] != '\n') ++pos_;
  std::string_view field = text_.substr(start, pos_ - start);
  if (pos_ == text_.size() || text_[pos_] == '\n') field = strip_cr(field);
  return field;
}

// One output column: where it is in the record, its type, default and values.
struct Column {
  std::string name;
  size_t index = 0;
  DType dtype = kFloat32;
  std::optional<double> default_value;
  std::vector<float> floats;
  std::vector<int32_t> int32s;
  std::vector<int64_t> int64s;
  std::vector<std::string> strings;
  // Inferred columns keep their fields until every record is read.
  bool infer = false;
  std::vector<std::string> texts;
  std::vector<int64_t> lines;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Parses a whole field as T; false if any of it is left over or out of range.
template <class T>
bool parse_number(std::string_view s, T& value) {
  s = trim(s);
  if (s.size() > 1 && s[0] == '+' && s[1] != '-') s.remove_prefix(1);
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size();
}

// "a float32", "an int32": the message reads as English.
std::string a_dtype(DType dtype) {
  return fmt::format("{} {}", dtype == kFloat32 ? "a" : "an", dtype_name(dtype));
}

template <class T>
void append(Column& column, std::vector<T>& out, const Field& field, const std::string& path) {
  if (trim(field.text).empty()) {
    if (!column.default_value) {
      throw_error<IOError>("{}:{}: column '{}': expected {}, found an empty field and no default "
                           "(set CsvOptions::column_defaults)",
                           path, field.line, column.name, a_dtype(column.dtype));
    }
    out.push_back(static_cast<T>(*column.default_value));
    return;
  }
  T value{};
  if (!parse_number(field.text, value)) {
    throw_error<IOError>("{}:{}: column '{}': expected {}, found '{}'", path, field.line, column.name,
                         a_dtype(column.dtype), field.text);
  }
  out.push_back(value);
}

// A text field as it is (an empty one is ""), once it is known to be UTF-8.
void append_string(Column& column, const Field& field, const std::string& path) {
  if (const std::optional<size_t> bad = find_invalid_utf8(field.text)) {
    throw_error<IOError>("{}:{}: column '{}': expected UTF-8 text, found the byte {:#04x} at byte {} of the field",
                         path, field.line, column.name, static_cast<unsigned char>(field.text[*bad]), *bad);
  }
  column.strings.emplace_back(field.text);
}

void append_field(Column& column, const Field& field, const std::string& path) {
  if (column.infer) {
    column.texts.emplace_back(field.text);
    column.lines.push_back(field.line);
    return;
  }
  switch (column.dtype) {
    case kInt32: return append(column, column.int32s, field, path);
    case kInt64: return append(column, column.int64s, field, path);
    case kString: return append_string(column, field, path);
    default: return append(column, column.floats, field, path);
  }
}

// The narrowest of int32, int64, float32 and string that reads every non-empty field of
// `texts` (tf.data's make_csv_dataset rule, without float64); `fallback` when all are empty.
DType infer_dtype(const std::vector<std::string>& texts, DType fallback) {
  bool any = false, int32_ok = true, int64_ok = true, float_ok = true;
  for (const std::string& text : texts) {
    if (trim(text).empty()) continue;
    any = true;
    int32_t i32;
    int64_t i64;
    float f;
    int32_ok = int32_ok && parse_number(text, i32);
    int64_ok = int64_ok && parse_number(text, i64);
    float_ok = float_ok && parse_number(text, f);
    if (!float_ok) return kString;
  }
  if (!any) return fallback;
  return int32_ok ? kInt32 : int64_ok ? kInt64 : kFloat32;
}

// Types an inferred column and parses the fields it kept.
void finish_inferred(Column& column, DType fallback, const std::string& path) {
  column.dtype = infer_dtype(column.texts, fallback);
  column.infer = false;
  for (size_t i = 0; i < column.texts.size(); ++i) append_field(column, {column.texts[i], column.lines[i]}, path);
  column.texts.clear();
  column.lines.clear();
}

Tensor to_tensor(const Column& column) {
  switch (column.dtype) {
    case kInt32: return from_values(column.int32s, {static_cast<int64_t>(column.int32s.size())});
    case kInt64: return from_values(column.int64s, {static_cast<int64_t>(column.int64s.size())});
    case kString: return Tensor::from_strings(column.strings);
    default: return from_values(column.floats, {static_cast<int64_t>(column.floats.size())});
  }
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

void check_dtype(const std::string& path, const std::string& name, DType dtype) {
  if (dtype != kFloat32 && dtype != kInt32 && dtype != kInt64 && dtype != kString) {
    throw_error<DTypeError>(
        "read_csv: {}: column '{}': expected a column type of float32, int32, int64 or string, got {}", path, name,
        dtype_name(dtype));
  }
}

// The names of the file's columns, from options or from the header record.
std::vector<std::string> column_names(const std::string& path, const CsvOptions& options, CsvScanner& scanner,
                                      std::vector<Field>& fields) {
  std::vector<std::string> names = options.column_names;
  if (options.header) {
    if (!scanner.next_record(fields)) {
      throw_error<IOError>("{}: expected a header row, found an empty file", path);
    }
    if (names.empty()) {
      for (const Field& field : fields) names.emplace_back(field.text);
    } else if (names.size() != fields.size()) {
      throw_error<ValueError>("read_csv: {}: CsvOptions::column_names has {} names, but the header has {} columns",
                              path, names.size(), fields.size());
    }
  } else if (names.empty()) {
    throw_error<ValueError>("read_csv: {}: expected CsvOptions::column_names when header is false", path);
  }
  for (size_t i = 0; i < names.size(); ++i) {
    if (std::find(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(i), names[i]) !=
        names.begin() + static_cast<std::ptrdiff_t>(i)) {
      throw_error<IOError>("{}:1: column '{}' appears twice", path, names[i]);
    }
  }
  return names;
}

size_t index_of(const std::vector<std::string>& names, const std::string& name, const std::string& path,
                const char* option) {
  const auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) {
    throw_error<ValueError>("read_csv: {}: CsvOptions::{} names '{}', which is not a column (columns: {})", path,
                            option, name, join(names));
  }
  return static_cast<size_t>(it - names.begin());
}

// The output columns in file order, with their types and defaults checked.
std::vector<Column> plan_columns(const std::vector<std::string>& names, const CsvOptions& options,
                                 const std::string& path) {
  for (const auto& [name, dtype] : options.column_types) {
    index_of(names, name, path, "column_types");
    check_dtype(path, name, dtype);
  }
  for (const auto& entry : options.column_defaults) index_of(names, entry.first, path, "column_defaults");
  check_dtype(path, "(default_dtype)", options.default_dtype);
  std::vector<bool> selected(names.size(), options.select_columns.empty());
  for (const std::string& name : options.select_columns) selected[index_of(names, name, path, "select_columns")] = true;
  std::vector<Column> columns;
  for (size_t i = 0; i < names.size(); ++i) {
    if (!selected[i]) continue;
    Column& column = columns.emplace_back();
    column.name = names[i];
    column.index = i;
    const auto type = options.column_types.find(names[i]);
    column.dtype = type != options.column_types.end() ? type->second : options.default_dtype;
    column.infer = options.infer_column_types && type == options.column_types.end();
    const auto value = options.column_defaults.find(names[i]);
    if (value != options.column_defaults.end()) column.default_value = value->second;
  }
  return columns;
}

}  // namespace

Tree read_csv(const std::string& path, const CsvOptions& options) {
  const std::string text = read_file(path);
  CsvScanner scanner(path, text, options.delimiter);
  std::vector<Field> fields;
  const std::vector<std::string> names = column_names(path, options, scanner, fields);
  std::vector<Column> columns = plan_columns(names, options, path);
  while (scanner.next_record(fields)) {
    if (fields.size() != names.size()) {
      throw_error<IOError>("{}:{}: expected {} fields, found {}", path, scanner.record_line(), names.size(),
                           fields.size());
    }
    for (Column& column : columns) append_field(column, fields[column.index], path);
  }
  for (Column& column : columns) {
    if (column.infer) finish_inferred(column, options.default_dtype, path);
  }
  Tree out;
  for (const Column& column : columns) out[column.name] = to_tensor(column);
  return out;
}

Dataset make_csv_dataset(const std::string& path, const CsvOptions& options) {
  Tree columns = read_csv(path, options);
  if (options.label_name.empty()) return Dataset::from_tensor_slices(columns);
  if (!columns.contains(options.label_name)) {
    throw_error<ValueError>("make_csv_dataset: {}: label_name '{}' is not a column that is read", path,
                            options.label_name);
  }
  Tree features;
  for (const auto& [name, column] : columns.dict()) {
    if (name != options.label_name) features[name] = column;
  }
  return Dataset::from_tensor_slices(Tree::list({features, columns[options.label_name]}));
}

}  // namespace chorus::data
