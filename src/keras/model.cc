// Sequential: building, calling, summary, weights, configs, and saving.
#include "lockstep/keras/model.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "keras-impl.h"
#include "lockstep/core/files.h"
#include "lockstep/train/safetensors.h"
#include "model-impl.h"

namespace lockstep::keras {

namespace fs = std::filesystem;

Sequential::Sequential() : Sequential(std::vector<LayerHandle>{}) {}

Sequential::Sequential(std::vector<LayerHandle> layers, std::string name) : s_(std::make_shared<State>()) {
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

void Sequential::build(const Shape& input_shape) {
  Shape s = input_shape;
  for (const LayerPtr& l : s_->layers) {
    l->ensure_built(s);
    s = l->compute_output_shape(s);
  }
  s_->input_shape = input_shape;
  s_->output_shape = s;
  s_->built = true;
}

Tensor Sequential::operator()(const Tensor& x_in, CallOptions options) {
  LS_CHECK(x_in.rank() >= 1, ValueError, "model \"", s_->name, "\" needs a batch of inputs, got a scalar");
  Tensor x = x_in;
  // Keras casts inputs to the model's dtype (images arrive as uint8).
  if (x.dtype() != DType::float32 && x.dtype() != DType::float64) x = cast(x, DType::float32);
  if (s_->input) {
    x = (*s_->input)(x, options);
  } else {
    // Built by the first call; under a strategy that call may come from several replicas at once, and the
    // variables it makes belong to the strategy the model was created under.
    std::lock_guard lock(s_->build_mutex);
    if (!s_->built) {
      std::optional<distribute::Strategy::Scope> scope;
      if (s_->strategy) scope.emplace(s_->strategy);
      build(Shape(std::vector<int64_t>(x.shape().dims().begin() + 1, x.shape().dims().end())));
    }
  }
  for (const LayerPtr& l : s_->layers) x = (*l)(x, options);
  return x;
}

const std::string& Sequential::name() const { return s_->name; }
const std::vector<LayerPtr>& Sequential::layers() const { return s_->layers; }
bool Sequential::built() const { return s_->built; }

std::string Sequential::summary_string() const {
  // tf.keras' layout: 65 columns, fields ending at 29, 55 and 65.
  constexpr size_t kWidth = 65, kCol1 = 29, kCol2 = 55;
  auto row = [&](const std::string& a, const std::string& b, const std::string& c) {
    std::string line = a.substr(0, kCol1 - 1);
    line.resize(kCol1, ' ');
    line += b.substr(0, kCol2 - kCol1 - 1);
    line.resize(kCol2, ' ');
    line += c;
    line.resize(kWidth, ' ');
    return line + "\n";
  };
  auto thousands = [](int64_t n) {  // 2770634 -> "2,770,634"
    const std::string digits = std::to_string(n);
    std::string s;
    for (size_t i = 0; i < digits.size(); ++i) {
      if (i > 0 && (digits.size() - i) % 3 == 0) s += ',';
      s += digits[i];
    }
    return s;
  };
  std::ostringstream os;
  os << "Model: \"" << s_->name << "\"\n" << std::string(kWidth, '_') << "\n";
  os << row(" Layer (type)", "Output Shape", "Param #") << std::string(kWidth, '=') << "\n";
  Shape shape = s_->input_shape;
  for (size_t i = 0; i < s_->layers.size(); ++i) {
    const Layer& l = *s_->layers[i];
    std::string out = "multiple";
    if (s_->built) {
      shape = l.compute_output_shape(shape);
      out = detail::with_none(shape);
    }
    os << row(" " + l.name() + " (" + l.class_name() + ")", out, std::to_string(l.count_params()));
    os << std::string(kWidth, ' ') << "\n";
  }
  int64_t trainable = 0, total = count_params();
  for (const Variable& v : trainable_variables()) trainable += v.shape().numel();
  os << std::string(kWidth, '=') << "\n";
  os << "Total params: " << thousands(total) << "\n";
  os << "Trainable params: " << thousands(trainable) << "\n";
  os << "Non-trainable params: " << thousands(total - trainable) << "\n";
  os << std::string(kWidth, '_') << "\n";
  return os.str();
}

void Sequential::summary() const { std::cout << summary_string() << std::flush; }

int64_t Sequential::count_params() const {
  int64_t n = 0;
  for (const LayerPtr& l : s_->layers) n += l->count_params();
  return n;
}

std::vector<Variable> Sequential::variables() const {
  std::vector<Variable> out;
  for (const LayerPtr& l : s_->layers)
    for (const Variable& v : l->weights()) out.push_back(v);
  return out;
}

std::vector<Variable> Sequential::trainable_variables() const {
  std::vector<Variable> out;
  for (const LayerPtr& l : s_->layers)
    for (const Variable& v : l->trainable_weights()) out.push_back(v);
  return out;
}

std::vector<Variable> Sequential::non_trainable_variables() const {
  std::vector<Variable> out;
  for (const LayerPtr& l : s_->layers)
    for (const Variable& v : l->non_trainable_weights()) out.push_back(v);
  return out;
}

std::vector<Tensor> Sequential::losses() const {
  std::vector<Tensor> out;
  for (const LayerPtr& l : s_->layers)
    for (const Tensor& t : l->losses()) out.push_back(t);
  return out;
}

std::vector<Tensor> Sequential::get_weights() const {
  std::vector<Tensor> out;
  for (const Variable& v : variables()) out.push_back(v.value().clone());
  return out;
}

void Sequential::set_weights(const std::vector<Tensor>& weights) {
  std::vector<Variable> vars = variables();
  LS_CHECK(weights.size() == vars.size(), ValueError, "set_weights got ", weights.size(), " arrays but model \"",
           s_->name, "\" has ", vars.size(), " variables");
  for (size_t i = 0; i < vars.size(); ++i) {
    LS_CHECK(weights[i].shape() == vars[i].shape(), ValueError, "weight ", i, " for variable '", vars[i].name(),
             "' has shape ", weights[i].shape().str(), ", expected ", vars[i].shape().str());
    vars[i].assign(cast(weights[i], vars[i].dtype()));
  }
}

nlohmann::json Sequential::get_config() const {
  nlohmann::json layers = nlohmann::json::array();
  if (s_->input) layers.push_back({{"class_name", "InputLayer"}, {"config", s_->input->get_config()}});
  for (const LayerPtr& l : s_->layers) layers.push_back({{"class_name", l->class_name()}, {"config", l->get_config()}});
  return {{"name", s_->name}, {"layers", layers}};
}

Sequential Sequential::from_config(const nlohmann::json& config) {
  try {
    std::vector<LayerHandle> layers;
    for (const auto& l : config.at("layers")) layers.emplace_back(layers::from_config(l));
    return Sequential(std::move(layers), config.value("name", ""));
  } catch (const nlohmann::json::exception& e) {
    throw ValueError(make_message("invalid Sequential config: ", e.what()));
  }
}

void Sequential::save_weights(const std::string& path) const {
  std::vector<train::NamedTensor> tensors;
  for (const Variable& v : variables()) tensors.push_back({v.name(), v.value()});
  train::save_safetensors(path, tensors, {{"format", "lockstep.weights"}, {"model", s_->name}});
}

void Sequential::load_weights(const std::string& path) {
  train::SafetensorsFile file = train::load_safetensors(path);
  std::vector<Variable> vars = variables();
  LS_CHECK(file.tensors.size() == vars.size(), ValueError, "weights file ", path, " holds ", file.tensors.size(),
           " tensors but model \"", s_->name, "\" has ", vars.size(), " variables: it was saved from another model");
  for (size_t i = 0; i < vars.size(); ++i) {
    const train::NamedTensor& t = file.tensors[i];
    LS_CHECK(t.tensor.shape() == vars[i].shape() && t.tensor.dtype() == vars[i].dtype(), ValueError, "weights file ",
             path, ": tensor '", t.name, "' has shape ", t.tensor.shape().str(), " but variable '", vars[i].name(),
             "' of model \"", s_->name, "\" has shape ", vars[i].shape().str(), ": it was saved from another model");
    vars[i].assign(t.tensor);
  }
}

void Sequential::save(const std::string& dir) const {
  AtomicDirectory out(dir, "config.json");  // a failed save leaves no half-written model
  nlohmann::json doc = {{"class_name", "Sequential"}, {"config", get_config()}, {"lockstep_version", "0.1.0"}};
  write_file_atomically(out.staging() + "/config.json", doc.dump(2) + "\n");
  save_weights(out.staging() + "/model.weights.safetensors");
  out.commit();
}

Sequential Sequential::load_model(const std::string& dir) {
  const std::string path = dir + "/config.json";
  std::ifstream in(path);
  LS_CHECK(in.good(), NotFoundError, "no saved model at ", dir, ": ", path, " is missing");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw DataLossError(make_message("saved model config ", path, " is not valid JSON: ", e.what()));
  }
  Sequential model = from_config(doc.at("config"));
  model.load_weights(dir + "/model.weights.safetensors");
  return model;
}

}  // namespace lockstep::keras
