// BackupAndRestore: a fit() interrupted at any step and run again from scratch in a "new process" (fresh
// model, optimizer and dataset objects) ends with bitwise the weights, step count and History of a fit() that
// was never interrupted — mid-epoch, right after a save, at an epoch's end, with Dropout and a shuffled input.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "crash_at.h"
#include "../test_dir.h"
#include "lockstep/keras/model.h"

namespace lockstep::keras {
namespace {

namespace fs = std::filesystem;
namespace kl = layers;

struct Outcome {
  std::vector<Tensor> weights;
  int64_t iterations;
  callbacks::History history;
};

// The same program every time, as a restarted process would run it: seed, data, model (built lazily, with
// Dropout), optimizer, and fit with BackupAndRestore every `freq` steps.
Outcome train(const std::string& backup_dir, callbacks::SaveFreq freq, int64_t crash_at, bool fixed_steps) {
  utils::set_random_seed(7);
  Philox rng(3);
  Tensor x = random_normal({96, 4}, rng, 0, 1);
  Tensor y = raw_ops::cast(random_uniform({96}, rng, 0, 3, DType::float64), DType::int64);
  data::Dataset ds = data::Dataset::from_tensor_slices(x, y).shuffle(96, 5);
  ds = fixed_steps ? ds.repeat().batch(8) : ds.batch(8);
  Sequential model({kl::Dense(16, {.activation = "relu"}), kl::Dropout(0.3), kl::Dense(3)});
  model.compile({.optimizer = optimizers::Adam({.learning_rate = 0.01}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  std::vector<CallbackPtr> cbs;
  if (!backup_dir.empty())
    cbs.push_back(callbacks::BackupAndRestore({.backup_dir = backup_dir, .save_freq = freq, .async_checkpoint = crash_at % 2 == 0}));
  if (crash_at > 0) cbs.push_back(std::make_shared<CrashAt>(crash_at));
  callbacks::History h = model.fit(ds, {.epochs = 3, .steps_per_epoch = fixed_steps ? 10 : -1, .callbacks = cbs, .verbose = 0});
  return {model.get_weights(), model.optimizer()->iterations(), h};
}

class BackupAndRestoreTest : public ::testing::TestWithParam<std::tuple<int64_t, int64_t, bool>> {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() / ("lockstep_backup_test_" + std::to_string(::getpid()))).string();
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_P(BackupAndRestoreTest, ResumesBitwise) {
  const auto [freq, crash_at, fixed_steps] = GetParam();
  const callbacks::SaveFreq save_freq = freq > 0 ? callbacks::SaveFreq(freq) : callbacks::SaveFreq("epoch");
  const Outcome reference = train("", save_freq, 0, fixed_steps);
  EXPECT_THROW(train(dir_, save_freq, crash_at, fixed_steps), Crash);
  EXPECT_TRUE(fs::exists(dir_ + "/checkpoint") || crash_at < (freq > 0 ? freq : 12)) << "no backup was written";
  const Outcome resumed = train(dir_, save_freq, 0, fixed_steps);
  EXPECT_EQ(resumed.iterations, reference.iterations);
  ASSERT_EQ(resumed.weights.size(), reference.weights.size());
  for (size_t i = 0; i < reference.weights.size(); ++i)
    EXPECT_EQ(resumed.weights[i].to_vector<float>(), reference.weights[i].to_vector<float>()) << "variable " << i;
  EXPECT_EQ(resumed.history.epoch, reference.history.epoch);
  EXPECT_EQ(resumed.history.history, reference.history.history);
  EXPECT_FALSE(fs::exists(dir_)) << "the backup is deleted after a successful fit";
}

// (save every N steps or 0 = every epoch, crash after this many steps, steps_per_epoch with repeat()).
INSTANTIATE_TEST_SUITE_P(KillPoints, BackupAndRestoreTest,
                         ::testing::Values(std::tuple{5, 7, false},   // mid-epoch, between saves
                                           std::tuple{5, 10, false},  // right after a save
                                           std::tuple{4, 13, false},  // second epoch
                                           std::tuple{0, 14, false},  // saves per epoch, crash in epoch 2
                                           std::tuple{3, 25, true},   // one iterator across epochs
                                           std::tuple{0, 21, true}));

TEST(BackupAndRestore, RestoresIntoAModelThatWasNeverCalled) {
  const testing::TestDir temp("lockstep_backup_unbuilt");
  const std::string dir = temp.str() + "/backup";
  EXPECT_THROW(train(dir, callbacks::SaveFreq(2), 6, false), Crash);
  // The model in train() has no Input: it is unbuilt when fit() restores, and gets built from the backup.
  const Outcome resumed = train(dir, callbacks::SaveFreq(2), 0, false);
  EXPECT_EQ(resumed.iterations, 36);
}

TEST(BackupAndRestore, OptionsAreChecked) {
  EXPECT_THROW(callbacks::SaveFreq("batch"), ValueError);
  EXPECT_THROW(callbacks::SaveFreq(int64_t{-3}), ValueError);
  EXPECT_THROW(callbacks::BackupAndRestore({}), ValueError);
}

}  // namespace
}  // namespace lockstep::keras
