// The lockstep command-line tool: `lockstep train` now; launch, evaluate and tf-config arrive with their issues.
// Any lockstep error becomes one line on stderr and exit code 2.
#include <cstdio>

#include "cli.h"
#include "lockstep/core/error.h"

int main(int argc, char** argv) {
  CLI::App app{"lockstep: synchronous data-parallel training (TensorFlow's MultiWorkerMirroredStrategy, in C++)"};
  app.set_version_flag("--version", "lockstep 0.1.0");
  app.require_subcommand(1);
  std::function<int()> train = lockstep::cli::add_train_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "lockstep: error: %s (see lockstep --help)\n", e.what());
    return 2;
  }
  try {
    if (app.got_subcommand("train")) return train();
  } catch (const lockstep::Error& e) {
    std::fprintf(stderr, "lockstep: error: %s\n", e.what());
    return 2;
  }
  return 0;
}
