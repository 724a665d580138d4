// Who am I and who are the others: TF's ClusterSpec and cluster resolvers (TF_CONFIG, MPI, SLURM, explicit),
// with TF's chief rule and the rank order every other floor of the distribute layer uses.
#pragma once
#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/distribute/coordination/coordination.h"

namespace lockstep::distribute {

// tf.train.ClusterSpec: job name ("chief", "worker", "evaluator") -> task addresses ("host:port") by task index.
// A job's indices are 0..n-1 (its list) except in TF's sparse form ({"worker": {1: "h:3"}}), which the resolvers
// reject (validate_cluster): training needs every task of a job.
class ClusterSpec {
 public:
  ClusterSpec() = default;
  explicit ClusterSpec(std::map<std::string, std::vector<std::string>> jobs);  // the position is the index
  // TF's sparse form: each job's tasks by index. A negative index: ValueError.
  static ClusterSpec sparse(std::map<std::string, std::map<int, std::string>> tasks);
  const std::map<std::string, std::map<int, std::string>>& tasks() const { return tasks_; }
  // The tasks of `job` by index; ValueError if the job is absent.
  const std::map<int, std::string>& tasks(const std::string& job) const;
  // Each job's addresses in index order; ValueError for a sparse job (one that lacks an index in 0..n-1).
  std::map<std::string, std::vector<std::string>> jobs() const;
  std::vector<std::string> job_tasks(const std::string& job) const;   // empty if the job is absent; as jobs()
  int num_tasks(const std::string& job) const;                        // 0 if the job is absent
  std::string task_address(const std::string& job, int index) const;  // ValueError if absent
  // {"worker": ["h:1", "h:2"]}, keys sorted: equal specs dump to equal strings (usable in fingerprints). A sparse
  // job is an object from index to address ({"worker": {"1": "h:3"}}), as TF's as_dict gives a dict for it.
  nlohmann::json as_dict() const;
  bool empty() const { return tasks_.empty(); }
  bool operator==(const ClusterSpec& other) const = default;

 private:
  std::map<std::string, std::map<int, std::string>> tasks_;
};

struct Task {
  std::string type;
  int index = 0;
  std::string address;  // "" for a single local process (nothing to connect to)
  std::string name() const { return type + ":" + std::to_string(index); }
};

// tf.distribute.cluster_resolver.ClusterResolver. Subclasses supply the spec and this task; the rank
// order and the chief rule are derived here once, so every resolver agrees on them.
class ClusterResolver {
 public:
  virtual ~ClusterResolver() = default;
  virtual ClusterSpec cluster_spec() const = 0;
  // "chief", "worker" or "evaluator"; nullopt for a single local process without a cluster (TF's None, which
  // the tutorials' _is_chief treats as the chief). task().type says "worker" there.
  virtual std::optional<std::string> task_type() const = 0;
  virtual int task_id() const = 0;  // 0 for a single local process (TF's None)
  virtual std::string rpc_layer() const { return "grpc"; }

  // TF's rule: the "chief" task, else worker 0 when the cluster has no chief.
  bool is_chief() const;
  // The tasks that train, in rank order: chief (if any), then workers 0..n-1. Evaluators excluded. An empty
  // cluster gives the one local task.
  std::vector<Task> training_tasks() const;
  int rank() const;        // this task's position in training_tasks(); -1 for an evaluator
  int world_size() const;  // training_tasks().size()
  Task chief() const;      // training_tasks()[0]: runs the coordination service on its address
  Task task() const;       // this task, with its address ("" when local or absent from the spec)
};

// Checks a cluster and this task by TF's rules (known jobs, one chief, at most one evaluator, task in the
// spec and index in range) plus lockstep's (no ps, host:port addresses, no duplicates, someone trains).
// `source` prefixes the messages ("TF_CONFIG"). Throws ValueError.
void validate_cluster(const ClusterSpec& spec, const std::string& task_type, int task_id,
                      const std::string& source = "cluster");

// tf.distribute.cluster_resolver.TFConfigClusterResolver over the JSON TF and Kubeflow's TFJob write:
// {"cluster": {"chief": [...], "worker": [...], "evaluator": [...]}, "task": {"type": "worker", "index": 1},
//  "rpc_layer": "grpc", "environment": "cloud"}. Other top-level and task keys are ignored, as in TF
// (AI Platform adds "job" and "trial").
class TFConfigClusterResolver : public ClusterResolver {
 public:
  // Reads $TF_CONFIG. Unset, empty or "{}": a single local worker (cluster {}, task worker:0), as TF.
  TFConfigClusterResolver();
  explicit TFConfigClusterResolver(const std::string& tf_config_json);  // validates; throws ValueError
  bool is_configured() const { return !spec_.empty(); }                 // a cluster was given
  std::string environment() const { return environment_; }              // "cloud", "google" or ""
  // The files an "environment" object names: {"name": "cloud", "cluster_token_file": "/run/secrets/token"}.
  const ClusterSecurityFiles& security_files() const { return security_files_; }

  ClusterSpec cluster_spec() const override { return spec_; }
  std::optional<std::string> task_type() const override { return task_type_; }
  int task_id() const override { return task_id_; }
  std::string rpc_layer() const override { return rpc_layer_; }

 private:
  ClusterSpec spec_;
  std::optional<std::string> task_type_;  // nullopt until TF_CONFIG names a task
  int task_id_ = 0;
  std::string rpc_layer_ = "grpc";
  std::string environment_;
  ClusterSecurityFiles security_files_;
};

// tf.distribute.cluster_resolver.SlurmClusterResolver for one task per process launched by srun: every
// task is a "worker" (worker 0 is the chief), ranked by SLURM_PROCID over nodes in SLURM_STEP_NODELIST
// order with their SLURM_STEP_TASKS_PER_NODE ("2(x3),1") counts (srun's default block distribution). The
// k-th task on a node listens on port_base + k.
class SlurmClusterResolver : public ClusterResolver {
 public:
  explicit SlurmClusterResolver(int port_base = 8888);  // reads the environment; throws ValueError
  // "node[1-3,7],gpu-[01-02]" -> node1 node2 node3 node7 gpu-01 gpu-02 (zero padding kept). ValueError
  // on a malformed list.
  static std::vector<std::string> expand_hostlist(const std::string& list);

  ClusterSpec cluster_spec() const override { return spec_; }
  std::optional<std::string> task_type() const override { return "worker"; }
  int task_id() const override { return task_id_; }

 private:
  ClusterSpec spec_;
  int task_id_ = 0;
};

// A lockstep extension for jobs started by mpirun or srun --mpi=pmix (TF has none): every rank is a
// "worker" whose index is its MPI rank (worker 0 is the chief and runs the coordination service), in a
// cluster of MPI_COMM_WORLD's size. Each rank picks a free port on its host and the ranks exchange their
// "host:port" with an MPI all-gather, so the constructor is collective: every rank constructs it at the
// same point, within `timeout` of the others (then DeadlineExceededError). The host is $LOCKSTEP_HOST when
// set (a name or IPv4 address the other ranks reach; IPv6 in brackets), else 127.0.0.1 when all ranks run
// on one machine, else this machine's host name (gethostname), which the other machines must resolve.
// Initialises MPI (lockstep/distribute/collective/mpi.h); ValueError when no MPI launcher started this
// process.
class MPIClusterResolver : public ClusterResolver {
 public:
  explicit MPIClusterResolver(std::chrono::milliseconds timeout = std::chrono::seconds(120));
  ClusterSpec cluster_spec() const override { return spec_; }
  std::optional<std::string> task_type() const override { return "worker"; }
  int task_id() const override { return task_id_; }

 private:
  ClusterSpec spec_;
  int task_id_ = 0;
};

// tf.distribute.cluster_resolver.SimpleClusterResolver: a spec and a task given in code (tests, launchers).
class SimpleClusterResolver : public ClusterResolver {
 public:
  SimpleClusterResolver(ClusterSpec spec, std::string task_type, int task_id);  // validates
  ClusterSpec cluster_spec() const override { return spec_; }
  std::optional<std::string> task_type() const override { return task_type_; }
  int task_id() const override { return task_id_; }

 private:
  ClusterSpec spec_;
  std::string task_type_;
  int task_id_;
};

// The resolver for this process: TF_CONFIG when set and non-empty; else MPI when an MPI launcher started
// the process (launched_by_mpi(): OMPI_COMM_WORLD_SIZE, PMIX_RANK or PMI_RANK set, unless
// LOCKSTEP_USE_MPI=0); else SLURM when SLURM_PROCID is set (unless LOCKSTEP_USE_SLURM=0; base port from
// LOCKSTEP_PORT, default 8888); else a single local worker. MPI comes before SLURM because srun --mpi=pmix
// sets both; the ranks agree (both are srun's task ids).
std::unique_ptr<ClusterResolver> resolve_cluster();

}  // namespace lockstep::distribute
