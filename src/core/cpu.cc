// CPUID: the CPU's identity and features, and the check that it has those lockstep was compiled for.
// Compiled for plain x86-64 (CMakeLists.txt) because the check runs before anything else. It calls C functions only:
// an inline C++ function called here could be linked as another file's copy of it, compiled for the build's -march.
#include "lockstep/core/cpu.h"

#include <cpuid.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu-impl.h"

namespace lockstep::cpu {
namespace {

enum Register { eax, ebx, ecx, edx };
// XCR0's state components: SSE and AVX (YMM), AVX-512's opmask and upper ZMM, AMX's tile configuration and data.
constexpr uint64_t kYmm = 0x6, kZmm = 0xe6, kAmx = 0x60000;

struct Feature {
  const char* name;
  unsigned leaf, subleaf;
  Register reg;
  int bit;
  uint64_t state;
};
#define LOCKSTEP_FEATURE_ROW(name, macro, leaf, subleaf, reg, bit, state) {#name, leaf, subleaf, reg, bit, state},
constexpr Feature kFeatures[] = {LOCKSTEP_CPU_FEATURES(LOCKSTEP_FEATURE_ROW)};
constexpr int kFeatureCount = sizeof kFeatures / sizeof kFeatures[0];

// CPUID leaf/subleaf into r; all zero when the CPU has no such leaf.
void cpuid(unsigned leaf, unsigned subleaf, unsigned r[4]) {
  r[0] = r[1] = r[2] = r[3] = 0;
  __get_cpuid_count(leaf, subleaf, &r[0], &r[1], &r[2], &r[3]);
}

// The register state the OS saves and restores (XCR0), or 0 when it has not enabled XSAVE.
uint64_t enabled_state() {
  unsigned r[4];
  cpuid(1, 0, r);
  if (!(r[ecx] & (1u << 27))) return 0;  // OSXSAVE
  unsigned lo, hi;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

bool offered(const Feature& f, uint64_t state) {
  unsigned r[4];
  cpuid(f.leaf, f.subleaf, r);
  return (r[f.reg] >> f.bit & 1) && (state & f.state) == f.state;
}

// Whether `name` is one of the comma- or space-separated words of `list`.
bool listed(const char* list, const char* name) {
  const size_t n = strlen(name);
  for (const char* p = list; *p;) {
    while (*p == ',' || *p == ' ') ++p;
    const char* end = p;
    while (*end && *end != ',' && *end != ' ') ++end;
    if (static_cast<size_t>(end - p) == n && strncmp(p, name, n) == 0) return true;
    p = end;
  }
  return false;
}

// Appends `text` to the sentence being built in buffer[size] at *used, cutting it short when full.
void append(char* buffer, size_t size, size_t* used, const char* text) {
  const int n = snprintf(buffer + *used, size - *used, "%s", text);
  if (n > 0) *used += static_cast<size_t>(n) < size - *used ? static_cast<size_t>(n) : size - *used - 1;
}

// The variable `name` of environment `envp`, or nullptr.
const char* find_variable(char** envp, const char* name) {
  const size_t n = strlen(name);
  for (char** e = envp; e && *e; ++e)
    if (strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
  return nullptr;
}

// lockstep_cpu_baseline_error() with LOCKSTEP_CPU_PRETEND_MISSING's value `pretend` (may be nullptr).
const char* baseline_error(const char* pretend) {
  static char sentence[1024];
  size_t used = 0;
  const uint64_t state = enabled_state();
  for (int i = 0; i < kFeatureCount; ++i) {
    if (!lockstep_cpu_compiled_for[i]) continue;
    if (offered(kFeatures[i], state) && !(pretend && listed(pretend, kFeatures[i].name))) continue;
    append(sentence, sizeof sentence, &used, used == 0 ? "this CPU lacks the instructions " : ", ");
    append(sentence, sizeof sentence, &used, kFeatures[i].name);
  }
  if (used == 0) return nullptr;
#ifdef LOCKSTEP_CPU_TARGET_NATIVE
  append(sentence, sizeof sentence, &used,
         " (flags of /proc/cpuinfo) that this build of lockstep is compiled for: the CPU of the machine that built it "
         "(LOCKSTEP_NATIVE=ON). Rebuild it without LOCKSTEP_NATIVE (the portable x86-64-v3 build) or on this machine");
#else
  append(sentence, sizeof sentence, &used,
         " (flags of /proc/cpuinfo) that this build of lockstep is compiled for: x86-64-v3 (AVX2, FMA, BMI2...: most "
         "Intel and AMD CPUs made since 2015). Run it on such a CPU, or build lockstep on this machine with "
         "-DLOCKSTEP_NATIVE=ON");
#endif
  return sentence;
}

}  // namespace

Identity identity() {
  Identity id{};
  unsigned r[4];
  cpuid(0, 0, r);
  memcpy(id.vendor, &r[ebx], 4);
  memcpy(id.vendor + 4, &r[edx], 4);
  memcpy(id.vendor + 8, &r[ecx], 4);
  char brand[48] = {};
  for (unsigned i = 0; i < 3; ++i) {
    cpuid(0x80000002 + i, 0, r);
    memcpy(brand + 16 * i, r, 16);
  }
  // Trimmed of spaces at both ends, as Linux shows it.
  size_t begin = 0, end = strnlen(brand, sizeof brand);
  while (begin < end && brand[begin] == ' ') ++begin;
  while (end > begin && brand[end - 1] == ' ') --end;
  memcpy(id.model_name, brand + begin, end - begin);
  cpuid(1, 0, r);
  const int base_family = static_cast<int>(r[eax] >> 8 & 0xf);
  id.family = base_family == 0xf ? base_family + static_cast<int>(r[eax] >> 20 & 0xff) : base_family;
  id.model = static_cast<int>(r[eax] >> 4 & 0xf);
  if (id.family >= 6) id.model += static_cast<int>(r[eax] >> 16 & 0xf) << 4;
  id.stepping = static_cast<int>(r[eax] & 0xf);
  return id;
}

int feature_count() { return kFeatureCount; }

const char* feature_name(int i) { return i >= 0 && i < kFeatureCount ? kFeatures[i].name : ""; }

bool has_feature(int i) { return i >= 0 && i < kFeatureCount && offered(kFeatures[i], enabled_state()); }

}  // namespace lockstep::cpu

extern "C" const char* lockstep_cpu_baseline_error(void) {
  return lockstep::cpu::baseline_error(getenv("LOCKSTEP_CPU_PRETEND_MISSING"));
}

extern "C" void lockstep_cpu_baseline_check(char** envp) {
  // Before libc's own initialisers have run (.preinit_array) getenv() sees no environment: read the one given.
  const char* pretend = envp ? lockstep::cpu::find_variable(envp, "LOCKSTEP_CPU_PRETEND_MISSING")
                             : getenv("LOCKSTEP_CPU_PRETEND_MISSING");
  const char* error = lockstep::cpu::baseline_error(pretend);
  if (!error) return;
  // One write, so that the line is not split; nothing to do if stderr is gone.
  char line[1200];
  const int n = snprintf(line, sizeof line, "lockstep: error: %s\n", error);
  if (n > 0) (void)!write(2, line, static_cast<size_t>(n) < sizeof line ? static_cast<size_t>(n) : sizeof line - 1);
  _exit(2);
}
