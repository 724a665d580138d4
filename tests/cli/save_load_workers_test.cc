// model.save under MultiWorkerMirroredStrategy is a collective that returns on every worker only once the chief's
// files are durable: two real workers (lockstep launch, cli/save_load_worker.cc) save and at once load the
// chief's path on every worker, 50 times in a row, with the model directory, the .keras archive and the weights
// file in turn; ModelCheckpoint's file and TensorBoard's events are complete on every worker when fit() returns.
#include <gtest/gtest.h>

#include "cli_util.h"

namespace lockstep::testing {
namespace {

TEST(SaveOnEveryWorker, EveryWorkerLoadsTheChiefsFilesRightAfterSave) {
  const std::filesystem::path dir = temp_dir("save_load_workers");
  const char* bin = std::getenv("LOCKSTEP_BIN_DIR");
  const int rounds = 50;
  Result r = run_lockstep(std::string("launch -n 2 -- ") + (bin ? bin : LOCKSTEP_BIN_DIR) + "/save_load_worker " +
                          dir.string() + " " + std::to_string(rounds));
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  for (const char* worker : {"[worker 0] ", "[worker 1] "}) {
    const std::vector<std::string> lines = lines_after(r.out, worker);
    EXPECT_EQ(std::count_if(lines.begin(), lines.end(), [](const std::string& l) { return l.ends_with(" ok"); }), rounds)
        << worker << "\n" << r.out;
  }
  // Both workers saw the chief's TensorBoard events whole: the same size, once fit() had returned.
  const std::vector<std::string> e0 = lines_after(r.out, "[worker 0] events "), e1 = lines_after(r.out, "[worker 1] events ");
  ASSERT_EQ(e0.size(), 1u) << r.out;
  ASSERT_EQ(e1.size(), 1u) << r.out;
  EXPECT_GT(std::stoll(e0[0]), 0);
  EXPECT_EQ(e0[0], e1[0]);
  // The non-chief's temporary directories were removed; the chief's files stay.
  EXPECT_FALSE(std::filesystem::exists(dir / "workertemp_1"));
  EXPECT_TRUE(std::filesystem::exists(dir / "keras-model" / "config.json"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lockstep::testing
