#include "chorus/layers/layer.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_set>

#include "chorus/autograd/tape.h"
#include "chorus/core/error.h"
#include "chorus/core/sharding.h"
#include "chorus/jit/tracer.h"
#include "chorus/layers/node.h"
#include "chorus/layers/weight_budget.h"
#include "chorus/ops/elementwise.h"
#include "chorus/profiler/profiler.h"

namespace chorus::layers {
namespace {

// "BatchNormalization" -> "batch_normalization", as Keras's to_snake_case.
std::string to_snake_case(const std::string& name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (std::isupper(static_cast<unsigned char>(c))) {
      if (i > 0) out += '_';
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
  }
  return out;
}

std::mutex names_mutex;
std::map<std::string, int>& name_counts() {
  static std::map<std::string, int> counts;
  return counts;
}

std::string unique_name(const std::string& class_name) {
  std::string base = to_snake_case(class_name);
  std::lock_guard lock(names_mutex);
  int n = name_counts()[base]++;
  return n == 0 ? base : base + "_" + std::to_string(n);
}

std::vector<Shape> unbatched_shapes(const Tree& outputs) {
  std::vector<Shape> shapes;
  for (const Tensor& t : outputs.flatten()) {
    Shape s = t.shape();
    if (s.rank() > 0) s[0] = -1;
    shapes.push_back(s);
  }
  return shapes;
}

}  // namespace

Layer::Layer(std::string class_name, std::string name)
    : class_name_(std::move(class_name)),
      name_(name.empty() ? unique_name(class_name_) : std::move(name)),
      path_(name_) {}

Layer::~Layer() = default;
Layer::Layer(Layer&& other) noexcept
    : class_name_(std::move(other.class_name_)),
      name_(std::move(other.name_)),
      path_(std::move(other.path_)),
      trainable_(other.trainable_),
      dtype_policy_(std::move(other.dtype_policy_)),
      autocast_(other.autocast_),
      cast_inputs_(other.cast_inputs_),
      building_(other.building_),
      built_(other.built_.load()),
      output_shapes_recorded_(other.output_shapes_recorded_.load()),
      own_weights_(std::move(other.own_weights_)),
      owned_sublayers_(std::move(other.owned_sublayers_)),
      sublayers_(std::move(other.sublayers_)),
      output_shapes_(std::move(other.output_shapes_)),
      input_spec_(std::move(other.input_spec_)) {}

namespace {
// Builds are rare (once per layer) and nest (a model builds its sublayers): one
// process-wide recursive lock keeps them simple.
std::recursive_mutex& build_mutex() {
  static std::recursive_mutex mutex;
  return mutex;
}
}  // namespace

void Layer::reset_names() {
  std::lock_guard lock(names_mutex);
  name_counts().clear();
}

void Layer::build(const Tree& /*inputs*/) {}

void Layer::maybe_build(const Tree& inputs) {
  if (built_.load(std::memory_order_acquire)) return;
  std::lock_guard lock(build_mutex());
  if (built_.load(std::memory_order_relaxed)) return;
  assert_input_compatibility(input_spec_, inputs, name_);  // a spec the constructor set
  autograd::NoGradGuard no_grad;
  // A sublayer built inside its parent's call sees its weights as they are stored.
  std::optional<autograd::AutocastScope> stored_dtypes;
  if (autograd::AutocastScope::current() != nullptr) stored_dtypes.emplace(std::nullopt, &ops::cast);
  building_ = true;
  try {
    build(inputs);
  } catch (...) {
    building_ = false;
    throw;
  }
  building_ = false;
  built_.store(true, std::memory_order_release);
}

void Layer::record_output_shapes(const Tree& outputs) {
  if (output_shapes_recorded_.load(std::memory_order_acquire)) return;
  std::lock_guard lock(build_mutex());
  if (output_shapes_recorded_.load(std::memory_order_relaxed)) return;
  output_shapes_ = unbatched_shapes(outputs);
  output_shapes_recorded_.store(true, std::memory_order_release);
}

void Layer::build_from(const Tree& inputs) { maybe_build(inputs); }

Tree Layer::operator()(const Tree& inputs, bool training) & {
  if (is_symbolic(inputs)) return call_symbolic(inputs, nullptr);
  profiler::Scope event("layer", path(), class_name_);
  const jit::TracedLayer traced(path());
  maybe_build(inputs);
  if (!input_spec_.empty()) assert_input_compatibility(input_spec_, inputs, name_);
  Tree outputs = call_autocast(inputs, training);
  if (MeshContext* mesh = MeshContext::current()) {
    outputs = outputs.map([&](const Tensor& t) { return mesh->lay_out_output(path(), t); });
  }
  record_output_shapes(outputs);
  return outputs;
}

Tensor Layer::operator()(const Tensor& inputs, bool training) & {
  return (*this)(Tree(inputs), training).tensor();
}

Tree Layer::operator()(const Tree& inputs, bool training) && {
  if (is_symbolic(inputs)) return call_symbolic(inputs, std::move(*this).move_to_heap());
  return (*this)(inputs, training);
}

Tensor Layer::operator()(const Tensor& inputs, bool training) && {
  return std::move(*this)(Tree(inputs), training).tensor();
}

Tree Layer::call_symbolic(const Tree& inputs, std::shared_ptr<Layer> owner) {
  Layer* layer = owner ? owner.get() : this;
  layer->maybe_build(inputs);
  if (!layer->input_spec_.empty()) assert_input_compatibility(layer->input_spec_, inputs, layer->name_);
  Tree outputs;
  {
    autograd::NoGradGuard no_grad;
    outputs = layer->call_autocast(inputs, /*training=*/false);
  }
  layer->record_output_shapes(outputs);
  // Each output leaf gets a fresh handle: a layer may return its input (identity), and
  // that tensor's origin must stay where it was.
  std::vector<Tensor> leaves = outputs.flatten();
  for (Tensor& leaf : leaves) leaf = leaf.view(leaf.shape());
  auto node = std::make_shared<Node>();
  node->layer = layer;
  node->owner = std::move(owner);
  node->inputs = inputs;
  node->output_structure = outputs.map([](const Tensor& t) { return Tensor::empty(t.shape(), t.dtype()); });
  for (size_t i = 0; i < leaves.size(); ++i) {
    leaves[i].impl()->keras_history = std::make_shared<SymbolicOrigin>(SymbolicOrigin{node, i});
  }
  return outputs.unflatten(leaves);
}

// call() under the dtype policy: floating inputs cast to the compute dtype and weights
// read in it when the layer autocasts; weights read as stored when it does not, even
// inside a layer that casts.
Tree Layer::call_autocast(const Tree& inputs, bool training) {
  std::optional<autograd::AutocastScope> scope;
  enter_dtype_policy(scope);
  if (!autocast_ || !cast_inputs_) return call(inputs, training);
  const DType dtype = compute_dtype();
  auto needs_cast = [dtype](const Tensor& t) { return is_floating(t.dtype()) && t.dtype() != dtype; };
  if (inputs.is_tensor()) {  // most calls: no flatten on the way
    return needs_cast(inputs.tensor()) ? call(Tree(ops::cast(inputs.tensor(), dtype)), training) : call(inputs, training);
  }
  const std::vector<Tensor> leaves = inputs.flatten();
  if (std::none_of(leaves.begin(), leaves.end(), needs_cast)) return call(inputs, training);
  return call(inputs.map([&](const Tensor& t) { return needs_cast(t) ? ops::cast(t, dtype) : t; }), training);
}

void Layer::enter_dtype_policy(std::optional<autograd::AutocastScope>& scope) const {
  const autograd::AutocastScope* outer = autograd::AutocastScope::current();
  if (autocast_ && dtype_policy_.is_mixed()) {
    scope.emplace(compute_dtype(), &ops::cast);
  } else if (outer != nullptr && outer->dtype()) {
    scope.emplace(std::nullopt, &ops::cast);
  }
}

void Layer::set_dtype_policy(const mixed_precision::DTypePolicy& policy) {
  if (built()) {
    throw_error<ValueError>("{}: set_dtype_policy('{}') after the layer was built (its policy is '{}'); set it "
                            "before the first call",
                            name_, policy.name(), dtype_policy_.name());
  }
  dtype_policy_ = policy;
  for (const auto& sub : owned_sublayers_) sub->set_dtype_policy(policy);
}

Tree call_shared(const std::shared_ptr<Layer>& layer, const Tree& inputs, bool training) {
  if (is_symbolic(inputs)) return layer->call_symbolic(inputs, layer);
  return (*layer)(inputs, training);
}

std::shared_ptr<Layer> Layer::move_to_heap() && {
  throw_error<ValueError>(
      "{}: a temporary {} cannot join a functional model; keep the layer in a variable that outlives "
      "the model, or override move_to_heap()",
      name_, class_name_);
}

Variable Layer::add_weight(const std::string& name, const Shape& shape, const Initializer& initializer,
                           bool trainable, DType dtype) {
  WeightBudget::charge(path_ + "/" + name, shape, dtype);
  Variable variable(path_ + "/" + name, initializer(shape, dtype), trainable);
  own_weights_.push_back(variable);
  return variable;
}

void Layer::set_parent_path(const std::string& parent) {
  path_ = parent + "/" + name_;
  for (const auto& sub : owned_sublayers_) sub->set_parent_path(path_);
}

void Layer::set_input_spec(InputSpec spec) { set_input_spec(std::vector<InputSpec>{std::move(spec)}); }

void Layer::set_input_spec(std::vector<InputSpec> specs) {
  for (const InputSpec& spec : specs) validate_input_spec(spec);
  input_spec_ = std::move(specs);
}

void Layer::track(std::shared_ptr<Layer> sublayer) {
  sublayers_.push_back(sublayer.get());
  owned_sublayers_.push_back(std::move(sublayer));
}

std::vector<std::pair<Variable, bool>> Layer::weights_with_trainability() const {
  std::vector<std::pair<Variable, bool>> out;
  std::unordered_set<const void*> seen;
  auto visit = [&](const Layer& layer, bool parent_trainable, auto&& self) -> void {
    bool trainable = parent_trainable && layer.trainable_;
    for (const Variable& v : layer.own_weights_) {
      if (seen.insert(v.id()).second) out.emplace_back(v, trainable && v.trainable());
    }
    for (const Layer* sub : layer.sublayers_) self(*sub, trainable, self);
  };
  visit(*this, true, visit);
  return out;
}

Layer& Layer::get_layer(std::string_view name) const {
  std::string existing;
  for (Layer* layer : sublayers_) {
    if (layer->name() == name) return *layer;
    existing += (existing.empty() ? "'" : ", '") + layer->name() + "'";
  }
  throw_error<ValueError>("{}: No such layer: {}. Existing layers are: [{}]", name_, name, existing);
}

std::vector<Variable> Layer::weights() const {
  std::vector<Variable> out;
  for (auto& [v, trainable] : weights_with_trainability()) out.push_back(v);
  return out;
}

std::vector<Variable> Layer::trainable_weights() const {
  std::vector<Variable> out;
  for (auto& [v, trainable] : weights_with_trainability()) {
    if (trainable) out.push_back(v);
  }
  return out;
}

std::vector<Variable> Layer::non_trainable_weights() const {
  std::vector<Variable> out;
  for (auto& [v, trainable] : weights_with_trainability()) {
    if (!trainable) out.push_back(v);
  }
  return out;
}

int64_t Layer::count_params() const {
  int64_t total = 0;
  for (const Variable& v : weights()) total += v.shape().numel();
  return total;
}

nlohmann::json Layer::get_config() const {
  return {{"name", name_}, {"trainable", trainable_}, {"dtype", dtype_policy_.name()}};
}

}  // namespace chorus::layers
