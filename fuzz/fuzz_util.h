// What every fuzz target shares: a scratch directory of its own for parsers that take paths (one per process,
// removed at exit), and the rule that a parser may refuse input only with a lockstep::Error.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "lockstep/core/error.h"
#include "lockstep/core/logging.h"

namespace lockstep::fuzz {

// "/tmp/lockstep_fuzz_<pid>", created on first use and removed when the process exits normally (libFuzzer
// returns from main after -max_total_time / -runs; a crash leaves it, with the input that caused it).
inline const std::filesystem::path& scratch_dir() {
  // Never destroyed: the exit handler below runs after static objects are gone.
  static const std::filesystem::path* const dir = [] {
    auto* d = new std::filesystem::path(std::filesystem::temp_directory_path() /
                                        ("lockstep_fuzz_" + std::to_string(::getpid())));
    std::filesystem::create_directories(*d);
    set_log_level(LogLevel::error);  // warnings about refused input would flood the fuzzer's output
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(scratch_dir(), ignored);
    });
    return d;
  }();
  return *dir;
}

// Writes `bytes` to scratch_dir()/name (the same file every run) and returns its path.
inline std::string write_scratch(const std::string& name, std::string_view bytes) {
  const std::string path = (scratch_dir() / name).string();
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Runs `parse`; a lockstep::Error is the refusal the CLI turns into one line and exit code 2. Anything else
// escapes, and libFuzzer reports it as a crash (an uncaught exception aborts).
template <typename Parse>
void expect_accept_or_refuse(Parse&& parse) {
  try {
    parse();
  } catch (const Error&) {
  }
}

}  // namespace lockstep::fuzz
