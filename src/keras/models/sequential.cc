// keras.Sequential: a Model whose layers run one after the other, added one at a time, read from Keras 3's
// Sequential config, or loaded from a saved Sequential model. Its state is Model's (models-impl.h).
#include "lockstep/keras/models/sequential.h"

#include "../keras-impl.h"
#include "models-impl.h"

namespace lockstep::keras {

Sequential::Sequential() : Sequential(std::vector<LayerHandle>{}) {}

Sequential::Sequential(std::vector<LayerHandle> layers, std::string name) : Model(std::make_shared<State>()) {
  s_->name = name.empty() ? detail::unique_name("Sequential") : std::move(name);
  if (distribute::has_strategy()) s_->strategy = &distribute::get_strategy();
  for (LayerHandle& l : layers) add(std::move(l));
}

void Sequential::add(LayerHandle handle) {
  if (auto input = std::dynamic_pointer_cast<layers::InputLayer>(handle.ptr)) {
    LS_CHECK(s_->layers.empty() && !s_->input, ValueError, "an Input can only be the first layer of Sequential model \"",
             s_->name, "\"");
    s_->input = input;
    build(input->shape());
    return;
  }
  s_->layers.push_back(handle.ptr);
  if (s_->built) {  // keep a built model built: the new layer gets its weights now
    s_->layers.back()->ensure_built(s_->output_shape);
    s_->output_shape = s_->layers.back()->compute_output_shape(s_->output_shape);
  }
}

Sequential Sequential::from_config(const nlohmann::json& config) {
  LS_CHECK(!config.is_object() || !config.contains("input_layers"), ValueError, "model config \"",
           config.value("name", ""), "\" is a functional model's, not a Sequential one: use keras::Model::from_config");
  try {
    std::vector<LayerHandle> layers;
    for (const auto& l : config.at("layers")) layers.emplace_back(layers::from_config(l));
    Sequential model(std::move(layers), config.value("name", ""));
    if (!model.built() && config.contains("build_input_shape") && config["build_input_shape"].is_array()) {
      std::vector<int64_t> shape;  // Keras 3's [null, features...]
      for (size_t i = 1; i < config["build_input_shape"].size(); ++i)
        shape.push_back(detail::json_int(config["build_input_shape"][i], "build_input_shape"));
      model.build(Shape(shape));
    }
    return model;
  } catch (const nlohmann::json::exception& e) {
    throw ValueError(make_message("invalid Sequential config: ", e.what()));
  }
}

Sequential Sequential::load_model(const std::string& dir, LoadOptions options) {
  Model model = Model::load_model(dir, options);
  LS_CHECK(!model.s_->graph, ValueError, "the model saved at ", dir,
           " is a functional model, not a Sequential one: load it with keras::Model::load_model");
  return Sequential(model.s_);
}

}  // namespace lockstep::keras
