// The lockstep command-line tool. Subcommands arrive with their issues (train, launch, evaluate, tf-config).
#include <cstdio>
#include <cstring>

#include "lockstep/core/error.h"

int main(int argc, char** argv) {
  if (argc > 1 && (std::strcmp(argv[1], "--version") == 0 || std::strcmp(argv[1], "version") == 0)) {
    std::printf("lockstep 0.1.0\n");
    return 0;
  }
  std::fprintf(stderr, "usage: lockstep --version\n(train, launch, evaluate and tf-config are not built yet)\n");
  return 2;
}
