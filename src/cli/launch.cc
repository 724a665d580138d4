// `lockstep launch -n N -- CMD ARGS...`: runs N workers of CMD on this host, each with its TF_CONFIG
// (see launcher.h for what happens when a worker fails).
#include "cli.h"
#include "launcher.h"

#include <filesystem>

namespace lockstep::cli {

std::function<int()> add_launch_command(CLI::App& app) {
  auto o = std::make_shared<LaunchOptions>();
  CLI::App* cmd = app.add_subcommand("launch", "run N workers of a command on this host, each with its TF_CONFIG");
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // a repeated flag: the last wins
  cmd->add_option("-n,--num-workers", o->num_workers, "number of worker processes")->required();
  cmd->add_option("--max-restarts", o->max_restarts,
                  "restarts of the whole group after a worker fails (none after exit code 2, an input error)");
  cmd->add_option("--start-port", o->start_port, "first port to try (default: ports chosen by the kernel)");
  cmd->add_option("--host", o->host, "address of this host in TF_CONFIG");
  cmd->add_option("--grace-period", o->grace_period_s, "seconds from SIGTERM to SIGKILL when stopping workers");
  cmd->add_option("--log-dir", o->log_dir, "also write each worker's output to DIR/worker-<i>.log");
  cmd->add_option_function<std::string>(
         "--cluster-token-file",
         [o](const std::string& path) {
           o->extra_env["LOCKSTEP_CLUSTER_TOKEN_FILE"] = std::filesystem::absolute(path).string();
         },
         "the job's secret, for workers that join from elsewhere (default: a fresh random token in "
         "LOCKSTEP_CLUSTER_TOKEN)")
      ->check(CLI::ExistingFile);
  cmd->add_option("command", o->command, "the worker command and its arguments, after --")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  return [o] { return launch(*o); };
}

}  // namespace lockstep::cli
