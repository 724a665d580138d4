// keras.Sequential: a Model whose layers run one after the other (a stack of layers, the first of which may be an
// Input), with Keras 3's Sequential config.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lockstep/keras/models/model.h"

namespace lockstep::keras {

// keras.Sequential: a Model whose layers run one after the other.
class Sequential : public Model {
 public:
  Sequential();
  explicit Sequential(std::vector<LayerHandle> layers, std::string name = "");

  void add(LayerHandle layer);
  static Sequential from_config(const nlohmann::json& config);
  // Model::load_model for a saved Sequential model; ValueError for a functional one.
  static Sequential load_model(const std::string& dir, LoadOptions options = {});

 private:
  explicit Sequential(std::shared_ptr<State> state) : Model(std::move(state)) {}
};

}  // namespace lockstep::keras
