// keras.callbacks.ProgbarLogger: Keras' progress bar, its numbers formatted as Keras prints them.
#include "lockstep/keras/callbacks/progbar_logger.h"

#include <unistd.h>

#include <cmath>
#include <string>

namespace lockstep::keras::callbacks {

namespace {
// Keras prints metric values with 4 decimals, or in scientific notation when tiny.
std::string format_value(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, std::abs(v) > 1e-3 || v == 0 ? "%.4f" : "%.4e", v);
  return buf;
}

std::string format_per_step(double seconds) {
  char buf[32];
  if (seconds >= 1 || seconds == 0) std::snprintf(buf, sizeof buf, "%.0fs/step", seconds);
  else if (seconds >= 1e-3) std::snprintf(buf, sizeof buf, "%.0fms/step", seconds * 1e3);
  else std::snprintf(buf, sizeof buf, "%.0fus/step", seconds * 1e6);
  return buf;
}

std::string format_eta(double seconds) {
  char buf[32];
  const long s = std::lround(seconds);
  if (s > 3600) std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, (s % 3600) / 60, s % 60);
  else if (s > 60) std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%lds", s);
  return buf;
}
}  // namespace

ProgbarLogger::ProgbarLogger(std::FILE* out) : out_(out), interactive_(isatty(fileno(out)) != 0) {}

void ProgbarLogger::start(int64_t target) {
  target_ = target;
  seen_ = 0;
  start_ = last_draw_ = std::chrono::steady_clock::now();
}

void ProgbarLogger::update(int64_t seen, const Logs& logs, bool finalize) {
  seen_ = seen;
  if (params_.verbose == 0) return;
  auto now = std::chrono::steady_clock::now();
  // A terminal is redrawn at most every 50 ms; elsewhere only the final line of each run is written.
  if (!finalize && (!interactive_ || params_.verbose != 1 || now - last_draw_ < std::chrono::milliseconds(50))) return;
  last_draw_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double per_step = seen > 0 ? elapsed / static_cast<double>(seen) : 0;
  const int64_t target = target_ > 0 ? target_ : seen;
  std::string line;
  if (params_.verbose == 1) {
    const int width = static_cast<int>(std::to_string(target).size());
    char head[64];
    std::snprintf(head, sizeof head, "%*lld/%lld [", width, static_cast<long long>(seen), static_cast<long long>(target));
    line = head;
    const int64_t filled = target > 0 ? 30 * seen / target : 30;
    if (filled > 0) line += std::string(static_cast<size_t>(filled - 1), '=') + (seen < target ? ">" : "=");
    line += std::string(static_cast<size_t>(30 - filled), '.') + "]";
    if (finalize) line += " - " + format_eta(elapsed) + " " + format_per_step(per_step);
    else line += " - ETA: " + format_eta(per_step * static_cast<double>(target - seen));
    for (const auto& [k, v] : logs.items()) line += " - " + k + ": " + format_value(v);
  } else {  // verbose 2: one line, no bar
    line = std::to_string(seen) + "/" + std::to_string(target) + " - " + format_eta(elapsed);
    for (const auto& [k, v] : logs.items()) line += " - " + k + ": " + format_value(v);
    line += " - " + format_per_step(per_step);
  }
  if (interactive_ && params_.verbose == 1) std::fprintf(out_, "\r%s\033[K", line.c_str());
  else std::fprintf(out_, "%s", line.c_str());
  if (finalize) std::fprintf(out_, "\n");
  std::fflush(out_);
}

void ProgbarLogger::on_train_begin(const Logs&) { in_fit_ = true; }

void ProgbarLogger::on_epoch_begin(int64_t epoch, const Logs&) {
  if (params_.verbose && params_.epochs > 1) {
    std::fprintf(out_, "Epoch %lld/%lld\n", static_cast<long long>(epoch + 1), static_cast<long long>(params_.epochs));
    std::fflush(out_);
  }
  start(params_.steps);
}

void ProgbarLogger::on_train_batch_end(int64_t batch, const Logs& logs) { update(batch + 1, logs, false); }
void ProgbarLogger::on_epoch_end(int64_t, const Logs& logs) { update(seen_, logs, true); }

// During fit the validation pass draws no bar of its own: its results join the epoch's line.
void ProgbarLogger::on_test_begin(const Logs&) {
  if (!in_fit_) start(params_.steps);
}
void ProgbarLogger::on_test_batch_end(int64_t batch, const Logs& logs) {
  if (!in_fit_) update(batch + 1, logs, false);
}
void ProgbarLogger::on_test_end(const Logs& logs) {
  if (!in_fit_) update(seen_, logs, true);
}
void ProgbarLogger::on_predict_begin(const Logs&) { start(params_.steps); }
void ProgbarLogger::on_predict_batch_end(int64_t batch, const Logs& logs) { update(batch + 1, logs, false); }
void ProgbarLogger::on_predict_end(const Logs& logs) { update(seen_, logs, true); }

}  // namespace lockstep::keras::callbacks
