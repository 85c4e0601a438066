// Layer: the base of every layer and model (Keras's Layer). The constructor stores the
// configuration, build() creates the weights from the first inputs, call() computes.
// A layer owns its sublayers (add<L>()); its weights are Variables, so copies of a
// built layer would share them — layers are moved, never copied. One thread may call a
// layer at a time, except that replicas may call a built layer concurrently (call()
// must not mutate the layer; weights change only through Variable::assign).
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "chorus/autograd/autocast_scope.h"
#include "chorus/autograd/variable.h"
#include "chorus/core/shared.h"
#include "chorus/core/tree.h"
#include "chorus/layers/initializers.h"
#include "chorus/layers/input_spec.h"
#include "chorus/layers/node.h"
#include "chorus/mixed_precision/dtype_policy.h"

namespace chorus::layers {

using autograd::Variable;

class Layer {
 public:
  // `class_name` is Keras's ("Dense"); an empty `name` becomes a unique snake_case one
  // ("dense", "dense_1", …) from a process-wide counter (reset_names() restarts it).
  Layer(std::string class_name, std::string name);
  virtual ~Layer();
  Layer(Layer&&) noexcept;
  Layer& operator=(Layer&&) = delete;
  Layer(const Layer&) = delete;

  const std::string& name() const { return name_; }
  // Keras's layer.path: the name, under the path of the layer whose build() created this
  // one with add<L>() ("transformer_encoder/self_attention_layer/query"); just the name
  // otherwise. Weights are "<path>/<weight name>", so the sublayers of two attention
  // layers never clash.
  const std::string& path() const { return path_; }
  const std::string& class_name() const { return class_name_; }
  bool built() const { return built_.load(std::memory_order_acquire); }
  // Non-trainable layers contribute no trainable weights (fine-tuning).
  bool trainable() const { return trainable_; }
  void set_trainable(bool trainable) { trainable_ = trainable; }

  // Keras's dtype policy: the global policy when the layer was made (or its parent's,
  // for a sublayer made with add<L>()). Under "mixed_bfloat16" a layer keeps float32
  // weights and computes in bfloat16: operator() casts its floating inputs to
  // compute_dtype() and call() reads its weights cast to it (AutocastScope).
  // set_dtype_policy (before the first call; it also sets the sublayers made so far)
  // gives one layer another, e.g. "float32" for a model's last layer.
  const mixed_precision::DTypePolicy& dtype_policy() const { return dtype_policy_; }
  void set_dtype_policy(const mixed_precision::DTypePolicy& policy);
  DType compute_dtype() const { return dtype_policy_.compute_dtype(); }
  DType variable_dtype() const { return dtype_policy_.variable_dtype(); }
  // Whether this layer's inputs and weights are cast to its compute dtype (Keras's
  // layer.autocast). Layers that compute in float32 whatever the policy
  // (LayerNormalization, BatchNormalization) or cast what they read themselves
  // (Embedding: the rows, not the table) turn it off.
  bool autocast() const { return autocast_; }

  // Keras's __call__: checks the inputs against input_spec(), builds the layer from the
  // first inputs (and checks them against the spec build() set), then call().
  // On symbolic inputs (functional API) it records a node instead and returns symbolic
  // outputs; the graph then borrows this layer, which must outlive the model. Calling a
  // temporary (`Dense(10)(x)`) moves it into the graph, which then owns it.
  Tree operator()(const Tree& inputs, bool training = false) &;
  Tensor operator()(const Tensor& inputs, bool training = false) &;
  Tree operator()(const Tree& inputs, bool training = false) &&;
  Tensor operator()(const Tensor& inputs, bool training = false) &&;

  // What the layer accepts, one spec per flattened input (Keras's layer.input_spec): set
  // by the constructor or build(); empty accepts anything. Not part of get_config().
  const std::vector<InputSpec>& input_spec() const { return input_spec_; }

  // Weights in creation order, this layer's first, then each sublayer's. A weight shared
  // by two sublayers appears once.
  std::vector<Variable> weights() const;
  std::vector<Variable> trainable_weights() const;
  std::vector<Variable> non_trainable_weights() const;
  int64_t count_params() const;
  // The weights this layer made with add_weight(), without its sublayers', in creation
  // order (saving keys them by object path: models/object_paths.h).
  const std::vector<Variable>& own_weights() const { return own_weights_; }

  // Direct sublayers in the order they were added.
  const std::vector<Layer*>& layers() const { return sublayers_; }
  // The direct sublayer called `name` (Keras's Model.get_layer), e.g. to freeze it:
  // model.get_layer("bert_backbone").get_layer("pooled_dense").set_trainable(false).
  // Throws ValueError "No such layer: x. Existing layers are: [...]" naming this layer.
  Layer& get_layer(std::string_view name) const;

  // The constructor arguments as Keras serialises them, plus "name" and "trainable".
  virtual nlohmann::json get_config() const;

  // The output shapes of the first call with the batch axis as -1 ("None"), one per
  // output leaf; empty before the first call. summary() prints them.
  const std::vector<Shape>& output_shapes() const { return output_shapes_; }

  // Builds explicitly from example inputs (shapes and dtypes are what matter).
  void build_from(const Tree& inputs);

  // Moves this layer to the heap: what a temporary does when it joins a functional
  // graph. Concrete layers override it with one line; the default throws ValueError
  // asking the caller to keep the layer in a variable.
  virtual std::shared_ptr<Layer> move_to_heap() &&;

  // Keras's clear_session() for names: the next Dense is "dense" again.
  static void reset_names();

  // Calls `layer` as operator() does; on symbolic inputs the new node shares ownership
  // of `layer` (how models rebuilt from a config keep their layers alive).
  friend Tree call_shared(const std::shared_ptr<Layer>& layer, const Tree& inputs, bool training);

 protected:
  // Creates the weights. `inputs` are the first call's inputs, possibly symbolic (a
  // batch of 0 rows): read shapes and dtypes only. The default creates none.
  virtual void build(const Tree& inputs);
  // The forward computation. Must be safe to run on several threads at once once built.
  virtual Tree call(const Tree& inputs, bool training) = 0;

  // A weight named `<layer path>/<name>`. Call from build() or the constructor.
  Variable add_weight(const std::string& name, const Shape& shape, const Initializer& initializer,
                      bool trainable = true, DType dtype = kFloat32);
  // Creates a sublayer this layer owns and whose weights it reports. Made from build()
  // (as Keras layers make theirs, inside their name scope), its path (and that of any
  // sublayer it made already) goes under this layer's; made from a constructor (a
  // subclassed model's layers), it keeps its own name.
  template <class L, class... Args>
  L* add(Args&&... args) {
    auto layer = std::make_shared<L>(std::forward<Args>(args)...);
    L* raw = layer.get();
    if (building_) static_cast<Layer*>(raw)->set_parent_path(path_);
    static_cast<Layer*>(raw)->dtype_policy_ = dtype_policy_;
    track(std::move(layer));
    return raw;
  }
  void track(std::shared_ptr<Layer> sublayer);
  // Declares what operator() accepts (Keras's `self.input_spec = ...`): one spec for a
  // single-tensor input, or one per flattened input. Call from the constructor or build();
  // throws ValueError for an inconsistent spec (validate_input_spec).
  void set_input_spec(InputSpec spec);
  void set_input_spec(std::vector<InputSpec> specs);
  void set_autocast(bool autocast) { autocast_ = autocast; }
  // Opens in `scope` the AutocastScope call() runs under: this layer's compute dtype when
  // it autocasts a mixed policy; one that casts nothing when it does not but an enclosing
  // layer's does; none otherwise. For entry points besides operator()
  // (MaskedLMHead::logits_for_rows).
  void enter_dtype_policy(std::optional<autograd::AutocastScope>& scope) const;
  // Models leave their inputs as given (their layers cast them), so that a functional
  // model's input specs still check the caller's dtypes.
  void set_cast_inputs(bool cast_inputs) { cast_inputs_ = cast_inputs; }
  // Records a borrowed sublayer (a functional graph's layers live in its nodes).
  void track_borrowed(Layer* sublayer) { sublayers_.push_back(sublayer); }

 private:
  std::vector<std::pair<Variable, bool>> weights_with_trainability() const;
  void set_parent_path(const std::string& parent);
  Tree call_symbolic(const Tree& inputs, std::shared_ptr<Layer> owner);
  Tree call_autocast(const Tree& inputs, bool training);
  void maybe_build(const Tree& inputs);
  void record_output_shapes(const Tree& outputs);

  std::string class_name_;
  std::string name_;
  std::string path_;  // name_, or "<parent path>/<name_>" for a sublayer made while building
  bool trainable_ = true;
  mixed_precision::DTypePolicy dtype_policy_ = mixed_precision::global_policy();
  bool autocast_ = true;
  bool cast_inputs_ = true;
  bool building_ = false;  // inside build(); guarded by the build mutex
  // Atomic: data-parallel replicas make a layer's first call from several threads at once;
  // build_mutex() makes one of them build while the others wait.
  std::atomic<bool> built_{false};
  std::atomic<bool> output_shapes_recorded_{false};
  std::vector<Variable> own_weights_;
  std::vector<std::shared_ptr<Layer>> owned_sublayers_;
  std::vector<Layer*> sublayers_;
  std::vector<Shape> output_shapes_;
  std::vector<InputSpec> input_spec_;  // written before built_ is released; read-only after
};

Tree call_shared(const std::shared_ptr<Layer>& layer, const Tree& inputs, bool training = false);

}  // namespace chorus::layers
