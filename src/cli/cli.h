// Private to the lockstep binary: subcommand registration and the built-in models.
#pragma once
#include <string>

#include <CLI/CLI.hpp>

#include "lockstep/keras/model.h"

namespace lockstep::cli {

// Adds `lockstep train` to the app; the returned function runs it after parsing and gives the exit code.
std::function<int()> add_train_command(CLI::App& app);

// Adds `lockstep launch` (N workers on this host, each with its TF_CONFIG); the returned function runs it.
std::function<int()> add_launch_command(CLI::App& app);

// Adds `lockstep tf-config` (prints the resolved role or the TF_CONFIG error); the returned function runs it.
std::function<int()> add_tf_config_command(CLI::App& app);

// "tutorial_cnn" (the multi-worker tutorial model) or "fashion_cnn" (the custom-training tutorial model).
keras::Sequential build_model(const std::string& name);

// SHA-256 over every variable's raw little-endian bytes, in order, as lowercase hex.
std::string weights_sha256(const keras::Sequential& model);

}  // namespace lockstep::cli
