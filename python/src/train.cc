// tf.train, tf.summary and tf.config's thread counts for lockstep._lockstep: the submodule `train` binds Trackable
// (what a checkpoint saves), Checkpoint with its load status, CheckpointManager and latest_checkpoint; `summary` the
// event-file writer (train/summary.h) and its summaries; `config` core/threads.h. lockstep/train.py, summary.py and
// config.py give them TensorFlow's signatures. Saving, restoring and writing release the GIL: under
// MultiWorkerMirroredStrategy a save or restore waits for the other workers.
#include <nanobind/stl/function.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <set>

#include "bindings.h"
#include "lockstep/autograd/variable.h"
#include "lockstep/core/error.h"
#include "lockstep/core/threads.h"
#include "lockstep/train/checkpoint.h"
#include "lockstep/train/safetensors.h"
#include "lockstep/train/summary.h"
#include "lockstep/train/trackable.h"

namespace lockstep::python {
namespace {

using NamedTrackables = std::vector<std::pair<std::string, train::TrackablePtr>>;

// A nested tf.train.Checkpoint as one object of its parent: each child's state under the child's name, as the
// top-level checkpoint keeps its objects' ("inner/v"), and so is each child's per-worker state.
class NestedTrackable final : public train::Trackable {
 public:
  explicit NestedTrackable(NamedTrackables objects) : objects_(std::move(objects)) {
    std::set<std::string> names;
    for (const auto& [name, object] : objects_) {
      LS_CHECK(!name.empty() && name.find('/') == std::string::npos, ValueError, "checkpoint object name '", name,
               "' must be non-empty and contain no '/'");
      LS_CHECK(names.insert(name).second, ValueError, "checkpoint object name '", name, "' is given twice");
      LS_CHECK(object != nullptr, ValueError, "checkpoint object '", name, "' is empty");
    }
  }

  train::TrackableState save() const override {
    train::TrackableState state;
    for (const auto& [name, object] : objects_) {
      train::TrackableState child = object->save();
      for (train::NamedTensor& t : child.tensors)
        state.tensors.push_back({t.name.empty() ? name : name + "/" + t.name, std::move(t.tensor)});
      state.values[name] = std::move(child.values);
    }
    return state;
  }

  train::RestoreMatch restore(const train::TrackableState& state) override {
    LS_CHECK(state.values.is_object(), DataLossError, "the saved values of a nested checkpoint are not a JSON object");
    train::RestoreMatch match;
    std::set<std::string> used;
    for (const auto& [name, object] : objects_) {
      const std::string prefix = name + "/";
      train::TrackableState child;
      for (const train::NamedTensor& t : state.tensors) {
        if (t.name == name)
          child.tensors.push_back({"", t.tensor});
        else if (t.name.starts_with(prefix))
          child.tensors.push_back({t.name.substr(prefix.size()), t.tensor});
      }
      const bool saved = state.values.contains(name);
      if (!saved && child.tensors.empty()) {
        match.missing.push_back(name);
        continue;
      }
      if (saved) child.values = state.values.at(name);
      train::RestoreMatch m = object->restore(child);
      for (const std::string& s : m.missing) match.missing.push_back(prefix + s);
      for (const std::string& s : m.unused) match.unused.push_back(prefix + s);
      for (const train::NamedTensor& t : child.tensors) used.insert(t.name.empty() ? name : prefix + t.name);
    }
    for (const train::NamedTensor& t : state.tensors)
      if (!used.count(t.name)) match.unused.push_back(t.name);
    for (const auto& item : state.values.items())
      if (std::none_of(objects_.begin(), objects_.end(), [&](const auto& o) { return o.first == item.key(); }))
        match.unused.push_back(item.key());
    return match;
  }

  nlohmann::json save_worker() const override {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [name, object] : objects_)
      if (nlohmann::json own = object->save_worker(); !own.is_null()) out[name] = std::move(own);
    return out.empty() ? nlohmann::json() : out;
  }

  train::RestoreMatch restore_worker(const std::vector<nlohmann::json>& saved, int world_size, int rank) override {
    train::RestoreMatch match;
    for (const auto& [name, object] : objects_) {
      std::vector<nlohmann::json> child;
      for (const nlohmann::json& worker : saved)
        if (worker.is_object() && worker.contains(name)) child.push_back(worker.at(name));
      if (child.empty()) continue;  // its shared state is all it has, or it was missing and is listed so already
      LS_CHECK(child.size() == saved.size(), DataLossError, "the per-worker state of checkpoint object '", name,
               "' is missing from some workers' entries");
      train::RestoreMatch m = object->restore_worker(child, world_size, rank);
      for (const std::string& x : m.missing) match.missing.push_back(name + "/" + x);
      for (const std::string& x : m.unused) match.unused.push_back(name + "/" + x);
    }
    return match;
  }

  distribute::Strategy* strategy() const override {
    for (const auto& named : objects_)
      if (distribute::Strategy* s = named.second->strategy()) return s;
    return nullptr;
  }

 private:
  NamedTrackables objects_;
};

bool interpreter_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

// A Python callable kept by C++ that may call it, or let it go, on a thread without the GIL: a manager's callbacks
// run inside a save that released it, and a background checkpoint write may hold the manager's last reference. A
// call takes the GIL. Letting go does not wait for it: the thread that holds it may be waiting for that background
// write (a checkpoint's destructor does), so the interpreter drops the reference later instead; once the
// interpreter is shutting down the reference is leaked rather than touch Python.
class PythonCallable {
 public:
  explicit PythonCallable(nb::object f) : f_(f.release().ptr()) {}
  ~PythonCallable() {
    if (interpreter_finalizing()) return;
    if (PyGILState_Check()) {
      Py_DECREF(f_);
      return;
    }
    Py_AddPendingCall(
        [](void* f) {
          Py_DECREF(static_cast<PyObject*>(f));
          return 0;
        },
        f_);
  }
  PythonCallable(const PythonCallable&) = delete;
  PythonCallable& operator=(const PythonCallable&) = delete;
  nb::object operator()() const {
    nb::gil_scoped_acquire gil;
    return nb::borrow(f_)();
  }
  PyObject* get() const { return f_; }  // with the GIL held

 private:
  PyObject* f_;
};

// A tf.Module as one checkpoint object: its children (variables, submodules, the lists and dicts holding them) are
// asked of Python at every save and restore, so what was added to it after the first save is saved too.
class ModuleTrackable final : public train::Trackable {
 public:
  explicit ModuleTrackable(std::shared_ptr<PythonCallable> children) : children_(std::move(children)) {}
  train::TrackableState save() const override { return current().save(); }
  train::RestoreMatch restore(const train::TrackableState& state) override { return current().restore(state); }
  nlohmann::json save_worker() const override { return current().save_worker(); }
  train::RestoreMatch restore_worker(const std::vector<nlohmann::json>& saved, int world_size, int rank) override {
    return current().restore_worker(saved, world_size, rank);
  }
  distribute::Strategy* strategy() const override { return current().strategy(); }

 private:
  NestedTrackable current() const {
    nb::gil_scoped_acquire gil;
    return NestedTrackable(nb::cast<NamedTrackables>((*children_)()));
  }
  std::shared_ptr<PythonCallable> children_;
};

// The manager's step counter: a Variable is read directly; anything else is a Python callable returning an int.
std::function<int64_t()> step_counter_of(nb::handle counter) {
  if (counter.is_none()) return nullptr;
  if (nb::isinstance<Variable>(counter)) return [v = nb::cast<Variable>(counter)] { return v.read().item<int64_t>(); };
  auto f = std::make_shared<PythonCallable>(nb::borrow(counter));
  return [f] {
    nb::object value = (*f)();
    nb::gil_scoped_acquire gil;  // the result is a Python object; reading it needs the GIL too
    return nb::cast<int64_t>(nb::int_(value));
  };
}

std::function<void()> init_fn_of(nb::handle init_fn) {
  if (init_fn.is_none()) return nullptr;
  auto f = std::make_shared<PythonCallable>(nb::borrow(init_fn));
  return [f] {
    nb::object result = (*f)();
    nb::gil_scoped_acquire gil;
    result.reset();
  };
}

void bind_checkpoint(nb::module_& m) {
  nb::class_<train::Trackable>(m, "Trackable",
                               "What a tf.train.Checkpoint saves: a model, an optimizer, a Variable or a nested "
                               "checkpoint, as C++ hands it over (train::Trackable).");
  m.def(
      "variable_trackable", [](const Variable& v) { return train::make_trackable(v); }, nb::arg("variable"));
  // A Python iterator's position (iter(dataset) or a distributed dataset's iterator), through its JSON save and
  // restore functions.
  m.def(
      "position_trackable",
      [](nb::object save, nb::object restore, bool global) {
        auto save_fn = std::make_shared<PythonCallable>(save), restore_fn = std::make_shared<PythonCallable>(restore);
        return train::make_position_trackable(
            [save_fn] {
              nb::gil_scoped_acquire gil;
              return nlohmann::json::parse(nb::cast<std::string>((*save_fn)()));
            },
            [restore_fn](const nlohmann::json& state) {
              nb::gil_scoped_acquire gil;
              nb::borrow(restore_fn->get())(state.dump());
            },
            global);
      },
      nb::arg("save"), nb::arg("restore"), nb::arg("global_position"));
  m.def(
      "module_trackable",
      [](nb::object children) -> train::TrackablePtr {
        return std::make_shared<ModuleTrackable>(std::make_shared<PythonCallable>(children));
      },
      nb::arg("children"));
  m.def(
      "nested_trackable",
      [](NamedTrackables objects) -> train::TrackablePtr {
        return std::make_shared<NestedTrackable>(std::move(objects));
      },
      nb::arg("objects"));

  nb::class_<train::LoadStatus>(m, "LoadStatus")
      .def("assert_consumed", [](train::LoadStatus& s) { s.assert_consumed(); })
      .def("assert_existing_objects_matched", [](train::LoadStatus& s) { s.assert_existing_objects_matched(); })
      .def("expect_partial", [](train::LoadStatus& s) { s.expect_partial(); })
      .def_prop_ro("unused", &train::LoadStatus::unused)
      .def("mark_restored", &train::LoadStatus::mark_restored, nb::arg("entry"))
      .def_prop_ro("path", &train::LoadStatus::path);

  nb::class_<train::Checkpoint>(m, "Checkpoint")
      .def(
          "__init__",
          [](train::Checkpoint* self, const NamedTrackables& objects) {
            std::vector<std::pair<std::string, train::TrackableRef>> refs;
            for (const auto& [name, object] : objects) refs.emplace_back(name, object);
            new (self) train::Checkpoint(std::move(refs));
          },
          nb::arg("objects"))
      .def("save", &train::Checkpoint::save, nb::arg("file_prefix"), nb::call_guard<nb::gil_scoped_release>())
      .def("write", &train::Checkpoint::write, nb::arg("file_prefix"), nb::call_guard<nb::gil_scoped_release>())
      .def("restore", &train::Checkpoint::restore, nb::arg("save_path"), nb::call_guard<nb::gil_scoped_release>())
      .def("read", &train::Checkpoint::read, nb::arg("save_path"), nb::call_guard<nb::gil_scoped_release>())
      .def("sync", &train::Checkpoint::sync, nb::call_guard<nb::gil_scoped_release>())
      .def("set_async", &train::Checkpoint::set_async, nb::arg("async_write"))
      .def_prop_ro("save_counter", &train::Checkpoint::save_counter)
      .def_prop_ro("metadata", &train::Checkpoint::metadata)
      .def_prop_ro("is_chief", &train::Checkpoint::is_chief);

  nb::class_<train::CheckpointManager>(m, "CheckpointManager")
      .def(
          "__init__",
          [](train::CheckpointManager* self, train::Checkpoint& checkpoint, const std::string& directory,
             std::optional<int> max_to_keep, std::optional<double> keep_checkpoint_every_n_hours,
             const std::string& checkpoint_name, nb::handle step_counter, std::optional<int64_t> checkpoint_interval,
             nb::handle init_fn) {
            train::CheckpointManagerOptions options{.max_to_keep = max_to_keep,
                                                    .keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours,
                                                    .checkpoint_name = checkpoint_name,
                                                    .step_counter = step_counter_of(step_counter),
                                                    .checkpoint_interval = checkpoint_interval,
                                                    .init_fn = init_fn_of(init_fn)};
            nb::gil_scoped_release unlocked;  // it reads the directory and its index file
            new (self) train::CheckpointManager(checkpoint, directory, std::move(options));
          },
          nb::arg("checkpoint"), nb::arg("directory"), nb::arg("max_to_keep").none(),
          nb::arg("keep_checkpoint_every_n_hours").none(), nb::arg("checkpoint_name"), nb::arg("step_counter").none(),
          nb::arg("checkpoint_interval").none(), nb::arg("init_fn").none(), nb::keep_alive<1, 2>())
      .def("save", &train::CheckpointManager::save, nb::arg("checkpoint_number").none() = nb::none(),
           nb::arg("check_interval") = true, nb::call_guard<nb::gil_scoped_release>())
      .def("restore_or_initialize", &train::CheckpointManager::restore_or_initialize,
           nb::call_guard<nb::gil_scoped_release>())
      .def("sync", &train::CheckpointManager::sync, nb::call_guard<nb::gil_scoped_release>())
      .def_prop_ro("latest_checkpoint", &train::CheckpointManager::latest_checkpoint)
      .def_prop_ro("checkpoints", &train::CheckpointManager::checkpoints)
      .def_prop_ro("directory", &train::CheckpointManager::directory);

  m.def("latest_checkpoint", &train::latest_checkpoint, nb::arg("checkpoint_dir"),
        nb::call_guard<nb::gil_scoped_release>());
  // tf.train.load_checkpoint's reader: every tensor of a checkpoint file (CRC32C-checked) and its metadata.
  m.def(
      "load_checkpoint_file",
      [](const std::string& path) {
        train::SafetensorsFile file;
        {
          nb::gil_scoped_release release;
          file = train::load_safetensors(path);
        }
        std::vector<std::pair<std::string, Tensor>> tensors;
        for (auto& named : file.tensors) tensors.emplace_back(std::move(named.name), std::move(named.tensor));
        return std::make_pair(std::move(tensors), std::move(file.metadata));
      },
      nb::arg("path"));
}

void bind_summary(nb::module_& m) {
  using summary::SummaryWriter;
  nb::class_<SummaryWriter>(m, "SummaryWriter")
      .def("flush", &SummaryWriter::flush, nb::call_guard<nb::gil_scoped_release>())
      .def("close", &SummaryWriter::close, nb::call_guard<nb::gil_scoped_release>())
      .def_prop_ro("logdir", &SummaryWriter::logdir)
      .def_prop_ro("path", &SummaryWriter::path);

  m.def(
      "create_file_writer",
      [](const std::string& logdir, int max_queue, int64_t flush_millis, const std::string& filename_suffix) {
        return summary::create_file_writer(logdir, {max_queue, flush_millis, filename_suffix});
      },
      nb::arg("logdir"), nb::arg("max_queue"), nb::arg("flush_millis"), nb::arg("filename_suffix"),
      nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "scalar",
      [](const std::string& name, double data, int64_t step, SummaryWriter& writer) {
        return summary::scalar(name, data, step, &writer);
      },
      nb::arg("name"), nb::arg("data"), nb::arg("step"), nb::arg("writer"), nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "histogram",
      [](const std::string& name, nb::handle data, int64_t step, SummaryWriter& writer, int buckets) {
        Tensor values = to_tensor(data);
        nb::gil_scoped_release unlocked;
        return summary::histogram(name, values, step, &writer, buckets);
      },
      nb::arg("name"), nb::arg("data"), nb::arg("step"), nb::arg("writer"), nb::arg("buckets"));
  m.def(
      "text",
      [](const std::string& name, const std::string& data, int64_t step, SummaryWriter& writer) {
        return summary::text(name, data, step, &writer);
      },
      nb::arg("name"), nb::arg("data"), nb::arg("step"), nb::arg("writer"), nb::call_guard<nb::gil_scoped_release>());
}

void bind_threads(nb::module_& m) {
  m.def("set_num_threads", &set_num_threads, nb::arg("n"));
  m.def("num_threads", &num_threads);
  m.def("usable_cores", &usable_cores);
}

}  // namespace

void bind_train(nb::module_& m) {
  nb::module_ train = m.def_submodule("train", "tf.train's checkpoints over lockstep::train");
  bind_checkpoint(train);
  nb::module_ summary = m.def_submodule("summary", "tf.summary's event files over lockstep::summary");
  bind_summary(summary);
  nb::module_ config = m.def_submodule("config", "tf.config's thread counts and devices over lockstep's");
  bind_threads(config);
  // Devices (docs/gpu.md): the GPUs this process has, and tf.device's scope as a context manager's two halves.
  config.def("gpu_count", &gpu_count);
  config.def("gpu_summary", [](int index) { return gpu_summary(Device::gpu(index)); });
  nb::class_<DeviceScope>(config, "_DeviceScope")
      .def("__init__", [](DeviceScope* s, const std::string& name) { new (s) DeviceScope(Device::parse(name)); });
  config.def("default_device", [] { return default_device().str(); });
}

}  // namespace lockstep::python
