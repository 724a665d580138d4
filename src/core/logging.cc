// Line-at-a-time logging to stderr.
#include "lockstep/core/logging.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>

namespace lockstep {

namespace {
LogLevel level_from_env() {
  const char* v = std::getenv("LOCKSTEP_LOG_LEVEL");
  std::string_view s = v ? v : "info";
  if (s == "debug") return LogLevel::debug;
  if (s == "warning") return LogLevel::warning;
  if (s == "error") return LogLevel::error;
  return LogLevel::info;
}
std::atomic<LogLevel> g_level{level_from_env()};
std::mutex g_mutex;
std::string g_tag;
}  // namespace

void set_log_level(LogLevel level) { g_level = level; }
LogLevel log_level() { return g_level; }

void set_log_tag(std::string tag) {
  std::lock_guard lock(g_mutex);
  g_tag = std::move(tag);
}

void log_line(LogLevel level, std::string_view message) {
  static constexpr const char* kNames[] = {"D", "I", "W", "E"};
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  localtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%H:%M:%S", &tm);
  std::lock_guard lock(g_mutex);
  std::fprintf(stderr, "%s %s%s%s] %.*s\n", kNames[static_cast<int>(level)], stamp, g_tag.empty() ? "" : " ",
               g_tag.c_str(), static_cast<int>(message.size()), message.data());
}

}  // namespace lockstep
