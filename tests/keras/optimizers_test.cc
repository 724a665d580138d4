// Optimizers against a double-precision re-implementation of Keras 3's update formulas, learning-rate
// schedules, slot state save/restore, and the errors users see.
#include "lockstep/keras/optimizers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "lockstep/autograd/ops.h"

namespace lockstep::keras::optimizers {
namespace {

using Vec = std::vector<double>;

// Keras 3's formulas, one element at a time, in double. `slots` holds what the optimizer keeps.
struct Reference {
  std::string kind;  // "sgd", "rmsprop", "adam", "adagrad"
  double lr, momentum = 0, rho = 0.9, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1e-7, initial_accumulator = 0.1;
  bool nesterov = false, centered = false, amsgrad = false;

  // Applies `grads` (one vector per step) to w and returns the weights after each step.
  std::vector<Vec> run(Vec w, const std::vector<Vec>& grads, const std::function<double(int64_t)>& lr_at = {}) const {
    const size_t n = w.size();
    Vec m(n, 0), v(n, 0), a(n, 0), vhat(n, 0), accumulator(n, initial_accumulator);
    std::vector<Vec> out;
    for (size_t step = 0; step < grads.size(); ++step) {
      const double l = lr_at ? lr_at(static_cast<int64_t>(step)) : lr, t = static_cast<double>(step + 1);
      for (size_t i = 0; i < n; ++i) {
        const double g = grads[step][i];
        if (kind == "sgd") {
          if (momentum == 0) {
            w[i] -= l * g;
          } else {
            m[i] = momentum * m[i] - l * g;
            w[i] += nesterov ? momentum * m[i] - l * g : m[i];
          }
        } else if (kind == "rmsprop") {
          v[i] = rho * v[i] + (1 - rho) * g * g;
          double denominator = v[i];
          if (centered) {
            a[i] = rho * a[i] + (1 - rho) * g;
            denominator = v[i] - a[i] * a[i];
          }
          const double increment = l * g / std::sqrt(denominator + epsilon);
          if (momentum > 0) {
            m[i] = momentum * m[i] + increment;
            w[i] -= m[i];
          } else {
            w[i] -= increment;
          }
        } else if (kind == "adagrad") {
          accumulator[i] += g * g;
          w[i] -= l * g / std::sqrt(accumulator[i] + epsilon);
        } else {
          const double alpha = l * std::sqrt(1 - std::pow(beta_2, t)) / (1 - std::pow(beta_1, t));
          m[i] += (g - m[i]) * (1 - beta_1);
          v[i] += (g * g - v[i]) * (1 - beta_2);
          vhat[i] = std::max(vhat[i], v[i]);
          w[i] -= alpha * m[i] / (std::sqrt(amsgrad ? vhat[i] : v[i]) + epsilon);
        }
      }
      out.push_back(w);
    }
    return out;
  }
};

struct Case {
  std::string label;
  std::function<std::shared_ptr<Optimizer>()> make;
  Reference ref;
};

std::vector<Case> cases() {
  return {
      {"sgd", [] { return SGD({.learning_rate = 0.1}); }, {.kind = "sgd", .lr = 0.1}},
      {"sgd_momentum",
       [] { return SGD({.learning_rate = 0.1, .momentum = 0.9}); },
       {.kind = "sgd", .lr = 0.1, .momentum = 0.9}},
      {"sgd_nesterov",
       [] { return SGD({.learning_rate = 0.05, .momentum = 0.8, .nesterov = true}); },
       {.kind = "sgd", .lr = 0.05, .momentum = 0.8, .nesterov = true}},
      {"rmsprop", [] { return RMSprop({.learning_rate = 0.01}); }, {.kind = "rmsprop", .lr = 0.01}},
      {"rmsprop_momentum",
       [] { return RMSprop({.learning_rate = 0.01, .rho = 0.8, .momentum = 0.5}); },
       {.kind = "rmsprop", .lr = 0.01, .momentum = 0.5, .rho = 0.8}},
      {"rmsprop_centered",
       [] { return RMSprop({.learning_rate = 0.01, .epsilon = 1e-3, .centered = true}); },
       {.kind = "rmsprop", .lr = 0.01, .epsilon = 1e-3, .centered = true}},
      {"rmsprop_centered_momentum",
       [] { return RMSprop({.learning_rate = 0.02, .momentum = 0.3, .epsilon = 1e-3, .centered = true}); },
       {.kind = "rmsprop", .lr = 0.02, .momentum = 0.3, .epsilon = 1e-3, .centered = true}},
      {"adam", [] { return Adam({.learning_rate = 0.01}); }, {.kind = "adam", .lr = 0.01}},
      {"adam_betas",
       [] { return Adam({.learning_rate = 0.1, .beta_1 = 0.5, .beta_2 = 0.6, .epsilon = 1e-3}); },
       {.kind = "adam", .lr = 0.1, .beta_1 = 0.5, .beta_2 = 0.6, .epsilon = 1e-3}},
      {"adam_amsgrad",
       [] { return Adam({.learning_rate = 0.1, .beta_2 = 0.5, .amsgrad = true}); },
       {.kind = "adam", .lr = 0.1, .beta_2 = 0.5, .amsgrad = true}},
      {"adagrad", [] { return Adagrad({.learning_rate = 0.1}); }, {.kind = "adagrad", .lr = 0.1}},
      {"adagrad_no_initial_accumulator",
       [] { return Adagrad({.learning_rate = 0.05, .initial_accumulator_value = 0, .epsilon = 1e-3}); },
       {.kind = "adagrad", .lr = 0.05, .epsilon = 1e-3, .initial_accumulator = 0}},
  };
}

// Large then small gradients, so that AMSGrad's running maximum differs from v.
const Vec kW0 = {0.5, -1.0, 2.0, 0.0};
const std::vector<Vec> kGrads = {{1.0, -2.0, 0.5, 3.0}, {0.1, 0.2, -0.3, 0.01}, {-0.05, 0.02, 0.1, -0.2}};

template <typename T>
Variable variable(const Vec& w, const std::string& name = "w") {
  return Variable(from_vector(std::vector<T>(w.begin(), w.end()), Shape{static_cast<int64_t>(w.size())}),
                  {.name = name});
}
template <typename T>
Tensor tensor(const Vec& g) {
  return from_vector(std::vector<T>(g.begin(), g.end()), Shape{static_cast<int64_t>(g.size())});
}

template <typename T>
void check_trajectory(const Case& c, double tolerance) {
  SCOPED_TRACE(c.label);
  auto opt = c.make();
  Variable w = variable<T>(kW0);
  const std::vector<Vec> expected = c.ref.run(kW0, kGrads);
  for (size_t step = 0; step < kGrads.size(); ++step) {
    opt->apply_gradients({tensor<T>(kGrads[step])}, {w});
    EXPECT_EQ(opt->iterations(), static_cast<int64_t>(step + 1));
    auto got = w.value().to_vector<double>();
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], expected[step][i], tolerance * (1 + std::abs(expected[step][i])))
          << "step " << step + 1 << " element " << i;
  }
}

TEST(Optimizers, Float32TrajectoriesMatchTheFormulas) {
  for (const Case& c : cases()) check_trajectory<float>(c, 2e-6);
}

TEST(Optimizers, Float64TrajectoriesMatchTheFormulas) {
  for (const Case& c : cases()) check_trajectory<double>(c, 1e-13);
}

TEST(Optimizers, AmsgradDiffersFromAdamOnShrinkingGradients) {
  Reference adam{.kind = "adam", .lr = 0.1, .beta_2 = 0.5}, ams = adam;
  ams.amsgrad = true;
  EXPECT_GT(std::abs(adam.run(kW0, kGrads).back()[0] - ams.run(kW0, kGrads).back()[0]), 1e-4);
}

TEST(Optimizers, LargeVariablesAreUpdatedInParallelChunksWithTheSameResult) {
  const int64_t n = 200003;  // several chunks and a ragged end
  Vec w0(static_cast<size_t>(n)), g(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    w0[static_cast<size_t>(i)] = std::sin(static_cast<double>(i));
    g[static_cast<size_t>(i)] = std::cos(0.5 * static_cast<double>(i));
  }
  auto opt = Adam({.learning_rate = 0.01});
  Variable w = variable<float>(w0);
  for (int step = 0; step < 2; ++step) opt->apply_gradients({tensor<float>(g)}, {w});
  Reference ref{.kind = "adam", .lr = 0.01};
  const Vec expected = ref.run(w0, {g, g}).back();
  auto got = w.value().to_vector<double>();
  for (int64_t i = 0; i < n; i += 997) EXPECT_NEAR(got[static_cast<size_t>(i)], expected[static_cast<size_t>(i)], 1e-6);
  EXPECT_NEAR(got.back(), expected.back(), 1e-6);
}

TEST(Optimizers, StepsAfterTheFirstAllocateNothing) {
  auto opt = Adam({.amsgrad = true});
  Variable w = variable<float>(kW0);
  std::vector<Tensor> grads = {tensor<float>(kGrads[0])};
  opt->apply_gradients(grads, {w});  // creates the slots
  const int64_t before = allocator_stats().allocations;
  for (int i = 0; i < 5; ++i) opt->apply_gradients(grads, {w});
  EXPECT_EQ(allocator_stats().allocations, before);
}

TEST(Optimizers, UndefinedGradientsAreSkippedAndIterationsStillCount) {
  auto opt = SGD({.learning_rate = 0.1});
  Variable a = variable<float>({1.0}, "a"), b = variable<float>({1.0}, "b");
  opt->apply_gradients({Tensor(), tensor<float>({1.0})}, {a, b});
  opt->apply_gradients({Tensor(), tensor<float>({1.0})}, {a, b});  // warns only once
  EXPECT_FLOAT_EQ(a.value().item<float>(), 1.0f);
  EXPECT_FLOAT_EQ(b.value().item<float>(), 0.8f);
  EXPECT_EQ(opt->iterations(), 2);
}

TEST(Optimizers, MismatchedGradientsNameTheVariable) {
  auto opt = Adam();
  Variable w = variable<float>({1.0, 2.0}, "dense/kernel");
  try {
    opt->apply_gradients({tensor<float>({1.0, 2.0, 3.0})}, {w});
    FAIL() << "shape mismatch accepted";
  } catch (const InvalidArgumentError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("dense/kernel"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(3,)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(2,)"), std::string::npos) << msg;
  }
  EXPECT_THROW(opt->apply_gradients({tensor<double>({1.0, 2.0})}, {w}), InvalidArgumentError);  // dtype
  EXPECT_THROW(opt->apply_gradients({}, {w}), InvalidArgumentError);                            // count
  EXPECT_EQ(opt->iterations(), 0);
}

// ---- schedules ----

TEST(Schedules, ExponentialDecay) {
  ExponentialDecay smooth({.initial_learning_rate = 0.1, .decay_steps = 10, .decay_rate = 0.5});
  EXPECT_DOUBLE_EQ(smooth(0), 0.1);
  EXPECT_DOUBLE_EQ(smooth(5), 0.1 * std::pow(0.5, 0.5));
  EXPECT_DOUBLE_EQ(smooth(10), 0.05);
  EXPECT_DOUBLE_EQ(smooth(25), 0.1 * std::pow(0.5, 2.5));
  ExponentialDecay stairs({.initial_learning_rate = 0.1, .decay_steps = 10, .decay_rate = 0.5, .staircase = true});
  EXPECT_DOUBLE_EQ(stairs(9), 0.1);
  EXPECT_DOUBLE_EQ(stairs(10), 0.05);
  EXPECT_DOUBLE_EQ(stairs(25), 0.025);
  EXPECT_EQ(stairs.get_config()["staircase"], true);
  EXPECT_EQ(stairs.get_config()["decay_steps"], 10);
  EXPECT_THROW(ExponentialDecay({.decay_steps = 0}), ValueError);
}

TEST(Schedules, PiecewiseConstantDecayKeepsEachValueUpToAndIncludingItsBoundary) {
  PiecewiseConstantDecay s({100, 200}, {1.0, 0.5, 0.1});
  EXPECT_DOUBLE_EQ(s(0), 1.0);
  EXPECT_DOUBLE_EQ(s(99), 1.0);
  EXPECT_DOUBLE_EQ(s(100), 1.0);
  EXPECT_DOUBLE_EQ(s(101), 0.5);
  EXPECT_DOUBLE_EQ(s(200), 0.5);
  EXPECT_DOUBLE_EQ(s(201), 0.1);
  EXPECT_DOUBLE_EQ(s(100000), 0.1);
  try {
    PiecewiseConstantDecay({100, 200}, {1.0, 0.5});
    FAIL() << "accepted too few values";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("boundaries + 1"), std::string::npos) << e.what();
  }
}

TEST(Schedules, OptimizerUsesTheScheduleAtItsIterationCount) {
  PiecewiseConstantDecay schedule({1}, {0.1, 0.01});
  auto opt = SGD({.learning_rate = schedule});
  EXPECT_DOUBLE_EQ(opt->learning_rate(), 0.1);
  Variable w = variable<double>(kW0);
  for (const Vec& g : kGrads) opt->apply_gradients({tensor<double>(g)}, {w});
  Reference ref{.kind = "sgd", .lr = 0};
  const Vec expected = ref.run(kW0, kGrads, schedule).back();
  auto got = w.value().to_vector<double>();
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-15);
  EXPECT_DOUBLE_EQ(opt->learning_rate(), 0.01);
  EXPECT_EQ(opt->get_config()["learning_rate"]["class_name"], "PiecewiseConstantDecay");

  opt->set_learning_rate(0.5);  // what the LearningRateScheduler callback does
  EXPECT_DOUBLE_EQ(opt->learning_rate(), 0.5);
  EXPECT_EQ(opt->get_config()["learning_rate"], 0.5);
  auto shared = std::make_shared<ExponentialDecay>(
      ExponentialDecayOptions{.initial_learning_rate = 0.2, .decay_steps = 1, .decay_rate = 0.5});
  EXPECT_DOUBLE_EQ(Adam({.learning_rate = shared})->learning_rate(), 0.2);
  // A schedule passed by value, as Keras code reads.
  auto decayed =
      Adam({.learning_rate = ExponentialDecay({.initial_learning_rate = 0.2, .decay_steps = 1, .decay_rate = 0.5})});
  Variable w1 = variable<float>({1.0});
  decayed->apply_gradients({tensor<float>({1.0})}, {w1});
  EXPECT_DOUBLE_EQ(decayed->learning_rate(), 0.1);
}

// ---- state ----

TEST(Optimizers, StateRoundTripGivesIdenticalNextUpdates) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.label);
    auto opt = c.make();
    Variable a = variable<float>(kW0, "dense/kernel"), b = variable<float>({1.0, 2.0}, "dense/bias");
    for (int step = 0; step < 2; ++step)
      opt->apply_gradients({tensor<float>(kGrads[step]), tensor<float>({0.3, -0.7})}, {a, b});
    auto saved = opt->state();
    ASSERT_FALSE(saved.empty());
    EXPECT_EQ(saved[0].first, "iterations");
    EXPECT_EQ(saved[0].second.dtype(), DType::int64);
    EXPECT_EQ(saved[0].second.item<int64_t>(), 2);
    for (size_t i = 1; i < saved.size(); ++i)
      EXPECT_EQ(saved[i].first.rfind(opt->name() + "/dense/", 0), 0u) << saved[i].first;

    // Restored into a fresh optimizer before its first step, and into one that has already built its slots.
    Variable a2(a.value(), {.name = "dense/kernel"}), b2(b.value(), {.name = "dense/bias"});
    Variable a3(a.value(), {.name = "dense/kernel"}), b3(b.value(), {.name = "dense/bias"});
    auto fresh = c.make(), built = c.make();
    fresh->set_state(saved);
    built->build({a3, b3});
    built->set_state(saved);
    EXPECT_EQ(fresh->iterations(), 2);

    const std::vector<Tensor> g = {tensor<float>(kGrads[2]), tensor<float>({-0.1, 0.2})};
    opt->apply_gradients(g, {a, b});
    fresh->apply_gradients(g, {a2, b2});
    built->apply_gradients(g, {a3, b3});
    EXPECT_EQ(a.value().to_vector<float>(), a2.value().to_vector<float>());
    EXPECT_EQ(b.value().to_vector<float>(), b2.value().to_vector<float>());
    EXPECT_EQ(a.value().to_vector<float>(), a3.value().to_vector<float>());
    EXPECT_EQ(b.value().to_vector<float>(), b3.value().to_vector<float>());
  }
}

TEST(Optimizers, StateIsASnapshotWithKerasSlotNames) {
  auto opt = Adam({.amsgrad = true});
  Variable w = variable<float>(kW0, "kernel");
  opt->apply_gradients({tensor<float>(kGrads[0])}, {w});
  auto saved = opt->state();
  std::vector<std::string> names;
  for (auto& [name, t] : saved) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"iterations", "Adam/kernel/momentum", "Adam/kernel/velocity",
                                             "Adam/kernel/velocity_hat"}));
  const auto momentum = saved[1].second.to_vector<float>();
  opt->apply_gradients({tensor<float>(kGrads[1])}, {w});
  EXPECT_EQ(saved[1].second.to_vector<float>(), momentum);  // later steps do not change a saved state
}

TEST(Optimizers, VariablesWithOneNameGetDistinctStateNames) {
  auto opt = SGD({.momentum = 0.9});
  Variable a = variable<float>({1.0}, "kernel"), b = variable<float>({1.0}, "kernel");
  opt->build({a, b});
  auto s = opt->state();
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[1].first, "SGD/kernel/momentum");
  EXPECT_EQ(s[2].first, "SGD/kernel_1/momentum");
}

TEST(Optimizers, SetStateRejectsMismatchesNamingTheEntry) {
  auto opt = Adam();
  Variable w = variable<float>(kW0, "kernel");
  opt->build({w});
  try {
    opt->set_state({{"Adam/kernel/momentum", zeros(Shape{3})}});
    FAIL() << "shape mismatch accepted";
  } catch (const ValueError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("Adam/kernel/momentum"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(3,)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(4,)"), std::string::npos) << msg;
  }
  try {
    opt->set_state({{"SGD/kernel/momentum", zeros(Shape{4})}});
    FAIL() << "another optimizer's state accepted";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("SGD/kernel/momentum"), std::string::npos) << e.what();
  }
  EXPECT_THROW(opt->set_state({{"Adam/kernel/nonsense", zeros(Shape{4})}}), ValueError);

  // A slot restored before its variable is seen is checked when the slot is created.
  auto fresh = Adam();
  fresh->set_state({{"Adam/kernel/momentum", zeros(Shape{3})}});
  EXPECT_THROW(fresh->apply_gradients({tensor<float>(kGrads[0])}, {w}), ValueError);
}

// ---- identifiers and config ----

TEST(Optimizers, GetByName) {
  EXPECT_EQ(get("sgd")->name(), "SGD");
  EXPECT_EQ(get("RMSprop")->name(), "RMSprop");
  auto adam = get("ADAM");
  EXPECT_EQ(adam->name(), "Adam");
  EXPECT_DOUBLE_EQ(adam->learning_rate(), 0.001);
  EXPECT_DOUBLE_EQ(get("sgd")->learning_rate(), 0.01);
  try {
    get("nope");
    FAIL() << "unknown optimizer accepted";
  } catch (const ValueError& e) {
    std::string valid;  // every short name, from the registry: a new optimizer needs no edit here
    for (const std::string& name : registry().identifiers()) valid += (valid.empty() ? "'" : ", '") + name + "'";
    EXPECT_EQ(std::string(e.what()), "Could not interpret optimizer identifier: 'nope'. Valid names: " + valid + ".");
    EXPECT_NE(valid.find("'sgd', 'rmsprop', 'adam'"), std::string::npos) << valid;
  }
}

TEST(Optimizers, GetConfig) {
  auto c = SGD({.learning_rate = 0.1, .momentum = 0.9, .nesterov = true, .name = "my_sgd"})->get_config();
  EXPECT_EQ(c["name"], "my_sgd");
  EXPECT_DOUBLE_EQ(c["learning_rate"].get<double>(), 0.1);
  EXPECT_DOUBLE_EQ(c["momentum"].get<double>(), 0.9);
  EXPECT_EQ(c["nesterov"], true);
  auto a = Adam({.amsgrad = true})->get_config();
  EXPECT_DOUBLE_EQ(a["beta_2"].get<double>(), 0.999);
  EXPECT_EQ(a["amsgrad"], true);
  auto r = RMSprop({.centered = true})->get_config();
  EXPECT_DOUBLE_EQ(r["rho"].get<double>(), 0.9);
  EXPECT_EQ(r["centered"], true);
  auto g = Adagrad({.initial_accumulator_value = 0.5})->get_config();
  EXPECT_DOUBLE_EQ(g["initial_accumulator_value"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(g["epsilon"].get<double>(), 1e-7);
  EXPECT_THROW(SGD({.momentum = 1.5}), ValueError);
  EXPECT_THROW(Adagrad({.initial_accumulator_value = -1}), ValueError);
}

// The slot groups of Keras 3's build(), which order the slots in a .keras file.
TEST(Optimizers, KerasSlotGroupsFollowKerasBuild) {
  using Groups = std::vector<std::vector<std::string>>;
  EXPECT_EQ(SGD()->keras_slot_groups(), Groups{});
  EXPECT_EQ(SGD({.momentum = 0.9})->keras_slot_groups(), (Groups{{"momentum"}}));
  EXPECT_EQ(RMSprop()->keras_slot_groups(), (Groups{{"velocity"}}));
  EXPECT_EQ(RMSprop({.momentum = 0.5, .centered = true})->keras_slot_groups(),
            (Groups{{"velocity"}, {"momentum"}, {"average_gradient"}}));
  EXPECT_EQ(Adam()->keras_slot_groups(), (Groups{{"momentum", "velocity"}}));
  EXPECT_EQ(Adam({.amsgrad = true})->keras_slot_groups(), (Groups{{"momentum", "velocity"}, {"velocity_hat"}}));
  EXPECT_EQ(Adagrad()->keras_slot_groups(), (Groups{{"accumulator"}}));
}

// Adagrad's accumulators start at initial_accumulator_value (Keras' Constant initializer), in state() too.
TEST(Optimizers, AdagradAccumulatorsStartAtTheirInitialValue) {
  auto opt = Adagrad({.initial_accumulator_value = 0.25});
  Variable w = variable<float>(kW0);
  opt->build({w});
  const auto state = opt->state();
  ASSERT_EQ(state.size(), 2u);
  EXPECT_EQ(state[1].first, "Adagrad/w/accumulator");
  for (float a : state[1].second.to_vector<float>()) EXPECT_FLOAT_EQ(a, 0.25f);
}

}  // namespace
}  // namespace lockstep::keras::optimizers
