// keras.models.load_model / save_model: Keras 3's .keras archive (metadata.json, config.json with the
// compile config, model.weights.h5), read and written so that TensorFlow's Keras loads what lockstep saves
// and the other way round; any other path is lockstep's saved-model directory (Model::save). model_from_json is in
// model.h.
#pragma once
#include <string>

#include "lockstep/keras/model.h"

namespace lockstep::keras::models {

// A model saved by save_model / model.save, or by Keras 3 in TensorFlow (`model.save("x.keras")`): its layers,
// weights and, unless options.compile is false, its optimizer (hyperparameters, iterations and slot variables),
// loss and metrics, so fit() continues. Under a multi-worker strategy every worker calls it; the chief reads
// the file and broadcasts it. NotFoundError for a missing file, DataLossError naming the file and member for a
// corrupt one, ValueError naming the layer and option lockstep does not support.
Model load_model(const std::string& path, LoadOptions options = {});
// model.save(path): a .keras archive when `path` ends in ".keras", else a directory. Written atomically, by
// the chief alone under a multi-worker strategy; a collective that returns once the chief's file is durable.
void save_model(const Model& model, const std::string& path, SaveOptions options = {});

}  // namespace lockstep::keras::models
