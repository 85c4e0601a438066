#include "chorus/layers/preprocessing/index_lookup.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <type_traits>
#include <unordered_map>

#include "chorus/core/creation.h"
#include "chorus/core/ragged_tensor.h"
#include "chorus/layers/layer_util.h"
#include "chorus/layers/preprocessing/preprocessing_util.h"
#include "chorus/layers/preprocessing/token_counter.h"
#include "chorus/text/vocabulary.h"

namespace chorus::layers {
namespace {

using detail::is_string_token;
using detail::token_values;
using detail::TokenCounter;

// Token -> output index; strings are found by string_view without a copy.
template <class Token>
using TokenMap = std::conditional_t<is_string_token<Token>,
                                    std::unordered_map<std::string, int64_t, text::StringHash, std::equal_to<>>,
                                    std::unordered_map<int64_t, int64_t>>;

// The config key that tells the lookup classes apart, at the one value chorus supports.
struct ClassKey {
  const char* key;
  const char* value;
  const char* supported;  // what the error for another value says is supported
};

template <class Token>
constexpr ClassKey kClassKey = is_string_token<Token> ? ClassKey{"encoding", "utf-8", "the utf-8 encoding"}
                                                      : ClassKey{"vocabulary_dtype", "int64", "vocabulary_dtype int64"};

// How a token reads in an error message: 'z' or 1000.
std::string show(const std::string& token) { return bytes_literal(token); }
std::string show(int64_t token) { return std::to_string(token); }

template <class Token>
std::string show_list(const std::vector<Token>& tokens) {
  std::string out = "[";
  for (size_t i = 0; i < tokens.size(); ++i) out += (i ? ", " : "") + show(tokens[i]);
  return out + "]";
}

template <class Token>
Tensor token_tensor(const Shape& shape, std::vector<Token> values) {
  if constexpr (is_string_token<Token>) {
    return Tensor::from_strings(shape, std::move(values));
  } else {
    return from_values(values, shape);
  }
}

// Python's floor modulo: the bucket of a negative token is in [0, n) too.
int64_t floor_mod(int64_t value, int64_t n) { return ((value % n) + n) % n; }

}  // namespace

template <class Token>
struct IndexLookup<Token>::Table {
  bool has_vocabulary = false;
  std::vector<Token> tokens;  // the learned or given tokens; token i has index token_start + i
  TokenMap<Token> index;
  std::vector<float> idf;  // tf_idf: one weight per output index
};

namespace {

// Keras's _get_vocabulary_from_file: one token per line, the line ends ("\n") stripped;
// integer tokens parsed as int64.
template <class Token>
std::vector<Token> read_vocabulary_file(const std::string& path, const std::string& class_name) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_error<ValueError>("{}: vocabulary file {} does not exist or cannot be read", class_name, path);
  std::vector<Token> tokens;
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if constexpr (std::is_same_v<Token, std::string>) {
      tokens.push_back(std::move(line));
    } else {
      Token value = 0;
      const auto [end, error] = std::from_chars(line.data(), line.data() + line.size(), value);
      if (error != std::errc() || end != line.data() + line.size() || line.empty()) {
        throw_error<ValueError>("{}: {}:{}: expected an integer token, found \"{}\"", class_name, path, number, line);
      }
      tokens.push_back(value);
    }
  }
  if (in.bad()) throw_error<IOError>("{}: {}: read failed after {} lines", class_name, path, tokens.size());
  return tokens;
}

}  // namespace

template <class Token>
IndexLookup<Token>::IndexLookup(std::string class_name, detail::IndexLookupConfig<Token> config)
    : Layer(class_name, config.name), config_(std::move(config)), table_(std::make_shared<Table>()) {
  if (!config_.vocabulary_file.empty()) {
    if (!config_.vocabulary.empty()) {
      throw_error<ValueError>("{}: give a vocabulary or a vocabulary_file, not both", class_name);
    }
    config_.vocabulary = read_vocabulary_file<Token>(config_.vocabulary_file, class_name);
    config_.vocabulary_file.clear();
  }
  const auto& c = config_;
  if (c.max_tokens && *c.max_tokens <= 1) {
    throw_error<ValueError>("{}: expected max_tokens > 1 when it is set. Received: max_tokens={}", class_name,
                            *c.max_tokens);
  }
  if (c.pad_to_max_tokens && !c.max_tokens) {
    throw_error<ValueError>("{}: pad_to_max_tokens needs max_tokens. Received: max_tokens=None", class_name);
  }
  if (c.num_oov_indices < 0) {
    throw_error<ValueError>("{}: expected num_oov_indices >= 0. Received: num_oov_indices={}", class_name,
                            c.num_oov_indices);
  }
  if (c.invert && c.output_mode != OutputMode::kInt) {
    throw_error<ValueError>("{}: expected output_mode int when invert is true. Received: output_mode={}", class_name,
                            output_mode_name(c.output_mode));
  }
  if (!c.idf_weights.empty() && c.output_mode != OutputMode::kTfIdf) {
    throw_error<ValueError>("{}: idf_weights are only used with output_mode tf_idf. Received: output_mode={}",
                            class_name, output_mode_name(c.output_mode));
  }
  if (c.salt && !is_string_token<Token> && c.oov_method != OovMethod::kFarmHash) {
    throw_error<ValueError>("{}: a salt is only used with oov_method farmhash. Received: oov_method=floormod",
                            class_name);
  }
  if (c.output_mode == OutputMode::kTfIdf && !c.vocabulary.empty() && c.idf_weights.empty()) {
    throw_error<ValueError>("{}: with a vocabulary and output_mode tf_idf, idf_weights must be given too", class_name);
  }
  if (!config_.has_input_vocabulary) config_.has_input_vocabulary = !c.vocabulary.empty();
  if (!config_.vocabulary.empty()) set_vocabulary(config_.vocabulary, config_.idf_weights);
  config_.vocabulary.clear();  // the table holds it now
  config_.idf_weights.clear();
}

template <class Token>
IndexLookup<Token>::~IndexLookup() = default;

template <class Token>
IndexLookup<Token>::IndexLookup(IndexLookup&& other) noexcept
    : Layer(std::move(other)), config_(std::move(other.config_)) {
  std::lock_guard lock(other.table_mutex_);
  table_ = std::move(other.table_);
}

template <class Token>
std::shared_ptr<const typename IndexLookup<Token>::Table> IndexLookup<Token>::table() const {
  std::lock_guard lock(table_mutex_);
  return table_;
}

template <class Token>
void IndexLookup<Token>::install(std::shared_ptr<const Table> table) {
  const auto old = this->table();
  const int64_t old_size = token_start() + static_cast<int64_t>(old->tokens.size());
  const int64_t new_size = token_start() + static_cast<int64_t>(table->tokens.size());
  if (built() && old->has_vocabulary && old_size != new_size && config_.output_mode != OutputMode::kInt &&
      !config_.pad_to_max_tokens) {
    throw_error<ValueError>("{}: with output_mode {} and pad_to_max_tokens=false the vocabulary size cannot change "
                            "once the layer has been called (its outputs would change shape): it was {}, the new "
                            "vocabulary has {}",
                            name(), output_mode_name(config_.output_mode), old_size, new_size);
  }
  std::lock_guard lock(table_mutex_);
  table_ = std::move(table);
}

template <class Token>
int64_t IndexLookup<Token>::oov_start() const {
  return config_.mask_token && config_.output_mode == OutputMode::kInt ? 1 : 0;
}

template <class Token>
int64_t IndexLookup<Token>::token_start() const {
  return oov_start() + config_.num_oov_indices;
}

template <class Token>
int64_t IndexLookup<Token>::vocabulary_size() const {
  return token_start() + static_cast<int64_t>(table()->tokens.size());
}

template <class Token>
std::vector<Token> IndexLookup<Token>::get_vocabulary(bool include_special_tokens) const {
  return vocabulary_of(*table(), include_special_tokens);
}

template <class Token>
std::vector<Token> IndexLookup<Token>::vocabulary_of(const Table& table, bool include_special_tokens) const {
  if (!include_special_tokens) return table.tokens;
  std::vector<Token> vocabulary(static_cast<size_t>(token_start()), config_.oov_token);
  if (oov_start() == 1) vocabulary[0] = *config_.mask_token;
  vocabulary.insert(vocabulary.end(), table.tokens.begin(), table.tokens.end());
  return vocabulary;
}

template <class Token>
std::vector<float> IndexLookup<Token>::idf_weights() const {
  return table()->idf;
}

template <class Token>
void IndexLookup<Token>::set_vocabulary(const std::vector<Token>& vocabulary, const std::vector<float>& idf_weights) {
  const bool tf_idf = config_.output_mode == OutputMode::kTfIdf;
  if (tf_idf && idf_weights.empty()) {
    throw_error<ValueError>("{}: set_vocabulary needs idf_weights with output_mode tf_idf", name());
  }
  if (!tf_idf && !idf_weights.empty()) {
    throw_error<ValueError>("{}: idf_weights are only used with output_mode tf_idf. Received: output_mode={}", name(),
                            output_mode_name(config_.output_mode));
  }
  if (vocabulary.empty()) throw_error<ValueError>("{}: cannot set an empty vocabulary", name());
  std::vector<Token> special(static_cast<size_t>(oov_start()), config_.mask_token.value_or(Token{}));
  special.insert(special.end(), static_cast<size_t>(config_.num_oov_indices), config_.oov_token);
  const bool found_special = vocabulary.size() >= special.size() &&
                             std::equal(special.begin(), special.end(), vocabulary.begin());
  auto table = std::make_shared<Table>();
  table->has_vocabulary = true;
  table->tokens.assign(vocabulary.begin() + (found_special ? static_cast<std::ptrdiff_t>(special.size()) : 0),
                       vocabulary.end());
  const size_t offset = vocabulary.size() - table->tokens.size();  // entries taken by special tokens
  std::vector<Token> repeated;
  for (size_t i = 0; i < table->tokens.size(); ++i) {
    const Token& token = table->tokens[i];
    if (config_.mask_token && token == *config_.mask_token) {
      throw_error<ValueError>("{}: found the mask token {} at vocabulary index {}; the vocabulary need not hold the "
                              "mask and OOV tokens, or must hold them only at its start, in this order: {}",
                              name(), show(token), i + offset, show_list(special));
    }
    if (config_.invert && token == config_.oov_token) {
      throw_error<ValueError>("{}: found the OOV token {} at vocabulary index {}; the vocabulary need not hold the "
                              "mask and OOV tokens, or must hold them only at its start, in this order: {}",
                              name(), show(token), i + offset, show_list(special));
    }
    if (!table->index.emplace(token, token_start() + static_cast<int64_t>(i)).second &&
        std::find(repeated.begin(), repeated.end(), token) == repeated.end()) {
      repeated.push_back(token);
    }
  }
  if (!repeated.empty()) {
    throw_error<ValueError>("{}: the vocabulary repeats tokens (they must be unique): {}", name(), show_list(repeated));
  }
  const int64_t size = token_start() + static_cast<int64_t>(table->tokens.size());
  if (config_.max_tokens && size > *config_.max_tokens) {
    throw_error<ValueError>("{}: the vocabulary has {} entries with the special tokens, more than max_tokens={}",
                            name(), size, *config_.max_tokens);
  }
  if (tf_idf) {
    if (idf_weights.size() != vocabulary.size()) {
      throw_error<ValueError>("{}: expected one idf weight per vocabulary entry ({}), got {}", name(),
                              vocabulary.size(), idf_weights.size());
    }
    if (!found_special) {  // the OOV indices get the average weight
      double sum = 0;
      for (float w : idf_weights) sum += w;
      table->idf.assign(static_cast<size_t>(token_start()), static_cast<float>(sum / idf_weights.size()));
    }
    table->idf.insert(table->idf.end(), idf_weights.begin(), idf_weights.end());
    if (config_.pad_to_max_tokens) table->idf.resize(static_cast<size_t>(*config_.max_tokens), 0.f);
  }
  install(std::move(table));
}

template <class Token>
struct IndexLookup<Token>::Counter : TokenCounter<Token> {
  using TokenCounter<Token>::TokenCounter;
};

template <class Token>
void IndexLookup<Token>::check_adaptable() const {
  if (config_.has_input_vocabulary.value_or(false)) {
    throw_error<ValueError>("{}: cannot adapt a layer that was given its vocabulary at construction", name());
  }
}

template <class Token>
void IndexLookup<Token>::adapt(const Tensor& data) {
  check_adaptable();
  if (!data.defined()) throw_error<ValueError>("{}: adapt was given an undefined tensor", name());
  if (data.numel() == 0) {
    throw_error<ValueError>("{}: adapt was given an empty tensor of shape {}; expected data to learn the vocabulary "
                            "from",
                            name(), data.shape().to_string());
  }
  Counter counter(config_.output_mode == OutputMode::kTfIdf);
  // A rank-1 tensor holds one token per document, as Keras expands it to (n, 1).
  counter.update(Tree(data.rank() == 1 ? data.view(Shape{data.dim(0), 1}) : data), 0, name());
  learn(counter, fmt::format("a tensor of shape {}", data.shape().to_string()));
}

template <class Token>
void IndexLookup<Token>::adapt(const data::Dataset& data, std::optional<int64_t> steps) {
  check_adaptable();
  Counter counter(config_.output_mode == OutputMode::kTfIdf);
  const int64_t batches = detail::for_each_batch(
      data, steps, name(), [&](const Tree& batch, int64_t i) { counter.update(batch, i, name()); });
  if (batches == 0) {
    throw_error<ValueError>("{}: adapt was given an empty dataset (no elements); expected batches of data to learn "
                            "the vocabulary from",
                            name());
  }
  learn(counter, fmt::format("{} dataset element{}", batches, batches == 1 ? "" : "s"));
}

template <class Token>
void IndexLookup<Token>::learn(Counter& counter, const std::string& source) {
  if (config_.mask_token) counter.remove(*config_.mask_token);
  counter.remove(config_.oov_token);
  if (counter.size() == 0) {
    throw_error<ValueError>("{}: adapt found no tokens to learn in {} (only mask or OOV tokens, or none)", name(),
                            source);
  }
  auto sorted = counter.sorted();
  if (config_.max_tokens) {
    const size_t room = static_cast<size_t>(std::max<int64_t>(*config_.max_tokens - token_start(), 0));
    if (sorted.size() > room) sorted.resize(room);
  }
  auto table = std::make_shared<Table>();
  table->has_vocabulary = true;
  for (const auto& [token, counts] : sorted) {
    table->index.emplace(token, token_start() + static_cast<int64_t>(table->tokens.size()));
    table->tokens.push_back(token);
  }
  if (config_.output_mode == OutputMode::kTfIdf) {
    // idf = log(1 + documents / (1 + documents with the token)); the OOV indices get the
    // mean, which one pass cannot measure.
    const double documents = static_cast<double>(counter.documents());
    std::vector<float> idf;
    double sum = 0;
    for (const auto& [token, counts] : sorted) {
      idf.push_back(static_cast<float>(std::log(1 + documents / (1 + static_cast<double>(counts.documents)))));
      sum += idf.back();
    }
    table->idf.assign(static_cast<size_t>(token_start()), idf.empty() ? 0.f : static_cast<float>(sum / idf.size()));
    table->idf.insert(table->idf.end(), idf.begin(), idf.end());
    if (config_.pad_to_max_tokens) table->idf.resize(static_cast<size_t>(*config_.max_tokens), 0.f);
  }
  install(std::move(table));
}

template <class Token>
Tensor IndexLookup<Token>::lookup_dense(const Table& table, const Tensor& x) const {
  const auto values = token_values<Token>(x, name(), "inputs");
  Tensor out = Tensor::empty(x.shape(), kInt64);
  int64_t* indices = out.data<int64_t>();
  const int64_t oov = config_.num_oov_indices;
  std::vector<Token> unknown;  // with num_oov_indices = 0
  for (size_t i = 0; i < values.size(); ++i) {
    const auto& value = values[i];
    if (config_.mask_token && value == *config_.mask_token) {
      indices[i] = config_.output_mode == OutputMode::kInt ? 0 : -1;
      continue;
    }
    if (const auto it = table.index.find(value); it != table.index.end()) {
      indices[i] = it->second;
      continue;
    }
    if (oov == 0) {
      if (unknown.size() < 10) unknown.push_back(value);
      continue;
    }
    int64_t bucket = 0;
    if (oov > 1) {
      auto hash_bucket = [&](std::string_view s) {
        const uint64_t h = config_.salt ? text::siphash64(*config_.salt, s) : text::fingerprint64(s);
        return static_cast<int64_t>(h % static_cast<uint64_t>(oov));
      };
      if constexpr (is_string_token<Token>) {
        bucket = hash_bucket(value);
      } else if (config_.oov_method == OovMethod::kFloorMod) {
        bucket = floor_mod(value, oov);
      } else {  // the decimal text of the integer, as tf.strings.as_string writes it
        bucket = hash_bucket(std::to_string(value));
      }
    }
    indices[i] = oov_start() + bucket;
  }
  if (!unknown.empty()) {
    throw_error<ValueError>("{}: with num_oov_indices=0 every input must be in the vocabulary; found OOV values {} "
                            "(consider num_oov_indices=1)",
                            name(), show_list(unknown));
  }
  return out;
}

template <class Token>
Tensor IndexLookup<Token>::invert_dense(const Table& table, const Tensor& x) const {
  if (!is_integer(x.dtype())) {
    throw_error<DTypeError>("{}: an inverted lookup expected int32 or int64 indices, got dtype {}", name(),
                            dtype_name(x.dtype()));
  }
  const auto indices = x.to_vector<int64_t>();
  std::vector<Token> out;
  out.reserve(indices.size());
  const int64_t first = token_start(), end = first + static_cast<int64_t>(table.tokens.size());
  for (int64_t index : indices) {
    if (config_.mask_token && index == 0) {
      out.push_back(*config_.mask_token);
    } else if (index >= first && index < end) {
      out.push_back(table.tokens[static_cast<size_t>(index - first)]);
    } else {
      out.push_back(config_.oov_token);
    }
  }
  return token_tensor(x.shape(), std::move(out));
}

template <class Token>
int64_t IndexLookup<Token>::depth(const Table& table) const {
  if (!table.has_vocabulary && !config_.pad_to_max_tokens) {
    throw_error<ValueError>("{}: output_mode {} needs a vocabulary before the layer is called (pass `vocabulary`, "
                            "call set_vocabulary() or adapt()), or pad_to_max_tokens with max_tokens",
                            name(), output_mode_name(config_.output_mode));
  }
  const int64_t depth = config_.pad_to_max_tokens ? *config_.max_tokens
                                                  : token_start() + static_cast<int64_t>(table.tokens.size());
  if (config_.output_mode == OutputMode::kTfIdf && static_cast<int64_t>(table.idf.size()) != depth) {
    throw_error<ValueError>("{}: output_mode tf_idf needs idf weights: set a vocabulary with idf_weights or adapt() "
                            "the layer",
                            name());
  }
  return depth;
}

template <class Token>
Tree IndexLookup<Token>::lookup(const Tree& inputs) const {
  const auto t = table();
  const OutputMode mode = config_.output_mode;
  if (RaggedTensor::is_ragged(inputs)) {
    const RaggedTensor rows = RaggedTensor::from_tree(inputs);
    if (config_.invert) {
      return RaggedTensor::from_row_splits(invert_dense(*t, rows.values()), rows.row_splits()).to_tree();
    }
    const RaggedTensor indices = RaggedTensor::from_row_splits(lookup_dense(*t, rows.values()), rows.row_splits());
    if (mode == OutputMode::kInt) return indices.to_tree();
    return detail::encode_categorical_rows(indices, mode, depth(*t), t->idf, name());
  }
  const Tensor& x = detail::single_input(inputs, name());
  if (config_.invert) return invert_dense(*t, x);
  const Tensor indices = lookup_dense(*t, x);
  if (mode == OutputMode::kInt) return indices;
  return detail::encode_categorical(indices, mode, depth(*t), t->idf);
}

template <class Token>
nlohmann::json IndexLookup<Token>::get_config() const {
  const auto t = table();
  nlohmann::json config = Layer::get_config();
  config["invert"] = config_.invert;
  config["max_tokens"] = config_.max_tokens ? nlohmann::json(*config_.max_tokens) : nlohmann::json();
  config["num_oov_indices"] = config_.num_oov_indices;
  config["oov_token"] = config_.oov_token;
  config["mask_token"] = config_.mask_token ? nlohmann::json(*config_.mask_token) : nlohmann::json();
  config["output_mode"] = output_mode_name(config_.output_mode);
  config["sparse"] = false;
  config["pad_to_max_tokens"] = config_.pad_to_max_tokens;
  const int64_t size = token_start() + static_cast<int64_t>(t->tokens.size());
  config["vocabulary"] = t->has_vocabulary ? nlohmann::json(vocabulary_of(*t, true)) : nlohmann::json();
  nlohmann::json idf;
  if (t->has_vocabulary && config_.output_mode == OutputMode::kTfIdf) {
    idf = nlohmann::json::array();
    for (int64_t i = 0; i < size; ++i) idf.push_back(static_cast<double>(t->idf[static_cast<size_t>(i)]));
  }
  config["idf_weights"] = idf;
  config["vocabulary_size"] = t->has_vocabulary ? nlohmann::json(size) : nlohmann::json();
  config["oov_method"] = config_.oov_method == OovMethod::kFarmHash ? "farmhash" : "floormod";
  config["salt"] = detail::salt_to_json(config_.salt);
  config["has_input_vocabulary"] = config_.has_input_vocabulary.value_or(false);
  config[kClassKey<Token>.key] = kClassKey<Token>.value;
  return config;
}

template <class Token>
detail::IndexLookupConfig<Token> IndexLookup<Token>::config_from_json(ConfigReader& r, Token default_oov) {
  const std::string& class_name = r.owner();
  constexpr ClassKey own = kClassKey<Token>;
  if (const std::string value = r.string(own.key, own.value); value != own.value) {
    throw_error<ValueError>("{}: only {} is supported. Received: {}={}", class_name, own.supported, own.key, value);
  }
  detail::IndexLookupConfig<Token> c;
  c.max_tokens = r.optional<int64_t>("max_tokens");
  c.num_oov_indices = r.integer("num_oov_indices", 1);
  c.mask_token = r.optional<Token>("mask_token");
  c.oov_token = r.value<Token>("oov_token", std::move(default_oov));
  c.vocabulary = r.value<std::vector<Token>>("vocabulary", {});
  c.idf_weights = r.value<std::vector<float>>("idf_weights", {});
  c.invert = r.boolean("invert", false);
  c.output_mode = parse_output_mode(r.string("output_mode", "int"), class_name.c_str());
  c.pad_to_max_tokens = r.boolean("pad_to_max_tokens", false);
  const std::string oov_method = r.string("oov_method", "floormod");
  if (oov_method != "floormod" && oov_method != "farmhash") {
    throw_error<ValueError>("{}: unknown oov_method '{}'; expected floormod or farmhash", class_name, oov_method);
  }
  c.oov_method = oov_method == "farmhash" ? OovMethod::kFarmHash : OovMethod::kFloorMod;
  c.salt = detail::salt_from_config(r);
  if (r.boolean("sparse", false)) {
    throw_error<ValueError>("{}: sparse outputs are not supported (chorus has no SparseTensor). Received: sparse=true",
                            class_name);
  }
  if (r.has("has_input_vocabulary")) c.has_input_vocabulary = r.boolean("has_input_vocabulary", false);
  r.accept({"vocabulary_size"});  // derived from the vocabulary
  c.name = detail::config_name(r);
  return c;
}

template class IndexLookup<std::string>;
template class IndexLookup<int64_t>;

}  // namespace chorus::layers
