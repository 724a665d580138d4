// Refuses, in one line and with exit code 2, to run on a CPU that lacks a feature lockstep was compiled for, before
// any code compiled for those features can run and die of SIGILL. The check is an entry of the executable's
// .preinit_array, which the dynamic loader calls before every initialiser: the shared libraries', and this
// program's own static ones (protobuf's generated files register theirs at the highest priority, 101). Compiled for
// plain x86-64, as is core/cpu.cc, which it calls (CMakeLists.txt).
#include "lockstep/core/cpu.h"

namespace {

void check_cpu(int, char**, char** envp) { lockstep_cpu_baseline_check(envp); }

[[gnu::used, gnu::section(".preinit_array")]] void (*check_cpu_first)(int, char**, char**) = check_cpu;

}  // namespace
