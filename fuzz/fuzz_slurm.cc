// The SLURM resolver over its environment: the input's lines are SLURM_PROCID, SLURM_STEP_NUM_TASKS,
// SLURM_STEP_NODELIST, SLURM_STEP_TASKS_PER_NODE, SLURMD_NODENAME and SLURM_LOCALID (a missing line leaves the
// variable unset), and the host list is also expanded on its own.
#include <cstdlib>
#include <vector>

#include "fuzz_util.h"
#include "lockstep/distribute/cluster/cluster_resolver.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  static const char* const kNames[] = {"SLURM_PROCID",        "SLURM_STEP_NUM_TASKS",
                                       "SLURM_STEP_NODELIST", "SLURM_STEP_TASKS_PER_NODE",
                                       "SLURMD_NODENAME",     "SLURM_LOCALID"};
  const std::string_view text = fuzz::as_text(data, size);
  std::vector<std::string> lines;
  for (size_t start = 0; start <= text.size() && lines.size() < std::size(kNames);) {
    const size_t end = std::min(text.find('\n', start), text.size());
    lines.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  for (size_t i = 0; i < std::size(kNames); ++i) {
    if (i < lines.size())
      ::setenv(kNames[i], lines[i].c_str(), 1);
    else
      ::unsetenv(kNames[i]);
  }
  fuzz::expect_accept_or_refuse([&] {
    distribute::SlurmClusterResolver resolver;
    (void)resolver.training_tasks();
  });
  if (lines.size() > 2)
    fuzz::expect_accept_or_refuse([&] { (void)distribute::SlurmClusterResolver::expand_hostlist(lines[2]); });
  return 0;
}
