// The Python that interop tests run (reading lockstep's files with NumPy or safetensors, or writing files for
// lockstep to read): $LOCKSTEP_PYTHON, else the venv scripts/python-venv makes beside bin/ (`make test` runs it),
// else Debian's. Test helpers only.
#pragma once
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace lockstep::testing {

// Empty, with the reason in `why`, when that Python cannot import `module`.
inline std::string interop_python(const std::string& module, std::string& why) {
  namespace fs = std::filesystem;
  const fs::path venv = fs::path(LOCKSTEP_BIN_DIR).parent_path() / "venv";
  const fs::path venv_python = venv / "bin/python3";
  const char* env = std::getenv("LOCKSTEP_PYTHON");
  const std::string python = env ? env : fs::exists(venv_python) ? venv_python.string() : "/usr/bin/python3";
  if (std::system((python + " -c 'import " + module + "' >/dev/null 2>&1").c_str()) == 0) return python;
  if (!env) {  // why scripts/python-venv could not make the venv
    std::ifstream in(venv / "UNAVAILABLE");
    why.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (!why.empty() && why.back() == '\n') why.pop_back();
  if (why.empty())
    why = python + " cannot import " + module + "; scripts/python-venv " + venv.string() + " (run by make test) installs it";
  return "";
}

}  // namespace lockstep::testing
