// Callbacks: the progress bar's format, History, CSVLogger, EarlyStopping, LearningRateScheduler,
// TerminateOnNaN and ModelCheckpoint.
#include "lockstep/keras/callbacks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "lockstep/keras/model.h"

namespace lockstep::keras {
namespace {

namespace fs = std::filesystem;

struct Problem {
  Sequential model;
  data::Dataset ds;
};

Problem problem(double lr = 0.01) {
  Philox rng(1);
  Tensor x = random_uniform({70, 4}, rng);
  Tensor y = raw_ops::cast(random_uniform({70}, rng, 0, 2, DType::float64), DType::int64);
  Sequential model({Input({4}), layers::Dense(2)});
  model.compile({.optimizer = optimizers::SGD({.learning_rate = lr}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  return {model, data::Dataset::from_tensor_slices(x, y).batch(1)};
}

std::string read_file(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  return s;
}

TEST(ProgbarLogger, PrintsKerasLinesWhenNotATerminal) {
  auto [model, ds] = problem();
  std::FILE* out = std::tmpfile();
  model.fit(ds, {.epochs = 2, .callbacks = {std::make_shared<callbacks::ProgbarLogger>(out)}, .verbose = 0});
  // verbose = 0 silences fit's own bar; this one was given explicitly, with the run's params.
  std::string text = read_file(out);
  std::fclose(out);
  EXPECT_EQ(text, "");  // it follows params.verbose, which is 0
  std::FILE* out1 = std::tmpfile();
  auto bar = std::make_shared<callbacks::ProgbarLogger>(out1);
  // A non-zero verbose on a file: "Epoch i/n" and one final line per epoch.
  Problem p = problem();
  p.model.fit(p.ds, {.epochs = 2, .callbacks = {bar}, .verbose = 2});
  text = read_file(out1);
  std::fclose(out1);
  std::regex line(R"(Epoch 1/2\n70/70 - \d+s - loss: \d\.\d{4} - accuracy: \d\.\d{4} - \d+(s|ms|us)/step\nEpoch 2/2\n)");
  EXPECT_TRUE(std::regex_search(text, line)) << text;
}

TEST(ProgbarLogger, VerboseOneLineHasTheBar) {
  Problem p = problem();
  std::FILE* out = std::tmpfile();
  p.model.fit(p.ds, {.epochs = 1, .callbacks = {std::make_shared<callbacks::ProgbarLogger>(out)}, .verbose = 1});
  std::string text = read_file(out);
  std::fclose(out);
  std::regex line(R"(^70/70 \[==============================\] - \d+s \d+(s|ms|us)/step - loss: \d\.\d{4} - accuracy: \d\.\d{4}\n$)");
  EXPECT_TRUE(std::regex_search(text, line)) << text;
}

TEST(Callbacks, CSVLoggerWritesOneRowPerEpoch) {
  Problem p = problem();
  const std::string path = (fs::temp_directory_path() / "lockstep_test_log.csv").string();
  p.model.fit(p.ds, {.epochs = 3, .callbacks = {callbacks::CSVLogger(path)}, .verbose = 0});
  std::ifstream in(path);
  std::string header, row;
  std::getline(in, header);
  EXPECT_EQ(header, "epoch,accuracy,loss");
  int rows = 0;
  while (std::getline(in, row)) ++rows;
  EXPECT_EQ(rows, 3);
  fs::remove(path);
}

TEST(Callbacks, EarlyStoppingStopsWhenNothingImproves) {
  Problem p = problem(0.0);  // a zero learning rate: the loss never improves
  auto history = p.model.fit(p.ds, {.epochs = 10, .callbacks = {callbacks::EarlyStopping({.monitor = "loss", .patience = 2})},
                                    .verbose = 0});
  EXPECT_EQ(history.epoch.size(), 3u);
}

TEST(Callbacks, LearningRateSchedulerSetsTheRate) {
  Problem p = problem();
  std::vector<double> seen;
  p.model.fit(p.ds, {.epochs = 3,
                     .callbacks = {callbacks::LearningRateScheduler([&](int64_t epoch, double lr) {
                       seen.push_back(lr);
                       return 0.1 / static_cast<double>(epoch + 1);
                     })},
                     .verbose = 0});
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_DOUBLE_EQ(seen[1], 0.1);
  EXPECT_DOUBLE_EQ(p.model.optimizer()->learning_rate(), 0.1 / 3);
}

TEST(Callbacks, TerminateOnNaNStopsAtTheFirstBadBatch) {
  Problem p = problem(1e38);  // diverges to inf within a few steps
  auto history = p.model.fit(p.ds, {.epochs = 5, .callbacks = {callbacks::TerminateOnNaN()}, .verbose = 0});
  EXPECT_EQ(history.epoch.size(), 1u);
  EXPECT_LT(p.model.optimizer()->iterations(), 70);
}

TEST(Callbacks, ModelCheckpointFormatsThePath) {
  Problem p = problem();
  const fs::path dir = fs::temp_directory_path() / "lockstep_test_ckpt";
  fs::remove_all(dir);
  fs::create_directories(dir);
  p.model.fit(p.ds, {.epochs = 2,
                     .callbacks = {callbacks::ModelCheckpoint((dir / "weights.{epoch:02d}-{loss:.2f}.safetensors").string(),
                                                              {.monitor = "loss"})},
                     .verbose = 0});
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    EXPECT_TRUE(std::regex_match(e.path().filename().string(), std::regex(R"(weights\.0[12]-\d\.\d\d\.safetensors)")))
        << e.path();
    ++files;
  }
  EXPECT_EQ(files, 2);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lockstep::keras
