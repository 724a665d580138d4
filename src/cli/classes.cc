// `lockstep classes`: every Keras class lockstep has, with each argument, Keras' default and what lockstep does
// with it, as Markdown, read from the C++ registries (their parameter tables: lockstep/keras/registry.h).
// docs/keras-classes.md is its output (`make docs` writes it; tests/keras/registry_test.cc holds the two equal), so
// a class added to a registry reaches the docs with no edit by hand.
#include <CLI/CLI.hpp>
#include <functional>
#include <iostream>

#include "lockstep/keras/registry_doc.h"

namespace lockstep::cli {

std::function<int()> add_classes_command(CLI::App& app) {
  app.add_subcommand("classes", "List every Keras class lockstep has, with its arguments and defaults (Markdown)");
  return [] {
    std::cout << keras::registries_markdown();
    return 0;
  };
}

}  // namespace lockstep::cli
