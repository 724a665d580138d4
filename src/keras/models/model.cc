// Model: building, calling, summary, weights, configs, and saving (the functional graph itself is in
// functional.cc, Sequential's own methods in sequential.cc).
#include "lockstep/keras/models/model.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "../keras-impl.h"
#include "../saving/saving-impl.h"
#include "lockstep/core/files.h"
#include "lockstep/core/logging.h"
#include "lockstep/core/version.h"
#include "lockstep/distribute/collective/cross_worker.h"
#include "lockstep/keras/models/sequential.h"
#include "lockstep/train/safetensors.h"
#include "models-impl.h"

namespace lockstep::keras {

namespace fs = std::filesystem;

void Model::build(const Shape& input_shape) {
  if (s_->graph) {  // built at construction
    LS_CHECK(s_->graph->inputs.size() == 1 && s_->graph->inputs[0]->shape == input_shape, ValueError, "model \"",
             s_->name, "\" is built for inputs of shape ", detail::with_none(s_->input_shape), ", not ",
             detail::with_none(input_shape));
    return;
  }
  Shape s = input_shape;
  for (const LayerPtr& l : s_->layers) {
    l->ensure_built(s);
    s = l->compute_output_shape(s);
  }
  s_->input_shape = input_shape;
  s_->output_shape = s;
  s_->built = true;
}

Tensor Model::operator()(const Tensor& x_in, CallOptions options) {
  if (s_->graph) {
    LS_CHECK(s_->graph->inputs.size() == 1 && s_->graph->outputs.size() == 1, ValueError, "model \"", s_->name,
             "\" has ", s_->graph->inputs.size(), " inputs and ", s_->graph->outputs.size(),
             " outputs: call it with a list of tensors, model({a, b}), which returns a list");
    return run_graph(*s_, {x_in}, options)[0];
  }
  LS_CHECK(x_in.rank() >= 1, ValueError, "model \"", s_->name, "\" needs a batch of inputs, got a scalar");
  Tensor x = x_in;
  // Keras casts inputs to the model's dtype (images arrive as uint8, NumPy's arithmetic makes float64).
  if (x.dtype() != DType::float32) x = cast(x, DType::float32);
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

std::vector<Tensor> Model::operator()(const std::vector<Tensor>& xs, CallOptions options) {
  if (s_->graph) return run_graph(*s_, xs, options);
  LS_CHECK(xs.size() == 1, ValueError, "Sequential model \"", s_->name, "\" takes one input, got a list of ",
           xs.size());
  return {(*this)(xs[0], options)};
}

LayerPtr Model::get_layer(const std::string& name) const {
  for (const LayerPtr& l : s_->layers)
    if (l->name() == name) return l;
  if (s_->input && s_->input->name() == name) return s_->input;
  throw ValueError(make_message("no layer named \"", name, "\" in model \"", s_->name, "\""));
}

const std::string& Model::name() const {
  return s_->name;
}
const std::vector<LayerPtr>& Model::layers() const {
  return s_->layers;
}
bool Model::built() const {
  return s_->built;
}

Shape Model::input_shape() const {
  if (s_->graph) {
    LS_CHECK(s_->graph->inputs.size() == 1, ValueError, "model \"", s_->name, "\" has ", s_->graph->inputs.size(),
             " inputs: ask each of its inputs for its shape");
    return s_->graph->inputs[0]->shape;
  }
  LS_CHECK(s_->built, ValueError, "model \"", s_->name, "\" is not built yet, so it has no input shape: start it with "
           "keras::Input(shape), or call build(shape)");
  return s_->input_shape;
}

DType Model::input_dtype() const {
  if (s_->graph) {
    input_shape();  // the same checks
    return s_->graph->inputs[0]->dtype;
  }
  return s_->input ? s_->input->dtype() : DType::float32;
}

std::string Model::summary_string() const {
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
    if (s_->graph) {
      out = detail::with_none(s_->graph->layer_output_shapes[i]);
    } else if (s_->built) {
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

void Model::summary() const {
  std::cout << summary_string() << std::flush;
}

int64_t Model::count_params() const {
  int64_t n = 0;
  for (const LayerPtr& l : s_->layers) n += l->count_params();
  return n;
}

std::vector<Variable> Model::variables() const {
  std::vector<Variable> out;
  for (const LayerPtr& l : s_->layers)
    for (const Variable& v : l->weights()) out.push_back(v);
  return out;
}

std::vector<Variable> Model::trainable_variables() const {
  std::vector<Variable> out;
  for (const LayerPtr& l : s_->layers)
    for (const Variable& v : l->trainable_weights()) out.push_back(v);
  return out;
}

std::vector<Variable> Model::non_trainable_variables() const {
  std::vector<Variable> out;
  for (const LayerPtr& l : s_->layers)
    for (const Variable& v : l->non_trainable_weights()) out.push_back(v);
  return out;
}

std::vector<Tensor> Model::losses() const {
  std::vector<Tensor> out;
  for (const LayerPtr& l : s_->layers)
    for (const Tensor& t : l->losses()) out.push_back(t);
  return out;
}

std::vector<Tensor> Model::get_weights() const {
  std::vector<Tensor> out;
  for (const Variable& v : variables()) out.push_back(v.value().clone());
  return out;
}

void Model::set_weights(const std::vector<Tensor>& weights) {
  std::vector<Variable> vars = variables();
  LS_CHECK(weights.size() == vars.size(), ValueError, "set_weights got ", weights.size(), " arrays but model \"",
           s_->name, "\" has ", vars.size(), " variables");
  for (size_t i = 0; i < vars.size(); ++i) {
    LS_CHECK(weights[i].shape() == vars[i].shape(), ValueError, "weight ", i, " for variable '", vars[i].name(),
             "' has shape ", weights[i].shape().str(), ", expected ", vars[i].shape().str());
    vars[i].assign(cast(weights[i], vars[i].dtype()));
  }
}

nlohmann::json Model::get_config() const {
  if (s_->graph) return functional_config(*s_);
  // Keras 3's form: serialised layers (with their build shapes once built) and the model's dtype policy.
  nlohmann::json layers = nlohmann::json::array();
  if (s_->input) layers.push_back(layers::serialize(*s_->input));
  Shape shape = s_->input_shape;
  for (const LayerPtr& l : s_->layers) {
    layers.push_back(layers::serialize(*l, s_->built ? &shape : nullptr));
    if (s_->built) shape = l->compute_output_shape(shape);
  }
  const nlohmann::json policy = {{"module", "keras"}, {"class_name", "DTypePolicy"},
                                 {"config", {{"name", mixed_precision::global_policy().name()}}}, {"registered_name", nullptr}};
  nlohmann::json c = {{"name", s_->name}, {"trainable", true}, {"dtype", policy}, {"layers", layers}};
  if (s_->built) {
    std::vector<nlohmann::json> batch_shape{nullptr};
    for (int64_t d : s_->input_shape.dims()) batch_shape.push_back(d);
    c["build_input_shape"] = batch_shape;
  }
  return c;
}

Model Model::from_config(const nlohmann::json& config) {
  if (config.is_object() && config.contains("input_layers")) return functional_from_config(config);
  return Sequential::from_config(config);
}

std::string Model::to_json() const {
  nlohmann::json doc;
  if (s_->graph) {
    doc = {{"module", "keras.src.models.functional"},
           {"class_name", "Functional"},
           {"config", get_config()},
           {"registered_name", "Functional"},
           {"build_config", {{"input_shape", nullptr}}}};
    std::optional<nlohmann::json> compiled;
    if (s_->optimizer) compiled = detail::compile_config(*this);
    doc["compile_config"] = compiled ? *compiled : nlohmann::json::object();
  } else {
    doc = {{"module", "keras"}, {"class_name", "Sequential"}, {"config", get_config()}, {"registered_name", nullptr}};
    if (s_->built && !s_->input) {
      nlohmann::json shape = {nullptr};
      for (int64_t d : s_->input_shape.dims()) shape.push_back(d);
      doc["build_config"] = {{"input_shape", shape}};
    }
  }
  return doc.dump();
}

namespace models {
Model model_from_json(const std::string& json) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception& e) {
    throw ValueError(make_message("model_from_json: the text is not JSON (", e.what(), ")"));
  }
  LS_CHECK(doc.is_object() && doc.contains("config") && doc.contains("class_name"), ValueError,
           "model_from_json: expected model.to_json()'s {\"class_name\", \"config\"}, got ", doc.dump().substr(0, 80));
  const std::string cls = doc["class_name"].is_string() ? doc["class_name"].get<std::string>() : "";
  LS_CHECK(cls == "Functional" || cls == "Model" || cls == "Sequential", ValueError, "model_from_json: class \"", cls,
           "\" is not a model lockstep can build (Functional or Sequential)");
  if (cls == "Sequential") {
    Sequential model = Sequential::from_config(doc["config"]);
    const nlohmann::json& bc = doc.value("build_config", nlohmann::json());
    if (!model.built() && bc.is_object() && bc.contains("input_shape") && bc["input_shape"].is_array()) {
      std::vector<int64_t> dims;  // Keras writes the batch dimension first, as null
      for (const nlohmann::json& d : bc["input_shape"])
        if (!d.is_null()) dims.push_back(detail::json_int(d, "input_shape"));
      model.build(Shape(dims));
    }
    return model;
  }
  return Model::from_config(doc["config"]);
}
}  // namespace models

namespace {
// save_weights' file, written here (the chief's part).
void write_weights(const Model& model, const std::string& path) {
  std::vector<train::NamedTensor> tensors;
  for (const Variable& v : model.variables()) tensors.push_back({v.name(), v.value()});
  train::save_safetensors(path, tensors, {{"format", "lockstep.weights"}, {"model", model.name()}});
}
}  // namespace

void Model::save_weights(const std::string& path) const {
  detail::write_on_chief(*this, path, [&] {
    make_parent_directories(path);
    if (detail::is_keras_weights_file(path)) return detail::save_keras_weights(*this, path);
    write_weights(*this, path);
  });
}

namespace {

// Copies a weights file's tensors into `vars` by order, all checked before any is assigned.
void assign_weights(const train::SafetensorsFile& file, const std::string& path, const std::vector<Variable>& vars,
                    const std::string& model_name) {
  LS_CHECK(file.tensors.size() == vars.size(), ValueError, "weights file ", path, " holds ", file.tensors.size(),
           " tensors but model \"", model_name, "\" has ", vars.size(), " variables: it was saved from another model");
  for (size_t i = 0; i < vars.size(); ++i) {
    const train::NamedTensor& t = file.tensors[i];
    LS_CHECK(t.tensor.shape() == vars[i].shape() && t.tensor.dtype() == vars[i].dtype(), ValueError, "weights file ",
             path, ": tensor '", t.name, "' has shape ", t.tensor.shape().str(), " but variable '", vars[i].name(),
             "' of model \"", model_name, "\" has shape ", vars[i].shape().str(), ": it was saved from another model");
  }
  for (size_t i = 0; i < vars.size(); ++i) vars[i].assign(file.tensors[i].tensor);
}

constexpr const char* kWeightsFile = "model.weights.safetensors";
constexpr const char* kOptimizerFile = "optimizer.safetensors";

nlohmann::json serialized(const char* module, const std::string& class_name, nlohmann::json config) {
  return {{"module", module}, {"class_name", class_name}, {"config", std::move(config)}, {"registered_name", nullptr}};
}

}  // namespace

namespace detail {

// Keras 3's compile_config, or nullopt (with a warning) when the optimizer or loss is not one load_model can
// rebuild.
std::optional<nlohmann::json> compile_config(const Model& model) {
  const std::string opt_class = model.optimizer()->class_name();
  const std::string cls = model.loss() ? model.loss()->class_name() : "";
  // load_model rebuilds only registered classes.
  const bool optimizer_known = optimizers::registry().find(opt_class) != nullptr;
  if (!optimizer_known || (model.loss() && !losses::registry().find(cls))) {
    log(LogLevel::warning, "model \"", model.name(), "\" is saved without its optimizer: ",
        !optimizer_known
            ? "its optimizer (" + opt_class + ") is not one of " + join_names(optimizers::registry().names(), ", ")
            : "its loss (" + cls + ") is not one of " + join_names(losses::registry().names(), ", "),
        ", so load_model returns it uncompiled");
    return std::nullopt;
  }
  const nlohmann::json opt = model.optimizer()->get_config();
  const nlohmann::json loss = model.loss() ? model.loss()->get_config() : nlohmann::json();
  nlohmann::json metrics = nlohmann::json::array();
  for (const auto& m : model.metrics()) metrics.push_back(m->name());
  return nlohmann::json{{"optimizer", serialized("keras.optimizers", opt_class, opt)},
                        {"loss", model.loss() ? serialized("keras.losses", cls, loss) : nlohmann::json()},
                        {"loss_weights", nullptr},
                        {"metrics", metrics},
                        {"weighted_metrics", nullptr},
                        {"run_eagerly", false},
                        {"steps_per_execution", 1},
                        {"jit_compile", false}};
}

}  // namespace detail

namespace {

// A saved model's files as bytes (read_on_chief gives them to every worker).
struct SavedModelFiles {
  std::string config, weights, optimizer;  // optimizer: empty when the file is absent
};

SavedModelFiles read_saved_model(const std::string& dir) {
  SavedModelFiles f;
  LS_CHECK(fs::is_directory(dir), NotFoundError, "no saved model at ", dir,
           ": the directory is missing (save one with model.save or lockstep train --save-model)");
  for (const char* name : {"config.json", kWeightsFile})
    LS_CHECK(fs::exists(dir + "/" + name), NotFoundError, "no saved model at ", dir, ": ", dir, "/", name,
             " is missing (save it again with model.save)");
  f.config = read_file(dir + "/config.json");
  f.weights = read_file(dir + "/" + kWeightsFile);
  if (fs::exists(dir + "/" + kOptimizerFile)) f.optimizer = read_file(dir + "/" + kOptimizerFile);
  return f;
}

SavedModelFiles read_saved_model_collectively(const std::string& dir) {
  const std::vector<std::string> f = detail::read_on_chief([&] {
    SavedModelFiles files = read_saved_model(dir);
    return std::vector<std::string>{files.config, files.weights, files.optimizer};
  });
  return {f.at(0), f.at(1), f.at(2)};
}

const distribute::CollectiveOptions kSaving = distribute::collective_options(distribute::Tag::kSavedModel);

}  // namespace

std::vector<std::string> detail::read_on_chief(const std::function<std::vector<std::string>()>& read) {
  distribute::Communicator* comm = distribute::has_strategy() ? distribute::get_strategy().cross_worker() : nullptr;
  return distribute::read_on_chief(comm, read, kSaving);
}

void detail::write_on_chief(const Model& model, const std::string& path, const std::function<void()>& write) {
  const distribute::Strategy* strategy = make_trackable(model)->strategy();
  if (strategy && !strategy->is_chief() && !path.empty()) make_parent_directories_if_possible(path);
  distribute::on_chief(strategy ? strategy->cross_worker() : nullptr, write, kSaving);
}

void Model::load_weights(const std::string& path) {
  if (detail::is_keras_weights_file(path)) return detail::load_keras_weights(*this, path);
  assign_weights(train::load_safetensors(path), path, variables(), s_->name);
}

void Model::save(const std::string& dir, SaveOptions options) const {
  // Every worker holds the same weights: the chief alone writes, and the others wait until its files are
  // durable (they may load them next), without touching its directory.
  detail::write_on_chief(*this, dir, [&] {
    make_parent_directories(dir);
    if (detail::is_keras_archive(dir)) return detail::save_keras_archive(*this, dir, options);
    AtomicDirectory out(dir, "config.json");  // a failed save leaves no half-written model
    nlohmann::json doc = {{"module", "keras"},           {"class_name", s_->graph ? "Functional" : "Sequential"},
                          {"config", get_config()},      {"registered_name", nullptr},
                          {"lockstep_version", version()}, {"include_optimizer", false}};
    if (s_->built && !s_->input && !s_->graph) doc["build_config"] = {{"input_shape", s_->input_shape.dims()}};
    std::optional<nlohmann::json> compiled;
    if (options.include_optimizer && s_->optimizer) compiled = detail::compile_config(*this);
    if (compiled) {
      doc["compile_config"] = *compiled;
      doc["include_optimizer"] = true;
      std::vector<train::NamedTensor> state;
      for (auto& [name, t] : s_->optimizer->state()) state.push_back({name, std::move(t)});
      train::save_safetensors(out.staging() + "/" + kOptimizerFile, state,
                              {{"format", "lockstep.optimizer"}, {"optimizer", s_->optimizer->name()}});
    }
    write_file_atomically(out.staging() + "/config.json", doc.dump(2) + "\n");
    write_weights(*this, out.staging() + "/" + kWeightsFile);
    out.commit();
  });
}

void detail::compile_from_config(Model& model, const nlohmann::json& cc, const std::string& where) {
  // Keras options lockstep does not have are refused by name rather than dropped.
  auto config_of = [&](const char* key) {  // a serialised object's config; {} for a name or anything malformed
    const nlohmann::json& o = cc.is_object() && cc.contains(key) ? cc[key] : nlohmann::json();
    return o.is_object() && o.contains("config") && o["config"].is_object() ? o["config"] : nlohmann::json::object();
  };
  const nlohmann::json opt = config_of("optimizer");
  for (const char* key : {"weight_decay", "clipnorm", "global_clipnorm", "clipvalue", "ema_overwrite_frequency",
                          "loss_scale_factor", "gradient_accumulation_steps"})
    LS_CHECK(!opt.contains(key) || opt[key].is_null(), ValueError, where, ": optimizer option ", key, "=",
             opt[key].dump(), " is not supported by lockstep; compile the model again without it");
  LS_CHECK(!opt.contains("use_ema") || opt["use_ema"] == false, ValueError, where,
           ": optimizer option use_ema=", opt.contains("use_ema") ? opt["use_ema"].dump() : "", " is not supported by lockstep");
  const nlohmann::json lc = config_of("loss");
  LS_CHECK((!lc.contains("ignore_class") || lc["ignore_class"].is_null()) && (!lc.contains("axis") || lc["axis"] == -1),
           ValueError, where, ": loss options ignore_class and axis are not supported by lockstep (only null and -1)");
  const std::string reduction = lc.contains("reduction") && lc["reduction"].is_string() ? lc["reduction"].get<std::string>() : "auto";
  LS_CHECK(reduction == "auto" || reduction == "sum_over_batch_size" || reduction == "sum" || reduction == "none",
           ValueError, where, ": loss reduction '", reduction,
           "' is not supported by lockstep (sum_over_batch_size, sum or none)");
  std::shared_ptr<optimizers::Optimizer> optimizer;
  std::shared_ptr<losses::Loss> loss;
  std::vector<MetricRef> metric_refs;
  try {
    optimizer = optimizers::from_config(cc.at("optimizer"));
    loss = losses::from_config(cc.value("loss", nlohmann::json()));
    for (const auto& m : cc.value("metrics", nlohmann::json::array())) {
      // A name ("accuracy"), or Keras 3's serialised metric, which lockstep rebuilds by its name.
      const nlohmann::json name = m.is_object() ? m.at("config").at("name") : m;
      try {
        metric_refs.emplace_back(metrics::get(name.get<std::string>(), loss ? loss->name() : ""));
      } catch (const ValueError&) {
        log(LogLevel::warning, "saved model ", where, ": metric '", name.get<std::string>(),
            "' is not a built-in metric and is left out; compile the model again to add it");
      }
    }
  } catch (const std::exception& e) {  // malformed JSON (nlohmann) or values the factories refuse
    throw DataLossError(make_message("saved model config ", where, ": invalid compile_config (", e.what(),
                                     "): save the model again"));
  }
  CompileOptions compile{.optimizer = optimizer, .loss = loss, .metrics = std::move(metric_refs)};
  model.compile(std::move(compile));
}

Model Model::load_model(const std::string& dir, LoadOptions options) {
  if (detail::is_keras_archive(dir)) return detail::load_keras_archive(dir, options);
  const SavedModelFiles files = read_saved_model_collectively(dir);
  const std::string config_path = dir + "/config.json";
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(files.config);
  } catch (const nlohmann::json::exception& e) {
    throw DataLossError(make_message("saved model config ", config_path, " is not valid JSON (", e.what(),
                                     "): save the model again"));
  }
  LS_CHECK(doc.is_object() && doc.contains("config"), DataLossError, "saved model config ", config_path,
           " has no \"config\": it is not a saved Sequential model; save the model again");
  // No more parameters than the weights file has bytes: a corrupt size fails before it is allocated.
  const detail::WeightBudget budget(static_cast<int64_t>(files.weights.size()));
  // Created in the current strategy's scope (the caller's), so the variables are mirrored by it.
  Model model = from_config(doc["config"]);
  try {
    if (!model.built() && doc.contains("build_config"))
      model.build(Shape(detail::json_ints(doc["build_config"].at("input_shape"), "input_shape")));
  } catch (const nlohmann::json::exception& e) {
    throw DataLossError(make_message("saved model config ", config_path, ": invalid build_config (", e.what(), ")"));
  }
  assign_weights(train::parse_safetensors(files.weights, dir + "/" + kWeightsFile), dir + "/" + kWeightsFile,
                 model.variables(), model.name());
  if (!options.compile || !doc.contains("compile_config")) return model;

  detail::compile_from_config(model, doc["compile_config"], config_path);
  if (doc.value("include_optimizer", false)) {
    const std::string path = dir + "/" + kOptimizerFile;
    LS_CHECK(!files.optimizer.empty(), NotFoundError, "saved model ", dir, ": ", path,
             " is missing although the model was saved with its optimizer: save it again, or load it with "
             "{.compile = false}");
    std::vector<std::pair<std::string, Tensor>> state;
    for (train::NamedTensor& t : train::parse_safetensors(files.optimizer, path).tensors)
      state.emplace_back(std::move(t.name), std::move(t.tensor));
    model.optimizer()->set_state(state);
  }
  return model;
}

}  // namespace lockstep::keras
