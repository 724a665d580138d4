// `lockstep tf-config`: resolves this process's place in the cluster (TF_CONFIG, SLURM or single local
// worker) and prints it, so a bad configuration fails here, in a second, rather than at the first collective.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "lockstep/distribute/cluster/cluster_resolver.h"

namespace lockstep::cli {

namespace {

namespace d = lockstep::distribute;

std::string source_of(const d::ClusterResolver& r) {
  if (dynamic_cast<const d::SlurmClusterResolver*>(&r)) return "SLURM";
  return r.cluster_spec().empty() ? "local" : "TF_CONFIG";
}

std::string where(const d::Task& t) {
  return t.address.empty() ? "local" : t.address;
}

nlohmann::json task_json(const d::Task& t) {
  return {{"name", t.name()}, {"type", t.type}, {"index", t.index}, {"address", t.address}};
}

}  // namespace

// Adds `lockstep tf-config [--json]`; the returned function runs it after parsing and gives the exit code.
std::function<int()> add_tf_config_command(CLI::App& app) {
  auto json_flag = std::make_shared<bool>(false);
  CLI::App* cmd =
      app.add_subcommand("tf-config", "Show this task's role from TF_CONFIG (or SLURM): chief, rank, peers");
  cmd->add_flag("--json", *json_flag, "Print a JSON object instead of text");
  return [json_flag] {
    const std::unique_ptr<d::ClusterResolver> r = d::resolve_cluster();
    const d::Task task = r->task(), chief = r->chief();
    const std::vector<d::Task> peers = r->training_tasks();
    if (*json_flag) {
      nlohmann::json j = {{"source", source_of(*r)},     {"task", task_json(task)},
                          {"is_chief", r->is_chief()},   {"chief", task_json(chief)},
                          {"rank", r->rank()},           {"world_size", r->world_size()},
                          {"rpc_layer", r->rpc_layer()}, {"cluster", r->cluster_spec().as_dict()}};
      if (auto* tf = dynamic_cast<const d::TFConfigClusterResolver*>(r.get())) j["environment"] = tf->environment();
      j["peers"] = nlohmann::json::array();
      for (const d::Task& p : peers) j["peers"].push_back(task_json(p));
      std::cout << j.dump(2) << "\n";
      return 0;
    }
    std::cout << "task: " << task.name() << " (" << where(task) << ")\n";
    if (r->is_chief()) {
      std::cout << "chief: yes\n";
    } else {
      std::cout << "chief: no (the chief is " << chief.name() << " at " << where(chief) << ")\n";
    }
    if (r->rank() < 0) {
      std::cout << "rank: none (an evaluator does not train; " << r->world_size() << " tasks train)\n";
    } else {
      std::cout << "rank: " << r->rank() << " of " << r->world_size() << "\n";
    }
    std::cout << "peers:";
    for (const d::Task& p : peers) std::cout << " " << p.name() << "=" << where(p);
    std::cout << "\nsource: " << source_of(*r) << "\n";
    return 0;
  };
}

}  // namespace lockstep::cli
