// The lockstep command-line tool: `lockstep train`, `lockstep launch` and `lockstep tf-config`.
// Any lockstep error becomes one line on stderr and exit code 2.
#include <cstdio>

#include "cli.h"
#include "lockstep/core/error.h"

int main(int argc, char** argv) {
  CLI::App app{"lockstep: synchronous data-parallel training (TensorFlow's MultiWorkerMirroredStrategy, in C++)"};
  app.set_version_flag("--version", "lockstep 0.1.0");
  app.require_subcommand(1);
  std::function<int()> train = lockstep::cli::add_train_command(app);
  std::function<int()> launch = lockstep::cli::add_launch_command(app);
  std::function<int()> tf_config = lockstep::cli::add_tf_config_command(app);
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
    if (app.got_subcommand("launch")) return launch();
    if (app.got_subcommand("tf-config")) return tf_config();
  } catch (const lockstep::Error& e) {
    std::fprintf(stderr, "lockstep: error: %s\n", e.what());
    return 2;
  }
  return 0;
}
