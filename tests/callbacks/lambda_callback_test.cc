#include "chorus/callbacks/lambda_callback.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace chorus::callbacks {
namespace {

using models::Logs;

TEST(LambdaCallbackTest, CallsTheGivenFunctionsWithTheirArguments) {
  std::vector<std::string> calls;
  auto batch = [&](const char* what) {
    return [&calls, what](int64_t b, const Logs& logs) {
      calls.push_back(std::string(what) + " " + std::to_string(b) + " " + std::to_string(logs.size()));
    };
  };
  auto epoch = [&](const char* what) {
    return [&calls, what](int e, const Logs& logs) {
      calls.push_back(std::string(what) + " " + std::to_string(e) + " " + std::to_string(logs.size()));
    };
  };
  auto plain = [&](const char* what) {
    return [&calls, what](const Logs& logs) { calls.push_back(std::string(what) + " " + std::to_string(logs.size())); };
  };
  LambdaCallback callback({.on_epoch_begin = epoch("epoch_begin"),
                           .on_epoch_end = epoch("epoch_end"),
                           .on_train_begin = plain("train_begin"),
                           .on_train_end = plain("train_end"),
                           .on_train_batch_begin = batch("train_batch_begin"),
                           .on_train_batch_end = batch("train_batch_end"),
                           .on_test_begin = plain("test_begin"),
                           .on_test_end = plain("test_end"),
                           .on_test_batch_begin = batch("test_batch_begin"),
                           .on_test_batch_end = batch("test_batch_end"),
                           .on_predict_begin = plain("predict_begin"),
                           .on_predict_end = plain("predict_end"),
                           .on_predict_batch_begin = batch("predict_batch_begin"),
                           .on_predict_batch_end = batch("predict_batch_end")});
  const Logs two = {{"loss", 1.0}, {"acc", 0.5}};
  callback.on_train_begin({});
  callback.on_epoch_begin(4, {});
  callback.on_train_batch_begin(7, {});
  callback.on_train_batch_end(7, two);
  callback.on_epoch_end(4, two);
  callback.on_train_end(two);
  callback.on_test_begin({});
  callback.on_test_batch_begin(2, {});
  callback.on_test_batch_end(2, two);
  callback.on_test_end(two);
  callback.on_predict_begin({});
  callback.on_predict_batch_begin(5, {});
  callback.on_predict_batch_end(5, {});
  callback.on_predict_end({});
  EXPECT_EQ(calls, (std::vector<std::string>{
                       "train_begin 0", "epoch_begin 4 0", "train_batch_begin 7 0", "train_batch_end 7 2",
                       "epoch_end 4 2", "train_end 2", "test_begin 0", "test_batch_begin 2 0", "test_batch_end 2 2",
                       "test_end 2", "predict_begin 0", "predict_batch_begin 5 0", "predict_batch_end 5 0",
                       "predict_end 0"}));
}

TEST(LambdaCallbackTest, UnsetFunctionsDoNothing) {
  int ends = 0;
  LambdaCallback callback({.on_epoch_end = [&](int, const Logs&) { ++ends; }});
  callback.on_train_begin({});
  callback.on_epoch_begin(0, {});
  callback.on_train_batch_end(0, {});
  callback.on_epoch_end(0, {});
  callback.on_train_end({});
  EXPECT_EQ(ends, 1);
}

}  // namespace
}  // namespace chorus::callbacks
