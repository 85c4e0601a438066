// LambdaCallback: a callback made of functions, for small custom actions (Keras's
// LambdaCallback). Each unset function is a no-op. Runs on the training thread.
#pragma once

#include <cstdint>
#include <functional>

#include "chorus/models/callback.h"
#include "chorus/models/logs.h"

namespace chorus::callbacks {

// Keras's six named arguments first, then the other hooks (Keras's **kwargs).
struct LambdaCallbackFunctions {
  using EpochFn = std::function<void(int epoch, const models::Logs& logs)>;
  using BatchFn = std::function<void(int64_t batch, const models::Logs& logs)>;
  using LogsFn = std::function<void(const models::Logs& logs)>;

  EpochFn on_epoch_begin;
  EpochFn on_epoch_end;
  LogsFn on_train_begin;
  LogsFn on_train_end;
  BatchFn on_train_batch_begin;
  BatchFn on_train_batch_end;
  LogsFn on_test_begin;
  LogsFn on_test_end;
  BatchFn on_test_batch_begin;
  BatchFn on_test_batch_end;
  LogsFn on_predict_begin;
  LogsFn on_predict_end;
  BatchFn on_predict_batch_begin;
  BatchFn on_predict_batch_end;
};

//   LambdaCallback({.on_epoch_end = [&](int epoch, const Logs& logs) { losses.push_back(logs["loss"]); }})
class LambdaCallback : public models::Callback {
 public:
  explicit LambdaCallback(LambdaCallbackFunctions functions) : fns_(std::move(functions)) {}

  void on_epoch_begin(int epoch, const models::Logs& logs) override { call(fns_.on_epoch_begin, epoch, logs); }
  void on_epoch_end(int epoch, const models::Logs& logs) override { call(fns_.on_epoch_end, epoch, logs); }
  void on_train_begin(const models::Logs& logs) override { call(fns_.on_train_begin, logs); }
  void on_train_end(const models::Logs& logs) override { call(fns_.on_train_end, logs); }
  void on_train_batch_begin(int64_t batch, const models::Logs& logs) override {
    call(fns_.on_train_batch_begin, batch, logs);
  }
  void on_train_batch_end(int64_t batch, const models::Logs& logs) override {
    call(fns_.on_train_batch_end, batch, logs);
  }
  void on_test_begin(const models::Logs& logs) override { call(fns_.on_test_begin, logs); }
  void on_test_end(const models::Logs& logs) override { call(fns_.on_test_end, logs); }
  void on_test_batch_begin(int64_t batch, const models::Logs& logs) override {
    call(fns_.on_test_batch_begin, batch, logs);
  }
  void on_test_batch_end(int64_t batch, const models::Logs& logs) override {
    call(fns_.on_test_batch_end, batch, logs);
  }
  bool implements_train_batch_hooks() const override {
    return static_cast<bool>(fns_.on_train_batch_begin) || static_cast<bool>(fns_.on_train_batch_end);
  }
  bool implements_test_batch_hooks() const override {
    return static_cast<bool>(fns_.on_test_batch_begin) || static_cast<bool>(fns_.on_test_batch_end);
  }
  void on_predict_begin(const models::Logs& logs) override { call(fns_.on_predict_begin, logs); }
  void on_predict_end(const models::Logs& logs) override { call(fns_.on_predict_end, logs); }
  void on_predict_batch_begin(int64_t batch, const models::Logs& logs) override {
    call(fns_.on_predict_batch_begin, batch, logs);
  }
  void on_predict_batch_end(int64_t batch, const models::Logs& logs) override {
    call(fns_.on_predict_batch_end, batch, logs);
  }

 private:
  template <class Fn, class... Args>
  static void call(const Fn& fn, const Args&... args) {
    if (fn) fn(args...);
  }

  LambdaCallbackFunctions fns_;
};

}  // namespace chorus::callbacks
