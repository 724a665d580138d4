// The CPU this process runs on, from CPUID: who made it, the x86 features it and the OS offer, and whether it has
// every feature lockstep was compiled for. Compiled for plain x86-64, so that this check can run before any code
// compiled for the build's baseline (which would die of SIGILL). lockstep/kernels/cpu/features.h adds what oneDNN
// makes of the CPU.
#pragma once

namespace lockstep::cpu {

// CPUID's identity, numbered as /proc/cpuinfo numbers it.
struct Identity {
  char vendor[13];      // "GenuineIntel", "AuthenticAMD"
  char model_name[49];  // the brand string, /proc/cpuinfo's "model name"
  int family, model, stepping;
};
Identity identity();

// The features lockstep knows (x86-64-v2 and -v3, AVX-512, AMX): feature_count() of them, named as in the flags line
// of /proc/cpuinfo ("avx2", "avx512f", "avx512_bf16", "amx_bf16").
int feature_count();
const char* feature_name(int i);
// Whether this CPU has feature i (below feature_count()) and the OS has enabled the registers it uses.
bool has_feature(int i);

}  // namespace lockstep::cpu

// nullptr when this CPU has every feature lockstep was compiled for (x86-64-v3, or the build machine's CPU with
// LOCKSTEP_NATIVE), else one sentence naming those it lacks and what to do. C, for front ends that check before they
// load lockstep's code: the lockstep binary first thing (src/cli/cpu_check.cc), Python through ctypes on the
// lockstep_cpu_check module. LOCKSTEP_CPU_PRETEND_MISSING ("avx2", or "avx2,fma"), for tests, counts those features
// as missing too; it can only make the check refuse, never pass.
extern "C" const char* lockstep_cpu_baseline_error(void);
// When lockstep_cpu_baseline_error() has a sentence: writes it to stderr as one line and exits with code 2. `envp`
// is the environment to read LOCKSTEP_CPU_PRETEND_MISSING from (a .preinit_array entry's third argument: getenv()
// does not work that early), or nullptr for getenv().
extern "C" void lockstep_cpu_baseline_check(char** envp);
