// The MPI backend between real processes: `mpirun -np N --oversubscribe` starts mpi_collective_ranks,
// whose ranks check every dtype and operation, broadcast, all_gather, barrier, concurrent tags, new tags
// started out of order, and a timeout that throws instead of hanging. Bounded in time; skipped (with the
// reason) where mpirun is not installed.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace lockstep::distribute {
namespace {

struct RanksRun {
  int code;
  std::string output;
};

bool have_mpirun() { return std::system("command -v mpirun >/dev/null 2>&1") == 0; }

// `mpirun -np <ranks> mpi_collective_ranks <name>` with a deadline; stdout and stderr of all ranks together.
RanksRun run_ranks(const std::string& name, int ranks, int timeout_s = 120, const std::string& mpirun_args = "") {
  const char* bin = std::getenv("LOCKSTEP_BIN_DIR");
  const std::filesystem::path out =
      std::filesystem::temp_directory_path() / ("lockstep_mpi_" + name + "_" + std::to_string(::getpid()));
  // As root mpirun needs --allow-run-as-root; --oversubscribe lets N ranks share fewer cores.
  const std::string cmd = "timeout -k 5 " + std::to_string(timeout_s) +
                          " mpirun --allow-run-as-root --oversubscribe --bind-to none " + mpirun_args + " -np " + std::to_string(ranks) +
                          " " + (bin ? bin : LOCKSTEP_BIN_DIR) + "/mpi_collective_ranks " + name + " >" +
                          out.string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  std::ifstream in(out);
  RanksRun run{WIFEXITED(status) ? WEXITSTATUS(status) : 128, std::string(std::istreambuf_iterator<char>(in), {})};
  std::filesystem::remove(out);
  return run;
}

bool has_line(const std::string& output, const std::string& line) {
  return output.find(line + "\n") != std::string::npos;
}

class MPICollectives : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_mpirun()) GTEST_SKIP() << "mpirun is not installed (apt-get install openmpi-bin libopenmpi-dev)";
  }
};
class MPICollectivesOnRanks : public MPICollectives, public ::testing::WithParamInterface<int> {};

TEST_P(MPICollectivesOnRanks, EveryDtypeAndOpBroadcastAllGatherAndBarrierGiveTheSameBitsOnEveryRank) {
  const RanksRun r = run_ranks("collectives", GetParam());
  EXPECT_EQ(r.code, 0) << r.output;
  for (int rank = 0; rank < GetParam(); ++rank)
    EXPECT_TRUE(has_line(r.output, "rank " + std::to_string(rank) + " ok collectives")) << r.output;
  EXPECT_EQ(r.output.find("FAIL"), std::string::npos) << r.output;
}

// 2 ranks, and 3 (not a power of two: other algorithm paths).
INSTANTIATE_TEST_SUITE_P(Ranks, MPICollectivesOnRanks, ::testing::Values(2, 3),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

TEST_F(MPICollectives, ConcurrentTagsFromThreadsAreNotCrossed) {
  const RanksRun r = run_ranks("concurrent", 2);
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has_line(r.output, "rank 0 ok concurrent")) << r.output;
  EXPECT_TRUE(has_line(r.output, "rank 1 ok concurrent")) << r.output;
}

TEST_F(MPICollectives, NewTagsStartedInDifferentOrdersFailOnEveryRankNamingTheTags) {
  // The ranks then skip MPI_Finalize (the crossed communicators cannot be trusted), so mpirun fails.
  const RanksRun r = run_ranks("out_of_order", 2);
  EXPECT_TRUE(has_line(r.output, "rank 0 ok out_of_order")) << r.output;
  EXPECT_TRUE(has_line(r.output, "rank 1 ok out_of_order")) << r.output;
  EXPECT_EQ(r.output.find("FAIL"), std::string::npos) << r.output;
}

TEST_F(MPICollectives, ACollectiveNobodyJoinsThrowsAfterItsTimeoutInsteadOfHanging) {
  // Rank 0 abandons the request MPI cannot cancel, so it skips MPI_Finalize and mpirun reports the job failed.
  const RanksRun r = run_ranks("timeout", 2, 60);
  EXPECT_NE(r.code, 124) << "mpirun hung: " << r.output;
  EXPECT_TRUE(has_line(r.output, "rank 0 ok timeout")) << r.output;
  EXPECT_TRUE(has_line(r.output, "rank 1 ok timeout")) << r.output;
  EXPECT_NE(r.output.find("rank 0 timeout message: MPI all_reduce (tag 30) on rank 0 of 2 timed out after 300 ms"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("FAIL"), std::string::npos) << r.output;
}

// The strategy closes its connections only after the coordination service's shutdown barrier, so a broadcast
// that rank 0 sends last still reaches a slower rank 1; with gloo (ring) and with MPI.
TEST_F(MPICollectives, ALastBroadcastReachesASlowerRankBeforeTheConnectionsClose) {
  for (const std::string backend : {"ring", "mpi"}) {
    const RanksRun r = run_ranks("last_broadcast", 2, 60, "-x LOCKSTEP_COLLECTIVE=" + backend);
    EXPECT_EQ(r.code, 0) << backend << ": " << r.output;
    EXPECT_TRUE(has_line(r.output, "rank 0 ok last_broadcast")) << backend << ": " << r.output;
    EXPECT_TRUE(has_line(r.output, "rank 1 ok last_broadcast")) << backend << ": " << r.output;
  }
}

}  // namespace
}  // namespace lockstep::distribute
