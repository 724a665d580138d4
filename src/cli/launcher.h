// The local launcher: runs N worker processes on one host, each with its own TF_CONFIG, prefixes their
// output, stops the whole group when one worker fails, names the worker whose loss started it, and restarts
// the group. Used by `lockstep launch` and by `lockstep train --workers N`.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace lockstep::cli {

struct LaunchOptions {
  int num_workers = 1;
  int max_restarts = 0;                          // restarts of the whole group after a worker failure (not exit 2)
  int start_port = 0;                            // 0: ports chosen by the kernel; else the first free ones from here up
  std::string host = "127.0.0.1";                // the address every worker's TF_CONFIG names
  double grace_period_s = 10;                    // seconds between SIGTERM and SIGKILL when stopping workers
  std::string log_dir;                           // if set, each worker's output also goes to log_dir/worker-<i>.log
  std::vector<std::string> command;              // argv of every worker; "lockstep" means this same binary
  std::map<std::string, std::string> extra_env;  // set in every worker, over the launcher's environment
};

// Runs the group until every worker exits 0 (returns 0), a worker fails and no restart is left or it exited
// with 2, lockstep's input error (returns its exit code, 128 + signal for a signal), the launcher gets
// SIGINT/SIGTERM (130/143), or the options or the command are unusable (one line on stderr, returns 2).
// A group whose workers exit with train::kPreemptedExitCode (75: they saved on SIGTERM) is restarted after a
// short pause without spending one of the max_restarts. Every worker gets LOCKSTEP_RESTART_COUNT (0 on the
// first run). A --log-dir file that cannot be written is
// said once and turns a 0 into 1 at the end. Never waits unbounded on a worker.
int launch(const LaunchOptions& options);

}  // namespace lockstep::cli
