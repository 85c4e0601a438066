// The expected strings were produced by Keras's own progbar.py and progbar_logger.py
// (keras-team/keras at 3422977) driven with the same fake clock and the same calls.
#include "chorus/models/progbar_logger.h"

#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace chorus::models {
namespace {

std::string bs(int n) { return std::string(static_cast<size_t>(n), '\b'); }

// A logger on a string stream with a clock the test moves by hand.
class ProgbarLoggerTest : public ::testing::Test {
 protected:
  ProgbarLogger make_logger(bool interactive, CallbackParams params) {
    ProgbarLogger logger({.out = &out_, .clock = [this] { return now_; }, .interactive = interactive});
    logger.set_params(params);
    return logger;
  }

  // Two epochs of three batches as fit runs them, with a validation pass (which the
  // logger must not print) before each epoch ends.
  void run_fit(ProgbarLogger& logger, int epochs) {
    now_ = 100.0;
    logger.on_train_begin({});
    for (int epoch = 0; epoch < epochs; ++epoch) {
      const double t0 = 100.0 + 10 * epoch;
      now_ = t0;
      logger.on_epoch_begin(epoch, {});
      now_ = t0 + 0.5;
      logger.on_train_batch_end(0, {{"loss", 0.75}, {"acc", 0.5}});
      now_ = t0 + 0.52;  // within 0.05 s of the last redraw: skipped
      logger.on_train_batch_end(1, {{"loss", 0.625}, {"acc", 0.55}});
      now_ = t0 + 1.5;
      logger.on_train_batch_end(2, {{"loss", 0.5}, {"acc", 0.6}});
      now_ = t0 + 1.75;
      logger.on_test_begin({});
      logger.on_test_batch_end(0, {{"loss", 9.0}});
      logger.on_test_end({{"loss", 9.0}});
      logger.on_epoch_end(epoch, {{"loss", 0.5}, {"acc", 0.6}, {"val_loss", 0.4}, {"val_acc", 0.0001}});
    }
  }

  std::ostringstream out_;
  double now_ = 0.0;
};

const std::string kFirstBatchLine =
    "\r\x1b[1m1/3\x1b[0m \x1b[32m━━━━━━\x1b[0m\x1b[37m━━━━━━━━━━━━━━\x1b[0m \x1b[1m1s\x1b[0m 500ms/step - loss: "
    "0.7500 - acc: 0.5000";
const std::string kEpochEndLines =
    bs(67) +
    "\r\x1b[1m3/3\x1b[0m \x1b[32m━━━━━━━━━━━━━━━━━━━━\x1b[0m\x1b[37m\x1b[0m \x1b[1m0s\x1b[0m 500ms/step - loss: 0.5000 - "
    "acc: 0.6000" +
    bs(67) +
    "\r\x1b[1m3/3\x1b[0m \x1b[32m━━━━━━━━━━━━━━━━━━━━\x1b[0m\x1b[37m\x1b[0m \x1b[1m2s\x1b[0m 625ms/step - loss: 0.5000 - "
    "acc: 0.6000 - val_loss: 0.4000 - val_acc: 1.0000e-04\n";

TEST_F(ProgbarLoggerTest, TerminalRedrawsTheBarInPlace) {
  ProgbarLogger logger = make_logger(true, {.epochs = 2, .steps = 3, .verbose = 1});
  run_fit(logger, 2);
  EXPECT_EQ(out_.str(), "Epoch 1/2\n" + kFirstBatchLine + kEpochEndLines + "Epoch 2/2\n" + kFirstBatchLine +
                            kEpochEndLines);
}

TEST_F(ProgbarLoggerTest, OneEpochPrintsNoEpochHeader) {
  ProgbarLogger logger = make_logger(true, {.epochs = 1, .steps = 3, .verbose = 1});
  run_fit(logger, 1);
  EXPECT_EQ(out_.str(), kFirstBatchLine + kEpochEndLines);
}

TEST_F(ProgbarLoggerTest, NotATerminalPrintsOnlyEachEpochsFinalLinePlain) {
  ProgbarLogger logger = make_logger(false, {.epochs = 2, .steps = 3, .verbose = 1});
  run_fit(logger, 2);
  const std::string line =
      "3/3 ━━━━━━━━━━━━━━━━━━━━ 2s 625ms/step - loss: 0.5000 - acc: 0.6000 - val_loss: 0.4000 - val_acc: 1.0000e-04\n";
  EXPECT_EQ(out_.str(), "Epoch 1/2\n" + line + "Epoch 2/2\n" + line);
}

TEST_F(ProgbarLoggerTest, VerboseTwoPrintsOneLinePerEpoch) {
  for (bool interactive : {true, false}) {
    out_.str("");
    ProgbarLogger logger = make_logger(interactive, {.epochs = 2, .steps = 3, .verbose = 2});
    run_fit(logger, 2);
    const std::string line = "3/3 - 2s - 583ms/step - loss: 0.5000 - acc: 0.6000 - val_loss: 0.4000 - val_acc: 1.0000e-04\n";
    EXPECT_EQ(out_.str(), "Epoch 1/2\n" + line + "Epoch 2/2\n" + line);
  }
}

TEST_F(ProgbarLoggerTest, UnknownStepsCountTheFirstEpochAndKnowThemAfter) {
  ProgbarLogger logger = make_logger(true, {.epochs = 2, .steps = -1, .verbose = 1});
  run_fit(logger, 2);
  const std::string first_epoch =
      "\r      1/Unknown \x1b[1m0s\x1b[0m 500ms/step - loss: 0.7500 - acc: 0.5000" + bs(58) +
      "\r      3/Unknown \x1b[1m2s\x1b[0m 500ms/step - loss: 0.5000 - acc: 0.6000" + bs(58) +
      "\r\x1b[1m3/3\x1b[0m \x1b[32m━━━━━━━━━━━━━━━━━━━━\x1b[0m\x1b[37m\x1b[0m \x1b[1m2s\x1b[0m 625ms/step - loss: 0.5000 - "
      "acc: 0.6000 - val_loss: 0.4000 - val_acc: 1.0000e-04\n";
  EXPECT_EQ(out_.str(), "Epoch 1/2\n" + first_epoch + "Epoch 2/2\n" + kFirstBatchLine + kEpochEndLines);
}

TEST_F(ProgbarLoggerTest, UnknownStepsWithVerboseTwo) {
  ProgbarLogger logger = make_logger(false, {.epochs = 2, .steps = -1, .verbose = 2});
  run_fit(logger, 2);
  const std::string line = "3/3 - 2s - 583ms/step - loss: 0.5000 - acc: 0.6000 - val_loss: 0.4000 - val_acc: 1.0000e-04\n";
  EXPECT_EQ(out_.str(), "Epoch 1/2\n" + line + "Epoch 2/2\n" + line);
}

TEST_F(ProgbarLoggerTest, VerboseZeroPrintsNothing) {
  ProgbarLogger logger = make_logger(true, {.epochs = 2, .steps = 3, .verbose = 0});
  run_fit(logger, 2);
  EXPECT_EQ(out_.str(), "");
}

// evaluate outside fit: the logger shows the test batches.
void run_evaluate(ProgbarLogger& logger, double& now) {
  now = 50.0;
  logger.on_test_begin({});
  now = 50.004;
  logger.on_test_batch_end(0, {{"loss", 2.0}, {"mse", 12345.678}});
  now = 50.1;
  logger.on_test_batch_end(1, {{"loss", 1.5}, {"mse", 1234.5}});
  now = 50.2;
  logger.on_test_end({{"loss", 1.5}, {"mse", 1234.5}});
}

TEST_F(ProgbarLoggerTest, EvaluateOnATerminal) {
  ProgbarLogger logger = make_logger(true, {.epochs = 1, .steps = 2, .verbose = 1});
  run_evaluate(logger, now_);
  EXPECT_EQ(out_.str(),
            "\r\x1b[1m1/2\x1b[0m \x1b[32m━━━━━━━━━━\x1b[0m\x1b[37m━━━━━━━━━━\x1b[0m \x1b[1m0s\x1b[0m 4ms/step - loss: "
            "2.0000 - mse: 12345.6780" +
                bs(69) +
                "\r\x1b[1m2/2\x1b[0m \x1b[32m━━━━━━━━━━━━━━━━━━━━\x1b[0m\x1b[37m\x1b[0m \x1b[1m0s\x1b[0m 96ms/step - "
                "loss: 1.5000 - mse: 1234.5000" +
                bs(69) +
                "\r\x1b[1m2/2\x1b[0m \x1b[32m━━━━━━━━━━━━━━━━━━━━\x1b[0m\x1b[37m\x1b[0m \x1b[1m0s\x1b[0m 196ms/step - "
                "loss: 1.5000 - mse: 1234.5000\n");
}

TEST_F(ProgbarLoggerTest, EvaluateVerboseTwoAndNotATerminal) {
  ProgbarLogger two = make_logger(true, {.epochs = 1, .steps = 2, .verbose = 2});
  run_evaluate(two, now_);
  EXPECT_EQ(out_.str(), "2/2 - 0s - 100ms/step - loss: 1.5000 - mse: 1234.5000\n");
  out_.str("");
  ProgbarLogger plain = make_logger(false, {.epochs = 1, .steps = 2, .verbose = 1});
  run_evaluate(plain, now_);
  EXPECT_EQ(out_.str(), "2/2 ━━━━━━━━━━━━━━━━━━━━ 0s 196ms/step - loss: 1.5000 - mse: 1234.5000\n");
}

TEST_F(ProgbarLoggerTest, PredictShowsStepsButNoValues) {
  ProgbarLogger logger = make_logger(true, {.epochs = 1, .steps = 2, .verbose = 1});
  now_ = 10.0;
  logger.on_predict_begin({});
  now_ = 10.0002;
  logger.on_predict_batch_end(0, {{"outputs", 1.0}});
  now_ = 10.0004;
  logger.on_predict_batch_end(1, {{"outputs", 1.0}});
  logger.on_predict_end({});
  EXPECT_EQ(out_.str(),
            "\r\x1b[1m1/2\x1b[0m \x1b[32m━━━━━━━━━━\x1b[0m\x1b[37m━━━━━━━━━━\x1b[0m \x1b[1m0s\x1b[0m 200us/step" +
                bs(38) +
                "\r\x1b[1m2/2\x1b[0m \x1b[32m━━━━━━━━━━━━━━━━━━━━\x1b[0m\x1b[37m\x1b[0m \x1b[1m0s\x1b[0m 200us/step\n");
}

class ProgbarTest : public ::testing::Test {
 protected:
  Progbar make(int64_t target, int verbose) {
    return Progbar({.target = target, .verbose = verbose, .out = &out_, .clock = [this] { return now_; },
                    .interactive = true});
  }
  std::ostringstream out_;
  double now_ = 0.0;
};

// Hours and seconds per step, microseconds, a shorter line padded over a longer one,
// values below 1e-3 in %.4e.
TEST_F(ProgbarTest, TimeFormatsAndPadding) {
  Progbar bar = make(100000, 1);
  now_ = 2.0;
  bar.update(1, {{"loss", -0.0005}}, false);  // 2 s/step; ETA 199998 s
  now_ = 2.05;                                 // skipped, but the value is kept
  bar.update(2, {{"loss", std::nan("")}}, false);
  now_ = 2.2;
  bar.update(1000, {{"loss", 3.5}}, false);
  now_ = 2.3;
  bar.update(99999, {{"loss", 1e-4}}, false);
  now_ = 2.4;
  bar.update(100000, {{"loss", 2.0}}, true);
  EXPECT_EQ(out_.str(),
            "\r\x1b[1m     1/100000\x1b[0m \x1b[37m━━━━━━━━━━━━━━━━━━━━\x1b[0m \x1b[1m55:33:18\x1b[0m 2s/step - loss: "
            "-5.0000e-04" +
                bs(71) +
                "\r\x1b[1m  1000/100000\x1b[0m \x1b[37m━━━━━━━━━━━━━━━━━━━━\x1b[0m \x1b[1m19s\x1b[0m 200us/step - "
                "loss: 3.5000       " +
                bs(64) +
                "\r\x1b[1m 99999/100000\x1b[0m \x1b[32m━━━━━━━━━━━━━━━━━━━\x1b[0m\x1b[37m━\x1b[0m \x1b[1m0s\x1b[0m "
                "3us/step - loss: 1.0000e-04" +
                bs(65) +
                "\r\x1b[1m100000/100000\x1b[0m \x1b[32m━━━━━━━━━━━━━━━━━━━━\x1b[0m\x1b[37m\x1b[0m \x1b[1m2s\x1b[0m "
                "4us/step - loss: 2.0000    \n");
}

TEST_F(ProgbarTest, MinutesEta) {
  Progbar bar = make(10, 1);
  now_ = 1.0;
  bar.update(1, {{"loss", 1.0}}, false);
  now_ = 71.0;
  bar.update(2, {{"loss", 1.0}}, false);  // 70 s/step; ETA 560 s
  EXPECT_EQ(out_.str(),
            "\r\x1b[1m 1/10\x1b[0m \x1b[32m━━\x1b[0m\x1b[37m━━━━━━━━━━━━━━━━━━\x1b[0m \x1b[1m9s\x1b[0m 1s/step - loss: "
            "1.0000" +
                bs(52) +
                "\r\x1b[1m 2/10\x1b[0m \x1b[32m━━━━\x1b[0m\x1b[37m━━━━━━━━━━━━━━━━\x1b[0m \x1b[1m9:20\x1b[0m 70s/step - "
                "loss: 1.0000");
}

// verbose=2 tests v > 1e-3 without abs(): negative values print in %.4e, as in Keras.
TEST_F(ProgbarTest, VerboseTwoNumberFormats) {
  Progbar bar = make(100, 2);
  now_ = 1.0;
  bar.update(100,
             {{"loss", -0.5},
              {"mae", 0.0},
              {"big", 12345.6789},
              {"n", -std::numeric_limits<double>::quiet_NaN()},
              {"i", -std::numeric_limits<double>::infinity()}},
             true);
  EXPECT_EQ(out_.str(),
            "100/100 - 1s - 10ms/step - loss: -5.0000e-01 - mae: 0.0000e+00 - big: 12345.6789 - n: nan - i: -inf\n");
}

TEST_F(ProgbarTest, VerboseTwoPrintsNothingBeforeFinalizing) {
  Progbar bar = make(10, 2);
  bar.update(5, {{"loss", 1.0}}, false);
  EXPECT_EQ(out_.str(), "");
}

TEST(ProgbarLoggerDefaultsTest, AStringStreamIsNotATerminal) {
  std::ostringstream out;
  ProgbarLogger logger({.out = &out, .clock = [] { return 0.0; }});
  logger.set_params({.epochs = 1, .steps = 1, .verbose = 1});
  logger.on_train_begin({});
  logger.on_epoch_begin(0, {});
  logger.on_train_batch_end(0, {{"loss", 1.0}});
  logger.on_epoch_end(0, {{"loss", 1.0}});
  EXPECT_EQ(out.str(), "1/1 ━━━━━━━━━━━━━━━━━━━━ 0s 0s/step - loss: 1.0000\n");
}

}  // namespace
}  // namespace chorus::models
