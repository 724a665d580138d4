// What the saved-model directory (models/model.cc) and the .keras archive (keras_archive.cc) share.
#pragma once
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/keras/model.h"

namespace lockstep::keras::detail {

// Keras 3's compile_config of a compiled model, or nullopt (with a warning) when load_model could not rebuild
// its optimizer or loss.
std::optional<nlohmann::json> compile_config(const Model& model);
// Compiles `model` from a compile_config; `where` names the file in errors. Options lockstep does not have
// (clipnorm, weight_decay, ...) are a ValueError naming them; a malformed config is DataLossError.
void compile_from_config(Model& model, const nlohmann::json& compile_config, const std::string& where);

// Runs `read` on the chief of the current multi-worker strategy and broadcasts what it returns (or its error)
// to every worker, so that only the chief needs the files; without one it just runs `read`.
std::vector<std::string> read_on_chief(const std::function<std::vector<std::string>()>& read);
// Runs `write` on the chief of the model's multi-worker strategy alone; returns on every worker once it is done
// there, with its error raised on every worker (model.save, save_weights, ModelCheckpoint: all workers call them).
// The other workers make the directory that would hold their `path` ("": none), where TF's would write their
// copy: the tutorials remove it next.
void write_on_chief(const Model& model, const std::string& path, const std::function<void()>& write);

// A path ending in ".keras": Keras 3's zip archive rather than lockstep's directory.
inline bool is_keras_archive(const std::string& path) {
  return path.size() > 6 && path.ends_with(".keras");
}
void save_keras_archive(const Model& model, const std::string& path, const SaveOptions& options);
Model load_keras_archive(const std::string& path, const LoadOptions& options);

// A path ending in ".weights.h5": save_weights writes Keras 3's weights file (the archive's model.weights.h5, with
// the optimizer's variables once compiled), which Keras' load_weights reads, rather than lockstep's safetensors.
inline bool is_keras_weights_file(const std::string& path) {
  return path.ends_with(".weights.h5");
}
void save_keras_weights(const Model& model, const std::string& path);
void load_keras_weights(Model& model, const std::string& path);

}  // namespace lockstep::keras::detail
