// Dataset and Iterator: thin handles that validate arguments and delegate to the stage
// factories (one file per concept beside this one), plus the helpers all stages share.
#include "chorus/data/dataset.h"

#include "chorus/core/random.h"

#include <random>

#include <fmt/format.h>

#include "chorus/data/dataset_impl.h"
#include "chorus/profiler/profiler.h"

namespace chorus::data {
namespace {

// Keras-style "expected X. Received: name=value" check.
void require(bool ok, const char* op, const char* expected, const char* name, int64_t value) {
  if (!ok) throw_error<ValueError>("{}: expected {}. Received: {}={}", op, expected, name, value);
}

void leaf_paths_into(const Tree& tree, const std::string& prefix, std::vector<std::string>& out) {
  if (tree.is_tensor()) {
    out.push_back(prefix.empty() ? "(the element)" : prefix);
  } else if (tree.is_dict()) {
    for (const auto& [key, child] : tree.dict()) leaf_paths_into(child, fmt::format("{}[\"{}\"]", prefix, key), out);
  } else if (tree.is_list()) {
    for (size_t i = 0; i < tree.list().size(); ++i) {
      leaf_paths_into(tree.list()[i], fmt::format("{}[{}]", prefix, i), out);
    }
  }
}

}  // namespace

// ---- shared helpers ----

int64_t IteratorImpl::advance(int64_t n) {
  int64_t skipped = 0;
  while (skipped < n && next()) ++skipped;
  return skipped;
}

std::optional<std::vector<Tree>> next_elements(IteratorImpl& input, int64_t batch_size, bool drop_remainder) {
  std::vector<Tree> elements;
  while (static_cast<int64_t>(elements.size()) < batch_size) {
    std::optional<Tree> element = input.next();
    if (!element) break;
    elements.push_back(std::move(*element));
  }
  if (elements.empty()) return std::nullopt;
  if (static_cast<int64_t>(elements.size()) < batch_size && drop_remainder) return std::nullopt;
  return elements;
}

std::string DatasetImpl::describe() const {
  const auto in = inputs();
  if (in.empty()) return name();
  if (in.size() == 1) return in[0]->describe() + " -> " + name();
  std::vector<std::string> parts;
  for (const DatasetImpl* input : in) parts.push_back(input->describe());
  return fmt::format("{}({})", name(), fmt::join(parts, ", "));
}

// The rewriting hooks' defaults: auto_shard.cc calls them only on stages that report a
// file list, a batch size or a cache path, so reaching one is a bug in chorus.
DatasetPtr DatasetImpl::with_files(std::vector<std::string> /*files*/) const {
  throw_error<Error>("{}: with_files on a stage that reads no files", name());
}

DatasetPtr DatasetImpl::with_batch_size(int64_t /*batch_size*/) const {
  throw_error<Error>("{}: with_batch_size on a stage that does not batch", name());
}

DatasetPtr DatasetImpl::with_cache_path(std::string /*path*/) const {
  throw_error<Error>("{}: with_cache_path on a stage that caches to no file", name());
}

DatasetPtr SourceDataset::with_inputs(std::vector<DatasetPtr> inputs) const {
  if (!inputs.empty()) throw_error<Error>("{}: a source given {} inputs", name(), inputs.size());
  return shared_from_this();
}

DatasetPtr UnaryDataset::with_inputs(std::vector<DatasetPtr> inputs) const {
  if (inputs.size() != 1 || !inputs[0]) {
    throw_error<Error>("{}: expected one input stage, got {}", name(), inputs.size());
  }
  return with_input(std::move(inputs[0]));
}

void check_op(const nlohmann::json& state, const std::string& op) {
  const auto it = state.find("op");
  const std::string got = it != state.end() && it->is_string() ? it->get<std::string>() : std::string("?");
  if (got != op) {
    throw_error<ValueError>("Iterator::restore: expected a position of a '{}' stage, got one of a '{}' stage", op, got);
  }
}

bool collect_leaves_like(const Tree& element, const Tree& reference, std::vector<const Tensor*>& leaves) {
  if (reference.is_tensor()) {
    if (!element.is_tensor()) return false;
    leaves.push_back(&element.tensor());
    return true;
  }
  if (reference.is_dict()) {
    if (!element.is_dict() || element.dict().size() != reference.dict().size()) return false;
    auto e = element.dict().begin();
    for (const auto& [key, child] : reference.dict()) {
      if (e->first != key || !collect_leaves_like(e->second, child, leaves)) return false;
      ++e;
    }
    return true;
  }
  if (reference.is_list()) {
    if (!element.is_list() || element.list().size() != reference.list().size()) return false;
    for (size_t i = 0; i < reference.list().size(); ++i) {
      if (!collect_leaves_like(element.list()[i], reference.list()[i], leaves)) return false;
    }
    return true;
  }
  return element.empty();
}

std::vector<std::string> leaf_paths(const Tree& tree) {
  std::vector<std::string> out;
  leaf_paths_into(tree, "", out);
  return out;
}

Tensor row_view(const Tensor& tensor, int64_t row) {
  const TensorImpl& in = *tensor.impl();
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = in.storage;
  impl->dtype = in.dtype;
  Shape shape(in.shape.dims().subspan(1));
  impl->offset = in.offset + static_cast<size_t>(row * shape.numel()) * dtype_size(in.dtype);
  impl->shape = shape;
  return Tensor(std::move(impl));
}

Tensor int64_scalar(int64_t value) {
  Tensor out = Tensor::empty(Shape{}, kInt64);
  *out.data<int64_t>() = value;
  return out;
}

// ---- Iterator ----

Iterator::Iterator(std::unique_ptr<IteratorImpl> impl) : impl_(std::move(impl)) {}
Iterator::Iterator(std::unique_ptr<IteratorImpl> impl, std::string pipeline)
    : impl_(std::move(impl)), pipeline_(std::move(pipeline)) {}
Iterator::Iterator(Iterator&&) noexcept = default;
Iterator& Iterator::operator=(Iterator&&) noexcept = default;
Iterator::~Iterator() = default;

IteratorImpl& Iterator::checked() const {
  if (!impl_) throw Error("Iterator: use of a moved-from iterator");
  return *impl_;
}

std::optional<Tree> Iterator::next() {
  profiler::Scope event("data", "next");  // what the consumer waits for the element
  return checked().next();
}

IteratorPosition Iterator::position() const {
  return {nlohmann::json{{"pipeline", pipeline_}, {"state", checked().position()}}};
}

void Iterator::restore(const IteratorPosition& position) {
  IteratorImpl& impl = checked();
  const nlohmann::json& p = position.state;
  if (!p.is_object() || !p.contains("state") || !p.contains("pipeline") || !p["pipeline"].is_string()) {
    throw_error<ValueError>("Iterator::restore: expected a position from Iterator::position(), got {}",
                            p.dump().substr(0, 200));
  }
  const std::string saved = p["pipeline"].get<std::string>();
  if (!pipeline_.empty() && saved != pipeline_) {
    throw_error<ValueError>("Iterator::restore: the position belongs to the pipeline '{}', not to this one '{}'",
                            saved, pipeline_);
  }
  try {
    impl.restore(p["state"]);
  } catch (const nlohmann::json::exception& e) {
    throw_error<ValueError>("Iterator::restore: malformed position for the pipeline '{}': {}", saved, e.what());
  }
}

// ---- Dataset ----

Dataset::Dataset(std::shared_ptr<const DatasetImpl> impl) : impl_(std::move(impl)) {
  if (!impl_) throw ValueError("Dataset: expected a stage, got a null DatasetImpl");
}

Dataset Dataset::from_tensor_slices(const Tree& tree) { return Dataset(make_tensor_slices_dataset(tree)); }

Dataset Dataset::range(int64_t start, int64_t stop, int64_t step) {
  require(step != 0, "range", "step != 0", "step", step);
  return Dataset(make_range_dataset(start, stop, step));
}

Dataset Dataset::from_generator(std::function<Generator(int64_t epoch)> make, int64_t cardinality) {
  if (!make) throw ValueError("from_generator: expected a function that makes generators, got an empty one");
  require(cardinality >= kUnknownCardinality, "from_generator", "cardinality >= -2", "cardinality", cardinality);
  return Dataset(make_generator_dataset(std::move(make), cardinality));
}

Dataset Dataset::zip(const std::vector<Dataset>& datasets) {
  require(!datasets.empty(), "zip", "at least one dataset", "len(datasets)", 0);
  std::vector<DatasetPtr> inputs;
  for (const Dataset& d : datasets) inputs.push_back(d.impl_);
  return Dataset(make_zip_dataset(std::move(inputs)));
}

Dataset Dataset::map(std::function<Tree(const Tree&)> fn, MapOptions options) const {
  if (!fn) throw ValueError("map: expected a function, got an empty one");
  return map([fn = std::move(fn)](const Tree& element, const ElementPosition&) { return fn(element); }, options);
}

Dataset Dataset::map(std::function<Tree(const Tree&, const ElementPosition&)> fn, MapOptions options) const {
  if (!fn) throw ValueError("map: expected a function, got an empty one");
  require(options.num_parallel_calls > 0 || options.num_parallel_calls == kAutotune, "map",
          "num_parallel_calls > 0 or kAutotune (-1)", "num_parallel_calls", options.num_parallel_calls);
  return Dataset(make_map_dataset(impl_, std::move(fn), options));
}

Dataset Dataset::filter(std::function<bool(const Tree&)> predicate) const {
  if (!predicate) throw ValueError("filter: expected a predicate, got an empty function");
  return Dataset(make_filter_dataset(impl_, std::move(predicate)));
}

Dataset Dataset::shuffle(int64_t buffer_size, std::optional<uint64_t> seed, bool reshuffle_each_iteration) const {
  require(buffer_size > 0, "shuffle", "buffer_size > 0", "buffer_size", buffer_size);
  const uint64_t drawn = seed ? *seed : unseeded_seed();
  return Dataset(make_shuffle_dataset(impl_, buffer_size, drawn, reshuffle_each_iteration));
}

Dataset Dataset::batch(int64_t batch_size, bool drop_remainder) const {
  require(batch_size > 0, "batch", "batch_size > 0", "batch_size", batch_size);
  return Dataset(make_batch_dataset(impl_, batch_size, drop_remainder));
}

Dataset Dataset::padded_batch(int64_t batch_size, PaddedBatchOptions options) const {
  require(batch_size > 0, "padded_batch", "batch_size > 0", "batch_size", batch_size);
  return Dataset(make_padded_batch_dataset(impl_, batch_size, std::move(options)));
}

Dataset Dataset::ragged_batch(int64_t batch_size, bool drop_remainder) const {
  require(batch_size > 0, "ragged_batch", "batch_size > 0", "batch_size", batch_size);
  return Dataset(make_ragged_batch_dataset(impl_, batch_size, drop_remainder));
}

Dataset Dataset::unbatch() const { return Dataset(make_unbatch_dataset(impl_)); }

Dataset Dataset::take(int64_t count) const {
  require(count >= -1, "take", "count >= -1 (-1: all)", "count", count);
  return Dataset(make_take_dataset(impl_, count));
}

Dataset Dataset::skip(int64_t count) const {
  require(count >= -1, "skip", "count >= -1 (-1: all)", "count", count);
  return Dataset(make_skip_dataset(impl_, count));
}

Dataset Dataset::repeat(int64_t count) const {
  require(count >= -1, "repeat", "count >= -1 (-1: forever)", "count", count);
  return Dataset(make_repeat_dataset(impl_, count));
}

Dataset Dataset::cache(const std::string& path) const { return Dataset(make_cache_dataset(impl_, path)); }

Dataset Dataset::prefetch(int64_t buffer_size) const {
  require(buffer_size > 0 || buffer_size == kAutotune, "prefetch", "buffer_size > 0 or kAutotune (-1)",
          "buffer_size", buffer_size);
  return Dataset(make_prefetch_dataset(impl_, buffer_size == kAutotune ? 8 : buffer_size));
}

Dataset Dataset::shard(int64_t num_shards, int64_t index) const {
  require(num_shards > 0, "shard", "num_shards > 0", "num_shards", num_shards);
  if (index < 0 || index >= num_shards) {
    throw_error<ValueError>("shard: expected 0 <= index < num_shards. Received: index={}, num_shards={}", index,
                            num_shards);
  }
  return Dataset(make_shard_dataset(impl_, num_shards, index));
}

Dataset Dataset::enumerate(int64_t start) const { return Dataset(make_enumerate_dataset(impl_, start)); }

int64_t Dataset::cardinality() const { return impl_->cardinality(); }

Iterator Dataset::iterator(int64_t epoch) const { return Iterator(impl_->make_iterator(epoch), impl_->describe()); }

}  // namespace chorus::data
