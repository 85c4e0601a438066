#include "chorus/data/csv.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include <fmt/format.h>

#include "tests/testing/temp_dir.h"
#include "tests/testing/test_util.h"

namespace chorus::data {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

class CsvTest : public testing::TempDirTest {};

TEST_F(CsvTest, TypedColumnsMatchTheWrittenValues) {
  // 1023 random rows written with fmt, read back and compared row by row.
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> price(-1e4f, 1e4f);
  std::string text = "id,price,views\n";
  std::vector<int32_t> ids;
  std::vector<float> prices;
  std::vector<int64_t> views;
  for (int i = 0; i < 1023; ++i) {
    ids.push_back(static_cast<int32_t>(rng()));
    prices.push_back(price(rng));
    views.push_back(static_cast<int64_t>(rng()) * 1000003);
    text += fmt::format("{},{},{}\n", ids.back(), prices.back(), views.back());
  }
  const Tree columns = read_csv(write("data.csv", text), {.column_types = {{"id", kInt32}, {"views", kInt64}}});
  EXPECT_EQ(columns["id"].tensor().to_vector<int32_t>(), ids);
  EXPECT_EQ(columns["price"].tensor().to_vector<float>(), prices);  // fmt prints floats round-trippably
  EXPECT_EQ(columns["views"].tensor().to_vector<int64_t>(), views);
  EXPECT_EQ(columns["price"].tensor().dtype(), kFloat32);
}

TEST_F(CsvTest, QuotingEdgeCases) {
  // Quoted fields holding the delimiter, a doubled quote and a newline; CRLF endings;
  // a quote inside a plain field; no ending on the last line.
  const std::string path = write("q.csv",
                                 "name,\"x,1\",y\r\n"
                                 "\"a, \"\"b\"\"\",\"1.5\",2\r\n"
                                 "\"multi\nline\",\"-3\",4\r\n"
                                 "plain\"quote,\"\",5");
  const Tree all_but_name = read_csv(path, {.select_columns = {"x,1", "y"}, .column_defaults = {{"x,1", 9}}});
  EXPECT_EQ(all_but_name["x,1"].tensor().to_vector<float>(), (std::vector<float>{1.5f, -3, 9}));
  EXPECT_EQ(all_but_name["y"].tensor().to_vector<float>(), (std::vector<float>{2, 4, 5}));
  EXPECT_FALSE(all_but_name.contains("name"));
  // Line numbers count the newline inside the quoted field: row 3 starts on line 4.
  const std::string bad = write("bad.csv", "a,b\n\"x\ny\",1\nz,oops\n");
  EXPECT_THAT([&] { read_csv(bad, {.select_columns = {"b"}}); },
              ThrowsMessage<IOError>(HasSubstr("bad.csv:4: column 'b': expected a float32, found 'oops'")));
}

TEST_F(CsvTest, HeaderlessFilesAndOtherDelimiters) {
  const std::string path = write("t.tsv", "1\t2.5\n\n3\t-4e2\n");
  const Tree columns = read_csv(path, {.delimiter = '\t', .header = false, .column_names = {"a", "b"},
                                       .column_types = {{"a", kInt64}}});
  EXPECT_EQ(columns["a"].tensor().to_vector<int64_t>(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(columns["b"].tensor().to_vector<float>(), (std::vector<float>{2.5f, -400}));
  // column_names replace the header's names.
  const Tree renamed = read_csv(write("h.csv", "x,y\n1,2\n"), {.column_names = {"p", "q"}});
  EXPECT_EQ(renamed["q"].tensor().to_vector<float>(), (std::vector<float>{2}));
  EXPECT_THAT([&] { read_csv(path, {.header = false}); },
              ThrowsMessage<ValueError>(HasSubstr("t.tsv: expected CsvOptions::column_names when header is false")));
  EXPECT_THAT([&] { read_csv(write("h2.csv", "x,y\n"), {.column_names = {"p"}}); },
              ThrowsMessage<ValueError>(HasSubstr("CsvOptions::column_names has 1 names, but the header has 2 columns")));
}

TEST_F(CsvTest, EmptyFieldsUseDefaultsOrFail) {
  const std::string path = write("e.csv", "a,b,c\n1,,3\n, 5 ,\n");
  const Tree columns = read_csv(path, {.column_types = {{"c", kInt32}},
                                       .column_defaults = {{"a", -1}, {"b", 0.5}, {"c", 7}}});
  EXPECT_EQ(columns["a"].tensor().to_vector<float>(), (std::vector<float>{1, -1}));
  EXPECT_EQ(columns["b"].tensor().to_vector<float>(), (std::vector<float>{0.5f, 5}));
  EXPECT_EQ(columns["c"].tensor().to_vector<int>(), (std::vector<int>{3, 7}));
  EXPECT_THAT([&] { read_csv(path, {.column_defaults = {{"a", -1}, {"c", 7}}}); },
              ThrowsMessage<IOError>(HasSubstr("e.csv:2: column 'b': expected a float32, found an empty field and no "
                                               "default (set CsvOptions::column_defaults)")));
}

TEST_F(CsvTest, BadInputNamesFileLineAndColumn) {
  EXPECT_THAT([&] { read_csv(write("data.csv", "item,price\n1,2\n2,abc\n")); },
              ThrowsMessage<IOError>(HasSubstr("data.csv:3: column 'price': expected a float32, found 'abc'")));
  EXPECT_THAT([&] { read_csv(write("i.csv", "n\n1.5\n"), {.default_dtype = kInt32}); },
              ThrowsMessage<IOError>(HasSubstr("i.csv:2: column 'n': expected an int32, found '1.5'")));
  EXPECT_THAT([&] { read_csv(write("o.csv", "n\n3000000000\n"), {.default_dtype = kInt32}); },
              ThrowsMessage<IOError>(HasSubstr("o.csv:2: column 'n': expected an int32, found '3000000000'")));
  EXPECT_THAT([&] { read_csv(write("f.csv", "a,b,c,d\n1,2,3,4\n1,2,3\n")); },
              ThrowsMessage<IOError>(HasSubstr("f.csv:3: expected 4 fields, found 3")));
  EXPECT_THAT([&] { read_csv(write("u.csv", "a\n\"never closed\n1\n")); },
              ThrowsMessage<IOError>(HasSubstr("u.csv:2: a quoted field is never closed")));
  EXPECT_THAT([&] { read_csv(write("t.csv", "a,b\n\"1\"x,2\n")); },
              ThrowsMessage<IOError>(HasSubstr("t.csv:2: expected a delimiter or the end of the line after a closing "
                                               "quote, found 'x'")));
  EXPECT_THAT([&] { read_csv(write("empty.csv", "")); },
              ThrowsMessage<IOError>(HasSubstr("empty.csv: expected a header row, found an empty file")));
  EXPECT_THAT([&] { read_csv(write("dup.csv", "a,a\n")); },
              ThrowsMessage<IOError>(HasSubstr("dup.csv:1: column 'a' appears twice")));
  EXPECT_THAT([&] { read_csv((dir_ / "none.csv").string()); },
              ThrowsMessage<IOError>(HasSubstr("none.csv: cannot open: No such file or directory")));
}

TEST_F(CsvTest, OptionsNamingUnknownColumnsOrTypes) {
  const std::string path = write("o.csv", "a,b\n1,2\n");
  EXPECT_THAT([&] { read_csv(path, {.select_columns = {"c"}}); },
              ThrowsMessage<ValueError>(HasSubstr("CsvOptions::select_columns names 'c', which is not a column "
                                                  "(columns: a, b)")));
  EXPECT_THAT([&] { read_csv(path, {.column_types = {{"z", kInt32}}}); },
              ThrowsMessage<ValueError>(HasSubstr("CsvOptions::column_types names 'z'")));
  EXPECT_THAT([&] { read_csv(path, {.column_defaults = {{"z", 1}}}); },
              ThrowsMessage<ValueError>(HasSubstr("CsvOptions::column_defaults names 'z'")));
  EXPECT_THAT([&] { read_csv(path, {.column_types = {{"a", kBool}}}); },
              ThrowsMessage<DTypeError>(HasSubstr("column 'a': expected a column type of float32, int32 or int64, got "
                                                  "bool")));
}

TEST_F(CsvTest, DatasetOfRecordsOrFeatureLabelPairs) {
  const std::string path = write("h.csv", "rooms,area,price,street\n3,70.5,250,\"Main St, 1\"\n5,120,410,Elm\n");
  const CsvOptions options{.select_columns = {"rooms", "area", "price"}, .column_types = {{"rooms", kInt32}}};
  auto records = make_csv_dataset(path, options).iterator();
  const Tree first = *records.next();
  EXPECT_EQ(first.to_string(), "{\"area\": () float32, \"price\": () float32, \"rooms\": () int32}");
  EXPECT_EQ(first["area"].tensor().item<float>(), 70.5f);

  CsvOptions labelled = options;
  labelled.label_name = "price";
  const Dataset pairs = make_csv_dataset(path, labelled);
  EXPECT_EQ(pairs.cardinality(), 2);
  auto it = pairs.iterator();
  it.next();
  const Tree second = *it.next();
  EXPECT_EQ(second.to_string(), "[{\"area\": () float32, \"rooms\": () int32}, () float32]");
  EXPECT_EQ(second[0]["rooms"].tensor().item<int>(), 5);
  EXPECT_EQ(second[1].tensor().item<float>(), 410);
  labelled.label_name = "street";
  EXPECT_THAT([&] { make_csv_dataset(path, labelled); },
              ThrowsMessage<ValueError>(HasSubstr("make_csv_dataset: " + path + ": label_name 'street' is not a column "
                                                  "that is read")));
}

TEST_F(CsvTest, HeaderOnlyGivesEmptyColumns) {
  const Tree columns = read_csv(write("h.csv", "a,b\r\n"));
  EXPECT_EQ(columns["a"].tensor().shape(), Shape({0}));
}

}  // namespace
}  // namespace chorus::data
