// The functional API: KerasTensor and the nodes layers record when called on one, and the functional Model
// built from them — its graph in Keras' layer order, its forward pass, and its Keras 3 config both ways.
#include <algorithm>
#include <atomic>
#include <functional>
#include <set>
#include <unordered_map>

#include "../keras-impl.h"
#include "lockstep/keras/layers.h"
#include "models-impl.h"

namespace lockstep::keras {

namespace {
std::atomic<uint64_t> g_node_ids{1};
using NodePtr = std::shared_ptr<const detail::Node>;
using detail::Node;

// What Keras calls a node's operation: its layer, or the node itself for a model input.
const void* operation_of(const Node& n) {
  return n.layer ? static_cast<const void*>(n.layer.get()) : &n;
}
const std::string& name_of(const Node& n) {
  return n.layer ? n.layer->name() : n.input_name;
}

nlohmann::json batch_shape(const Shape& features) {
  nlohmann::json shape = nlohmann::json::array();
  shape.push_back(nullptr);
  for (int64_t d : features.dims()) shape.push_back(d);
  return shape;
}
}  // namespace

KerasTensor::KerasTensor(const layers::InputLayer& input) : node_(input.node_) {}
const Shape& KerasTensor::shape() const {
  return node_->shape;
}
DType KerasTensor::dtype() const {
  return node_->dtype;
}

KerasTensor Layer::operator()(const KerasTensor& x, std::optional<bool> training) {
  return record_call({x}, false, training);
}
KerasTensor Layer::operator()(const std::vector<KerasTensor>& xs, std::optional<bool> training) {
  return record_call(xs, true, training);
}

KerasTensor Layer::record_call(const std::vector<KerasTensor>& xs, bool list_input, std::optional<bool> training) {
  LS_CHECK(!xs.empty(), ValueError, "layer \"", name_, "\" was called on an empty list of tensors");
  LS_CHECK(class_name_ != "InputLayer", ValueError, "an InputLayer (\"", name_,
           "\") cannot be called: use keras::Input(shape) as a tensor");
  std::vector<Shape> shapes;
  for (const KerasTensor& x : xs) {
    LS_CHECK(x.node() != nullptr, ValueError, "layer \"", name_, "\" was called on an empty KerasTensor");
    shapes.push_back(x.shape());
  }
  // Built now, as Keras builds a layer on its first symbolic call, so the model's weights exist at once.
  ensure_built(shapes[0]);
  if (!weights_.empty()) {
    LS_CHECK(shapes[0].rank() == built_shape_.rank() && shapes[0][-1] == built_shape_[-1], ValueError,
             "Input 0 of layer \"", name_,
             "\" is incompatible with the layer: expected shape=", detail::with_none(built_shape_),
             ", found shape=", detail::with_none(shapes[0]));
  }
  auto node = std::make_shared<detail::Node>();
  node->shape = compute_output_shape_list(shapes);
  node->dtype = compute_dtype();
  node->inputs = xs;
  node->list_input = list_input;
  node->training = training;
  node->id = g_node_ids++;
  // The graph's handle on this layer: itself when shared, else its one copy (which shares the weights).
  node->layer = weak_from_this().lock();
  if (!node->layer) node->layer = graph_copy_.lock();
  if (!node->layer) {
    node->layer = clone();
    graph_copy_ = node->layer;
  }
  return KerasTensor(std::move(node));
}

// ---- the functional Model ----

Model::Model(KerasTensors inputs, KerasTensors outputs, std::string name) : s_(std::make_shared<State>()) {
  s_->name = name.empty() ? detail::unique_name("Functional") : std::move(name);
  if (distribute::has_strategy()) s_->strategy = &distribute::get_strategy();
  LS_CHECK(!inputs.tensors.empty() && !outputs.tensors.empty(), ValueError, "model \"", s_->name,
           "\" needs at least one input and one output");
  Graph g;
  for (const KerasTensor& t : inputs.tensors) {
    const NodePtr& n = t.node();
    LS_CHECK(n && !n->layer, ValueError, "model \"", s_->name,
             "\": its inputs must be keras::Input tensors, but one is ",
             n ? "the output of layer \"" + n->layer->name() + "\"" : std::string("empty"));
    LS_CHECK(std::find(g.inputs.begin(), g.inputs.end(), n) == g.inputs.end(), ValueError, "model \"", s_->name,
             "\": input \"", n->input_name, "\" is given twice");
    g.inputs.push_back(n);
    g.input_layers.push_back(std::make_shared<layers::InputLayer>(n->shape, n->dtype, n->input_name));
  }
  for (const KerasTensor& t : outputs.tensors) {
    LS_CHECK(t.node() != nullptr, ValueError, "model \"", s_->name, "\": an output is an empty KerasTensor");
    g.outputs.push_back(t.node());
  }

  // Keras' map of the graph: nodes in post-order from the outputs (each after its inputs), and each
  // operation's index in pre-order, which orders operations of equal depth.
  std::set<const Node*> finished;
  std::unordered_map<const void*, int64_t> op_index;
  std::unordered_map<const void*, LayerPtr> op_layer;
  std::function<void(const NodePtr&)> visit = [&](const NodePtr& n) {
    if (finished.count(n.get())) return;
    const void* op = operation_of(*n);
    if (!op_index.count(op)) op_index.emplace(op, static_cast<int64_t>(op_index.size()));
    const auto input = std::find(g.inputs.begin(), g.inputs.end(), n);
    if (n->layer) {
      op_layer[op] = n->layer;
      for (const KerasTensor& in : n->inputs) visit(in.node());
    } else {
      LS_CHECK(input != g.inputs.end(), ValueError, "model \"", s_->name,
               "\": graph disconnected: an output depends on input \"", n->input_name,
               "\", which is not among the model's inputs");
      op_layer[op] = g.input_layers[static_cast<size_t>(input - g.inputs.begin())];
    }
    finished.insert(n.get());
    g.order.push_back(n);
  };
  for (const NodePtr& n : g.outputs) visit(n);

  // Depths as Keras computes them (an operation's depth is the largest of its nodes'), then operations by
  // decreasing depth and, within one depth, by first visit: Keras' model.layers and model.weights order.
  std::unordered_map<const Node*, int64_t> node_depth;
  std::unordered_map<const void*, int64_t> op_depth;
  for (auto it = g.order.rbegin(); it != g.order.rend(); ++it) {
    const Node* n = it->get();
    const void* op = operation_of(*n);
    const int64_t depth = std::max(node_depth[n], op_depth[op]);
    op_depth[op] = node_depth[n] = depth;
    for (const KerasTensor& in : n->inputs) {
      int64_t& d = node_depth[in.node().get()];
      d = std::max(d, depth + 1);
    }
  }
  for (size_t i = 0; i < g.inputs.size(); ++i) {  // inputs no output uses
    const void* op = operation_of(*g.inputs[i]);
    if (op_depth.count(op)) continue;
    op_depth[op] = 0;
    op_index[op] = -1;
    op_layer[op] = g.input_layers[i];
  }
  std::vector<const void*> ops;
  for (const auto& [op, depth] : op_depth) ops.push_back(op);
  std::sort(ops.begin(), ops.end(), [&](const void* a, const void* b) {
    return op_depth[a] != op_depth[b] ? op_depth[a] > op_depth[b] : op_index[a] < op_index[b];
  });
  std::set<std::string> names;
  for (const void* op : ops) {
    const LayerPtr& l = op_layer[op];
    LS_CHECK(names.insert(l->name()).second, ValueError, "model \"", s_->name, "\": two layers are named \"", l->name(),
             "\"; all layer names should be unique (pass name = ...)");
    s_->layers.push_back(l);
    // The output shape of the layer's first call in this model.
    const Node* first = nullptr;
    for (const NodePtr& n : g.order)
      if (operation_of(*n) == op && (!first || n->id < first->id)) first = n.get();
    g.layer_output_shapes.push_back(first ? first->shape : std::dynamic_pointer_cast<layers::InputLayer>(l)->shape());
  }
  s_->input_shape = g.inputs[0]->shape;
  s_->output_shape = g.outputs[0]->shape;
  s_->built = true;
  s_->graph = std::move(g);
}

std::vector<Tensor> run_graph(Model::State& s, const std::vector<Tensor>& xs, CallOptions options) {
  const Graph& g = *s.graph;
  LS_CHECK(xs.size() == g.inputs.size(), ValueError, "model \"", s.name, "\" expects ", g.inputs.size(),
           " input(s), got ", xs.size());
  std::unordered_map<const Node*, Tensor> values;
  for (size_t i = 0; i < xs.size(); ++i) {
    Tensor x = xs[i];
    LS_CHECK(x.defined() && x.rank() >= 1, ValueError, "model \"", s.name, "\" needs a batch for input \"",
             g.inputs[i]->input_name, "\"");
    // Keras casts inputs to their Input's dtype (images arrive as uint8, NumPy's arithmetic makes float64).
    const DType want = g.inputs[i]->dtype;
    if (x.dtype() != want) x = cast(x, want);
    values[g.inputs[i].get()] = (*g.input_layers[i])(x, options);
  }
  for (const NodePtr& n : g.order) {
    if (!n->layer) continue;
    std::vector<Tensor> ins;
    for (const KerasTensor& t : n->inputs) ins.push_back(values.at(t.node().get()));
    CallOptions o = options;
    if (n->training) o.training = *n->training;
    values[n.get()] = n->list_input ? (*n->layer)(ins, o) : (*n->layer)(ins[0], o);
  }
  std::vector<Tensor> out;
  for (const NodePtr& n : g.outputs) out.push_back(values.at(n.get()));
  return out;
}

nlohmann::json functional_config(const Model::State& s) {
  const Graph& g = *s.graph;
  // Each layer's nodes in this model, in call order: keras_history's node index counts them.
  std::unordered_map<const void*, std::vector<const Node*>> nodes_of;
  for (const NodePtr& n : g.order) nodes_of[operation_of(*n)].push_back(n.get());
  for (auto& [op, nodes] : nodes_of)
    std::sort(nodes.begin(), nodes.end(), [](const Node* a, const Node* b) { return a->id < b->id; });
  auto history = [&](const Node* n) {
    const auto& nodes = nodes_of.at(operation_of(*n));
    return nlohmann::json::array({name_of(*n), std::find(nodes.begin(), nodes.end(), n) - nodes.begin(), 0});
  };
  auto tensor_json = [&](const KerasTensor& t) {
    return nlohmann::json{{"class_name", "__keras_tensor__"},
                          {"config",
                           {{"shape", batch_shape(t.shape())},
                            {"dtype", std::string(dtype_name(t.dtype()))},
                            {"keras_history", history(t.node().get())}}}};
  };
  nlohmann::json layers = nlohmann::json::array();
  for (const LayerPtr& l : s.layers) {
    if (auto in = std::dynamic_pointer_cast<layers::InputLayer>(l)) {
      nlohmann::json config = {{"batch_shape", batch_shape(in->shape())},
                               {"dtype", std::string(dtype_name(in->dtype()))},
                               {"sparse", false},
                               {"ragged", false},
                               {"name", in->name()},
                               {"optional", false}};
      layers.push_back({{"module", "keras.layers"},
                        {"class_name", "InputLayer"},
                        {"config", config},
                        {"registered_name", nullptr},
                        {"name", in->name()},
                        {"inbound_nodes", nlohmann::json::array()}});
      continue;
    }
    const std::string& cls = l->class_name();
    // What Keras records of a symbolic call: the arguments it passes along (Dropout's training, BatchNormalization's
    // mask), and the input shape of layers with a build step.
    nlohmann::json kwargs = nlohmann::json::object();
    if (cls == "Dropout") kwargs["training"] = false;
    if (cls == "BatchNormalization") kwargs["mask"] = nullptr;
    static const std::set<std::string> kNoBuild = {"Activation",
                                                   "AveragePooling1D",
                                                   "AveragePooling2D",
                                                   "Dropout",
                                                   "MaxPooling1D",
                                                   "MaxPooling2D",
                                                   "GlobalAveragePooling1D",
                                                   "GlobalAveragePooling2D",
                                                   "GlobalMaxPooling1D",
                                                   "GlobalMaxPooling2D",
                                                   "Reshape"};
    const std::vector<const Node*>& nodes = nodes_of.at(l.get());
    nlohmann::json inbound = nlohmann::json::array();
    for (const Node* n : nodes) {
      nlohmann::json arg = nlohmann::json::array();
      for (const KerasTensor& t : n->inputs) arg.push_back(tensor_json(t));
      inbound.push_back({{"args", nlohmann::json::array({n->list_input ? arg : arg[0]})}, {"kwargs", kwargs}});
    }
    nlohmann::json input_shape = nlohmann::json::array();
    for (const KerasTensor& t : nodes[0]->inputs) input_shape.push_back(batch_shape(t.shape()));
    nlohmann::json entry = {{"module", "keras.layers"},   {"class_name", cls}, {"config", l->get_config()},
                            {"registered_name", nullptr}, {"name", l->name()}, {"inbound_nodes", inbound}};
    if (!kNoBuild.count(cls))
      entry["build_config"] = {{"input_shape", nodes[0]->list_input ? input_shape : input_shape[0]}};
    layers.push_back(std::move(entry));
  }
  // One endpoint is written bare, several as a list (Keras' format).
  auto endpoints = [&](const std::vector<NodePtr>& ns) {
    nlohmann::json out = nlohmann::json::array();
    for (const NodePtr& n : ns) out.push_back(history(n.get()));
    return ns.size() == 1 ? out[0] : out;
  };
  return {{"name", s.name},
          {"trainable", true},
          {"layers", layers},
          {"input_layers", endpoints(g.inputs)},
          {"output_layers", endpoints(g.outputs)}};
}

namespace {
// A layer's list of tensors (or one) in a node's args, or nullopt while one of them is not made yet.
std::optional<std::vector<KerasTensor>> resolve(const nlohmann::json& arg,
                                                const std::map<std::string, std::vector<KerasTensor>>& made,
                                                const std::string& layer) {
  std::vector<KerasTensor> out;
  for (const nlohmann::json& t : arg.is_array() ? arg : nlohmann::json::array({arg})) {
    LS_CHECK(t.is_object() && t.value("class_name", "") == "__keras_tensor__", ValueError, "layer \"", layer,
             "\": an inbound node's argument is not a tensor (", t.dump().substr(0, 60),
             "); lockstep reads Keras 3's functional format");
    const nlohmann::json& h = t.at("config").at("keras_history");
    const auto it = made.find(h.at(0).get<std::string>());
    const int64_t node = detail::json_int(h.at(1), "keras_history");
    if (it == made.end() || node >= static_cast<int64_t>(it->second.size())) return std::nullopt;
    LS_CHECK(detail::json_int(h.at(2), "keras_history") == 0, ValueError, "layer \"", layer, "\" takes output ",
             h.at(2).dump(), " of layer \"", it->first, "\", which has one output");
    out.push_back(it->second[static_cast<size_t>(node)]);
  }
  return out;
}

std::vector<KerasTensor> endpoints(const nlohmann::json& j,
                                   const std::map<std::string, std::vector<KerasTensor>>& made) {
  std::vector<KerasTensor> out;
  const nlohmann::json list = j.size() > 0 && j[0].is_string() ? nlohmann::json::array({j}) : j;
  for (const nlohmann::json& e : list) {
    const auto it = made.find(e.at(0).get<std::string>());
    const int64_t node = detail::json_int(e.at(1), "input_layers");
    LS_CHECK(it != made.end() && node < static_cast<int64_t>(it->second.size()), ValueError,
             "functional model config names ", e.dump(),
             " as an input or output, but the model has no such layer node");
    out.push_back(it->second[static_cast<size_t>(node)]);
  }
  return out;
}
}  // namespace

Model functional_from_config(const nlohmann::json& config) {
  try {
    std::map<std::string, std::vector<KerasTensor>> made;                   // each layer's outputs, by node index
    std::vector<std::pair<LayerPtr, std::vector<nlohmann::json>>> pending;  // layers with nodes still to call
    for (const nlohmann::json& entry : config.at("layers")) {
      const std::string cls = entry.at("class_name");
      const nlohmann::json& c = entry.at("config");
      if (cls == "InputLayer") {
        const std::string name = c.value("name", entry.value("name", ""));
        const nlohmann::json& bs = c.contains("batch_shape") ? c["batch_shape"] : c.at("batch_input_shape");
        for (const char* flag : {"sparse", "ragged", "optional"})
          LS_CHECK(!c.value(flag, false), ValueError, "InputLayer \"", name, "\": ", flag, "=true is not supported");
        std::vector<int64_t> dims;
        for (size_t i = 1; i < bs.size(); ++i) {
          LS_CHECK(!bs[i].is_null(), ValueError, "InputLayer \"", name, "\": shape ", bs.dump(),
                   " has an unknown dimension (None) besides the batch; lockstep needs every feature dimension");
          dims.push_back(detail::json_int(bs[i], "batch_shape"));
        }
        layers::InputLayer input(Shape(dims), dtype_from_name(c.value("dtype", "float32")), name);
        made[name] = {KerasTensor(input)};
        continue;
      }
      LayerPtr layer = layers::from_config({{"class_name", cls}, {"config", c}});
      std::vector<nlohmann::json> nodes;
      for (const nlohmann::json& n : entry.value("inbound_nodes", nlohmann::json::array())) {
        LS_CHECK(n.is_object() && n.contains("args"), ValueError, "layer \"", layer->name(), "\": inbound node ",
                 n.dump().substr(0, 60), " is not in Keras 3's format {\"args\", \"kwargs\"}");
        const nlohmann::json kwargs = n.value("kwargs", nlohmann::json::object());
        for (const auto& [key, value] : kwargs.items())
          LS_CHECK(key == "training" || (key == "mask" && value.is_null()), ValueError, "layer \"", layer->name(),
                   "\" is called with ", key, "=", value.dump().substr(0, 40), ", which lockstep does not support");
        LS_CHECK(n["args"].size() == 1, ValueError, "layer \"", layer->name(), "\" is called with ", n["args"].size(),
                 " positional arguments; lockstep's layers take one tensor or one list");
        nodes.push_back(n["args"][0]);
      }
      made[layer->name()];
      pending.emplace_back(layer, std::move(nodes));
    }
    // Each pass calls every layer on the nodes whose inputs exist, in order (Keras' loop for shared layers).
    for (bool progress = true; progress;) {
      progress = false;
      for (auto& [layer, nodes] : pending) {
        std::vector<KerasTensor>& outputs = made[layer->name()];
        while (outputs.size() < nodes.size()) {
          const nlohmann::json& arg = nodes[outputs.size()];
          std::optional<std::vector<KerasTensor>> ins = resolve(arg, made, layer->name());
          if (!ins) break;
          outputs.push_back(arg.is_array() ? (*layer)(*ins) : (*layer)((*ins)[0]));
          progress = true;
        }
      }
    }
    for (const auto& [layer, nodes] : pending)
      LS_CHECK(made[layer->name()].size() == nodes.size(), ValueError, "functional model config: layer \"",
               layer->name(), "\" takes a tensor no layer of the config makes (the graph is disconnected or cyclic)");
    return Model(endpoints(config.at("input_layers"), made), endpoints(config.at("output_layers"), made),
                 config.value("name", ""));
  } catch (const nlohmann::json::exception& e) {
    throw ValueError(make_message("invalid functional model config: ", e.what()));
  }
}

}  // namespace lockstep::keras
