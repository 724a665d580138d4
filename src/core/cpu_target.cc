// The x86 features lockstep's code is compiled for (the build's -march), as data that core/cpu.cc's check reads: the
// macros GCC defines for this file's flags, which cpu.cc, compiled for plain x86-64, cannot see.
#include "cpu-impl.h"

// A macro's value as a string: "1" for a feature this file is compiled for, the macro's own name when undefined.
#define LOCKSTEP_STR_(x) #x
#define LOCKSTEP_STR(x) LOCKSTEP_STR_(x)
#define LOCKSTEP_COMPILED_FOR(name, macro, ...) LOCKSTEP_STR(macro)[0] == '1',

extern "C" constinit const bool lockstep_cpu_compiled_for[] = {LOCKSTEP_CPU_FEATURES(LOCKSTEP_COMPILED_FOR)};
