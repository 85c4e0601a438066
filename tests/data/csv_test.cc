#include "chorus/data/csv.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include <fmt/format.h>

#include "tests/testing/temp_dir.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus::data {
namespace {

using namespace testing::test_names;

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
              ThrowsMessage<IOError>(HasSubstr("u.csv:2:1: a quoted field is never closed")));
  EXPECT_THAT([&] { read_csv(write("t.csv", "a,b\n\"1\"x,2\n")); },
              ThrowsMessage<IOError>(HasSubstr("t.csv:2:4: expected a delimiter or the end of the line after a closing "
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
              ThrowsMessage<DTypeError>(HasSubstr("column 'a': expected a column type of float32, int32, int64 or "
                                                  "string, got bool")));
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

TEST_F(CsvTest, TextColumnsAreStrings) {
  // Quoted text with the delimiter, a doubled quote and a newline; an empty field is "".
  const std::string path = write("reviews.csv",
                                 "stars,text\n"
                                 "5,\"Great, \"\"really\"\"\"\n"
                                 "1,\"two\nlines\"\n"
                                 "3,\n"
                                 "4,caf\xc3\xa9\n");
  const Tree columns = read_csv(path, {.column_types = {{"stars", kInt32}, {"text", kString}}});
  const Tensor text = columns["text"].tensor();
  EXPECT_EQ(text.dtype(), kString);
  EXPECT_TRUE(array_equal(text, Tensor::from_strings({"Great, \"really\"", "two\nlines", "", "caf\xc3\xa9"})));
  // make_csv_dataset: a record per element, its text a scalar string.
  auto it = make_csv_dataset(path, {.column_types = {{"text", kString}}, .label_name = "stars"}).iterator();
  const Tree first = *it.next();
  EXPECT_EQ(first[0]["text"].tensor().string_at(0), "Great, \"really\"");
  EXPECT_EQ(first[1].tensor().item<float>(), 5);
}

TEST_F(CsvTest, InferredColumnTypes) {
  const std::string path = write("mixed.csv",
                                 "small,big,real,word,blank\n"
                                 "1,3000000000,1,a,\n"
                                 "-2,4,2.5,7,\n"
                                 ",5,,\"x,y\",\n");
  const Tree columns =
      read_csv(path, {.infer_column_types = true, .column_defaults = {{"small", 0}, {"real", 0}, {"blank", 0}}});
  EXPECT_EQ(columns["small"].tensor().dtype(), kInt32);
  EXPECT_EQ(columns["small"].tensor().to_vector<int32_t>(), (std::vector<int32_t>{1, -2, 0}));
  EXPECT_EQ(columns["big"].tensor().dtype(), kInt64);
  EXPECT_EQ(columns["real"].tensor().dtype(), kFloat32);
  EXPECT_EQ(columns["word"].tensor().dtype(), kString);
  EXPECT_TRUE(array_equal(columns["word"].tensor(), Tensor::from_strings({"a", "7", "x,y"})));
  EXPECT_EQ(columns["blank"].tensor().dtype(), kFloat32);  // only empty fields: default_dtype
  // An explicit type wins over inference.
  const Tree typed = read_csv(path, {.select_columns = {"small"}, .column_types = {{"small", kString}},
                                     .infer_column_types = true});
  EXPECT_TRUE(array_equal(typed["small"].tensor(), Tensor::from_strings({"1", "-2", ""})));
}

TEST_F(CsvTest, BadTextNamesFileLineAndColumn) {
  EXPECT_THAT([&] { read_csv(write("utf.csv", "id,text\n1,ok\n2,ab\xff\n"), {.column_types = {{"text", kString}}}); },
              ThrowsMessage<IOError>(HasSubstr("utf.csv:3: column 'text': expected UTF-8 text, found the byte 0xff at "
                                               "byte 2 of the field")));
  EXPECT_THAT([&] {
    read_csv(write("q.csv", "id,text\n1,\"fine\"\n2,\"bad\"quote\n"), {.column_types = {{"text", kString}}});
  },
              ThrowsMessage<IOError>(HasSubstr("q.csv:3:8: expected a delimiter or the end of the line after a closing "
                                               "quote, found 'q'")));
  EXPECT_THAT([&] { read_csv(write("open.csv", "id,text\n1,x\n2,\"open\n"), {.column_types = {{"text", kString}}}); },
              ThrowsMessage<IOError>(HasSubstr("open.csv:3:3: a quoted field is never closed")));
}

}  // namespace
}  // namespace chorus::data
