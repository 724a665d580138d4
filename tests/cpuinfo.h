// What Linux's /proc/cpuinfo says about the first CPU: the fields lockstep's CPU report must agree with. Test
// helper only.
#pragma once
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

namespace lockstep::testing {

struct CpuInfo {
  std::map<std::string, std::string> fields;  // "vendor_id", "cpu family", "model", "model name", "stepping", ...
  std::set<std::string> flags;
};

inline CpuInfo read_cpuinfo() {
  CpuInfo info;
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line) && !line.empty();) {  // a blank line ends the first CPU
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
    const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    info.fields[key] = value;
    if (key == "flags") {
      std::istringstream words(value);
      for (std::string flag; words >> flag;) info.flags.insert(flag);
    }
  }
  return info;
}

}  // namespace lockstep::testing
