// The cluster floor: TF_CONFIG parsing and its refusals (one table), rank order and chief rule, ClusterSpec,
// SLURM host lists and the SLURM resolver, and the choice of resolver from the environment.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <set>

#include "lockstep/core/error.h"
#include "lockstep/distribute/cluster/cluster_resolver.h"

namespace lockstep::distribute {
namespace {

using Hosts = std::vector<std::string>;
using Jobs = std::map<std::string, std::vector<std::string>>;

// Sets and unsets environment variables for one test and puts every touched one back afterwards.
class EnvGuard {
 public:
  ~EnvGuard() {
    for (const auto& [name, value] : saved_)
      value ? ::setenv(name.c_str(), value->c_str(), 1) : ::unsetenv(name.c_str());
  }
  void set(const std::string& name, const std::string& value) {
    save(name);
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  void unset(const std::string& name) {
    save(name);
    ::unsetenv(name.c_str());
  }

 private:
  void save(const std::string& name) {
    if (saved_.count(name)) return;
    const char* v = std::getenv(name.c_str());
    saved_[name] = v ? std::optional<std::string>(v) : std::nullopt;
  }
  std::map<std::string, std::optional<std::string>> saved_;
};

// Every variable a resolver reads, cleared so the machine running the tests (perhaps itself under SLURM)
// does not leak into them.
void clear_cluster_env(EnvGuard& env) {
  for (const char* name : {"TF_CONFIG", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_STEP_NUM_TASKS", "SLURM_STEP_NODELIST",
                           "SLURM_JOB_NODELIST", "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "SLURMD_NODENAME",
                           "SLURM_LOCALID", "LOCKSTEP_USE_SLURM", "LOCKSTEP_PORT"})
    env.unset(name);
}

std::vector<std::string> names(const std::vector<Task>& tasks) {
  std::vector<std::string> out;
  for (const Task& t : tasks) out.push_back(t.name() + "=" + t.address);
  return out;
}

// ---- Malformed TF_CONFIGs: each refused with a ValueError of one line holding a phrase that names it. ----

struct BadConfig {
  std::string name, tf_config, phrase;
};

void PrintTo(const BadConfig& c, std::ostream* os) {
  *os << c.name;
}

const std::string kTask = R"("task": {"type": "worker", "index": 0})";
std::string with_workers(const std::string& workers) {
  return R"({"cluster": {"worker": )" + workers + "}, " + kTask + "}";
}

const std::vector<BadConfig> kBadConfigs = {
    {"TruncatedJson", R"({"cluster": )", "not valid JSON (parse error at line 1, column"},
    {"TrailingComma", R"({"cluster": {"worker": ["a:1",]}})", "not valid JSON"},
    {"SingleQuotes", R"({'cluster': {}})", "not valid JSON"},
    // Found by fuzz_tf_config: a number too large for a double escaped as nlohmann's out_of_range.
    {"NumberOverflow", R"({"task": {"type": "worker", "index": 2e308}})",
     "not valid JSON (number overflow parsing '2e308')"},
    {"Array", R"(["worker"])", "TF_CONFIG is an array, expected an object"},
    {"String", R"("worker:0")", "TF_CONFIG is a string, expected an object"},
    {"TaskWithoutCluster", R"({"task": {"type": "worker", "index": 0}})", "has a \"task\" but no \"cluster\""},
    {"ClusterNotObject", R"({"cluster": ["a:1"], "task": {"type": "worker", "index": 0}})",
     "\"cluster\" is an array, expected an object"},
    {"ClusterNull", R"({"cluster": null, "task": {"type": "worker", "index": 0}})", "\"cluster\" is null"},
    {"ClusterEmpty", R"({"cluster": {}, "task": {"type": "worker", "index": 0}})", "\"cluster\" has no jobs"},
    {"ClusterWithoutTask", R"({"cluster": {"worker": ["a:1"]}})", "has a \"cluster\" but no \"task\""},
    {"TaskNotObject", R"({"cluster": {"worker": ["a:1"]}, "task": "worker:0"})", "\"task\" is a string"},
    {"TaskWithoutType", R"({"cluster": {"worker": ["a:1"]}, "task": {"index": 0}})", "\"task\" has no \"type\""},
    {"TaskWithoutIndex", R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker"}})",
     "\"task\" has no \"index\""},
    {"TypeNotString", R"({"cluster": {"worker": ["a:1"]}, "task": {"type": 1, "index": 0}})", "task.type is a number"},
    {"IndexAsString", R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": "0"}})", "use a number"},
    {"IndexFractional", R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0.5}})",
     "whole number"},
    {"IndexBoolean", R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": true}})", "whole number"},
    {"IndexNegative", R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": -1}})", "is negative"},
    {"IndexHuge", R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 99999999999}})",
     "99999999999 is out of range"},
    {"IndexOutOfRange", R"({"cluster": {"worker": ["a:1", "a:2"]}, "task": {"type": "worker", "index": 2}})",
     "task index 2 is out of range for job \"worker\" with 2 tasks (expected 0..1)"},
    {"TaskTypeNotInCluster", R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "chief", "index": 0}})",
     "task type \"chief\" is not a job in the cluster"},
    {"UnknownTaskType", R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "boss", "index": 0}})",
     "task type \"boss\" is not supported"},
    {"UnknownJob", R"({"cluster": {"worker": ["a:1"], "trainer": ["a:2"]}, )" + kTask + "}",
     "job \"trainer\" in the cluster is not supported"},
    {"ParameterServers", R"({"cluster": {"worker": ["a:1"], "ps": ["a:2"]}, )" + kTask + "}", "remove the ps job"},
    {"MasterJob", R"({"cluster": {"master": ["a:1"]}, "task": {"type": "master", "index": 0}})",
     "rename it to \"chief\""},
    {"EmptyJob", R"({"cluster": {"worker": ["a:1"], "chief": []}, )" + kTask + "}", "job \"chief\" has no tasks"},
    {"JobNotList", with_workers(R"("a:1")"), "cluster.worker is a string, expected a list"},
    {"JobSparseDict", with_workers(R"({"0": "a:1"})"), "sparse {index: address} form is not supported"},
    {"AddressNotString", with_workers("[12345]"), "cluster.worker[0] is a number (12345), expected a \"host:port\""},
    {"MissingPort", with_workers(R"(["localhost"])"), "\"localhost\" has no port"},
    {"EmptyPort", with_workers(R"(["localhost:"])"), "has no port"},
    {"PortNotNumber", with_workers(R"(["localhost:http"])"), "port that is not a number"},
    {"PortTooLarge", with_workers(R"(["localhost:70000"])"), "port 70000, expected 1..65535"},
    {"PortZero", with_workers(R"(["localhost:0"])"), "port 0, expected 1..65535"},
    {"EmptyHost", with_workers(R"([":12345"])"), "empty host"},
    {"HostWithSpace", with_workers(R"(["my host:12345"])"), "characters other than letters"},
    {"HostWithNewline", with_workers(R"(["a\nb:12345"])"), "\"a\\nb:12345\""},
    {"Ipv6WithoutBrackets", with_workers(R"(["::1:12345"])"), "IPv6 address without brackets"},
    {"Ipv6Unclosed", with_workers(R"(["[::1:12345"])"), "no closing ']'"},
    {"Scheme", with_workers(R"(["grpc://a:12345"])"), "scheme prefix"},
    {"DuplicateInJob", with_workers(R"(["a:1", "b:2", "a:1"])"), "worker:0 and worker:2 both use \"a:1\""},
    {"DuplicateAcrossJobs", R"({"cluster": {"chief": ["a:1"], "worker": ["a:1"]}, )" + kTask + "}",
     "chief:0 and worker:0 both use"},
    {"TwoChiefs", R"({"cluster": {"chief": ["a:1", "a:2"], "worker": ["a:3"]}, )" + kTask + "}",
     "2 chiefs, expected at most 1"},
    {"TwoEvaluators", R"({"cluster": {"evaluator": ["a:1", "a:2"], "worker": ["a:3"]}, )" + kTask + "}",
     "2 evaluators, expected at most 1"},
    {"OnlyEvaluator", R"({"cluster": {"evaluator": ["a:1"]}, "task": {"type": "evaluator", "index": 0}})",
     "no training task"},
    {"EvaluatorIndex",
     R"({"cluster": {"evaluator": ["e:1"], "worker": ["a:1", "a:2"]}, "task": {"type": "evaluator", "index": 1}})",
     "task index 1 is out of range for job \"evaluator\" with 1 task"},
    {"RpcLayer",
     R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0}, "rpc_layer": "grpc+verbs"})",
     "rpc_layer is \"grpc+verbs\", expected \"grpc\""},
    {"Environment",
     R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0}, "environment": "mars"})",
     "environment is \"mars\", expected \"cloud\""},
    {"EnvironmentObjectName",
     R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0}, "environment": {"name": 3}})",
     "environment.name is 3, expected \"cloud\""},
    {"EnvironmentUnknownMember",
     R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0}, "environment": {"token": "x"}})",
     "environment has an unknown member \"token\""},
    {"EnvironmentFileNotAString",
     R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0}, "environment": {"tls_ca_file": ""}})",
     "environment.tls_ca_file is \"\", expected a file name"},
};

class TFConfigMalformed : public ::testing::TestWithParam<BadConfig> {};

TEST_P(TFConfigMalformed, IsRefusedWithOneLineNamingTheProblem) {
  const BadConfig& c = GetParam();
  try {
    TFConfigClusterResolver r(c.tf_config);
    FAIL() << "accepted: " << c.tf_config;
  } catch (const ValueError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    EXPECT_NE(m.find(c.phrase), std::string::npos) << "message: " << m << "\nexpected phrase: " << c.phrase;
    EXPECT_NE(m.find(": "), std::string::npos) << "no fix after the problem: " << m;
    EXPECT_LT(m.size(), 400u) << m;
  }
}

INSTANTIATE_TEST_SUITE_P(TFConfig, TFConfigMalformed, ::testing::ValuesIn(kBadConfigs),
                         [](const auto& info) { return info.param.name; });

TEST(TFConfigMalformedTable, HasDistinctNamesAndEnoughRows) {
  std::set<std::string> seen;
  for (const BadConfig& c : kBadConfigs) EXPECT_TRUE(seen.insert(c.name).second) << c.name;
  EXPECT_GE(kBadConfigs.size(), 25u);
}

// ---- Valid TF_CONFIGs: rank order chief, worker 0..n-1; TF's chief rule; evaluators outside the ranks. ----

TEST(TFConfig, ChiefAndWorkersRankChiefFirst) {
  const std::string cluster = R"("cluster": {"chief": ["c:1"], "worker": ["w:1", "w:2"]})";
  auto make = [&](const std::string& type, int index) {
    return TFConfigClusterResolver("{" + cluster + R"(, "task": {"type": ")" + type + R"(", "index": )" +
                                   std::to_string(index) + "}}");
  };
  TFConfigClusterResolver chief = make("chief", 0), w0 = make("worker", 0), w1 = make("worker", 1);
  EXPECT_EQ(names(chief.training_tasks()), (Hosts{"chief:0=c:1", "worker:0=w:1", "worker:1=w:2"}));
  EXPECT_TRUE(chief.is_chief());
  EXPECT_FALSE(w0.is_chief());
  EXPECT_FALSE(w1.is_chief());
  EXPECT_EQ(chief.rank(), 0);
  EXPECT_EQ(w0.rank(), 1);
  EXPECT_EQ(w1.rank(), 2);
  for (const auto* r : {&chief, &w0, &w1}) {
    EXPECT_EQ(r->world_size(), 3);
    EXPECT_EQ(r->chief().name(), "chief:0");
    EXPECT_EQ(r->chief().address, "c:1");
    EXPECT_TRUE(r->is_configured());
    EXPECT_EQ(r->rpc_layer(), "grpc");
  }
  EXPECT_EQ(w1.task().name(), "worker:1");
  EXPECT_EQ(w1.task().address, "w:2");
}

TEST(TFConfig, WorkersOnlyMakeWorkerZeroTheChief) {  // the tutorial's configuration
  const std::string w =
      R"({"cluster": {"worker": ["localhost:12345", "localhost:23456"]}, "task": {"type": "worker", "index": )";
  TFConfigClusterResolver w0(w + "0}}"), w1(w + "1}}");
  EXPECT_TRUE(w0.is_chief());
  EXPECT_FALSE(w1.is_chief());
  EXPECT_EQ(w0.rank(), 0);
  EXPECT_EQ(w1.rank(), 1);
  EXPECT_EQ(w1.world_size(), 2);
  EXPECT_EQ(w1.chief().name(), "worker:0");
  EXPECT_EQ(w1.chief().address, "localhost:12345");
  EXPECT_EQ(w1.task_type(), "worker");
  EXPECT_EQ(w1.task_id(), 1);
}

TEST(TFConfig, KubeflowTFJobForm) {
  TFConfigClusterResolver r(R"({"cluster": {"chief": ["mnist-chief-0.kubeflow.svc:2222"],
      "worker": ["mnist-worker-0.kubeflow.svc:2222", "mnist-worker-1.kubeflow.svc:2222"]},
      "task": {"type": "worker", "index": 1}, "environment": "cloud"})");
  EXPECT_EQ(r.environment(), "cloud");
  EXPECT_EQ(r.rank(), 2);
  EXPECT_EQ(r.world_size(), 3);
  EXPECT_FALSE(r.is_chief());
  EXPECT_EQ(r.chief().address, "mnist-chief-0.kubeflow.svc:2222");
}

// lockstep's object form of "environment" names the cluster token and TLS files.
TEST(TFConfig, EnvironmentObjectNamesTheSecurityFiles) {
  TFConfigClusterResolver r(R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0},
      "environment": {"name": "cloud", "cluster_token_file": "/run/token", "tls_cert_file": "c.pem",
                      "tls_key_file": "k.pem", "tls_ca_file": "ca.pem"}})");
  EXPECT_EQ(r.environment(), "cloud");
  EXPECT_EQ(r.security_files().cluster_token_file, "/run/token");
  EXPECT_EQ(r.security_files().tls_cert_file, "c.pem");
  EXPECT_EQ(r.security_files().tls_key_file, "k.pem");
  EXPECT_EQ(r.security_files().tls_ca_file, "ca.pem");
  EXPECT_EQ(TFConfigClusterResolver(R"({"environment": {"cluster_token_file": "t"}})").environment(), "");
}

TEST(TFConfig, IgnoresKeysTFIgnores) {  // AI Platform adds "job" and task "trial"
  TFConfigClusterResolver r(R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0, "trial": "3"},
      "job": {"args": ["--x"]}, "environment": "google", "rpc_layer": "grpc"})");
  EXPECT_EQ(r.environment(), "google");
  EXPECT_EQ(r.world_size(), 1);
}

TEST(TFConfig, EvaluatorHasNoRankAndIsNotChief) {
  const std::string cluster = R"({"cluster": {"evaluator": ["e:1"], "worker": ["w:1", "w:2"]}, )";
  TFConfigClusterResolver ev(cluster + R"("task": {"type": "evaluator", "index": 0}})");
  EXPECT_EQ(ev.rank(), -1);
  EXPECT_FALSE(ev.is_chief());
  EXPECT_EQ(ev.world_size(), 2);
  EXPECT_EQ(ev.task().address, "e:1");
  EXPECT_EQ(ev.chief().name(), "worker:0");
  TFConfigClusterResolver w0(cluster + kTask + "}");
  EXPECT_TRUE(w0.is_chief());
  EXPECT_EQ(names(w0.training_tasks()), (Hosts{"worker:0=w:1", "worker:1=w:2"}));
  // As TF, an evaluator may run beside the cluster without a job of its own.
  TFConfigClusterResolver outside(R"({"cluster": {"worker": ["w:1"]}, "task": {"type": "evaluator", "index": 0}})");
  EXPECT_EQ(outside.rank(), -1);
  EXPECT_EQ(outside.task().address, "");
}

TEST(TFConfig, AcceptsTheTutorialsSpacesAndIpv6) {
  // TF's Keras multi-worker tutorial writes 'localhost: 12345'; TF accepts it, so lockstep does.
  TFConfigClusterResolver r(with_workers(R"(["localhost: 12345", " [::1]:23456 "])"));
  EXPECT_EQ(r.cluster_spec().job_tasks("worker"), (Hosts{"localhost:12345", "[::1]:23456"}));
}

TEST(TFConfig, UnsetEmptyOrEmptyObjectIsOneLocalWorker) {
  for (const std::string text : {"", "  \n", "{}", R"({"environment": "cloud"})"}) {
    TFConfigClusterResolver r(text);
    EXPECT_FALSE(r.is_configured()) << text;
    EXPECT_TRUE(r.cluster_spec().empty());
    EXPECT_EQ(r.task_type(), std::nullopt);  // TF's None: the tutorials' _is_chief takes it for the chief
    EXPECT_EQ(r.task().type, "worker");
    EXPECT_EQ(r.task_id(), 0);
    EXPECT_EQ(r.rank(), 0);
    EXPECT_EQ(r.world_size(), 1);
    EXPECT_TRUE(r.is_chief());
    EXPECT_EQ(r.chief().name(), "worker:0");
    EXPECT_EQ(r.task().address, "");
  }
}

TEST(TFConfig, ReadsTheEnvironment) {
  EnvGuard env;
  clear_cluster_env(env);
  EXPECT_FALSE(TFConfigClusterResolver().is_configured());
  EXPECT_EQ(resolve_cluster()->world_size(), 1);
  env.set("TF_CONFIG", R"({"cluster": {"worker": ["a:1", "a:2"]}, "task": {"type": "worker", "index": 1}})");
  EXPECT_EQ(TFConfigClusterResolver().rank(), 1);
  auto r = resolve_cluster();
  EXPECT_NE(dynamic_cast<TFConfigClusterResolver*>(r.get()), nullptr);
  EXPECT_EQ(r->rank(), 1);
  EXPECT_EQ(r->world_size(), 2);
  env.set("TF_CONFIG", R"({"cluster": {"worker": ["a:1"]}})");
  EXPECT_THROW(resolve_cluster(), ValueError);
}

// ---- ClusterSpec and SimpleClusterResolver ----

TEST(ClusterSpec, AnswersLikeTFs) {
  ClusterSpec spec({{"worker", {"a:1", "a:2"}}, {"chief", {"c:1"}}});
  EXPECT_EQ(spec.num_tasks("worker"), 2);
  EXPECT_EQ(spec.num_tasks("ps"), 0);
  EXPECT_TRUE(spec.job_tasks("evaluator").empty());
  EXPECT_EQ(spec.task_address("worker", 1), "a:2");
  EXPECT_THROW(spec.task_address("worker", 2), ValueError);
  EXPECT_THROW(spec.task_address("ps", 0), ValueError);
  EXPECT_EQ(spec.as_dict().dump(), R"({"chief":["c:1"],"worker":["a:1","a:2"]})");
  EXPECT_FALSE(spec.empty());
  EXPECT_TRUE(ClusterSpec().empty());
}

TEST(ClusterSpec, SimpleResolverValidatesLikeTFConfig) {
  SimpleClusterResolver r(ClusterSpec(Jobs{{"worker", {"a:1", "a:2"}}}), "worker", 1);
  EXPECT_EQ(r.rank(), 1);
  EXPECT_THROW(SimpleClusterResolver(ClusterSpec(Jobs{{"worker", {"a:1", "a:1"}}}), "worker", 0), ValueError);
  EXPECT_THROW(SimpleClusterResolver(ClusterSpec(Jobs{{"worker", {"a:1"}}}), "worker", 1), ValueError);
  EXPECT_THROW(SimpleClusterResolver(ClusterSpec(), "worker", 3), ValueError);
  EXPECT_EQ(SimpleClusterResolver(ClusterSpec(), "worker", 0).world_size(), 1);
}

// ---- SLURM host lists ----

TEST(SlurmHostlist, Expands) {
  using S = SlurmClusterResolver;
  EXPECT_EQ(S::expand_hostlist("node1"), (Hosts{"node1"}));
  EXPECT_EQ(S::expand_hostlist("a,b,c"), (Hosts{"a", "b", "c"}));
  EXPECT_EQ(S::expand_hostlist("node[1-3,7]"), (Hosts{"node1", "node2", "node3", "node7"}));
  EXPECT_EQ(S::expand_hostlist("gpu-[01-02]"), (Hosts{"gpu-01", "gpu-02"}));
  EXPECT_EQ(S::expand_hostlist("node[1-3,7],gpu-[01-02]"),
            (Hosts{"node1", "node2", "node3", "node7", "gpu-01", "gpu-02"}));
  EXPECT_EQ(S::expand_hostlist("n[9-11]"), (Hosts{"n9", "n10", "n11"}));
  EXPECT_EQ(S::expand_hostlist("n[098-101]"), (Hosts{"n098", "n099", "n100", "n101"}));
  EXPECT_EQ(S::expand_hostlist("n[1-2]-ib"), (Hosts{"n1-ib", "n2-ib"}));
  EXPECT_EQ(S::expand_hostlist("rack[1-2]-n[1-2]"), (Hosts{"rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"}));
  EXPECT_EQ(S::expand_hostlist("x[5],y"), (Hosts{"x5", "y"}));
}

TEST(SlurmHostlist, RefusesMalformed) {
  for (const std::string bad : {"", "node[1-3", "node1-3]", "node[a-b]", "node[3-1]", "node[]", "a,,b", "node[1-[2]]",
                                "node[1-2-3]", "node[1-,3]", "[1-2]", "node[1-100000000]", "a,"}) {
    try {
      SlurmClusterResolver::expand_hostlist(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("SLURM host list"), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
}

// ---- SLURM resolver from the environment srun sets ----

class SlurmResolver : public ::testing::Test {
 protected:
  void SetUp() override {
    clear_cluster_env(env_);
    env_.set("SLURM_PROCID", "3");
    env_.set("SLURM_NTASKS", "5");
    env_.set("SLURM_STEP_NODELIST", "node[1-2],gpu7");
    env_.set("SLURM_STEP_TASKS_PER_NODE", "2(x2),1");
  }
  // The message of the ValueError the resolver throws, or "" when it accepts the environment.
  std::string error() {
    try {
      SlurmClusterResolver r;
      return "";
    } catch (const ValueError& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
      return e.what();
    }
  }
  EnvGuard env_;
};

TEST_F(SlurmResolver, BlockDistributionOverNodes) {
  SlurmClusterResolver r;
  EXPECT_EQ(r.cluster_spec().job_tasks("worker"),
            (Hosts{"node1:8888", "node1:8889", "node2:8888", "node2:8889", "gpu7:8888"}));
  EXPECT_EQ(r.task_type(), "worker");
  EXPECT_EQ(r.task_id(), 3);
  EXPECT_EQ(r.rank(), 3);
  EXPECT_EQ(r.world_size(), 5);
  EXPECT_FALSE(r.is_chief());
  EXPECT_EQ(r.task().address, "node2:8889");
  EXPECT_EQ(r.chief().address, "node1:8888");
  EXPECT_EQ(SlurmClusterResolver(9000).task().address, "node2:9001");
}

TEST_F(SlurmResolver, ProcessZeroIsChiefAndJobVariablesAreFallbacks) {
  env_.set("SLURM_PROCID", "0");
  env_.unset("SLURM_STEP_NODELIST");
  env_.unset("SLURM_STEP_TASKS_PER_NODE");
  env_.set("SLURM_JOB_NODELIST", "a[1-5]");
  env_.set("SLURM_TASKS_PER_NODE", "1(x5)");
  SlurmClusterResolver r;
  EXPECT_TRUE(r.is_chief());
  EXPECT_EQ(r.world_size(), 5);
  EXPECT_EQ(r.task().address, "a1:8888");
}

TEST_F(SlurmResolver, StepTaskCountWinsOverTheJobs) {
  env_.set("SLURM_NTASKS", "8");  // the allocation; the step runs 5
  env_.set("SLURM_STEP_NUM_TASKS", "5");
  EXPECT_EQ(error(), "");
}

TEST_F(SlurmResolver, ChecksTheNodeItRunsOn) {
  env_.set("SLURMD_NODENAME", "node2");
  env_.set("SLURM_LOCALID", "1");
  EXPECT_EQ(error(), "");
  env_.set("SLURMD_NODENAME", "gpu7");  // cyclic distribution puts task 3 elsewhere
  env_.set("SLURM_LOCALID", "0");
  EXPECT_NE(error().find("--distribution=block"), std::string::npos);
}

// Found by review while writing fuzz_slurm (confirmed on it): a billion tasks that add up passed every check, then a
// billion addresses were built (fuzz/corpus/slurm/billion_tasks.txt).
TEST_F(SlurmResolver, RefusesMoreTasksThanAnyJobHas) {
  env_.set("SLURM_PROCID", "0");
  env_.set("SLURM_NTASKS", "999999999");
  env_.set("SLURM_STEP_NODELIST", "n[1-333667]");
  env_.set("SLURM_STEP_TASKS_PER_NODE", "2997(x333667)");
  EXPECT_NE(error().find("SLURM_NTASKS is 999999999, more than 1000000 tasks"), std::string::npos) << error();
}

TEST_F(SlurmResolver, RefusesInconsistentEnvironments) {
  env_.set("SLURM_STEP_TASKS_PER_NODE", "1(x4),1");
  EXPECT_NE(error().find("covers 5 nodes but SLURM_STEP_NODELIST"), std::string::npos);
  env_.set("SLURM_STEP_TASKS_PER_NODE", "2,2,2");
  EXPECT_NE(error().find("adds up to 6 tasks but SLURM_NTASKS is 5"), std::string::npos);
  env_.set("SLURM_STEP_TASKS_PER_NODE", "2(x2");
  EXPECT_NE(error().find("expected N or N(xM)"), std::string::npos);
  env_.set("SLURM_STEP_TASKS_PER_NODE", "2(x2),1");
  env_.set("SLURM_PROCID", "5");
  EXPECT_NE(error().find("SLURM_PROCID 5 is out of range for 5 tasks"), std::string::npos);
  env_.set("SLURM_PROCID", "x");
  EXPECT_NE(error().find("SLURM_PROCID is \"x\""), std::string::npos);
  env_.set("SLURM_PROCID", "0");
  env_.unset("SLURM_NTASKS");
  EXPECT_NE(error().find("SLURM_STEP_NUM_TASKS or SLURM_NTASKS is not set"), std::string::npos);
  env_.set("SLURM_NTASKS", "5");
  env_.set("SLURM_STEP_NODELIST", "node[1-2],node1");
  env_.set("SLURM_STEP_TASKS_PER_NODE", "2(x3)");
  env_.set("SLURM_NTASKS", "6");
  EXPECT_NE(error().find("both use"), std::string::npos);
  try {
    SlurmClusterResolver r(65535);
    ADD_FAILURE() << "accepted ports past 65535";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("LOCKSTEP_PORT"), std::string::npos);
  }
}

TEST_F(SlurmResolver, ResolveClusterPrefersTFConfigThenSlurm) {
  EXPECT_NE(dynamic_cast<SlurmClusterResolver*>(resolve_cluster().get()), nullptr);
  env_.set("LOCKSTEP_PORT", "7000");
  EXPECT_EQ(resolve_cluster()->task().address, "node2:7001");
  env_.set("LOCKSTEP_PORT", "seven");
  EXPECT_THROW(resolve_cluster(), ValueError);
  env_.unset("LOCKSTEP_PORT");
  env_.set("LOCKSTEP_USE_SLURM", "0");
  EXPECT_EQ(resolve_cluster()->world_size(), 1);
  env_.unset("LOCKSTEP_USE_SLURM");
  env_.set("TF_CONFIG", R"({"cluster": {"worker": ["a:1", "a:2"]}, "task": {"type": "worker", "index": 0}})");
  EXPECT_EQ(resolve_cluster()->world_size(), 2);
}

}  // namespace
}  // namespace lockstep::distribute
