// Keras 3's .keras archive, both ways: a zip (stored members, as Keras writes it) of metadata.json,
// config.json (the model's serialised config with its compile_config) and model.weights.h5, whose groups
// follow keras/src/saving/saving_lib.py: "layers/<snake_case class>[_k]/vars/<i>" for each layer's weights
// in order, "optimizer/vars/<i>" for the optimizer's variables (iterations, learning rate, then its slots in
// Keras' order) and an empty "vars" for the model itself, each "vars" group naming its owner.
#include <zip.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>

#include "h5-impl.h"
#include "../keras-impl.h"
#include "lockstep/core/files.h"
#include "lockstep/core/logging.h"
#include "lockstep/keras/saving.h"
#include "lockstep/tensor/ops.h"
#include "saving-impl.h"

namespace lockstep::keras {
namespace detail {
namespace {

constexpr const char* kConfig = "config.json";
constexpr const char* kMetadata = "metadata.json";
constexpr const char* kWeights = "model.weights.h5";
// The Keras release whose archive layout this writes.
constexpr const char* kKerasVersion = "3.15.1";

// ---- zip ----

std::string zip_members(const std::vector<std::pair<std::string, std::string>>& members) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* buffer = zip_source_buffer_create(nullptr, 0, 0, &error);
  zip_error_fini(&error);
  LS_CHECK(buffer, Error, "libzip: cannot create an in-memory archive");
  // Kept past zip_close (which would free it) to read the archive's bytes; freed on every path.
  std::unique_ptr<zip_source_t, void (*)(zip_source_t*)> keep(buffer, zip_source_free);
  zip_source_keep(buffer);
  zip_t* archive = zip_open_from_source(buffer, ZIP_TRUNCATE, nullptr);
  LS_CHECK(archive, Error, "libzip: cannot open an in-memory archive");
  std::unique_ptr<zip_t, void (*)(zip_t*)> open(archive, zip_discard);  // released once closed
  for (const auto& [name, bytes] : members) {
    zip_source_t* member = zip_source_buffer(archive, bytes.data(), bytes.size(), 0);
    const zip_int64_t index = member ? zip_file_add(archive, name.c_str(), member, ZIP_FL_ENC_UTF_8) : -1;
    if (index < 0 && member) zip_source_free(member);
    LS_CHECK(index >= 0 && zip_set_file_compression(archive, zip_uint64_t(index), ZIP_CM_STORE, 0) == 0, Error,
             "libzip: cannot add ", name, " (", zip_strerror(archive), ")");
  }
  LS_CHECK(zip_close(archive) == 0, Error, "libzip: cannot finish the archive (", zip_strerror(archive), ")");
  open.release();
  std::string out;
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_source_stat(buffer, &st) == 0 && zip_source_open(buffer) == 0) {
    out.resize(st.size);
    const zip_int64_t n = zip_source_read(buffer, out.data(), out.size());
    zip_source_close(buffer);
    if (n != zip_int64_t(out.size())) out.clear();
  }
  LS_CHECK(!out.empty(), Error, "libzip: cannot read back the in-memory archive");
  return out;
}

[[noreturn]] void corrupt(const std::string& path, const std::string& what) {
  throw DataLossError(
      make_message(path, ": ", what, "; the .keras file is corrupt or truncated: save the model again"));
}

// The members Keras reads, CRC-checked. Deflate cannot inflate more than 1032-fold, so a header claiming more
// is refused before anything is allocated.
std::map<std::string, std::string> unzip(const std::string& bytes, const std::string& path) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* source = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &error);
  zip_t* archive = source ? zip_open_from_source(source, ZIP_RDONLY | ZIP_CHECKCONS, &error) : nullptr;
  if (!archive) {
    const std::string reason = zip_error_strerror(&error);
    if (source) zip_source_free(source);
    zip_error_fini(&error);
    corrupt(path, "not a zip archive (libzip: " + reason + ")");
  }
  zip_error_fini(&error);
  std::unique_ptr<zip_t, void (*)(zip_t*)> guard(archive, [](zip_t* z) { zip_discard(z); });
  std::map<std::string, std::string> out;
  for (const char* name : {kConfig, kWeights, kMetadata}) {
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat(archive, name, 0, &st) != 0) {
      if (std::string(name) == kMetadata) continue;  // Keras never reads it
      throw DataLossError(make_message(path, ": member ", name,
                                       " is missing: it is not a Keras 3 model archive (save it with model.save(\"",
                                       "x.keras\") in Keras 3 or lockstep)"));
    }
    LS_CHECK(st.comp_method == ZIP_CM_STORE || st.comp_method == ZIP_CM_DEFLATE, DataLossError, path, ": member ", name,
             " uses zip compression method ", st.comp_method, "; only stored and deflate are supported");
    if ((st.comp_method == ZIP_CM_STORE && st.size != st.comp_size) || st.size / 1032 > st.comp_size)
      corrupt(path,
              make_message("member ", name, " claims ", st.size, " bytes from ", st.comp_size, " in the archive"));
    std::unique_ptr<zip_file_t, int (*)(zip_file_t*)> file(zip_fopen_index(archive, st.index, 0), zip_fclose);
    if (!file) corrupt(path, make_message("member ", name, " cannot be opened (libzip: ", zip_strerror(archive), ")"));
    std::string data(st.size, '\0');
    zip_uint64_t got = 0;
    for (;;) {
      // Reading past the declared size makes libzip check the CRC and the true length.
      char past_end;
      const bool full = got == st.size;
      const zip_int64_t n = zip_fread(file.get(), full ? &past_end : data.data() + got, full ? 1 : st.size - got);
      if (n < 0)
        corrupt(path, make_message("member ", name, " cannot be read (libzip: ", zip_file_strerror(file.get()), ")"));
      if (n == 0 && !full) corrupt(path, make_message("member ", name, " ends after ", got, " of ", st.size, " bytes"));
      if (n == 0) break;
      if (full) corrupt(path, make_message("member ", name, " holds more than its ", st.size, " bytes"));
      got += zip_uint64_t(n);
    }
    out[name] = std::move(data);
  }
  return out;
}

// ---- where Keras puts things ----

// Each layer's group: saving_lib names a list's items by class, not by layer name ("dense", "dense_1", ...).
std::vector<std::string> layer_groups(const std::vector<LayerPtr>& layers) {
  std::map<std::string, int> used;
  std::vector<std::string> out;
  for (const LayerPtr& l : layers) {
    const std::string base = to_snake_case(l->class_name());
    auto [it, fresh] = used.try_emplace(base, 0);
    if (!fresh) ++it->second;
    out.push_back("layers/" + (fresh ? base : base + "_" + std::to_string(it->second)));
  }
  return out;
}

size_t slot_count(const std::vector<std::vector<std::string>>& groups) {
  size_t n = 0;
  for (const auto& g : groups) n += g.size();
  return n;
}

std::string date_saved() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d@%H:%M:%S", &tm);
  return buf;
}

// The optimizer's variables as Keras 3 saves them: iterations, the learning rate unless it is a schedule,
// then the slots (zeros for variables not updated yet, as Keras' build creates them).
std::vector<Tensor> keras_optimizer_variables(const optimizers::Optimizer& opt,
                                              const std::vector<Variable>& trainable) {
  std::vector<Tensor> out{from_vector(std::vector<int64_t>{opt.iterations()}, Shape{})};
  if (opt.get_config().at("learning_rate").is_number())
    out.push_back(from_vector(std::vector<float>{static_cast<float>(opt.learning_rate())}, Shape{}));
  const auto groups = opt.keras_slot_groups();  // flattened, also lockstep's slot order
  const size_t per_variable = slot_count(groups);
  if (per_variable == 0) return out;
  const auto state = opt.state();  // "iterations", then per_variable tensors per variable in creation order
  const size_t sets = (state.size() - 1) / per_variable;
  LS_CHECK(sets <= trainable.size(), ValueError, "optimizer '", opt.name(), "' holds slots for ", sets,
           " variables but the model has ", trainable.size(), " trainable variables: it was used with another model");
  size_t first = 0;
  for (const auto& group : groups) {
    for (size_t v = 0; v < trainable.size(); ++v)
      for (size_t k = 0; k < group.size(); ++k) {
        if (v >= sets) {
          out.push_back(zeros(trainable[v].shape(), trainable[v].dtype()));
          continue;
        }
        const Tensor& t = state[1 + v * per_variable + first + k].second;
        LS_CHECK(t.shape() == trainable[v].shape(), ValueError, "optimizer '", opt.name(), "': slot ",
                 state[1 + v * per_variable + first + k].first, " has shape ", t.shape().str(), " but variable '",
                 trainable[v].name(), "' has shape ", trainable[v].shape().str());
        out.push_back(t);
      }
    first += group.size();
  }
  return out;
}

// Restores the optimizer variables (`vars` in file order) into the compiled model's optimizer. Keras 3 writes
// iterations, the learning rate unless it is a schedule, then each slot for every variable (all "m", then all "v");
// Keras 2 (tf_keras) writes iterations, then every slot of one variable before the next's. `keras2` says which
// wrote the file; unknown (a lone .weights.h5), a file one variable short of Keras 3's layout is Keras 2's.
void restore_optimizer(Model& model, const H5Reader& h5, const std::string& where,
                       std::optional<bool> keras2 = std::nullopt) {
  optimizers::Optimizer& opt = *model.optimizer();
  const std::vector<Variable> trainable = model.trainable_variables();
  const auto groups = opt.keras_slot_groups();  // flattened, also lockstep's slot order
  const size_t per_variable = slot_count(groups);
  const std::vector<std::string> names = h5.members("optimizer/vars");
  const bool lr_in_config = opt.get_config().at("learning_rate").is_number();
  if (!keras2) keras2 = lr_in_config && per_variable > 0 && names.size() == 1 + per_variable * trainable.size();
  const bool lr_variable = lr_in_config && !*keras2;
  const size_t head = lr_variable ? 2 : 1, expected = head + per_variable * trainable.size();
  auto member = [&](size_t i) { return "optimizer/vars/" + std::to_string(i); };
  for (size_t i = 0; i < names.size(); ++i)
    LS_CHECK(names[i] == std::to_string(i), DataLossError, where, ": optimizer/vars holds '", names[i],
             "' where Keras writes '", i, "'");
  if (names.size() == head && expected != head) {
    // An optimizer Keras saved before its first step: only iterations and the learning rate (Keras, too,
    // builds fresh slots).
  } else {
    LS_CHECK(names.size() == expected, ValueError, where, ": optimizer/vars holds ", names.size(),
             " variables but optimizer ", opt.class_name(), " of this model has ", expected, " (iterations",
             lr_variable ? ", learning_rate" : "", " and ", per_variable, " slots for each of ", trainable.size(),
             " trainable variables): it was saved from another model or optimizer");
  }
  std::vector<std::pair<std::string, Tensor>> state;
  const Tensor iterations = h5.dataset(member(0));
  LS_CHECK(iterations.numel() == 1, DataLossError, where, ": ", member(0), " (iterations) has shape ",
           iterations.shape().str(), ", expected a scalar");
  state.emplace_back("iterations", raw_ops::cast(iterations, DType::int64));
  if (names.size() == expected) {
    std::vector<std::vector<Tensor>> slots(trainable.size(), std::vector<Tensor>(per_variable));
    size_t index = head, first = 0;
    for (const auto& group : groups) {
      for (size_t v = 0; v < trainable.size(); ++v)
        for (size_t k = 0; k < group.size(); ++k, ++index) {
          const size_t at = *keras2 ? head + v * per_variable + first + k : index;
          Tensor t = h5.dataset(member(at));
          LS_CHECK(t.shape() == trainable[v].shape(), ValueError, where, ": ", member(at), " (", group[k], " of '",
                   trainable[v].name(), "') has shape ", t.shape().str(), ", expected ", trainable[v].shape().str(),
                   ": it was saved from another model");
          slots[v][first + k] = t;
        }
      first += group.size();
    }
    size_t k = 0;
    for (size_t v = 0; v < trainable.size(); ++v) {
      k = 0;
      for (const auto& group : groups)
        for (const std::string& slot : group)
          state.emplace_back(opt.name() + "/" + trainable[v].name() + "/" + slot, slots[v][k++]);
    }
  }
  opt.build(trainable);
  opt.set_state(state);
  if (lr_variable) {
    // The variable holds the rate a callback may have set since compile(); the config only the initial one.
    const double saved = raw_ops::cast(h5.dataset(member(1)), DType::float64).item<double>();
    if (std::abs(saved - opt.learning_rate()) > 1e-6 * std::abs(opt.learning_rate())) opt.set_learning_rate(saved);
  }
}

// Keras 3's model.weights.h5 of `model` (also a .weights.h5 file of its own): each layer's weights and, with
// `with_optimizer`, the optimizer's variables.
std::string weights_image(const Model& model, bool with_optimizer) {
  H5Writer h5;
  const std::vector<LayerPtr>& layers = model.layers();
  const std::vector<std::string> groups = layer_groups(layers);
  for (size_t i = 0; i < layers.size(); ++i) {
    h5.group(groups[i] + "/vars", layers[i]->name());
    for (size_t j = 0; j < layers[i]->weights().size(); ++j)
      h5.dataset(groups[i] + "/vars/" + std::to_string(j), layers[i]->weights()[j].value());
  }
  if (with_optimizer) {
    h5.group("optimizer/vars", model.optimizer()->name());
    const std::vector<Tensor> vars = keras_optimizer_variables(*model.optimizer(), model.trainable_variables());
    for (size_t i = 0; i < vars.size(); ++i) h5.dataset("optimizer/vars/" + std::to_string(i), vars[i]);
  }
  h5.group("vars", model.name());
  return h5.image();
}

// Copies every layer's weights from a model.weights.h5 into `model`, all checked before any is assigned; `where`
// names the file in errors.
void assign_layer_weights(Model& model, const H5Reader& h5, const std::string& where) {
  const std::vector<LayerPtr>& layers = model.layers();
  const std::vector<std::string> groups = layer_groups(layers);
  std::vector<std::pair<Variable, Tensor>> assignments;
  for (size_t i = 0; i < layers.size(); ++i) {
    const std::vector<Variable>& weights = layers[i]->weights();
    const std::string vars = groups[i] + "/vars";
    const std::vector<std::string> names = h5.has(vars) ? h5.members(vars) : std::vector<std::string>{};
    LS_CHECK(names.size() == weights.size(), ValueError, where, ": ", vars, " holds ", names.size(),
             " weights but layer '", layers[i]->name(), "' (", layers[i]->class_name(), ") has ", weights.size(),
             ": the weights were saved from another model");
    for (size_t j = 0; j < weights.size(); ++j) {
      const std::string member = vars + "/" + std::to_string(j);
      Tensor t = h5.dataset(member);
      LS_CHECK(t.shape() == weights[j].shape(), ValueError, where, ": ", member, " has shape ", t.shape().str(),
               " but weight '", weights[j].name(), "' has shape ", weights[j].shape().str(),
               ": the weights were saved from another model");
      assignments.emplace_back(weights[j], std::move(t));
    }
  }
  for (auto& [v, t] : assignments) v.assign(raw_ops::cast(t, v.dtype()));
}

std::string read_archive(const std::string& path) {
  LS_CHECK(std::filesystem::is_regular_file(path), NotFoundError, "no saved model at ", path,
           ": the file is missing (save one with model.save(\"", path, "\"))");
  return read_file(path);
}

}  // namespace

void save_keras_archive(const Model& model, const std::string& path, const SaveOptions& options) {
  // model.to_json()'s document (Sequential or Functional), with the compile config these options ask for.
  nlohmann::json doc = nlohmann::json::parse(model.to_json());
  doc.erase("compile_config");
  const nlohmann::json& config = doc["config"];
  if (config.contains("build_input_shape")) doc["build_config"] = {{"input_shape", config["build_input_shape"]}};
  std::optional<nlohmann::json> compiled;
  if (options.include_optimizer && model.optimizer()) compiled = compile_config(model);
  if (compiled) {
    // Keras 3 has no "auto" reduction; it is what Keras calls sum_over_batch_size.
    nlohmann::json& loss = (*compiled)["loss"];
    if (loss.is_object() && loss["config"].value("reduction", "") == "auto")
      loss["config"]["reduction"] = "sum_over_batch_size";
    nlohmann::json& lr = (*compiled)["optimizer"]["config"]["learning_rate"];
    if (lr.is_object()) lr.update({{"module", "keras.optimizers.schedules"}, {"registered_name", nullptr}});
    doc["compile_config"] = *compiled;
  }

  const nlohmann::json metadata = {{"keras_version", kKerasVersion}, {"date_saved", date_saved()}};
  write_file_atomically(path, zip_members({{kMetadata, metadata.dump()},
                                           {kConfig, doc.dump()},
                                           {kWeights, weights_image(model, compiled.has_value())}}));
}

Model load_keras_archive(const std::string& path, const LoadOptions& options) {
  const std::vector<std::string> files = read_on_chief([&] {
    std::map<std::string, std::string> members = unzip(read_archive(path), path);
    return std::vector<std::string>{std::move(members[kConfig]), std::move(members[kWeights]),
                                    std::move(members[kMetadata])};
  });
  const std::string where = path + ": " + kConfig;
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(files.at(0));
  } catch (const nlohmann::json::exception& e) {
    throw DataLossError(make_message(where, " is not valid JSON (", e.what(), "): save the model again"));
  }
  LS_CHECK(doc.is_object() && doc.contains("config") && doc.contains("class_name"), DataLossError, where,
           " has no model \"class_name\" and \"config\": it is not a Keras 3 model archive");
  // No more parameters than model.weights.h5 has bytes: a corrupt size fails before it is allocated.
  const WeightBudget budget(static_cast<int64_t>(files.at(1).size()));
  Model model = models::model_from_json(doc.dump());
  LS_CHECK(model.built(), ValueError, where,
           ": the model has no input shape (no Input layer and no build_config), "
           "so its weights cannot be placed; build it in Keras before saving");

  const H5Reader h5(files.at(1), path + ": " + kWeights);
  assign_layer_weights(model, h5, path + ": " + kWeights);
  // An uncompiled model's compile_config is null, or {} from newer Keras.
  const nlohmann::json compiled = doc.value("compile_config", nlohmann::json(nullptr));
  if (!options.compile || compiled.is_null() || compiled.empty()) return model;
  compile_from_config(model, doc["compile_config"], where);
  // tf_keras (Keras 2) writes its version, "2.x", into metadata.json; its optimizer variables are laid out otherwise.
  const nlohmann::json metadata = nlohmann::json::parse(files.at(2), nullptr, /*allow_exceptions=*/false);
  const bool keras2 = metadata.is_object() && metadata.value("keras_version", std::string()).starts_with("2.");
  if (h5.has("optimizer/vars")) restore_optimizer(model, h5, path + ": " + kWeights, keras2);
  return model;
}

void save_keras_weights(const Model& model, const std::string& path) {
  LS_CHECK(model.built(), ValueError, "model \"", model.name(), "\" is not built, so it has no weights to save to ",
           path, ": call it on data or build() it first");
  write_file_atomically(path, weights_image(model, model.optimizer() != nullptr));
}

void load_keras_weights(Model& model, const std::string& path) {
  LS_CHECK(std::filesystem::is_regular_file(path), NotFoundError, "no weights file at ", path,
           ": the file is missing (save one with model.save_weights(\"", path, "\"))");
  const H5Reader h5(read_file(path), path);
  assign_layer_weights(model, h5, path);
  if (model.optimizer() && h5.has("optimizer/vars")) restore_optimizer(model, h5, path);
}

}  // namespace detail

Model models::load_model(const std::string& path, LoadOptions options) { return Model::load_model(path, options); }
void models::save_model(const Model& model, const std::string& path, SaveOptions options) {
  model.save(path, options);
}

}  // namespace lockstep::keras
