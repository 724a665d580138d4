// tf.data and tf.io for lockstep._lockstep: the C++ Dataset (lockstep::data) as _lockstep.data.Dataset, with
// Python functions (map, filter, zip's combine, interleave's, from_generator's iterators) run by the C++ pipeline
// through callbacks that take the GIL; TFRecord files, tf.train.Example parsing and tf.io.gfile as _lockstep.io.
//
// An element crosses into Python as its nest (see element_to_python in bindings.h), which the Python package
// (lockstep/data) turns into TensorFlow's exact structure (namedtuples) and values. Every pull releases the GIL: the
// pipeline may run on prefetch threads whose callbacks take it.
#include <Python.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <mutex>
#include <set>
#include <variant>

#include "bindings.h"
#include "lockstep/core/gfile.h"
#include "lockstep/data/csv.h"
#include "lockstep/data/dataset.h"
#include "lockstep/data/dataset_node.h"
#include "lockstep/data/example.h"
#include "lockstep/data/text_line.h"
#include "lockstep/data/tfrecord.h"

namespace lockstep::python {
namespace {

using data::Dataset;
using data::DatasetNode;
using data::Element;
using data::NodePtr;
using nlohmann::json;

// lockstep.data's StringTensor class, which the Python package registers when it is imported: string leaves cross
// as its instances, made by StringTensor._from_cpp(shape, values) and read back by their _cpp_parts().
nb::object& string_tensor_class() {
  static auto* cls = new nb::object();  // never destroyed: the interpreter may be gone at static destruction
  return *cls;
}

nb::object string_tensor_to_python(const data::StringTensor& s) {
  LS_CHECK(string_tensor_class().is_valid(), RuntimeError,
           "a dataset element holds a string, but lockstep.data is not imported; import lockstep first");
  nb::list values;
  for (const std::string& v : s.values) values.append(nb::bytes(v.data(), v.size()));
  return string_tensor_class().attr("_from_cpp")(nb::cast(s.shape.dims()), values);
}

data::StringTensor string_tensor_from_python(nb::handle value) {
  nb::tuple parts = nb::borrow<nb::tuple>(value.attr("_cpp_parts")());
  std::vector<std::string> values;
  for (nb::handle v : parts[1]) {
    auto b = nb::borrow<nb::bytes>(v);
    values.emplace_back(b.c_str(), b.size());
  }
  return data::StringTensor(Shape(nb::cast<std::vector<int64_t>>(parts[0])), std::move(values));
}

std::vector<Element> elements_from_python(nb::handle seq) {
  std::vector<Element> out;
  for (nb::handle v : seq) out.push_back(element_from_python(v));
  return out;
}

// from_generator's Python side: `make` returns a new Python iterator whose __next__ gives an element; each
// C++ generator holds one and takes the GIL to step it.
data::Generator python_generator(const PyRef& make) {
  nb::gil_scoped_acquire gil;
  PyRef it(make.get()());
  return [it]() -> std::optional<Element> {
    nb::gil_scoped_acquire gil;
    PyObject* next = PyIter_Next(it.get().ptr());
    if (!next) {
      if (PyErr_Occurred()) throw nb::python_error();
      return std::nullopt;
    }
    nb::object owned = nb::steal(next);
    return element_from_python(owned);
  };
}

// The pipeline without its shuffle and prefetch stages: what learning an element's structure pulls one element
// through, so that it does not fill a shuffle buffer.
NodePtr without_shuffles(const NodePtr& node) {
  if ((node->op() == "shuffle" || node->op() == "prefetch") && node->inputs().size() == 1)
    return without_shuffles(node->inputs()[0]);
  if (node->inputs().empty()) return node;
  std::vector<NodePtr> inputs;
  for (const NodePtr& in : node->inputs()) inputs.push_back(without_shuffles(in));
  return node->with_inputs(std::move(inputs));
}

// ---- the Python face ----

// An iterator that Python owns. Destroying it may join a prefetch thread that waits for the GIL in a callback, so
// the GIL is released first. Live ones are listed so that close_all() can stop their threads while the interpreter
// still lets threads take the GIL: at finalization a thread asking for it is ended with a forced unwind, which the
// pipeline's threads (they catch everything to pass errors on) turn into std::terminate.
class PyIterator {
 public:
  explicit PyIterator(data::Iterator it) : it_(std::make_unique<data::Iterator>(std::move(it))) { enlist(); }
  PyIterator(PyIterator&& other) noexcept : it_(std::move(other.it_)), mutex_(std::move(other.mutex_)) { enlist(); }
  PyIterator& operator=(PyIterator&&) = delete;
  ~PyIterator() {
    {
      std::lock_guard lock(live_mutex());
      live().erase(this);
    }
    close();
  }

  nb::object next() {
    LS_CHECK(it_ != nullptr, RuntimeError, "the dataset iterator was closed (the interpreter is exiting)");
    std::optional<Element> e;
    {
      nb::gil_scoped_release unlocked;
      std::lock_guard lock(*mutex_);  // Python threads may share an iterator, as TF's allow
      if (it_) e = it_->next();
    }
    if (!e) throw nb::stop_iteration();
    return element_to_python(*e);
  }
  data::Iterator& get() {
    LS_CHECK(it_ != nullptr, RuntimeError, "the dataset iterator was closed (the interpreter is exiting)");
    return *it_;
  }
  void close() {
    if (!it_) return;
    nb::gil_scoped_release unlocked;
    std::lock_guard lock(*mutex_);
    it_.reset();
  }
  static void close_all() {
    std::vector<PyIterator*> open;
    {
      std::lock_guard lock(live_mutex());
      open.assign(live().begin(), live().end());
    }
    for (PyIterator* it : open) it->close();
  }

 private:
  void enlist() {
    std::lock_guard lock(live_mutex());
    live().insert(this);
  }
  static std::set<PyIterator*>& live() {
    static auto* set = new std::set<PyIterator*>;  // never destroyed: iterators may outlive static destruction
    return *set;
  }
  static std::mutex& live_mutex() {
    static auto* mutex = new std::mutex;
    return *mutex;
  }
  std::unique_ptr<data::Iterator> it_;
  std::unique_ptr<std::mutex> mutex_ = std::make_unique<std::mutex>();
};

const char* policy_name(data::Options::AutoShardPolicy p) {
  switch (p) {
    case data::Options::AutoShardPolicy::OFF:
      return "OFF";
    case data::Options::AutoShardPolicy::FILE:
      return "FILE";
    case data::Options::AutoShardPolicy::DATA:
      return "DATA";
    default:
      return "AUTO";
  }
}

data::Options::AutoShardPolicy policy_from_name(const std::string& name) {
  for (auto p : {data::Options::AutoShardPolicy::AUTO, data::Options::AutoShardPolicy::FILE,
                 data::Options::AutoShardPolicy::DATA, data::Options::AutoShardPolicy::OFF})
    if (name == policy_name(p)) return p;
  throw InvalidArgumentError(make_message("unknown auto_shard_policy ", name,
                                          "; use tf.data.experimental.AutoShardPolicy.AUTO, FILE, DATA or OFF"));
}

// Runs a Dataset method with the GIL released (sources copy their tensors; nothing here calls Python).
template <typename F>
Dataset unlocked(F&& f) {
  nb::gil_scoped_release unlocked;
  return f();
}

void bind_dataset(nb::module_& m) {
  using data::experimental::CsvOptions;
  nb::class_<CsvOptions>(m, "CsvOptions")
      .def(nb::init<>())
      .def_rw("column_names", &CsvOptions::column_names)
      .def_rw("column_defaults", &CsvOptions::column_defaults)
      .def_rw("label_name", &CsvOptions::label_name)
      .def_rw("select_columns", &CsvOptions::select_columns)
      .def_rw("field_delim", &CsvOptions::field_delim)
      .def_rw("use_quote_delim", &CsvOptions::use_quote_delim)
      .def_rw("na_value", &CsvOptions::na_value)
      .def_rw("header", &CsvOptions::header)
      .def_rw("num_epochs", &CsvOptions::num_epochs)
      .def_rw("shuffle", &CsvOptions::shuffle)
      .def_rw("shuffle_buffer_size", &CsvOptions::shuffle_buffer_size)
      .def_rw("shuffle_seed", &CsvOptions::shuffle_seed)
      .def_rw("num_rows_for_inference", &CsvOptions::num_rows_for_inference)
      .def_rw("compression_type", &CsvOptions::compression_type);
  nb::class_<PyIterator>(m, "Iterator")
      .def("__iter__", [](nb::handle self) { return self; })
      .def("__next__", &PyIterator::next)
      .def("save_state", [](PyIterator& self) { return self.get().save_state().dump(); })
      .def("restore_state", [](PyIterator& self, const std::string& state) {
        json parsed;
        try {
          parsed = json::parse(state);
        } catch (const json::exception&) {
          throw ValueError("restore_state: the state is not JSON; pass the string save_state() returned");
        }
        nb::gil_scoped_release unlocked;
        self.get().restore_state(parsed);
      });

  nb::class_<Dataset>(m, "Dataset")
      .def_static("from_tensor_slices",
                  [](nb::handle structure) {
                    Element e = element_from_python(structure);
                    return unlocked([&] { return Dataset::from_tensor_slices(e); });
                  })
      .def_static("from_tensors",
                  [](nb::handle element) {
                    Element e = element_from_python(element);
                    return unlocked([&] { return Dataset::from_tensors(e); });
                  })
      .def_static(
          "make_csv_dataset",
          [](const std::string& file_pattern, int64_t batch_size, data::experimental::CsvOptions options) {
            nb::gil_scoped_release unlocked;  // reads the first rows to infer the label's dtype
            return data::experimental::make_csv_dataset(file_pattern, batch_size, options);
          },
          nb::arg("file_pattern"), nb::arg("batch_size"), nb::arg("options"))
      .def_static("from_generator",
                  [](nb::handle make) {
                    return Dataset::from_generator([make = PyRef(make)] { return python_generator(make); });
                  })
      .def_static("range", &Dataset::range, nb::arg("start"), nb::arg("stop"), nb::arg("step") = 1)
      .def_static(
          "TFRecordDataset",
          [](std::vector<std::string> filenames, std::string compression_type) {
            return data::TFRecordDataset(std::move(filenames), {std::move(compression_type)});
          },
          nb::arg("filenames"), nb::arg("compression_type") = "")
      .def_static(
          "TextLineDataset",
          [](std::vector<std::string> filenames, std::string compression_type) {
            return data::TextLineDataset(std::move(filenames), {std::move(compression_type)});
          },
          nb::arg("filenames"), nb::arg("compression_type") = "")
      // combine(parts) -> the element; None makes the tuple of the parts.
      .def_static(
          "zip",
          [](const std::vector<Dataset>& datasets, nb::handle combine) {
            data::ZipFn fn;
            if (!combine.is_none())
              fn = [f = PyRef(combine)](const std::vector<Element>& parts) {
                nb::gil_scoped_acquire gil;
                nb::list py;
                for (const Element& e : parts) py.append(element_to_python(e));
                return element_from_python(f.get()(py));
              };
            return Dataset::zip(datasets, std::move(fn));
          },
          nb::arg("datasets"), nb::arg("combine").none())
      .def_static("sample_from_datasets", &Dataset::sample_from_datasets, nb::arg("datasets"), nb::arg("weights"),
                  nb::arg("seed").none(), nb::arg("stop_on_empty_dataset"))
      .def("shuffle", &Dataset::shuffle, nb::arg("buffer_size"), nb::arg("seed").none(),
           nb::arg("reshuffle_each_iteration"))
      .def("repeat", &Dataset::repeat, nb::arg("count") = -1)
      .def("batch", &Dataset::batch, nb::arg("batch_size"), nb::arg("drop_remainder") = false)
      // padding: per leaf (flatten order), (shape, value) to pad every axis to shape (-1: the batch's largest) with
      // value (strings with "").
      .def(
          "padded_batch",
          [](const Dataset& d, int64_t batch_size, bool drop_remainder,
             const std::vector<std::pair<std::vector<int64_t>, double>>& padding) {
            std::vector<data::Padding> out;
            for (const auto& [shape, value] : padding) out.push_back({data::Padding::Axes::kAll, shape, value});
            return d.padded_batch(batch_size, std::move(out), drop_remainder);
          },
          nb::arg("batch_size"), nb::arg("drop_remainder"), nb::arg("padding"))
      .def("shard", &Dataset::shard, nb::arg("num_shards"), nb::arg("index"))
      .def("take", &Dataset::take, nb::arg("count"))
      .def("skip", &Dataset::skip, nb::arg("count"))
      .def("cache", &Dataset::cache)
      .def("prefetch", &Dataset::prefetch, nb::arg("buffer_size"))
      .def("unbatch", &Dataset::unbatch)
      // fn(element) -> element, called by whichever thread runs the pipeline.
      .def("map",
           [](const Dataset& d, nb::handle fn) {
             return d.map([f = PyRef(fn)](const Element& e) {
               nb::gil_scoped_acquire gil;
               return element_from_python(f.get()(element_to_python(e)));
             });
           })
      .def("filter",
           [](const Dataset& d, nb::handle predicate) {
             return d.filter([f = PyRef(predicate)](const Element& e) {
               nb::gil_scoped_acquire gil;
               return nb::cast<bool>(f.get()(element_to_python(e)));
             });
           })
      .def("concatenate", &Dataset::concatenate)
      // fn(element) -> the C++ Dataset to take elements from.
      .def("interleave",
           [](const Dataset& d, nb::handle fn, int64_t cycle_length, int64_t block_length) {
             return d.interleave(
                 [f = PyRef(fn)](const Element& e) {
                   nb::gil_scoped_acquire gil;
                   return nb::cast<Dataset>(f.get()(element_to_python(e)));
                 },
                 cycle_length, block_length);
           })
      // fn(state, element) -> (state, element).
      .def("scan",
           [](const Dataset& d, nb::handle initial_state, nb::handle fn) {
             return d.scan(element_from_python(initial_state), [f = PyRef(fn)](const Element& state, const Element& e) {
               nb::gil_scoped_acquire gil;
               nb::object out = f.get()(element_to_python(state), element_to_python(e));
               return std::pair{element_from_python(out[0]), element_from_python(out[1])};
             });
           })
      .def("with_options",
           [](const Dataset& d, const std::string& auto_shard_policy) {
             data::Options options = d.options();
             options.auto_shard_policy = policy_from_name(auto_shard_policy);
             return d.with_options(options);
           })
      .def_prop_ro("auto_shard_policy", [](const Dataset& d) { return policy_name(d.options().auto_shard_policy); })
      .def("cardinality", &Dataset::cardinality)
      .def("without_shuffles", [](const Dataset& d) { return Dataset(without_shuffles(d.node_ptr()), d.options()); })
      .def("make_iterator", [](const Dataset& d) { return PyIterator(d.make_iterator()); })
      .def("make_iterator", [](const Dataset& d, uint64_t iteration) { return PyIterator(d.make_iterator(iteration)); })
      .def("__iter__", [](const Dataset& d) { return PyIterator(d.make_iterator()); })
      // The stages from the output back to the source, as the C++ pipeline names them ("batch(batch_size=2, ...)").
      .def_prop_ro("stages", [](const Dataset& d) {
        std::vector<std::string> out;
        for (const DatasetNode* n = &d.node(); n; n = n->inputs().empty() ? nullptr : n->inputs()[0].get())
          out.push_back(n->str());
        return out;
      });
}

// ---- tf.io: TFRecord files, tf.train.Example, gfile ----

// A feature's dtype as Python names it: tf.string, or a numeric dtype.
data::FeatureDType feature_dtype(nb::handle dtype) {
  if (nb::hasattr(dtype, "name") && nb::cast<std::string>(nb::str(dtype.attr("name"))) == "string") return data::kString;
  return to_dtype(dtype);
}

std::variant<data::FixedLenFeature, data::VarLenFeature> feature_of(nb::handle spec) {
  const std::string kind = nb::cast<std::string>(spec[0]);
  if (kind == "var") return data::VarLenFeature{feature_dtype(spec[1])};
  nb::handle fallback = spec[3];
  data::FixedLenFeature f{nb::cast<std::vector<int64_t>>(spec[1]), feature_dtype(spec[2]), {}};
  if (!fallback.is_none())
    f.default_value = f.dtype.is_string() ? element_from_python(fallback) : Element(to_tensor(fallback, f.dtype.dtype()));
  return f;
}

// {key: ("fixed", shape, dtype, default or None) | ("var", dtype)} as the C++ FeatureSpec.
data::FeatureSpec spec_of(const nb::dict& features) {
  data::FeatureSpec spec;
  for (auto [key, value] : features) spec.emplace(nb::cast<std::string>(key), feature_of(value));
  return spec;
}

// {key: Tensor or StringTensor} for dense features, {key: (indices, values or [bytes], dense_shape)} for sparse ones.
nb::tuple parsed_to_python(const data::ParsedFeatures& parsed) {
  nb::dict dense, sparse;
  for (const auto& [key, t] : parsed.dense) dense[key.c_str()] = nb::cast(t);
  for (const auto& [key, s] : parsed.dense_strings) dense[key.c_str()] = string_tensor_to_python(s);
  for (const auto& [key, s] : parsed.sparse) {
    nb::object values = s.values.defined() ? nb::cast(s.values) : nb::object();
    if (!s.values.defined()) {
      nb::list strings;
      for (const std::string& v : s.string_values) strings.append(nb::bytes(v.data(), v.size()));
      values = strings;
    }
    sparse[key.c_str()] = nb::make_tuple(s.indices, values, s.dense_shape);
  }
  return nb::make_tuple(dense, sparse);
}

std::string bytes_of(nb::handle v) {
  if (nb::isinstance<nb::bytes>(v)) {
    auto b = nb::borrow<nb::bytes>(v);
    return std::string(b.c_str(), b.size());
  }
  return nb::cast<std::string>(v);
}

void bind_io(nb::module_& m) {
  m.def("parse_single_example", [](nb::handle serialized, const nb::dict& features) {
    std::string bytes = bytes_of(serialized);
    data::FeatureSpec spec = spec_of(features);
    data::ParsedFeatures parsed;
    {
      nb::gil_scoped_release unlocked;
      parsed = data::parse_single_example(std::string_view(bytes), spec);
    }
    return parsed_to_python(parsed);
  });
  m.def("parse_example", [](const std::vector<nb::handle>& serialized, const nb::dict& features) {
    std::vector<std::string> records;
    for (nb::handle s : serialized) records.push_back(bytes_of(s));
    data::FeatureSpec spec = spec_of(features);
    data::ParsedFeatures parsed;
    {
      nb::gil_scoped_release unlocked;
      parsed = data::parse_example(records, spec);
    }
    return parsed_to_python(parsed);
  });

  nb::class_<data::TFRecordWriter>(m, "TFRecordWriter")
      .def(
          "__init__",
          [](data::TFRecordWriter* w, std::string path, std::string compression_type) {
            new (w) data::TFRecordWriter(std::move(path), {std::move(compression_type)});
          },
          nb::arg("path"), nb::arg("compression_type") = "")
      .def("write", [](data::TFRecordWriter& w, nb::handle record) { w.write(bytes_of(record)); })
      .def("flush", &data::TFRecordWriter::flush)
      .def("close", &data::TFRecordWriter::close);

  namespace gfile = io::gfile;
  nb::module_ g = m.def_submodule("gfile", "tf.io.gfile over lockstep::io::gfile");
  g.def("exists", &gfile::exists);
  g.def("isdir", &gfile::isdir);
  g.def("makedirs", &gfile::makedirs);
  g.def("mkdir", &gfile::mkdir);
  g.def("rmtree", &gfile::rmtree);
  g.def("remove", &gfile::remove);
  g.def("rename", &gfile::rename, nb::arg("src"), nb::arg("dst"), nb::arg("overwrite") = false);
  g.def("copy", &gfile::copy, nb::arg("src"), nb::arg("dst"), nb::arg("overwrite") = false);
  g.def("glob", &gfile::glob);
  g.def("listdir", &gfile::listdir);
  g.def("walk", [](const std::string& top, bool topdown) {
    nb::list out;
    for (const gfile::WalkEntry& e : gfile::walk(top, topdown))
      out.append(nb::make_tuple(e.dirpath, nb::cast(e.dirnames), nb::cast(e.filenames)));
    return out;
  });
  g.def("stat", [](const std::string& path) {
    gfile::FileStatistics s = gfile::stat(path);
    return nb::make_tuple(s.length, s.mtime_nsec, s.is_directory);
  });
  g.def("join", [](const std::vector<std::string>& parts) {
    std::string out = parts.empty() ? "" : parts[0];
    for (size_t i = 1; i < parts.size(); ++i) out = gfile::join(out, parts[i]);
    return out;
  });
  auto as_bytes = [](const std::string& s) { return nb::bytes(s.data(), s.size()); };
  nb::class_<gfile::GFile>(g, "GFile")
      .def(nb::init<std::string, std::string>(), nb::arg("name"), nb::arg("mode") = "r")
      .def(
          "read", [as_bytes](gfile::GFile& f, int64_t n) { return as_bytes(f.read(n)); }, nb::arg("n") = -1)
      .def("readline", [as_bytes](gfile::GFile& f) { return as_bytes(f.readline()); })
      .def("readlines",
           [as_bytes](gfile::GFile& f) {
             nb::list out;
             for (const std::string& line : f.readlines()) out.append(as_bytes(line));
             return out;
           })
      .def("write", [](gfile::GFile& f, nb::handle data) { f.write(bytes_of(data)); })
      .def("flush", &gfile::GFile::flush)
      .def("close", &gfile::GFile::close)
      .def("seek", &gfile::GFile::seek, nb::arg("offset"), nb::arg("whence") = 0)
      .def("tell", &gfile::GFile::tell)
      .def("size", &gfile::GFile::size)
      .def_prop_ro("name", &gfile::GFile::name)
      .def_prop_ro("mode", &gfile::GFile::mode);
}

}  // namespace

nb::object element_to_python(const Element& e) {
  switch (e.kind()) {
    case Element::Kind::kNone:
      return nb::none();
    case Element::Kind::kTensor:
      return nb::cast(e.tensor());
    case Element::Kind::kString:
      return string_tensor_to_python(e.string());
    case Element::Kind::kTuple:
    case Element::Kind::kList: {
      nb::list items;
      for (const Element& c : e.children()) items.append(element_to_python(c));
      if (e.kind() == Element::Kind::kList) return items;
      return nb::tuple(items);
    }
    case Element::Kind::kDict: {
      nb::dict items;
      for (size_t i = 0; i < e.size(); ++i) items[e.keys()[i].c_str()] = element_to_python(e.children()[i]);
      return items;
    }
  }
  return nb::none();
}

Element element_from_python(nb::handle value) {
  if (value.is_none()) return {};
  if (nb::isinstance<Tensor>(value)) return nb::cast<Tensor>(value);
  if (nb::isinstance<nb::tuple>(value)) return Element::tuple(elements_from_python(value));
  if (nb::isinstance<nb::list>(value)) return Element::list(elements_from_python(value));
  if (nb::isinstance<nb::dict>(value)) {
    std::vector<std::pair<std::string, Element>> items;
    for (auto [k, v] : nb::borrow<nb::dict>(value)) {
      if (!nb::isinstance<nb::str>(k))
        throw nb::type_error(make_message("a dataset element's dict has the key ", nb::str(k).c_str(),
                                          "; tf.data's dict keys are strings").c_str());
      items.emplace_back(nb::cast<std::string>(k), element_from_python(v));
    }
    return Element::dict(std::move(items));
  }
  if (string_tensor_class().is_valid() && nb::isinstance(value, string_tensor_class()))
    return string_tensor_from_python(value);
  return to_tensor(value);
}

void bind_data(nb::module_& m) {
  nb::module_ d = m.def_submodule("data", "tf.data over lockstep::data");
  d.attr("AUTOTUNE") = data::kAutotune;
  d.attr("INFINITE_CARDINALITY") = data::kInfiniteCardinality;
  d.attr("UNKNOWN_CARDINALITY") = data::kUnknownCardinality;
  bind_dataset(d);
  d.def("_set_string_tensor_class", [](nb::handle cls) { string_tensor_class() = nb::borrow(cls); });
  d.def("close_iterators", &PyIterator::close_all,
        "Stops every open dataset iterator and its threads (at exit, before the interpreter finalizes).");
  nb::module_ io =
      m.def_submodule("io", "tf.io over lockstep::data's TFRecord and Example code and lockstep::io::gfile");
  bind_io(io);
}

}  // namespace lockstep::python
