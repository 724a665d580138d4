// Logging to stderr with a level (LOCKSTEP_LOG_LEVEL=debug|info|warning|error) and a task tag.
#pragma once
#include <string>
#include <string_view>

#include "lockstep/core/error.h"

namespace lockstep {

enum class LogLevel { debug, info, warning, error };

void set_log_level(LogLevel level);
LogLevel log_level();
// A tag printed before every line, such as "worker 1"; empty for none.
void set_log_tag(std::string tag);
// Writes one whole line (no interleaving between threads).
void log_line(LogLevel level, std::string_view message);

template <typename... Parts> void log(LogLevel level, const Parts&... parts) {
  if (level >= log_level()) log_line(level, make_message(parts...));
}

}  // namespace lockstep
