// BERT-tiny masked-LM pretraining on WikiText-2 in the PyTorch peer's configuration
// (../shared/peers/bert_mlm.py's docstring): word-level vocabulary of every training
// word, [CLS] words [SEP] padded to 128, batches of 64 in file order (cycling), 15% of
// the word positions masked per step (80% [MASK], 10% random, 10% kept), the head on the
// masked positions only, loss averaged over them, AdamW 2e-4 (eps 1e-7, weight decay
// 0.004) decayed linearly to 0, dropout 0.1. bench/run_bert_mlm runs the peer in the same
// window and passes its JSON lines here.
//   case float32   steps/s over the timed span (data, masking and the step, as the peer
//                  times), the loss curve (mean of the 25 steps before each point), the
//                  validation loss and masked accuracy; ratio to the best peer setting.
//   case mixed_bfloat16  the float32 case under mixed_precision::set_global_policy(
//                  "mixed_bfloat16"); ratios to the best float32 peer setting and to the
//                  peer's own bfloat16 autocast.
//   case scaling   the same steps on --devices logical devices (one core each).
//   case fidelity  --preset DIR from bench/bert_hf_fidelity.py: the peer's model with
//                  the peer's weights in Hugging Face naming, loaded by from_preset; the
//                  logits of the masked positions and the loss against the peer's.
// --jit-compile runs the steps compiled (model.jit_compile); first_step_s is the first
// step's time, which then includes tracing and compiling it.
// Usage: bert_mlm_bench [--data DIR] [--steps N] [--threads N] [--devices N] [--no-val]
//                       [--jit-compile] [--torch-json FILE]
//                       [--case float32|mixed_bfloat16|scaling|fidelity] [--preset DIR]
// Single-threaded driver; one JSON line per measurement (bench_util.h emit).
#include <chrono>
#include <fstream>
#include <map>
#include <iostream>

#include "bench/bench_util.h"
#include "chorus/backend/cpu/parallel.h"
#include "chorus/chorus.h"
#include "chorus/io/safetensors.h"

namespace chorus {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t kSequence = 128, kBatch = 64, kMasks = 20;
constexpr int32_t kPad = 0, kCls = 1, kSep = 2, kMask = 3, kUnk = 4;

struct BertBenchArgs {
  std::string data = "../shared/data/wikitext-2";
  int64_t steps = 300;
  int threads = 2;
  int devices = 0;  // 0: no distribution
  bool validate = true;
  bool jit_compile = false;
  std::string torch_json;
  std::string bench_case = "float32";
  std::string preset;  // fidelity: the folder bert_hf_fidelity.py wrote
};

std::map<std::string, Tensor> read_named(const std::string& file) {
  std::map<std::string, Tensor> out;
  for (auto& [name, tensor] : io::load_safetensors(file).tensors) out[name] = tensor;
  return out;
}

// The peer's batch through chorus's model loaded from the peer's weights.
void run_fidelity(const BertBenchArgs& args) {
  auto model = models::BertMaskedLM::from_preset(args.preset, {.with_preprocessor = false});
  auto batch = read_named(args.preset + "/batch.safetensors");
  auto expected = read_named(args.preset + "/expected.safetensors");
  const Tree x = Tree{{"token_ids", batch["token_ids"]},
                      {"padding_mask", batch["padding_mask"]},
                      {"mask_positions", batch["mask_positions"]}};
  autograd::NoGradGuard no_grad;
  const Tensor logits = (*model)(x, false).tensor();  // (B, M, V)
  const Tensor& weights = batch["mask_weights"];
  const int64_t vocabulary = logits.dim(2);
  std::vector<int32_t> kept;  // the real masked rows, in row order (the peer's order)
  for (int64_t i = 0; i < weights.numel(); ++i) {
    if (weights.data<float>()[i] != 0) kept.push_back(static_cast<int32_t>(i));
  }
  const Tensor ours = ops::take(ops::reshape(logits, {weights.numel(), vocabulary}),
                                from_values<int32_t>(kept, Shape{static_cast<int64_t>(kept.size())}), 0);
  const Tensor& theirs = expected["logits"];
  double worst = 0, scale = 0;
  for (int64_t i = 0; i < theirs.numel(); ++i) scale = std::max(scale, std::abs(double{theirs.data<float>()[i]}));
  for (int64_t i = 0; i < theirs.numel(); ++i) {
    worst = std::max(worst, std::abs(double{ours.data<float>()[i]} - theirs.data<float>()[i]));
  }
  const losses::SparseCategoricalCrossentropy loss({.from_logits = true, .reduction = "mean_with_sample_weight"});
  const double our_loss = loss(batch["mask_ids"], logits, weights).item<float>();
  const double their_loss = expected["loss"].data<float>()[0];
  bench::emit({{"bench", "bert_mlm"}, {"case", "fidelity"}, {"masked", kept.size()},
               {"max_abs_logit_difference", worst}, {"max_abs_logit", scale},
               {"max_relative_logit_difference", worst / scale}, {"loss", our_loss}, {"peer_loss", their_loss},
               {"relative_loss_difference", std::abs(our_loss - their_loss) / their_loss}});
}

// The lines of `file` longer than 100 bytes, newline stripped (the peer's read_lines).
std::vector<std::string> long_wiki_lines(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw_error<IOError>("bert_mlm_bench: cannot read {}", file);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) {
    if (line.size() > 100) out.push_back(line);
  }
  return out;
}

// (rows, 128) int32: [CLS] w1 .. wn [SEP] [PAD]..., at most 126 words (the peer's encode).
Tensor encode_rows(const std::vector<std::string>& lines, const text::WordTokenizer& tokenizer) {
  Tensor ids = zeros({static_cast<int64_t>(lines.size()), kSequence}, kInt32);
  std::vector<int32_t> words;
  for (size_t r = 0; r < lines.size(); ++r) {
    words.clear();
    tokenizer.tokenize_into(lines[r], words);
    int32_t* row = ids.data<int32_t>() + r * kSequence;
    const int64_t n = std::min<int64_t>(static_cast<int64_t>(words.size()), kSequence - 2);
    row[0] = kCls;
    std::copy_n(words.begin(), n, row + 1);
    row[n + 1] = kSep;
  }
  return ids;
}

// Batch `step` of the peer's cursor: 64 rows from the cursor, back to row 0 at the end.
struct BatchCursor {
  int64_t rows, cursor = 0, element = 0;
  std::pair<int64_t, int64_t> next() {
    if (cursor >= rows) cursor = 0;
    const int64_t start = cursor, count = std::min(kBatch, rows - cursor);
    cursor += kBatch;
    return {start, count};
  }
};

Tree masked_batch(const Tensor& ids, const text::MaskedLMMaskGenerator& masker, uint64_t epoch, BatchCursor& cursor) {
  const auto [start, count] = cursor.next();
  const Tensor rows = ids.first_axis_slice(start, start + count).clone();
  const Tree m = masker.mask_batch(rows, epoch, static_cast<uint64_t>(cursor.element));
  cursor.element += count;
  Tensor padding_mask = Tensor::empty(rows.shape(), kInt32);
  for (int64_t i = 0; i < rows.numel(); ++i) padding_mask.data<int32_t>()[i] = rows.data<int32_t>()[i] != kPad;
  const Tree x = Tree{{"token_ids", m["token_ids"]},
                      {"padding_mask", padding_mask},
                      {"mask_positions", m["mask_positions"]}};
  return Tree::list({x, m["mask_ids"], m["mask_weights"]});
}

// Loss per step from fit's running means (weighted by batch rows).
class StepLosses : public models::Callback {
 public:
  void on_train_batch_end(int64_t batch, const models::Logs& logs) override {
    if (batch == 0) first_step_end = Clock::now();
    const double mean = logs.at("loss"), acc = logs.at("sparse_categorical_accuracy");
    const int64_t rows = batch_rows.at(static_cast<size_t>(batch));
    const double total = static_cast<double>(seen + rows);
    losses.push_back((mean * total - loss_mean * static_cast<double>(seen)) / static_cast<double>(rows));
    accuracies.push_back((acc * total - acc_mean * static_cast<double>(seen)) / static_cast<double>(rows));
    loss_mean = mean, acc_mean = acc, seen += rows;
  }
  std::vector<int64_t> batch_rows;
  std::vector<double> losses, accuracies;
  std::vector<double> masked_rows;  // per batch, as the pipeline made them
  Clock::time_point first_step_end;  // the first step traces and compiles under jit

 private:
  double loss_mean = 0, acc_mean = 0;
  int64_t seen = 0;
};

// One matrix product of the step: `count` times (batch x) op(a) (M, K) @ op(b) (K, N).
struct StepProduct {
  int64_t count, batch, m, k, n;
  bool ta, tb;
};

// The products of one BERT-tiny step (forward, and both backward products of each) with
// `masked` head rows: what the step costs if nothing but its matmuls ran, each at the
// speed oneDNN reaches on it alone (timed here through ops::matmul).
struct MatmulFloor {
  double seconds = 0, flops = 0;
  nlohmann::json products = nlohmann::json::array();  // [shape, count, GFLOP/s] each
};

MatmulFloor matmul_floor(int64_t masked, int64_t vocabulary, DType dtype) {
  const int64_t tokens = kBatch * kSequence, heads = 2, head_dim = 64, hidden = 128, inner = 512;
  std::vector<StepProduct> products;
  auto dense = [&](int64_t count, int64_t rows, int64_t in, int64_t out) {
    products.push_back({count, 1, rows, in, out, false, false});  // x @ W
    products.push_back({count, 1, rows, out, in, false, true});   // dx = g @ W^T
    products.push_back({count, 1, in, rows, out, true, false});   // dW = x^T @ g
  };
  auto batched = [&](int64_t count, int64_t m, int64_t k, int64_t n) {  // (B * heads) products
    products.push_back({count, kBatch * heads, m, k, n, false, true});
    products.push_back({count, kBatch * heads, m, n, k, false, false});
    products.push_back({count, kBatch * heads, k, m, n, true, false});
  };
  dense(2 * 4, tokens, hidden, hidden);           // query, key, value, attention output
  dense(2, tokens, hidden, inner);                // feedforward in
  dense(2, tokens, inner, hidden);                // feedforward out
  batched(2, kSequence, head_dim, kSequence);     // scores = q @ k^T
  batched(2, kSequence, kSequence, head_dim);     // probabilities @ v
  dense(1, masked, hidden, hidden);               // head's dense
  products.push_back({1, 1, masked, hidden, vocabulary, false, true});  // logits = h @ E^T
  products.push_back({1, 1, masked, vocabulary, hidden, false, false});  // dh = g @ E
  products.push_back({1, 1, vocabulary, masked, hidden, true, false});   // dE = g^T @ h
  MatmulFloor floor;
  Generator gen(3);
  for (const StepProduct& p : products) {
    const Shape a = p.ta ? Shape{p.k, p.m} : Shape{p.m, p.k}, b = p.tb ? Shape{p.n, p.k} : Shape{p.k, p.n};
    auto with_batch = [&](Shape s) { return p.batch > 1 ? Shape{p.batch, s[0], s[1]} : s; };
    const Tensor x = ops::cast(uniform(with_batch(a), gen), dtype), y = ops::cast(uniform(with_batch(b), gen), dtype);
    auto product = [&] { (void)ops::matmul(x, y, {.transpose_a = p.ta, .transpose_b = p.tb}); };
    const double once = bench::median_seconds(product, bench::calibrate_iters(product, 0.02), 5);
    const double flops = 2.0 * static_cast<double>(p.batch * p.m * p.k * p.n);
    floor.seconds += static_cast<double>(p.count) * once;
    floor.flops += static_cast<double>(p.count) * flops;
    floor.products.push_back({fmt::format("{}{}x{}{}@{}x{}{}", p.batch > 1 ? std::to_string(p.batch) + "x" : "", p.m,
                                          p.k, p.ta ? "^T" : "", p.k, p.n, p.tb ? "^T" : ""),
                              p.count, std::round(flops / once * 1e-9)});
  }
  return floor;
}

// The best steps/s among the peer's runs with (or without) its bfloat16 autocast.
double best_torch_steps_per_s(const std::string& file, bool autocast_bf16) {
  double best = 0;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] != '{') continue;
    const auto run = nlohmann::json::parse(line);
    if (run.value("autocast_bf16", false) != autocast_bf16) continue;
    best = std::max(best, run.value("steps_per_s", 0.0));
  }
  return best;
}

// The validation split, masked with a fixed seed: sum of token losses / tokens, and the
// share of masked tokens predicted right (the peer's evaluate).
std::pair<double, double> validate(models::BertMaskedLM& model, const Tensor& ids, const text::MaskedLMMaskGenerator& masker) {
  autograd::NoGradGuard no_grad;
  BatchCursor cursor{ids.dim(0)};
  const losses::SparseCategoricalCrossentropy sum_loss({.from_logits = true, .reduction = "sum"});
  double loss = 0, correct = 0, tokens = 0;
  while (cursor.cursor < ids.dim(0)) {
    const Tree batch = masked_batch(ids, masker, 1234, cursor);
    const Tensor logits = model(batch[0], false).tensor();
    const Tensor weights = batch[2].tensor();
    loss += sum_loss(batch[1].tensor(), logits, weights).item<float>();
    const Tensor hits = ops::cast(ops::equal(ops::argmax(logits, -1), ops::cast(batch[1].tensor(), kInt64)), kFloat32);
    correct += ops::sum(ops::multiply(hits, weights)).item<float>();
    tokens += ops::sum(weights).item<float>();
  }
  return {loss / tokens, correct / tokens};
}

nlohmann::json curve(const std::vector<double>& values) {
  nlohmann::json out = nlohmann::json::object();
  for (size_t end = 25; end <= values.size(); end += 25) {
    double s = 0;
    for (size_t i = end - 25; i < end; ++i) s += values[i];
    out[std::to_string(end)] = std::round(s / 25 * 1e4) / 1e4;
  }
  return out;
}

// The peer's data: its word vocabulary and the encoded train and validation rows.
struct PeerData {
  int64_t vocabulary_size = 0;
  Tensor train, val;
  double prep_s = 0;
};

PeerData load_peer_data(const std::string& dir) {
  const auto start = Clock::now();
  std::vector<std::string> vocabulary;
  {
    std::ifstream in(dir + "/wiki.train.tokens");
    vocabulary = text::build_word_vocabulary([&]() -> std::optional<std::string> {
      std::string line;
      return std::getline(in, line) ? std::optional(line) : std::nullopt;
    });
  }
  PeerData data{.vocabulary_size = static_cast<int64_t>(vocabulary.size())};
  const text::WordTokenizer tokenizer(text::Vocabulary(std::move(vocabulary), "wiki.train.tokens words"));
  data.train = encode_rows(long_wiki_lines(dir + "/wiki.train.tokens"), tokenizer);
  data.val = encode_rows(long_wiki_lines(dir + "/wiki.valid.tokens"), tokenizer);
  data.prep_s = std::chrono::duration<double>(Clock::now() - start).count();
  return data;
}

// The peer's model and optimizer, on `devices` logical devices (0: no distribution).
std::unique_ptr<models::BertMaskedLM> make_peer_model(int64_t vocabulary_size, int64_t steps, int devices) {
  layers::set_random_seed(0);
  std::optional<distribution::DistributionScope> scope;
  if (devices > 0) {
    chorus::set_cpu_devices(devices);
    scope.emplace(distribute::MirroredStrategy().scope());
  }
  auto model = std::make_unique<models::BertMaskedLM>(models::BertBackboneConfig{
      .vocabulary_size = vocabulary_size, .num_layers = 2, .num_heads = 2, .hidden_dim = 128,
      .intermediate_dim = 512, .dropout = 0.1, .max_sequence_length = kSequence});
  model->get_layer("bert_backbone").get_layer("pooled_dense").set_trainable(false);
  model->compile(
      {.optimizer = optimizers::AdamW({.learning_rate = optimizers::schedules::PolynomialDecay(2e-4, steps, 0.0),
                                       .weight_decay = 0.004,
                                       .epsilon = 1e-7}),
       .loss = losses::SparseCategoricalCrossentropy({.from_logits = true, .reduction = "mean_with_sample_weight"}),
       .metrics = {metrics::SparseCategoricalAccuracy()}});
  return model;
}

// The step's matmul floor for the masked rows the run saw, and the step's ratio to it.
void add_matmul_floor(nlohmann::json& record, const StepLosses& losses, int64_t vocabulary_size, double step_s) {
  double masked = 0;  // per step, on average: the head's products scale with it
  for (double rows : losses.masked_rows) masked += rows;
  masked /= static_cast<double>(std::max<size_t>(losses.masked_rows.size(), 1));
  // In the dtype the step multiplies in: bfloat16 under mixed precision.
  const MatmulFloor floor = matmul_floor(static_cast<int64_t>(std::lround(masked)), vocabulary_size,
                                         mixed_precision::global_policy().compute_dtype());
  record["masked_rows_per_step"] = masked;
  record["matmul_floor_s"] = floor.seconds;
  record["matmul_gflop"] = floor.flops * 1e-9;
  record["matmul_gflops"] = floor.flops / floor.seconds * 1e-9;
  record["matmul_products"] = floor.products;
  record["ratio_to_matmul_bound"] = floor.seconds / step_s;
}

void run(const BertBenchArgs& args) {
  backend::cpu::set_intra_op_threads(args.devices > 0 ? 1 : args.threads);
  if (args.bench_case == "mixed_bfloat16") mixed_precision::set_global_policy("mixed_bfloat16");
  const PeerData peer = load_peer_data(args.data);
  const text::MaskedLMMaskGenerator masker({.vocabulary_size = static_cast<int32_t>(peer.vocabulary_size),
                                            .mask_selection_length = kMasks,
                                            .mask_token_id = kMask,
                                            .unselectable_token_ids = {kPad, kCls, kSep, kMask, kUnk},
                                            .seed = 0});
  auto model = make_peer_model(peer.vocabulary_size, args.steps, args.devices);
  model->set_jit_compile(args.jit_compile);
  auto losses = std::make_shared<StepLosses>();
  BatchCursor sizes{peer.train.dim(0)};
  for (int64_t s = 0; s < args.steps; ++s) losses->batch_rows.push_back(sizes.next().second);
  auto batches = data::Dataset::from_generator(
      [&](int64_t) {
        auto cursor = std::make_shared<BatchCursor>(BatchCursor{peer.train.dim(0)});
        return [&, cursor]() -> std::optional<Tree> {
          Tree batch = masked_batch(peer.train, masker, 0, *cursor);
          losses->masked_rows.push_back(ops::sum(batch[2].tensor()).item<float>());
          return batch;
        };
      },
      data::kInfiniteCardinality);
  const auto start = Clock::now();
  model->fit(batches, {.epochs = 1, .verbose = 0, .callbacks = {losses}, .steps_per_epoch = args.steps});
  const double train_s = std::chrono::duration<double>(Clock::now() - start).count();
  const double first_step_s = std::chrono::duration<double>(losses->first_step_end - start).count();
  nlohmann::json record = {{"bench", "bert_mlm"}, {"case", args.bench_case}, {"threads", args.threads},
                           {"jit_compile", args.jit_compile}, {"first_step_s", first_step_s},
                           {"devices", args.devices}, {"steps", args.steps}, {"batch", kBatch},
                           {"seq_len", kSequence}, {"vocab", peer.vocabulary_size}, {"params", model->count_params()},
                           {"prep_s", peer.prep_s}, {"train_wall_s", train_s},
                           {"steps_per_s", static_cast<double>(args.steps) / train_s},
                           {"loss_curve", curve(losses->losses)}, {"masked_acc_curve", curve(losses->accuracies)}};
  add_matmul_floor(record, *losses, peer.vocabulary_size, train_s / static_cast<double>(args.steps));
  if (args.validate) {
    const auto [val_loss, val_acc] = validate(*model, peer.val, masker);
    record["val_loss"] = val_loss;
    record["val_masked_acc"] = val_acc;
  }
  if (!args.torch_json.empty()) {
    const double steps_per_s = record["steps_per_s"].get<double>();
    const double torch = best_torch_steps_per_s(args.torch_json, false);
    record["torch_best_steps_per_s"] = torch;
    if (torch > 0) record["ratio_steps_per_s"] = steps_per_s / torch;
    const double torch_bf16 = best_torch_steps_per_s(args.torch_json, true);
    if (args.bench_case == "mixed_bfloat16" && torch_bf16 > 0) {
      record["torch_autocast_bf16_steps_per_s"] = torch_bf16;
      record["ratio_to_torch_autocast_bf16"] = steps_per_s / torch_bf16;
    }
  }
  bench::emit(record);
}

}  // namespace
}  // namespace chorus

int main(int argc, char** argv) {
  chorus::BertBenchArgs args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--data") args.data = value();
    else if (a == "--steps") args.steps = std::stoll(value());
    else if (a == "--threads") args.threads = std::stoi(value());
    else if (a == "--devices") args.devices = std::stoi(value());
    else if (a == "--no-val") args.validate = false;
    else if (a == "--jit-compile") args.jit_compile = true;
    else if (a == "--torch-json") args.torch_json = value();
    else if (a == "--case") args.bench_case = value();
    else if (a == "--preset") args.preset = value();
    else {
      std::cerr << "bert_mlm_bench: unknown argument " << a << "\n";
      return 2;
    }
  }
  try {
    if (args.bench_case == "fidelity") {
      chorus::run_fidelity(args);
    } else {
      chorus::run(args);
    }
  } catch (const std::exception& e) {
    std::cerr << "bert_mlm_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
