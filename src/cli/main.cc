// The lockstep command-line tool: `lockstep train`, `lockstep launch`, `lockstep evaluate`, `lockstep bench`,
// `lockstep tf-config` and `lockstep classes`.
// Every failure ends as one line on stderr: exit code 2 for a user error (a bad flag, TF_CONFIG, file or
// data set: a lockstep::Error), which running again cannot fix; 1 for a failure of the environment that a
// restart may fix (a lost peer, a timeout, a port in use) and for anything unexpected (out of memory, a
// system or library error). Launchers restart on 1, never on 2.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>

#include "cli.h"
#include "lockstep/core/error.h"
#include "lockstep/core/failure_report.h"
#include "lockstep/core/version.h"
#include "lockstep/kernels/cpu/features.h"

namespace {

constexpr int kUserError = 2, kInternalError = 1;

// `message` on stderr as one line, even when a library put line breaks in it; other control characters
// (an escape sequence quoted from a hostile TF_CONFIG or file name) are shown as '?', not sent to the terminal.
void print_error(const char* prefix, std::string message) {
  for (char& c : message) {
    if (c == '\n' || c == '\r') c = ' ';
    if ((c >= 0 && c < 0x20) || c == 0x7f) c = '?';
  }
  std::fprintf(stderr, "lockstep: error: %s%s\n", prefix, message.c_str());
}

// An exception as one line on stderr, and as a failure report to a launcher (whom it blames, as data); returns
// the exit code it means.
int report(std::exception_ptr exception) {
  try {
    std::rethrow_exception(exception);
  } catch (const std::exception& e) {
    lockstep::report_failure(lockstep::failure_report_of(e));
  } catch (...) {
    lockstep::report_failure({});
  }
  try {
    std::rethrow_exception(exception);
  } catch (const lockstep::UnavailableError& e) {
    print_error("", e.what());
  } catch (const lockstep::DeadlineExceededError& e) {
    print_error("", e.what());
  } catch (const lockstep::Error& e) {
    print_error("", e.what());
    return kUserError;
  } catch (const std::bad_alloc&) {
    print_error("", "out of memory: free some memory or ask for less (a smaller --batch-size)");
  } catch (const std::exception& e) {
    print_error("internal error: ", e.what());
  } catch (...) {
    print_error("internal error: ", "an exception of unknown type");
  }
  return kInternalError;
}

}  // namespace

int main(int argc, char** argv) {
  // An exception escaping a thread (or a noexcept function) ends here instead of "terminate called".
  std::set_terminate([] {
    if (std::exception_ptr current = std::current_exception()) std::_Exit(report(current));
    print_error("internal error: ", "std::terminate without an exception");
    std::_Exit(kInternalError);
  });
  CLI::App app{"lockstep: synchronous data-parallel training (TensorFlow's MultiWorkerMirroredStrategy, in C++)"};
  // The CPU too: which kernels run, and what mixed_bfloat16 gains here, depend on it.
  app.set_version_flag("--version", [] {
    return std::string("lockstep ") + lockstep::version() + "\n" + lockstep::kernels::cpu::cpu_features().summary();
  });
  app.require_subcommand(1);
  try {
    std::function<int()> train = lockstep::cli::add_train_command(app);
    std::function<int()> launch = lockstep::cli::add_launch_command(app);
    std::function<int()> tf_config = lockstep::cli::add_tf_config_command(app);
    std::function<int()> evaluate = lockstep::cli::add_evaluate_command(app);
    std::function<int()> bench = lockstep::cli::add_bench_command(app);
    std::function<int()> classes = lockstep::cli::add_classes_command(app);
    try {
      app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
      return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
      return app.exit(e);
    } catch (const CLI::ParseError& e) {
      lockstep::report_failure({lockstep::ErrorKind::kValue, ""});
      print_error("", std::string(e.what()) + " (see lockstep --help)");
      return kUserError;
    }
    if (app.got_subcommand("train")) return train();
    if (app.got_subcommand("launch")) return launch();
    if (app.got_subcommand("tf-config")) return tf_config();
    if (app.got_subcommand("evaluate")) return evaluate();
    if (app.got_subcommand("bench")) return bench();
    if (app.got_subcommand("classes")) return classes();
  } catch (...) {
    return report(std::current_exception());
  }
  return 0;
}
