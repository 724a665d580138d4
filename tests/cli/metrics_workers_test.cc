// Sync-on-read metrics on real workers: two processes on 127.0.0.1 (lockstep launch) run a custom loop whose
// metrics were created in the strategy's scope (cli/metrics_worker.cc). Each worker sees half of the test set,
// yet both print the same result(), equal to what one process computes over the whole test set.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "cli_util.h"

namespace lockstep::testing {
namespace {

// "name value [whole value]" lines of one worker, by name.
std::map<std::string, std::vector<double>> values_of(const std::vector<std::string>& lines) {
  std::map<std::string, std::vector<double>> out;
  for (const std::string& line : lines) {
    std::istringstream in(line);
    std::string name, word;
    in >> name;
    while (in >> word)
      if (word != "whole") out[name].push_back(std::stod(word));
  }
  return out;
}

TEST(SyncOnReadMetrics, EveryWorkerPrintsTheResultOverAllWorkers) {
  const char* bin = std::getenv("LOCKSTEP_BIN_DIR");
  Result r = run_lockstep(std::string("launch -n 2 -- ") + (bin ? bin : LOCKSTEP_BIN_DIR) + "/metrics_worker 4");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  auto w0 = values_of(lines_after(r.out, "[worker 0] ")), w1 = values_of(lines_after(r.out, "[worker 1] "));
  ASSERT_EQ(w0["workers"], std::vector<double>{2}) << r.out;
  for (const char* name : {"train_accuracy", "test_accuracy", "test_loss", "after_reset"}) {
    ASSERT_FALSE(w0[name].empty()) << name << "\n" << r.out;
    EXPECT_EQ(w0[name][0], w1[name][0]) << name << ": the workers disagree\n" << r.out;
  }
  // Over every replica of every worker = over the whole data in one process.
  EXPECT_EQ(w0["test_accuracy"][0], w0["test_accuracy"][1]) << r.out;
  EXPECT_NEAR(w0["test_loss"][0], w0["test_loss"][1], 1e-12 * w0["test_loss"][1]) << r.out;
  EXPECT_GT(w0["test_loss"][0], 0) << r.out;
  // ...though each worker accumulated only its own half.
  EXPECT_EQ(w0["examples"], (std::vector<double>{50, 100})) << r.out;
  EXPECT_EQ(w1["examples"], (std::vector<double>{50, 100})) << r.out;
  EXPECT_EQ(w0["after_reset"][0], 0.0);
}

}  // namespace
}  // namespace lockstep::testing
