// String tensors (DType::kString): creation, access, views, copies, equality, printing,
// and the DTypeErrors numeric ops give for them.
#include <filesystem>

#include "chorus/core/creation.h"
#include "chorus/core/tree.h"
#include "chorus/io/safetensors.h"
#include "chorus/ops/ops.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus {
namespace {

using namespace testing::test_names;

// Longer than std::string's small buffer, so a wrong copy or a double free shows.
const std::string kLong(100, 'x');

TEST(StringTensorTest, CreationAndAccess) {
  const Tensor t = Tensor::from_strings(Shape{2, 2}, {"a", "", kLong, "caf\xc3\xa9"});
  EXPECT_EQ(t.dtype(), kString);
  EXPECT_EQ(dtype_name(t.dtype()), "string");
  EXPECT_EQ(t.shape(), (Shape{2, 2}));
  EXPECT_EQ(std::vector<std::string>(t.strings().begin(), t.strings().end()),
            (std::vector<std::string>{"a", "", kLong, "caf\xc3\xa9"}));
  EXPECT_EQ(t.string_at(2), kLong);
  EXPECT_EQ(t.data<std::string>()[3], "caf\xc3\xa9");

  const Tensor scalar = Tensor::from_string("hello");
  EXPECT_EQ(scalar.rank(), 0);
  EXPECT_EQ(scalar.string_at(0), "hello");
  EXPECT_EQ(Tensor::from_strings({"x", "y", "z"}).shape(), (Shape{3}));
  EXPECT_TRUE(array_equal(from_values<std::string>({"p", "q"}), Tensor::from_strings({"p", "q"})));
  // Empty and zero-filled string tensors hold "".
  EXPECT_EQ(Tensor::empty(Shape{3}, kString).string_at(1), "");
  EXPECT_EQ(zeros(Shape{2}, kString).string_at(0), "");
}

TEST(StringTensorTest, BadAccessIsAnError) {
  EXPECT_THAT([] { Tensor::from_strings(Shape{2, 2}, {"a", "b", "c"}); },
              ThrowsMessage<ShapeError>(HasSubstr("Tensor::from_strings: 3 strings cannot fill shape (2, 2) (4 elements)")));
  const Tensor t = Tensor::from_strings({"a", "b"});
  EXPECT_THAT([&] { (void)t.string_at(2); },
              ThrowsMessage<IndexError>(HasSubstr("Tensor::string_at: index 2 is out of range for a string tensor of "
                                                  "shape (2,)")));
  EXPECT_THAT([] { (void)zeros(Shape{2}).strings(); },
              ThrowsMessage<DTypeError>(HasSubstr("Tensor::strings: requested string elements from a tensor of dtype "
                                                  "float32")));
  EXPECT_THAT([&] { (void)t.data<float>(); },
              ThrowsMessage<DTypeError>(HasSubstr("requested float32 elements from a tensor of dtype string")));
  EXPECT_THAT([&] { (void)t.raw_data(); },
              ThrowsMessage<DTypeError>(HasSubstr("Tensor::raw_data: a string tensor (shape (2,)) has no raw bytes")));
  EXPECT_THAT([&] { (void)t.to_vector<float>(); },
              ThrowsMessage<DTypeError>(HasSubstr("visit_dtype: expected a numeric or bool dtype, got string")));
}

TEST(StringTensorTest, ViewsCopiesAndOwnership) {
  Tensor view;
  {
    const Tensor t = Tensor::from_strings(Shape{3, 2}, {"a", "b", kLong, "d", "e", "f"});
    view = t.first_axis_slice(1, 3);  // outlives `t`: the storage keeps the strings alive
    EXPECT_TRUE(view.shares_storage(t));
  }
  EXPECT_EQ(view.shape(), (Shape{2, 2}));
  EXPECT_EQ(view.string_at(0), kLong);
  EXPECT_EQ(view.view(Shape{4}).string_at(3), "f");

  const Tensor copy = view.clone();  // deep: writing it leaves the view alone
  EXPECT_FALSE(copy.shares_storage(view));
  copy.data<std::string>()[0] = "changed";
  EXPECT_EQ(view.string_at(0), kLong);

  const Tensor target = Tensor::empty(Shape{2, 2}, kString);
  target.copy_from(view);
  EXPECT_TRUE(array_equal(target, view));
  EXPECT_THAT([&] { target.copy_from(zeros(Shape{2, 2})); },
              ThrowsMessage<DTypeError>(HasSubstr("expected a source of shape (2, 2) and dtype string, got shape (2, 2) "
                                                  "and dtype float32")));
}

TEST(StringTensorTest, ArrayEqual) {
  const Tensor a = Tensor::from_strings({"a", kLong});
  EXPECT_TRUE(array_equal(a, Tensor::from_strings({"a", kLong})));
  EXPECT_FALSE(array_equal(a, Tensor::from_strings({"a", "b"})));
  EXPECT_FALSE(array_equal(a, Tensor::from_strings(Shape{2, 1}, {"a", kLong})));
  EXPECT_FALSE(array_equal(a, zeros(Shape{2})));
  EXPECT_TRUE(array_equal(from_values<int32_t>({1, 2}), from_values<int32_t>({1, 2})));
  EXPECT_FALSE(array_equal(from_values<float>({1, 2}), from_values<float>({1, 3})));
  EXPECT_TRUE(array_equal(Tensor(), Tensor()));
}

TEST(StringTensorTest, PrintsBytesLiterals) {
  EXPECT_EQ(Tensor::from_string("hello").to_string(), "Tensor(shape=(), dtype=string, device=cpu:0)\nb'hello'");
  EXPECT_EQ(Tensor::from_strings({"a", "it's", "caf\xc3\xa9", "tab\there\n", "back\\slash"}).to_string(),
            "Tensor(shape=(5,), dtype=string, device=cpu:0)\n"
            "[b'a' b'it\\'s' b'caf\\xc3\\xa9' b'tab\\there\\n' b'back\\\\slash']");
  EXPECT_EQ(Tensor::from_strings(Shape{2, 2}, {"a", "bcd", "ef", ""}).to_string(),
            "Tensor(shape=(2, 2), dtype=string, device=cpu:0)\n[[b'a' b'bcd']\n [b'ef' b'']]");
  EXPECT_EQ(Tree({{"text", Tree(Tensor::from_strings({"a"}))}}).to_string(), "{\"text\": (1,) string}");
}

TEST(StringTensorTest, NumericOpsNameTheOpAndTheDtype) {
  const Tensor s = Tensor::from_strings({"a", "b"});
  const Tensor x = zeros(Shape{2});
  EXPECT_THAT([&] { ops::add(s, s); }, ThrowsMessage<DTypeError>(HasSubstr("add: expected a numeric tensor, got dtype string")));
  EXPECT_THAT([&] { ops::multiply(x, s); },
              ThrowsMessage<DTypeError>(HasSubstr("multiply: expected a numeric tensor, got dtype string")));
  EXPECT_THAT([&] { ops::exp(s); }, ThrowsMessage<DTypeError>(HasSubstr("exp: expected a numeric tensor, got dtype string")));
  EXPECT_THAT([&] { ops::equal(s, s); },
              ThrowsMessage<DTypeError>(HasSubstr("equal: expected a numeric tensor, got dtype string")));
  EXPECT_THAT([&] { ops::sum(s); }, ThrowsMessage<DTypeError>(HasSubstr("sum: expected a numeric tensor, got dtype string")));
  EXPECT_THAT([&] { ops::mean(s); },
              ThrowsMessage<DTypeError>(HasSubstr("mean: expected a numeric tensor, got dtype string")));
  EXPECT_THAT([&] { ops::matmul(Tensor::from_strings(Shape{1, 1}, {"a"}), Tensor::from_strings(Shape{1, 1}, {"b"})); },
              ThrowsMessage<DTypeError>(HasSubstr("matmul: expected a numeric tensor, got dtype string")));
  EXPECT_THAT([&] { ops::cast(s, kFloat32); },
              ThrowsMessage<DTypeError>(HasSubstr("cast: expected a numeric tensor, got dtype string")));
  EXPECT_THAT([&] { ops::cast(x, kString); },
              ThrowsMessage<DTypeError>(HasSubstr("cast: expected a numeric target dtype, got string (cannot cast "
                                                  "float32 to string)")));
  EXPECT_THAT([&] { ops::take(s, from_values<int32_t>({0})); },
              ThrowsMessage<DTypeError>(HasSubstr("take: expected a numeric tensor, got dtype string")));
  EXPECT_THAT([&] { full(Shape{2}, 1, kString); },
              ThrowsMessage<DTypeError>(HasSubstr("full: expected a numeric tensor, got dtype string")));
  // Ops without their own check still refuse strings at the first byte access.
  EXPECT_THROW(ops::transpose(Tensor::from_strings(Shape{1, 2}, {"a", "b"}), {1, 0}), DTypeError);
}

TEST(StringTensorTest, SafetensorsRefusesStrings) {
  const std::string path = (std::filesystem::temp_directory_path() / "chorus_string_tensor_test.safetensors").string();
  EXPECT_THAT([&] { io::save_safetensors(path, {{"words", Tensor::from_strings({"a"})}}); },
              ThrowsMessage<DTypeError>(HasSubstr("tensor 'words' has dtype string; expected one of F32, BF16, I32, "
                                                  "I64, BOOL")));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace chorus
