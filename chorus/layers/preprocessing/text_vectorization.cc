#include "chorus/layers/preprocessing/text_vectorization.h"

#include <array>

#include "chorus/core/creation.h"
#include "chorus/layers/layer_util.h"
#include "chorus/layers/preprocessing/preprocessing_util.h"
#include "chorus/text/regex.h"
#include "chorus/text/strings.h"
#include "chorus/text/unicode.h"

namespace chorus::layers {
namespace {

// Keras's DEFAULT_STRIP_REGEX: the ASCII punctuation strip_punctuation removes.
constexpr const char* kStripRegex = R"([!"#$%&()\*\+,-\./:;<=>?@\[\\\]^_`{|}~\'])";

constexpr std::array<std::pair<Standardize, const char*>, 3> kStandardizeNames = {{
    {Standardize::kLowerAndStripPunctuation, "lower_and_strip_punctuation"},
    {Standardize::kLower, "lower"},
    {Standardize::kStripPunctuation, "strip_punctuation"},
}};
constexpr std::array<std::pair<Split, const char*>, 2> kSplitNames = {{
    {Split::kWhitespace, "whitespace"},
    {Split::kCharacter, "character"},
}};

// The enum named `value` in `names`, kNone for null; ValueError naming `key` otherwise.
template <class E, size_t N>
E enum_from_json(const nlohmann::json& value, const std::array<std::pair<E, const char*>, N>& names, const char* key) {
  if (value.is_null()) return E::kNone;
  std::string accepted;
  for (const auto& [e, name] : names) {
    if (value.is_string() && value.get<std::string>() == name) return e;
    accepted += std::string(accepted.empty() ? "" : ", ") + name;
  }
  throw_error<ValueError>("TextVectorization: unknown {} {}; expected one of {} or null (a custom callable cannot "
                          "be rebuilt from a config: build the layer in code with custom_{} and load its weights)",
                          key, value.dump(), accepted, key);
}

template <class E, size_t N>
nlohmann::json enum_to_json(E e, const std::array<std::pair<E, const char*>, N>& names) {
  for (const auto& [value, name] : names) {
    if (value == e) return name;
  }
  return nullptr;
}

std::string standardize(std::string text, Standardize mode, const text::Regex& strip) {
  if (mode == Standardize::kLower || mode == Standardize::kLowerAndStripPunctuation) {
    text = text::strings::lower(text);
  }
  if (mode == Standardize::kStripPunctuation || mode == Standardize::kLowerAndStripPunctuation) {
    text = strip.replace(text, "");
  }
  return text;
}

// One code point per token (tf.strings.unicode_split, invalid bytes replaced by U+FFFD).
std::vector<std::string> split_characters(const std::string& text) {
  const std::string valid = text::is_valid_utf8(text) ? text : text::replace_invalid_utf8(text);
  std::vector<std::string> out;
  for (size_t pos = 0; pos < valid.size();) {
    const size_t start = pos;
    text::decode_utf8(valid, pos);
    out.push_back(valid.substr(start, pos - start));
  }
  return out;
}

// tf.strings.ngrams(tokens, widths, separator=" ") of one row: every width's windows in turn.
std::vector<std::string> ngrams(const std::vector<std::string>& tokens, const std::vector<int>& widths) {
  std::vector<std::string> out;
  for (int n : widths) {
    for (size_t i = 0; i + static_cast<size_t>(n) <= tokens.size(); ++i) {
      std::string gram = tokens[i];
      for (size_t k = 1; k < static_cast<size_t>(n); ++k) gram += " " + tokens[i + k];
      out.push_back(std::move(gram));
    }
  }
  return out;
}

}  // namespace

TextVectorization::TextVectorization(TextVectorizationOptions options)
    : TextVectorization(std::move(options), std::nullopt) {}

TextVectorization::TextVectorization(TextVectorizationOptions options, std::optional<bool> has_input_vocabulary)
    : Layer("TextVectorization", options.name),
      options_(std::move(options)),
      strip_(std::make_shared<const text::Regex>(kStripRegex)) {
  const OutputMode mode = options_.output_mode;
  if (mode != OutputMode::kInt && options_.output_sequence_length) {
    throw_error<ValueError>("TextVectorization: output_sequence_length is only used with output_mode int. Received: "
                            "output_mode={}, output_sequence_length={}",
                            output_mode_name(mode), *options_.output_sequence_length);
  }
  if (options_.output_sequence_length && *options_.output_sequence_length < 1) {
    throw_error<ValueError>("TextVectorization: expected output_sequence_length >= 1. Received: "
                            "output_sequence_length={}",
                            *options_.output_sequence_length);
  }
  if (mode != OutputMode::kInt && options_.ragged) {
    throw_error<ValueError>("TextVectorization: ragged is only used with output_mode int. Received: output_mode={}",
                            output_mode_name(mode));
  }
  for (int n : options_.ngrams) {
    if (n < 1) {
      throw_error<ValueError>("TextVectorization: expected ngram widths >= 1. Received: ngrams={}",
                              nlohmann::json(options_.ngrams).dump());
    }
  }
  detail::IndexLookupConfig<std::string> lookup;
  lookup.max_tokens = options_.max_tokens;
  lookup.mask_token = "";
  lookup.oov_token = "[UNK]";
  lookup.vocabulary = std::move(options_.vocabulary);
  lookup.vocabulary_file = std::move(options_.vocabulary_file);
  lookup.idf_weights = std::move(options_.idf_weights);
  lookup.output_mode = mode;
  lookup.pad_to_max_tokens = options_.pad_to_max_tokens;
  lookup.name = name();
  lookup.has_input_vocabulary = has_input_vocabulary;
  try {
    lookup_.reset(new StringLookup(detail::FullConfig{}, std::move(lookup)));
  } catch (const ValueError& e) {  // the lookup's checks, under this class's name
    std::string message = e.what();
    if (message.rfind("StringLookup", 0) == 0) message.replace(0, 12, "TextVectorization");
    throw ValueError(message);
  }
  options_.vocabulary.clear();
  options_.vocabulary_file.clear();
  options_.idf_weights.clear();
}

RaggedTensor TextVectorization::preprocess(const Tensor& inputs) const {
  if (!is_string(inputs.dtype())) {
    throw_error<DTypeError>("{}: expected a string tensor, got dtype {}", name(), dtype_name(inputs.dtype()));
  }
  const bool split = options_.split != Split::kNone || options_.custom_split;
  const Shape& shape = inputs.shape();
  if (split ? shape.rank() > 2 || (shape.rank() == 2 && shape[1] != 1) : shape.rank() > 2) {
    throw_error<ValueError>("{}: {}. Received: inputs of shape {}", name(),
                            split ? "to split strings into tokens the input rank must be 1, or 2 with a last "
                                    "dimension of 1"
                                  : "without split the input rank must be at most 2 (rows of tokens)",
                            shape.to_string());
  }
  const auto texts = inputs.strings();
  const int64_t rows = shape.rank() == 0 ? 1 : shape[0];
  const int64_t per_row = rows == 0 ? 0 : static_cast<int64_t>(texts.size()) / rows;
  std::vector<std::string> values;
  std::vector<int64_t> lengths;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<std::string> tokens;
    for (int64_t k = 0; k < per_row; ++k) {
      const std::string& input = texts[static_cast<size_t>(r * per_row + k)];
      std::string text = options_.custom_standardize ? options_.custom_standardize(input)
                                                     : standardize(input, options_.standardize, *strip_);
      if (options_.custom_split) {
        for (std::string& token : options_.custom_split(text)) tokens.push_back(std::move(token));
      } else if (options_.split == Split::kWhitespace) {
        for (std::string& token : text::strings::split(text)) tokens.push_back(std::move(token));
      } else if (options_.split == Split::kCharacter) {
        for (std::string& token : split_characters(text)) tokens.push_back(std::move(token));
      } else {
        tokens.push_back(std::move(text));
      }
    }
    if (!options_.ngrams.empty()) tokens = ngrams(tokens, options_.ngrams);
    lengths.push_back(static_cast<int64_t>(tokens.size()));
    for (std::string& token : tokens) values.push_back(std::move(token));
  }
  return RaggedTensor::from_row_lengths(Tensor::from_strings(std::move(values)), from_values(lengths, Shape{rows}));
}

Tree TextVectorization::call(const Tree& inputs, bool /*training*/) {
  const Tensor& x = detail::single_input(inputs, name());
  const RaggedTensor rows = preprocess(x);
  const Tree looked_up = lookup_->lookup(rows.to_tree());
  const bool single = x.rank() == 0;
  if (options_.output_mode != OutputMode::kInt) {
    const Tensor& encoded = looked_up.tensor();  // (rows, depth)
    return single ? encoded.view(Shape{encoded.dim(1)}) : encoded;
  }
  RaggedTensor indices = RaggedTensor::from_tree(looked_up);
  const std::optional<int64_t> length = options_.output_sequence_length;
  if (options_.ragged && !single) {
    if (!length) return indices.to_tree();
    std::vector<Tensor> truncated;  // rows cut to `length`
    for (int64_t r = 0; r < indices.nrows(); ++r) {
      const Tensor row = indices.row(r);
      truncated.push_back(row.first_axis_slice(0, std::min(row.dim(0), *length)));
    }
    if (truncated.empty()) return indices.to_tree();
    return RaggedTensor::from_rows(truncated).to_tree();
  }
  if (options_.split == Split::kNone && !options_.custom_split && options_.ngrams.empty() && !length && !single) {
    return indices.values().view(x.shape());  // one index per input string, in its shape
  }
  const Tensor dense = indices.to_tensor(Tensor(), length ? std::vector<int64_t>{-1, *length} : std::vector<int64_t>{});
  return single ? dense.view(Shape{dense.dim(1)}) : dense;
}

void TextVectorization::adapt(const Tensor& data) {
  if (!data.defined() || data.numel() == 0) {
    throw_error<ValueError>("{}: adapt was given an empty tensor of shape {}; expected texts to learn the vocabulary "
                            "from",
                            name(), data.defined() ? data.shape().to_string() : std::string("(undefined)"));
  }
  const Tree rows = preprocess(data).to_tree();  // one document per string
  lookup_->adapt(data::Dataset::from_generator(
      [rows](int64_t) {
        return [rows, done = false]() mutable -> std::optional<Tree> {
          if (done) return std::nullopt;
          done = true;
          return rows;
        };
      },
      1));
}

void TextVectorization::adapt(const data::Dataset& data, std::optional<int64_t> steps) {
  const std::string who = name();
  lookup_->adapt(data.map([this, who](const Tree& batch) -> Tree {
    if (!batch.is_tensor()) {
      throw_error<ValueError>("{}: adapt expected each dataset element to be a string tensor, got {}", who,
                              batch.to_string());
    }
    return preprocess(batch.tensor()).to_tree();
  }),
                 steps);
}

nlohmann::json TextVectorization::get_config() const {
  nlohmann::json config = Layer::get_config();
  const nlohmann::json lookup = lookup_->get_config();
  config["max_tokens"] = lookup["max_tokens"];
  const nlohmann::json custom = {{"class_name", "function"}, {"config", "custom"}};
  config["standardize"] = options_.custom_standardize ? custom : enum_to_json(options_.standardize, kStandardizeNames);
  config["split"] = options_.custom_split ? custom : enum_to_json(options_.split, kSplitNames);
  config["ngrams"] = options_.ngrams.empty() ? nlohmann::json() : nlohmann::json(options_.ngrams);
  config["output_mode"] = output_mode_name(options_.output_mode);
  config["output_sequence_length"] =
      options_.output_sequence_length ? nlohmann::json(*options_.output_sequence_length) : nlohmann::json();
  config["pad_to_max_tokens"] = options_.pad_to_max_tokens;
  config["sparse"] = false;
  config["ragged"] = options_.ragged;
  config["vocabulary"] = lookup["vocabulary"];
  config["idf_weights"] = lookup["idf_weights"];
  config["encoding"] = "utf-8";
  config["vocabulary_size"] = lookup["vocabulary_size"];
  config["has_input_vocabulary"] = lookup["has_input_vocabulary"];
  return config;
}

std::shared_ptr<TextVectorization> TextVectorization::from_config(const nlohmann::json& config) {
  constexpr const char* kClass = "TextVectorization";
  ConfigReader r(kClass, config);
  TextVectorizationOptions o;
  o.max_tokens = r.optional<int64_t>("max_tokens");
  if (const nlohmann::json* standardize = r.find("standardize")) {
    o.standardize = enum_from_json(*standardize, kStandardizeNames, "standardize");
  }
  if (const nlohmann::json* split = r.find("split")) o.split = enum_from_json(*split, kSplitNames, "split");
  if (const nlohmann::json* ngrams = r.find("ngrams"); ngrams != nullptr && ngrams->is_number_integer()) {
    for (int n = 1; n <= r.value<int>("ngrams", 0); ++n) o.ngrams.push_back(n);  // Keras's ngrams=N: widths 1..N
  } else {
    o.ngrams = r.value<std::vector<int>>("ngrams", {});
  }
  o.output_mode = parse_output_mode(r.string("output_mode", "int"), kClass);
  o.output_sequence_length = r.optional<int64_t>("output_sequence_length");
  o.pad_to_max_tokens = r.boolean("pad_to_max_tokens", false);
  o.vocabulary = r.value<std::vector<std::string>>("vocabulary", {});
  o.idf_weights = r.value<std::vector<float>>("idf_weights", {});
  o.ragged = r.boolean("ragged", false);
  if (r.boolean("sparse", false)) {
    throw_error<ValueError>("TextVectorization: sparse outputs are not supported (chorus has no SparseTensor). "
                            "Received: sparse=true");
  }
  const std::string encoding = r.string("encoding", "utf-8");
  if (encoding != "utf-8") {
    throw_error<ValueError>("TextVectorization: only the utf-8 encoding is supported. Received: encoding={}", encoding);
  }
  o.name = detail::config_name(r);
  std::optional<bool> has_input_vocabulary;
  if (r.has("has_input_vocabulary")) has_input_vocabulary = r.boolean("has_input_vocabulary", false);
  r.accept({"vocabulary_size"});  // derived from the vocabulary
  auto layer = std::shared_ptr<TextVectorization>(new TextVectorization(std::move(o), has_input_vocabulary));
  detail::finish_config(*layer, r);
  return layer;
}

}  // namespace chorus::layers
