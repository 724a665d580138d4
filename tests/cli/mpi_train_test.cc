// `lockstep train` under `mpirun -np 2 --oversubscribe` on this machine: the MPI cluster resolver and the
// MPI collective backend. 2 ranks x 64 match 1 process x 128 for 20 steps (custom loop and Keras fit), with
// identical weights on both ranks and bitwise the weights the network backend reaches; LOCKSTEP_COLLECTIVE chooses the
// backend, and a bad value or `mpi` outside mpirun is a one-line error. Skipped where mpirun is missing.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_util.h"

namespace lockstep::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool have_mpirun() { return std::system("command -v mpirun >/dev/null 2>&1") == 0; }

// `mpirun -np 2 lockstep <args>` with a deadline; TF_CONFIG and SLURM are unset so that MPI decides the ranks.
Result run_under_mpirun(const std::string& args, const std::string& env = "", int timeout_s = 300) {
  const char* bin = std::getenv("LOCKSTEP_BIN_DIR");
  const fs::path dir = temp_dir("mpirun");
  const std::string cmd = "env -u TF_CONFIG -u SLURM_PROCID " + env + " timeout -k 5 " + std::to_string(timeout_s) +
                          " mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 -x OMP_NUM_THREADS=1 " +
                          (bin ? bin : LOCKSTEP_BIN_DIR) + std::string("/lockstep ") + args + " >" +
                          (dir / "out").string() + " 2>" + (dir / "err").string();
  const int status = std::system(cmd.c_str());
  Result result{WEXITSTATUS(status), read_all((dir / "out").string()), read_all((dir / "err").string())};
  fs::remove_all(dir);
  return result;
}

class MPITrain : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_mpirun()) GTEST_SKIP() << "mpirun is not installed (apt-get install openmpi-bin libopenmpi-dev)";
    dir_ = temp_dir("mpi_train");
    write_idx_dataset(dir_, 640, 64);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  std::string common(const std::string& loop) const {
    return "train --loop " + loop + " --epochs 1 --steps-per-epoch 20 --optimizer sgd --learning-rate 0.05 --seed 3" +
           " --dataset " + dir_.string() + " --threads 1 --verbose 0";
  }
  json metrics(const std::string& name) const { return json::parse(read_all((dir_ / name).string())); }
  std::string out(const std::string& name) const { return " --metrics-out " + (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(MPITrain, TwoRanksOfTheCustomLoopMatchOneProcessWithTheGlobalBatchAndTheNetwork) {
  Result one = run_lockstep(common("ctl") + " --batch-size 128" + out("one.json"));
  ASSERT_EQ(one.code, 0) << one.err;
  Result mpi = run_under_mpirun(common("ctl") + " --batch-size 64" + out("mpi.json"));
  ASSERT_EQ(mpi.code, 0) << mpi.err << mpi.out;
  EXPECT_NE(mpi.err.find("collective backend: MPI"), std::string::npos) << mpi.err;
  json a = metrics("one.json"), b = metrics("mpi.json");
  EXPECT_EQ(b["num_workers"], 2);
  EXPECT_EQ(b["num_replicas_in_sync"], 2);
  auto la = a["step_losses"].get<std::vector<double>>(), lb = b["step_losses"].get<std::vector<double>>();
  ASSERT_EQ(la.size(), 20u);
  ASSERT_EQ(lb.size(), 20u);
  for (size_t i = 0; i < la.size(); ++i) EXPECT_NEAR(lb[i], la[i], 1e-5 * std::abs(la[i])) << "step " << i;
  EXPECT_NEAR(b["test_loss"].get<double>(), a["test_loss"].get<double>(), 1e-4 * a["test_loss"].get<double>());
  auto hashes = b["weights_sha256_per_worker"].get<std::vector<std::string>>();
  ASSERT_EQ(hashes.size(), 2u);
  EXPECT_EQ(hashes[0], hashes[1]);

  // The same job over the network backend (the MPI resolver's addresses, LOCKSTEP_COLLECTIVE=ring) reaches the same bits:
  // with two ranks both backends compute a + b for every gradient element.
  Result ring = run_under_mpirun(common("ctl") + " --batch-size 64" + out("ring.json"), "LOCKSTEP_COLLECTIVE=ring");
  ASSERT_EQ(ring.code, 0) << ring.err << ring.out;
  EXPECT_NE(ring.err.find("collective backend: UCX over TCP"), std::string::npos) << ring.err;
  EXPECT_EQ(metrics("ring.json")["weights_sha256"], b["weights_sha256"]);
}

TEST_F(MPITrain, TwoRanksOfKerasFitMatchOneProcessWithTheGlobalBatch) {
  Result one = run_lockstep(common("fit") + " --batch-size 128" + out("one.json"));
  ASSERT_EQ(one.code, 0) << one.err;
  Result mpi = run_under_mpirun(common("fit") + " --batch-size 64" + out("mpi.json"), "LOCKSTEP_COLLECTIVE=mpi");
  ASSERT_EQ(mpi.code, 0) << mpi.err << mpi.out;
  EXPECT_NE(mpi.err.find("collective backend: MPI"), std::string::npos) << mpi.err;
  json a = metrics("one.json"), b = metrics("mpi.json");
  EXPECT_EQ(b["num_workers"], 2);
  EXPECT_EQ(b["global_steps"], 20);
  const double loss_a = a["epochs"][0]["loss"].get<double>(), loss_b = b["epochs"][0]["loss"].get<double>();
  EXPECT_NEAR(loss_b, loss_a, 1e-5 * std::abs(loss_a));
  EXPECT_NEAR(b["test_loss"].get<double>(), a["test_loss"].get<double>(), 1e-4 * a["test_loss"].get<double>());
  auto hashes = b["weights_sha256_per_worker"].get<std::vector<std::string>>();
  ASSERT_EQ(hashes.size(), 2u);
  EXPECT_EQ(hashes[0], hashes[1]);
}

TEST(MPIChoice, ABadLockstepCollectiveIsOneLineNamingTheVariable) {
  const fs::path dir = temp_dir("mpi_choice");
  write_idx_dataset(dir, 64, 16);
  for (const char* env : {"LOCKSTEP_COLLECTIVE=tcp", "LOCKSTEP_COLLECTIVE=mpi"}) {
    Result r = run_lockstep("train --epochs 1 --steps-per-epoch 1 --dataset " + dir.string(), env, 60);
    EXPECT_EQ(r.code, 2) << env << ": " << r.err;
    EXPECT_EQ(count_lines(r.err), 1u) << env << ": " << r.err;
    // tcp is not a value (ring is); mpi outside mpirun says how to start the job.
    EXPECT_NE(r.err.find(std::string(env).find("tcp") != std::string::npos ? "LOCKSTEP_COLLECTIVE='tcp'" : "mpirun"),
              std::string::npos)
        << r.err;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lockstep::testing
