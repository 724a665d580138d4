// The optimizer registry: each optimizer's parameter table (Keras' arguments, defaults from its options struct),
// its factory from a config, and get / from_config.
#include "lockstep/keras/optimizers/registry.h"

#include <algorithm>

#include "lockstep/keras/optimizers.h"

namespace lockstep::keras::optimizers {

namespace {
// A complete config's learning rate: a number or a schedule's config.
LearningRate learning_rate_of(const nlohmann::json& c) { return LearningRate::from_json(c.at("learning_rate")); }

// The arguments every Keras optimizer takes after its own, which lockstep takes at Keras' defaults only (its
// optimizers have no weight decay, clipping, EMA, loss scaling or gradient accumulation yet), and the name.
std::vector<Param> with_base(std::vector<Param> own) {
  const char* no = "not implemented by lockstep";
  // AdamW declares weight_decay among its own arguments.
  if (std::none_of(own.begin(), own.end(), [](const Param& p) { return p.name == "weight_decay"; }))
    own.push_back(Param::fixed("weight_decay", nullptr, "not implemented by lockstep but in AdamW"));
  for (Param p : {Param::fixed("clipnorm", nullptr, no),
                  Param::fixed("clipvalue", nullptr, no), Param::fixed("global_clipnorm", nullptr, no),
                  Param::fixed("use_ema", false, no), Param::fixed("ema_momentum", 0.99, no),
                  Param::fixed("ema_overwrite_frequency", nullptr, no), Param::fixed("loss_scale_factor", nullptr, no),
                  Param::fixed("gradient_accumulation_steps", nullptr, no),
                  Param{"name", nullptr, "the optimizer's name; None is its class name"}})
    own.push_back(std::move(p));
  return own;
}

// Each optimizer's own arguments, their defaults read from its options struct (one place for each default).
std::vector<Param> sgd_params() {
  const SGDOptions d;
  return with_base({{"learning_rate", d.learning_rate.to_json(), "a number or a LearningRateSchedule"},
                    {"momentum", d.momentum, "the velocity's decay; 0 is plain SGD"},
                    {"nesterov", d.nesterov, "Nesterov's momentum"}});
}
std::vector<Param> rmsprop_params() {
  const RMSpropOptions d;
  return with_base({{"learning_rate", d.learning_rate.to_json(), "a number or a LearningRateSchedule"},
                    {"rho", d.rho, "the decay of the squared gradients' average"},
                    {"momentum", d.momentum, "the velocity's decay"},
                    {"epsilon", d.epsilon, "added to the denominator"},
                    {"centered", d.centered, "divide by the gradients' variance, not their second moment"}});
}
std::vector<Param> adam_params() {
  const AdamOptions d;
  return with_base({{"learning_rate", d.learning_rate.to_json(), "a number or a LearningRateSchedule"},
                    {"beta_1", d.beta_1, "the first moment's decay"},
                    {"beta_2", d.beta_2, "the second moment's decay"},
                    {"epsilon", d.epsilon, "added to the denominator"},
                    {"amsgrad", d.amsgrad, "AMSGrad: divide by the largest second moment yet"}});
}
std::vector<Param> adamw_params() {
  const AdamWOptions d;
  return with_base({{"learning_rate", d.learning_rate.to_json(), "a number or a LearningRateSchedule"},
                    {"weight_decay", d.weight_decay, "each step removes weight_decay * learning_rate of each weight"},
                    {"beta_1", d.beta_1, "the first moment's decay"},
                    {"beta_2", d.beta_2, "the second moment's decay"},
                    {"epsilon", d.epsilon, "added to the denominator"},
                    {"amsgrad", d.amsgrad, "AMSGrad: divide by the largest second moment yet"}});
}
// A complete config's name: the class name when None.
std::string name_of(const nlohmann::json& c, const std::string& class_name) {
  return c.contains("name") && !c["name"].is_null() ? c["name"].get<std::string>() : class_name;
}
}  // namespace

const Registry<std::shared_ptr<Optimizer>>& registry() {
  static const Registry<std::shared_ptr<Optimizer>> r(
      "optimizer", {{"SGD",
                     [](const nlohmann::json& c) {
                       return SGD({.learning_rate = learning_rate_of(c),
                                   .momentum = c.at("momentum").get<double>(),
                                   .nesterov = c.at("nesterov").get<bool>(),
                                   .name = name_of(c, "SGD")});
                     },
                     {"sgd"},
                     sgd_params()},
                    {"RMSprop",
                     [](const nlohmann::json& c) {
                       return RMSprop({.learning_rate = learning_rate_of(c),
                                       .rho = c.at("rho").get<double>(),
                                       .momentum = c.at("momentum").get<double>(),
                                       .epsilon = c.at("epsilon").get<double>(),
                                       .centered = c.at("centered").get<bool>(),
                                       .name = name_of(c, "RMSprop")});
                     },
                     {"rmsprop"},
                     rmsprop_params()},
                    {"Adam",
                     [](const nlohmann::json& c) {
                       return Adam({.learning_rate = learning_rate_of(c),
                                    .beta_1 = c.at("beta_1").get<double>(),
                                    .beta_2 = c.at("beta_2").get<double>(),
                                    .epsilon = c.at("epsilon").get<double>(),
                                    .amsgrad = c.at("amsgrad").get<bool>(),
                                    .name = name_of(c, "Adam")});
                     },
                     {"adam"},
                     adam_params()},
                    {"AdamW",
                     [](const nlohmann::json& c) {
                       return AdamW({.learning_rate = learning_rate_of(c),
                                     .weight_decay = c.at("weight_decay").get<double>(),
                                     .beta_1 = c.at("beta_1").get<double>(),
                                     .beta_2 = c.at("beta_2").get<double>(),
                                     .epsilon = c.at("epsilon").get<double>(),
                                     .amsgrad = c.at("amsgrad").get<bool>(),
                                     .name = name_of(c, "AdamW")});
                     },
                     {"adamw"},
                     adamw_params()}});
  return r;
}

std::shared_ptr<Optimizer> get(const std::string& identifier) {
  return registry().get(identifier);
}

std::shared_ptr<Optimizer> from_config(const nlohmann::json& config) {
  if (config.is_string()) return get(config.get<std::string>());
  return registry().from_config(config.at("class_name").get<std::string>(), config.at("config"));
}

}  // namespace lockstep::keras::optimizers
