// ClusterSpec's sparse form and TF's errors, which tf.train.ClusterSpec in Python binds (python/src/cluster_spec.cc):
// tasks by index, as_dict's object for a sparse job, equality, and the resolvers' refusal of a sparse job.
#include <gtest/gtest.h>

#include "../error_of.h"
#include "lockstep/core/error.h"
#include "lockstep/distribute/cluster/cluster_resolver.h"

namespace lockstep::distribute {
namespace {

using lockstep::testing::error_of;
using Jobs = std::map<std::string, std::vector<std::string>>;

TEST(ClusterSpecSparse, HoldsTasksByIndex) {
  const ClusterSpec spec = ClusterSpec::sparse({{"worker", {{1, "h:3"}, {3, "h:5"}}}, {"chief", {{0, "h:1"}}}});
  EXPECT_EQ(spec.num_tasks("worker"), 2);
  EXPECT_EQ(spec.task_address("worker", 3), "h:5");
  EXPECT_EQ(spec.tasks("worker").begin()->first, 1);
  EXPECT_EQ(spec.as_dict().dump(), R"({"chief":["h:1"],"worker":{"1":"h:3","3":"h:5"}})");
  EXPECT_EQ(spec.job_tasks("chief"), std::vector<std::string>{"h:1"});
  EXPECT_NE(error_of<ValueError>([&] { spec.jobs(); }).find("has tasks 1, 3 but not every index 0..3"),
            std::string::npos);
  // A dense job given sparsely is the same spec as its list.
  EXPECT_EQ(ClusterSpec::sparse({{"worker", {{0, "a:1"}, {1, "a:2"}}}}), ClusterSpec(Jobs{{"worker", {"a:1", "a:2"}}}));
  EXPECT_FALSE(ClusterSpec(Jobs{{"worker", {"a:1"}}}) == ClusterSpec(Jobs{{"worker", {"a:2"}}}));
  EXPECT_NE(error_of<ValueError>([] {
              ClusterSpec::sparse({{"worker", {{-1, "a:1"}}}});
            }).find("negative"),
            std::string::npos);
}

TEST(ClusterSpecSparse, ErrorsSayWhatTFsSay) {
  const ClusterSpec spec(Jobs{{"worker", {"a:1", "a:2"}}});
  EXPECT_EQ(error_of<ValueError>([&] { spec.tasks("ps"); }).rfind("No such job in cluster: \"ps\"", 0), 0u);
  EXPECT_EQ(error_of<ValueError>([&] { spec.task_address("ps", 0); }).rfind("No such job in cluster", 0), 0u);
  EXPECT_EQ(error_of<ValueError>([&] {
              spec.task_address("worker", 5);
            }).rfind("No task with index 5 in job \"worker\" (its tasks: 0, 1)", 0),
            0u);
}

TEST(ClusterSpecSparse, ResolversRejectASparseJob) {
  const ClusterSpec spec = ClusterSpec::sparse({{"worker", {{1, "h:3"}}}});
  const std::string msg = error_of<ValueError>([&] { SimpleClusterResolver(spec, "worker", 1); });
  EXPECT_EQ(msg.rfind("cluster: job \"worker\" has tasks 1 but not every index 0..1", 0), 0u) << msg;
}

}  // namespace
}  // namespace lockstep::distribute
