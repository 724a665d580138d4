// The local launcher: runs N worker processes on one host, each with its own TF_CONFIG, prefixes their
// output, stops the whole group when one worker fails and restarts it. Used by `lockstep launch` and by
// `lockstep train --workers N`.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace lockstep::cli {

struct LaunchOptions {
  int num_workers = 1;
  int max_restarts = 0;                          // restarts of the whole group after a worker failure
  int start_port = 0;                            // 0: ports chosen by the kernel; else the first free ones from here up
  std::string host = "127.0.0.1";                // the address every worker's TF_CONFIG names
  double grace_period_s = 10;                    // seconds between SIGTERM and SIGKILL when stopping workers
  std::string log_dir;                           // if set, each worker's output also goes to log_dir/worker-<i>.log
  std::vector<std::string> command;              // argv of every worker; "lockstep" means this same binary
  std::map<std::string, std::string> extra_env;  // set in every worker, over the launcher's environment
};

// Runs the group until every worker exits 0 (returns 0), a worker fails and no restart is left (returns
// its exit code, 128 + signal for a signal), the launcher gets SIGINT/SIGTERM (130/143), or the options
// or the command are unusable (one line on stderr, returns 2). Never waits unbounded on a worker.
int launch(const LaunchOptions& options);

}  // namespace lockstep::cli
