// What a failed job says, with real training processes on 127.0.0.1: a chief whose port is taken says so in
// one line without gRPC's own log in front of it.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "process_util.h"

namespace lockstep::testing {
namespace {

namespace fs = std::filesystem;

TEST(ChiefPort, TakenPortIsOneLineWithoutGrpcsLog) {
  const fs::path dir = temp_dir("chief_port");
  write_idx_dataset(dir, 64, 16);
  // Hold the chief's port the way another job would: bound on every interface and listening.
  const int holder = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  ASSERT_EQ(::bind(holder, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(holder, 1), 0);
  socklen_t n = sizeof a;
  ::getsockname(holder, reinterpret_cast<sockaddr*>(&a), &n);
  const std::string config = tf_config({ntohs(a.sin_port), free_port()}, 0);
  const std::string args = "train --epochs 1 --threads 1 --verbose 0 --dataset " + dir.string();

  Result r = run_lockstep(args, "TF_CONFIG='" + config + "'", 60);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("the port is in use"), std::string::npos) << r.err;
  // GRPC_VERBOSITY, set explicitly, brings gRPC's own log back for debugging.
  r = run_lockstep(args, "GRPC_VERBOSITY=ERROR TF_CONFIG='" + config + "'", 60);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_GT(count_lines(r.err), 1u) << r.err;
  ::close(holder);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lockstep::testing
