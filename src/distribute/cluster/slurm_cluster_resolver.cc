// SlurmClusterResolver: the cluster of an srun job step from SLURM's environment (task id, node list and
// tasks per node), with Slurm's compressed host lists ("node[1-3,7]") and task counts ("2(x3),1") expanded.
#include <algorithm>
#include <cstdlib>
#include <numeric>

#include "cluster-impl.h"
#include "lockstep/distribute/cluster/cluster_resolver.h"

namespace lockstep::distribute {

using cluster_impl::fail;
using cluster_impl::quote;

namespace {

// More hosts than any real allocation: a typo such as "node[1-1000000000]" fails instead of exhausting memory.
constexpr size_t kMaxHosts = 1'000'000;

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Splits at commas outside brackets; brackets must pair and not nest.
std::vector<std::string> split_top_level(const std::string& list) {
  std::vector<std::string> items(1);
  bool open = false;
  for (char c : list) {
    if (c == '[' && open) fail("SLURM host list ", quote(list), " nests '[': write ranges as name[1-3,7]");
    if (c == ']' && !open) fail("SLURM host list ", quote(list), " has a ']' without '[': write ranges as name[1-3,7]");
    if (c == '[' || c == ']') open = c == '[';
    if (c == ',' && !open) {
      items.emplace_back();
    } else {
      items.back() += c;
    }
  }
  if (open) fail("SLURM host list ", quote(list), " has an unclosed '[': write ranges as name[1-3,7]");
  return items;
}

// "1-3,07" -> 1 2 3 07: each range keeps the width of its lower bound, as Slurm pads "01-10".
std::vector<std::string> expand_ranges(const std::string& ranges, const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= ranges.size()) {
    const size_t end = std::min(ranges.find(',', start), ranges.size());
    const std::string range = ranges.substr(start, end - start);
    const size_t dash = range.find('-');
    const std::string lo = range.substr(0, dash), hi = dash == std::string::npos ? lo : range.substr(dash + 1);
    if (!all_digits(lo) || !all_digits(hi) || lo.size() > 9 || hi.size() > 9)
      fail("SLURM host list ", quote(list), " has range ", quote(range),
           ", expected N or N-M with digits: write ranges as name[1-3,7]");
    const long a = std::stol(lo), b = std::stol(hi);
    if (a > b)
      fail("SLURM host list ", quote(list), " has range ", quote(range), " that counts down: write it as ", b, "-", a);
    if (static_cast<size_t>(b - a) >= kMaxHosts)
      fail("SLURM host list ", quote(list), " has range ", quote(range), " of more than ", kMaxHosts,
           " hosts: check the list");
    for (long n = a; n <= b; ++n) {
      std::string digits = std::to_string(n);
      out.push_back(std::string(lo.size() > digits.size() ? lo.size() - digits.size() : 0, '0') + digits);
    }
    start = end + 1;
  }
  return out;
}

// One item of the list, possibly with several bracket groups ("rack[1-2]-n[1-2]"): their cartesian product.
std::vector<std::string> expand_item(const std::string& item, const std::string& list) {
  const size_t open = item.find('[');
  if (open == std::string::npos) return {item};
  const size_t close = item.find(']', open);
  std::vector<std::string> out;
  const std::vector<std::string> tails = expand_item(item.substr(close + 1), list);
  for (const std::string& n : expand_ranges(item.substr(open + 1, close - open - 1), list)) {
    for (const std::string& tail : tails) out.push_back(item.substr(0, open) + n + tail);
    if (out.size() > kMaxHosts)
      fail("SLURM host list ", quote(list), " names more than ", kMaxHosts, " hosts: check the list");
  }
  return out;
}

// "2(x3),1" -> 2 2 2 1.
std::vector<int> expand_tasks_per_node(const std::string& name, const std::string& value) {
  std::vector<int> counts;
  size_t start = 0;
  while (start <= value.size()) {
    const size_t end = std::min(value.find(',', start), value.size());
    const std::string item = value.substr(start, end - start);
    std::string count = item, times = "1";
    if (const size_t paren = item.find("(x"); paren != std::string::npos) {
      count = item.substr(0, paren);
      times = item.back() == ')' ? item.substr(paren + 2, item.size() - paren - 3) : "";
    }
    if (!all_digits(count) || !all_digits(times) || count.size() > 6 || times.size() > 6 || std::stoi(count) == 0)
      fail("SLURM: ", name, " ", quote(value), " has item ", quote(item),
           ", expected N or N(xM) with N >= 1: run under srun, which writes it as \"2(x3),1\"");
    counts.insert(counts.end(), static_cast<size_t>(std::stoi(times)), std::stoi(count));
    if (counts.size() > kMaxHosts)
      fail("SLURM: ", name, " ", quote(value), " counts more than ", kMaxHosts, " nodes: check it");
    start = end + 1;
  }
  return counts;
}

// The first of `names` that is set, as {name, value}; ValueError naming them all when none is.
std::pair<std::string, std::string> require_env(std::initializer_list<const char*> names) {
  for (const char* name : names)
    if (const char* v = std::getenv(name)) return {name, v};
  std::string all;
  for (const char* name : names) all += (all.empty() ? "" : " or ") + std::string(name);
  fail("SLURM: ", all, " is not set: launch each task with srun, or set LOCKSTEP_USE_SLURM=0 to ignore SLURM");
}

int parse_count(const std::pair<std::string, std::string>& var) {
  if (!all_digits(var.second) || var.second.size() > 9)
    fail("SLURM: ", var.first, " is ", quote(var.second),
         ", expected a non-negative integer: launch the tasks with srun");
  return std::stoi(var.second);
}

}  // namespace

std::vector<std::string> SlurmClusterResolver::expand_hostlist(const std::string& list) {
  std::vector<std::string> hosts;
  for (const std::string& item : split_top_level(list)) {
    if (item.empty() || item[0] == '[')
      fail("SLURM host list ", quote(list),
           " has an empty host name: separate names such as node[1-3],gpu1 by single commas");
    for (std::string& host : expand_item(item, list)) hosts.push_back(std::move(host));
    if (hosts.size() > kMaxHosts)
      fail("SLURM host list ", quote(list), " names more than ", kMaxHosts, " hosts: check the list");
  }
  return hosts;
}

SlurmClusterResolver::SlurmClusterResolver(int port_base) {
  const auto procid = require_env({"SLURM_PROCID"});
  const auto ntasks = require_env({"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"});
  const auto nodelist = require_env({"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"});
  const auto tasks_per_node = require_env({"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"});
  task_id_ = parse_count(procid);
  const int world = parse_count(ntasks);
  if (static_cast<size_t>(world) > kMaxHosts)  // one address each is built below
    fail("SLURM: ", ntasks.first, " is ", world, ", more than ", kMaxHosts, " tasks: check it");
  const std::vector<std::string> hosts = expand_hostlist(nodelist.second);
  const std::vector<int> counts = expand_tasks_per_node(tasks_per_node.first, tasks_per_node.second);
  if (counts.size() != hosts.size())
    fail("SLURM: ", tasks_per_node.first, " ", quote(tasks_per_node.second), " covers ", counts.size(),
         counts.size() == 1 ? " node" : " nodes", " but ", nodelist.first, " ", quote(nodelist.second), " names ",
         hosts.size(), ": run under srun, which sets both");
  if (const long sum = std::accumulate(counts.begin(), counts.end(), 0L); sum != world)
    fail("SLURM: ", tasks_per_node.first, " ", quote(tasks_per_node.second), " adds up to ", sum, " tasks but ",
         ntasks.first, " is ", world, ": run under srun, which sets both");
  if (task_id_ >= world)
    fail("SLURM: SLURM_PROCID ", task_id_, " is out of range for ", world, " tasks (expected 0..", world - 1,
         "): run under srun, which sets SLURM_PROCID");
  const int most = *std::max_element(counts.begin(), counts.end());
  if (port_base < 1 || port_base + most - 1 > 65535)
    fail("SLURM: ports ", port_base, "..", port_base + most - 1, " for ", most,
         " tasks per node are outside 1..65535: set LOCKSTEP_PORT to a lower base port, e.g. 8888");

  std::vector<std::string> addresses;
  for (size_t node = 0; node < hosts.size(); ++node)
    for (int k = 0; k < counts[node]; ++k) addresses.push_back(hosts[node] + ":" + std::to_string(port_base + k));
  spec_ = ClusterSpec({{"worker", addresses}});
  validate_cluster(spec_, "worker", task_id_, "SLURM");

  // Ranks follow srun's default block distribution; another one would give two tasks the same address.
  const char* node_name = std::getenv("SLURMD_NODENAME");
  const char* local_id = std::getenv("SLURM_LOCALID");
  if (node_name && local_id) {
    const std::string expected = addresses[static_cast<size_t>(task_id_)];
    const std::string actual = std::string(node_name) + ":" + std::to_string(port_base + std::atoi(local_id));
    if (expected != actual)
      fail("SLURM: task ", task_id_, " runs as local task ", local_id, " on ", node_name,
           " but block distribution puts it at ", expected, ": launch with srun --distribution=block");
  }
}

}  // namespace lockstep::distribute
