// ClusterSpec, the rank order and chief rule shared by every resolver, the cluster checks (TF's and
// lockstep's), SimpleClusterResolver and the choice of resolver for this process.
#include "lockstep/distribute/cluster/cluster_resolver.h"

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "cluster-impl.h"
#include "lockstep/distribute/collective/mpi.h"

namespace lockstep::distribute {

using cluster_impl::fail;
using cluster_impl::quote;
using cluster_impl::show;

namespace {

// "1, 3": a job's task indices, for messages.
std::string index_list(const std::map<int, std::string>& tasks) {
  std::string indices;
  for (const auto& [i, address] : tasks) indices += (indices.empty() ? "" : ", ") + std::to_string(i);
  return indices.empty() ? "none" : indices;
}

// Why a job's tasks are not its list 0..n-1 (TF's sparse form), or nothing.
std::optional<std::string> sparse_problem(const std::string& job, const std::map<int, std::string>& tasks) {
  if (tasks.empty() || tasks.rbegin()->first + 1 == static_cast<int>(tasks.size())) return std::nullopt;
  return make_message("job ", quote(job), " has tasks ", index_list(tasks), " but not every index 0..",
                      tasks.rbegin()->first,
                      ": training needs every task of a job; list the job's addresses in index order");
}

}  // namespace

ClusterSpec::ClusterSpec(std::map<std::string, std::vector<std::string>> jobs) {
  for (auto& [job, addresses] : jobs) {
    std::map<int, std::string>& tasks = tasks_[job];
    for (size_t i = 0; i < addresses.size(); ++i) tasks.emplace(static_cast<int>(i), std::move(addresses[i]));
  }
}

ClusterSpec ClusterSpec::sparse(std::map<std::string, std::map<int, std::string>> tasks) {
  for (const auto& [job, by_index] : tasks)
    if (!by_index.empty() && by_index.begin()->first < 0)
      fail("task index ", by_index.begin()->first, " of job ", quote(job), " is negative: number a job's tasks from 0");
  ClusterSpec spec;
  spec.tasks_ = std::move(tasks);
  return spec;
}

const std::map<int, std::string>& ClusterSpec::tasks(const std::string& job) const {
  auto it = tasks_.find(job);
  if (it == tasks_.end()) fail("No such job in cluster: ", quote(job), "; use one of its jobs (", show(as_dict()), ")");
  return it->second;
}

std::map<std::string, std::vector<std::string>> ClusterSpec::jobs() const {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& [job, tasks] : tasks_) out[job] = job_tasks(job);
  return out;
}

std::vector<std::string> ClusterSpec::job_tasks(const std::string& job) const {
  auto it = tasks_.find(job);
  if (it == tasks_.end()) return {};
  if (auto problem = sparse_problem(job, it->second)) fail(*problem);
  std::vector<std::string> addresses;
  for (const auto& [i, address] : it->second) addresses.push_back(address);
  return addresses;
}

int ClusterSpec::num_tasks(const std::string& job) const {
  auto it = tasks_.find(job);
  return it == tasks_.end() ? 0 : static_cast<int>(it->second.size());
}

std::string ClusterSpec::task_address(const std::string& job, int index) const {
  const std::map<int, std::string>& by_index = tasks(job);
  auto it = by_index.find(index);
  if (it == by_index.end())
    fail("No task with index ", index, " in job ", quote(job), " (its tasks: ", index_list(by_index),
         "); use one of those");
  return it->second;
}

nlohmann::json ClusterSpec::as_dict() const {
  nlohmann::json d = nlohmann::json::object();
  for (const auto& [job, by_index] : tasks_) {
    if (sparse_problem(job, by_index)) {
      nlohmann::json tasks = nlohmann::json::object();
      for (const auto& [i, address] : by_index) tasks[std::to_string(i)] = address;
      d[job] = tasks;
    } else {
      d[job] = job_tasks(job);
    }
  }
  return d;
}

bool ClusterResolver::is_chief() const {
  const std::string type = task().type;
  return type == "chief" || (type == "worker" && task_id() == 0 && cluster_spec().num_tasks("chief") == 0);
}

std::vector<Task> ClusterResolver::training_tasks() const {
  const ClusterSpec spec = cluster_spec();
  if (spec.empty()) return {Task{"worker", 0, ""}};
  std::vector<Task> tasks;
  for (const char* job : {"chief", "worker"}) {
    const std::vector<std::string> addresses = spec.job_tasks(job);
    for (size_t i = 0; i < addresses.size(); ++i) tasks.push_back(Task{job, static_cast<int>(i), addresses[i]});
  }
  return tasks;
}

int ClusterResolver::rank() const {
  const std::vector<Task> tasks = training_tasks();
  for (size_t r = 0; r < tasks.size(); ++r)
    if (tasks[r].type == task().type && tasks[r].index == task_id()) return static_cast<int>(r);
  return -1;
}

int ClusterResolver::world_size() const {
  return static_cast<int>(training_tasks().size());
}

Task ClusterResolver::chief() const {
  return training_tasks().front();
}

Task ClusterResolver::task() const {
  const std::string type = task_type().value_or("worker");
  const std::vector<std::string> addresses = cluster_spec().job_tasks(type);
  const int i = task_id();
  return Task{type, i,
              i >= 0 && i < static_cast<int>(addresses.size()) ? addresses[static_cast<size_t>(i)] : ""};
}

namespace {

struct Problem {
  std::string what, fix;
};

bool is_host_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
}

bool is_ipv6_char(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' || c == '.' || c == '%';
}

// What is wrong with a "host:port" address, or nothing. gRPC and Gloo both need a host and a fixed port.
std::optional<Problem> address_problem(const std::string& a) {
  const std::string eg = ", e.g. \"10.0.0.2:12345\"", ipv6 = "write IPv6 addresses in brackets, e.g. \"[::1]:12345\"";
  if (a.find("://") != std::string::npos)
    return Problem{"has a scheme prefix", "write host:port only" + eg + "; the protocol goes in rpc_layer"};
  std::string host, port;
  if (!a.empty() && a[0] == '[') {
    const size_t close = a.find(']');
    if (close == std::string::npos) return Problem{"has no closing ']'", ipv6};
    host = a.substr(1, close - 1);
    if (host.empty() || !std::all_of(host.begin(), host.end(), is_ipv6_char))
      return Problem{"has an invalid IPv6 host", ipv6};
    if (close + 1 >= a.size() || a[close + 1] != ':')
      return Problem{"has no port", "add the port the task listens on" + eg};
    port = a.substr(close + 2);
  } else {
    const size_t colon = a.find(':');
    if (colon == std::string::npos) return Problem{"has no port", "add the port the task listens on" + eg};
    if (a.find(':', colon + 1) != std::string::npos)
      return Problem{"looks like an IPv6 address without brackets", ipv6};
    host = a.substr(0, colon);
    port = a.substr(colon + 1);
    if (host.empty()) return Problem{"has an empty host", "put the host name or IP before the colon" + eg};
    if (!std::all_of(host.begin(), host.end(), is_host_char))
      return Problem{"has a host with characters other than letters, digits, '.', '-' and '_'",
                     "use a host name or IP" + eg};
  }
  if (port.empty()) return Problem{"has no port", "add the port the task listens on" + eg};
  if (port.size() > 5 || !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return Problem{"has a port that is not a number", "write the port as a number in 1..65535" + eg};
  if (const int p = std::stoi(port); p < 1 || p > 65535)
    return Problem{"has port " + port + ", expected 1..65535", "use a port in 1..65535" + eg};
  return std::nullopt;
}

// The fix for a job or task type MultiWorkerMirroredStrategy does not run.
std::string unsupported_type_fix(const std::string& type) {
  if (type == "ps") return "MultiWorkerMirroredStrategy uses no parameter servers: remove the ps job";
  if (type == "master") return "\"master\" is the old name of the chief: rename it to \"chief\"";
  return "use chief, worker or evaluator";
}

}  // namespace

void validate_cluster(const ClusterSpec& spec, const std::string& task_type, int task_id, const std::string& source) {
  const std::string p = source + ": ";
  if (spec.empty()) {
    if (task_type != "worker" || task_id != 0)
      fail(p, "task ", quote(task_type + ":" + std::to_string(task_id)),
           " in an empty cluster, expected worker:0 (one local process): list the cluster's tasks or use worker:0");
    return;
  }
  for (const auto& [job, tasks] : spec.tasks())
    if (auto problem = sparse_problem(job, tasks)) fail(p, *problem);
  std::map<std::string, std::string> owner;  // address -> the task that uses it
  for (const auto& [job, addresses] : spec.jobs()) {
    if (job != "chief" && job != "worker" && job != "evaluator")
      fail(p, "job ", quote(job), " in the cluster is not supported: ", unsupported_type_fix(job));
    if (addresses.empty())
      fail(p, "job ", quote(job), " has no tasks: list at least one \"host:port\" or remove the job");
    for (size_t i = 0; i < addresses.size(); ++i) {
      const std::string name = job + ":" + std::to_string(i);
      if (auto problem = address_problem(addresses[i]))
        fail(p, "address of ", name, " ", quote(addresses[i]), " ", problem->what, ": ", problem->fix);
      auto [it, fresh] = owner.emplace(addresses[i], name);
      if (!fresh)
        fail(p, it->second, " and ", name, " both use ", quote(addresses[i]),
             ": give every task its own host:port (a different port on a shared host)");
    }
  }
  if (spec.num_tasks("chief") > 1)
    fail(p, "the cluster has ", spec.num_tasks("chief"),
         " chiefs, expected at most 1: keep one chief and list the others under \"worker\"");
  if (spec.num_tasks("evaluator") > 1)
    fail(p, "the cluster has ", spec.num_tasks("evaluator"), " evaluators, expected at most 1 (as TF): keep one");
  if (spec.num_tasks("chief") + spec.num_tasks("worker") == 0)
    fail(p, "the cluster has no training task (no chief or worker, only ", show(spec.as_dict()),
         "): list the training tasks under \"worker\"");
  if (task_type != "chief" && task_type != "worker" && task_type != "evaluator")
    fail(p, "task type ", quote(task_type), " is not supported: ", unsupported_type_fix(task_type));
  // As TF, an evaluator may run beside the cluster without an entry of its own.
  const bool listed = spec.num_tasks(task_type) > 0;
  if (!listed && task_type != "evaluator") {
    std::string jobs;
    for (const auto& [job, addresses] : spec.jobs()) jobs += (jobs.empty() ? "" : ", ") + job;
    fail(p, "task type ", quote(task_type), " is not a job in the cluster (its jobs: ", jobs,
         "): set task.type to one of them or add the job");
  }
  if (task_id < 0) fail(p, "task index ", task_id, " is negative: use 0 for the first task of a job");
  if (listed && task_id >= spec.num_tasks(task_type))
    fail(p, "task index ", task_id, " is out of range for job ", quote(task_type), " with ", spec.num_tasks(task_type),
         spec.num_tasks(task_type) == 1 ? " task" : " tasks", " (expected 0..", spec.num_tasks(task_type) - 1,
         "): set task.index to this task's position in the job's list");
}

SimpleClusterResolver::SimpleClusterResolver(ClusterSpec spec, std::string task_type, int task_id)
    : spec_(std::move(spec)), task_type_(std::move(task_type)), task_id_(task_id) {
  validate_cluster(spec_, task_type_, task_id_);
}

std::unique_ptr<ClusterResolver> resolve_cluster() {
  const char* tf_config = std::getenv("TF_CONFIG");
  if (tf_config && std::string(tf_config).find_first_not_of(" \t\r\n") != std::string::npos)
    return std::make_unique<TFConfigClusterResolver>(tf_config);
  if (launched_by_mpi()) return std::make_unique<MPIClusterResolver>();
  const char* procid = std::getenv("SLURM_PROCID");
  const char* use_slurm = std::getenv("LOCKSTEP_USE_SLURM");
  if (procid && !(use_slurm && std::string(use_slurm) == "0")) {
    int port_base = 8888;
    if (const char* port = std::getenv("LOCKSTEP_PORT")) {
      const std::string s = port;
      if (s.empty() || s.size() > 5 || s.find_first_not_of("0123456789") != std::string::npos || std::stoi(s) < 1 ||
          std::stoi(s) > 65535)
        fail("LOCKSTEP_PORT ", quote(s), " is not a port number, expected 1..65535: set it to the first port ",
             "the tasks on a node may use, e.g. 8888");
      port_base = std::stoi(s);
    }
    return std::make_unique<SlurmClusterResolver>(port_base);
  }
  return std::make_unique<TFConfigClusterResolver>("");
}

}  // namespace lockstep::distribute
