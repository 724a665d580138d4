// `lockstep tf-config` run as a user runs it: a malformed TF_CONFIG gives exit code 2 and one line on stderr;
// a valid one prints the role (text and --json).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_util.h"

namespace lockstep::distribute {
namespace {

// Runs `lockstep tf-config <args>` with TF_CONFIG set (the JSON must not hold a single quote) and SLURM
// ignored, with a deadline so a hang fails (exit code 124).
testing::Result tf_config(const std::string& json, const std::string& args = "") {
  return testing::run_lockstep("tf-config " + args, "TF_CONFIG='" + json + "' LOCKSTEP_USE_SLURM=0", 60);
}

TEST(TFConfigCli, MalformedConfigsExitTwoWithOneLine) {
  const std::pair<std::string, std::string> cases[] = {
      {R"({"cluster": )", "not valid JSON"},
      {R"({"cluster": {"worker": ["a:1"], "ps": ["a:2"]}, "task": {"type": "worker", "index": 0}})",
       "remove the ps job"},
      {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 3}})", "out of range"},
      {R"({"cluster": {"worker": ["localhost"]}, "task": {"type": "worker", "index": 0}})", "has no port"},
      {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": "0"}})", "use a number"},
      {R"(["worker"])", "expected an object"},
      {R"({"task": {"type": "worker", "index": 0}})", "no \"cluster\""},
      {R"({"cluster": {}, "task": {"type": "worker", "index": 0}})", "has no jobs"},
      {R"({"cluster": {"worker": ["a:1"]}})", "no \"task\""},
      {R"({"cluster": {"worker": ["a:1"]}, "task": {"index": 0}})", "no \"type\""},
      {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": -1}})", "is negative"},
      {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "chief", "index": 0}})", "chief"},
      {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "boss", "index": 0}})", "boss"},
      {R"({"cluster": {"worker": ["a:1"], "trainer": ["a:2"]}, "task": {"type": "worker", "index": 0}})", "trainer"},
      {R"({"cluster": {"worker": ["a:1"], "chief": []}, "task": {"type": "worker", "index": 0}})", "has no tasks"},
      {R"({"cluster": {"worker": "a:1"}, "task": {"type": "worker", "index": 0}})", "expected a list"},
      {R"({"cluster": {"worker": ["localhost:http"]}, "task": {"type": "worker", "index": 0}})", "not a number"},
      {R"({"cluster": {"worker": ["localhost:70000"]}, "task": {"type": "worker", "index": 0}})", "1..65535"},
      {R"({"cluster": {"worker": [":12345"]}, "task": {"type": "worker", "index": 0}})", "empty host"},
      {R"({"cluster": {"worker": ["::1:12345"]}, "task": {"type": "worker", "index": 0}})", "brackets"},
      {R"({"cluster": {"worker": ["a:1", "b:2", "a:1"]}, "task": {"type": "worker", "index": 0}})", "both use"},
      {R"({"cluster": {"chief": ["a:1", "a:2"], "worker": ["a:3"]}, "task": {"type": "worker", "index": 0}})", "chief"},
      {R"({"cluster": {"master": ["a:1"]}, "task": {"type": "master", "index": 0}})", "chief"},
      {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0}, "rpc_layer": "grpc+verbs"})", "grpc"},
  };
  for (const auto& [json, phrase] : cases) {
    const testing::Result r = tf_config(json);
    EXPECT_EQ(r.code, 2) << json << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find("TF_CONFIG"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(phrase), std::string::npos) << r.err;
  }
}

TEST(TFConfigCli, PrintsTheRole) {
  const std::string json =
      R"({"cluster": {"worker": ["127.0.0.1:12345", "127.0.0.1:23456"]}, "task": {"type": "worker", "index": 1}})";
  testing::Result r = tf_config(json);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("task: worker:1 (127.0.0.1:23456)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("chief: no (the chief is worker:0 at 127.0.0.1:12345)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rank: 1 of 2\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("peers: worker:0=127.0.0.1:12345 worker:1=127.0.0.1:23456\n"), std::string::npos) << r.out;

  r = tf_config(json, "--json");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["task"]["name"], "worker:1");
  EXPECT_EQ(j["is_chief"], false);
  EXPECT_EQ(j["chief"]["address"], "127.0.0.1:12345");
  EXPECT_EQ(j["rank"], 1);
  EXPECT_EQ(j["world_size"], 2);
  EXPECT_EQ(j["peers"].size(), 2u);
}

}  // namespace
}  // namespace lockstep::distribute
