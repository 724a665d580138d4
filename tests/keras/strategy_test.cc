// Strategies in one process: MirroredStrategy on two logical CPU devices against one replica with the
// doubled batch (losses of 20 steps to 1e-5), run/reduce/gather semantics, distributed input splitting,
// InputContext, and errors.
#include "lockstep/distribute/strategy/strategy.h"

#include <gtest/gtest.h>

#include "lockstep/core/threads.h"
#include "lockstep/keras/model.h"

namespace lockstep::distribute {
namespace {

namespace kl = keras::layers;

data::Dataset toy_data(int64_t n) {
  Philox rng(11);
  Tensor x = random_uniform({n, 6, 6}, rng);
  Tensor y = raw_ops::cast(random_uniform({n}, rng, 0, 4, DType::float64), DType::int64);
  return data::Dataset::from_tensor_slices(x, y);
}

// 20 steps of the tutorials' custom loop under `strategy` with global batch `global`; returns each
// step's loss (strategy.reduce SUM of compute_average_loss).
std::vector<double> custom_loop_losses(Strategy& strategy, int64_t global) {
  keras::utils::set_random_seed(5);
  keras::Sequential model;
  std::shared_ptr<keras::optimizers::Optimizer> optimizer;
  {
    auto scope = strategy.scope();
    model = keras::Sequential({keras::Input({6, 6}), kl::Reshape({6, 6, 1}), kl::Conv2D(4, 3, {.activation = "relu"}),
                               kl::Flatten(), kl::Dense(8, {.activation = "relu"}), kl::Dense(4)});
    optimizer = keras::optimizers::SGD({.learning_rate = 0.1, .momentum = 0.5});
  }
  auto loss_fn = keras::losses::SparseCategoricalCrossentropy({.from_logits = true, .reduction = keras::losses::Reduction::NONE});
  auto dist = strategy.experimental_distribute_dataset(toy_data(512).shuffle(512, 3).repeat().batch(global));
  auto it = dist.begin();
  std::vector<double> losses;
  for (int step = 0; step < 20; ++step) {
    auto out = strategy.run(
        [&](const data::Batch& b) {
          GradientTape tape;
          Tensor loss = nn::compute_average_loss((*loss_fn)(b.y(), model(b.x(), {.training = true})), {.global_batch_size = global});
          auto vars = model.trainable_variables();
          optimizer->apply_gradients(tape.gradient(loss, vars), vars);
          return loss;
        },
        *it.next());
    losses.push_back(strategy.reduce(ReduceOp::SUM, out).item<double>());
  }
  return losses;
}

// Replica threads use the caller's intra-op thread count, not OpenMP's process default (all cores).
TEST(MirroredStrategy, ReplicaThreadsUseTheCallersThreadCount) {
  const int saved = num_threads();
  MirroredStrategy s({"/cpu:0", "/cpu:1", "/cpu:2"});
  for (int n : {1, 3}) {
    set_num_threads(n);
    auto counts = s.run([] { return num_threads(); });
    for (int c : counts.values) EXPECT_EQ(c, n);
  }
  set_num_threads(saved);
}

TEST(MirroredStrategy, TwoReplicasMatchOneWithTheDoubledBatch) {
  MirroredStrategy one;
  MirroredStrategy two({"/cpu:0", "/cpu:1"});
  EXPECT_EQ(two.num_replicas_in_sync(), 2);
  auto a = custom_loop_losses(one, 32), b = custom_loop_losses(two, 32);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(b[i], a[i], 1e-5 * std::abs(a[i])) << "step " << i;
  EXPECT_LT(a.back(), a.front());  // it trains
}

// One worker's replicas: the optimizer sums the replicas' gradients block by block as it updates each part of a
// variable (Strategy::unreduced_gradients), and the weights are bitwise those of all-reducing the gradients and
// then updating, for 3 replicas (the order of the sum shows) and a kernel larger than the update's chunks.
TEST(MirroredStrategy, TheUpdateThatSumsTheReplicasGradientsMatchesAllReduceThenUpdateBitwise) {
  auto model_under = [](Strategy& strategy, std::shared_ptr<keras::optimizers::Optimizer>& optimizer) {
    keras::utils::set_random_seed(7);
    auto scope = strategy.scope();
    optimizer = keras::optimizers::Adam({.learning_rate = 0.01});
    return keras::Sequential({keras::Input({6, 6}), kl::Flatten(), kl::Dense(3000, {.activation = "relu"}),
                              kl::Dense(4)});
  };
  const std::vector<std::string> devices{"/cpu:0", "/cpu:1", "/cpu:2"};
  MirroredStrategy fused(devices), reference(devices);
  std::shared_ptr<keras::optimizers::Optimizer> fused_optimizer, reference_optimizer;
  keras::Sequential a = model_under(fused, fused_optimizer), b = model_under(reference, reference_optimizer);
  auto loss_fn = keras::losses::SparseCategoricalCrossentropy({.from_logits = true, .reduction = keras::losses::Reduction::NONE});
  auto step_loss = [&](keras::Sequential& model, const data::Batch& batch) {
    return nn::compute_average_loss((*loss_fn)(batch.y(), model(batch.x(), {.training = true})), {.global_batch_size = 48});
  };
  auto a_data = fused.experimental_distribute_dataset(toy_data(480).batch(48));
  auto b_data = reference.experimental_distribute_dataset(toy_data(480).batch(48));
  auto a_it = a_data.begin(), b_it = b_data.begin();
  for (int step = 0; step < 10; ++step) {
    fused.run(
        [&](const data::Batch& batch) {
          GradientTape tape;
          Tensor loss = step_loss(a, batch);
          auto vars = a.trainable_variables();
          fused_optimizer->apply_gradients(tape.gradient(loss, vars), vars);
          return loss;
        },
        *a_it.next());
    std::vector<Tensor> reduced;
    reference.run(
        [&](const data::Batch& batch) {
          GradientTape tape;
          Tensor loss = step_loss(b, batch);
          auto vars = b.trainable_variables();
          auto sums = reference.all_reduce_gradients(tape.gradient(loss, vars), vars);
          if (replica_id_in_sync_group() == 0)
            for (const Tensor& g : sums) reduced.push_back(g.clone());
          return loss;
        },
        *b_it.next());
    reference_optimizer->apply_gradients(reduced, b.trainable_variables());  // outside the replicas: one update
  }
  auto wa = a.get_weights(), wb = b.get_weights();
  ASSERT_EQ(wa.size(), wb.size());
  for (size_t i = 0; i < wa.size(); ++i) EXPECT_EQ(wa[i].to_vector<float>(), wb[i].to_vector<float>()) << "weight " << i;
}

TEST(MirroredStrategy, ManySmallGradientBucketsGiveTheSameSteps) {
  // 1 KiB packs split the model's gradients into many buckets, all-reduced while backward goes on.
  MirroredStrategy one;
  MirroredStrategy packed({"/cpu:0", "/cpu:1"}, {.bytes_per_pack = 1024});
  auto a = custom_loop_losses(one, 32), b = custom_loop_losses(packed, 32);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(b[i], a[i], 1e-5 * std::abs(a[i])) << "step " << i;
}

// Under GradientCompression::BFLOAT16 each replica's gradient is rounded to bfloat16 and the sum is rounded
// again; NONE sums in float32. Values chosen so every rounding shows.
TEST(MirroredStrategy, BFloat16CompressionRoundsGradientsOnTheWire) {
  const std::vector<std::vector<float>> grads = {{1.0f + 0x1p-10f, 1.0f, 3.14159f}, {0x1p-10f, 1.0f / 3, 100.001f}};
  auto reduced = [&](GradientCompression compression) {
    MirroredStrategy s({"/cpu:0", "/cpu:1"}, {.gradient_compression = compression});
    Variable v;
    {
      auto scope = s.scope();
      v = Variable(zeros({3}, DType::float32));
    }
    auto out = s.run([&] {
      const Tensor g = from_vector(grads[static_cast<size_t>(replica_id_in_sync_group())], Shape({3}));
      return s.all_reduce_gradients({g}, {v})[0];
    });
    EXPECT_EQ(out.values[0].to_vector<float>(), out.values[1].to_vector<float>());
    return out.values[0].to_vector<float>();
  };
  const auto exact = reduced(GradientCompression::NONE), rounded = reduced(GradientCompression::BFLOAT16);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(exact[i], grads[0][i] + grads[1][i]) << i;
    const float wire = static_cast<float>(bfloat16(grads[0][i])) + static_cast<float>(bfloat16(grads[1][i]));
    EXPECT_EQ(rounded[i], static_cast<float>(bfloat16(wire))) << i;
    EXPECT_NE(rounded[i], exact[i]) << i;
  }
}

TEST(MirroredStrategy, BFloat16CompressionStillTrainsLikeFloat32) {
  MirroredStrategy exact({"/cpu:0", "/cpu:1"});
  MirroredStrategy compressed({"/cpu:0", "/cpu:1"}, {.gradient_compression = GradientCompression::BFLOAT16});
  auto a = custom_loop_losses(exact, 32), b = custom_loop_losses(compressed, 32);
  EXPECT_NE(a, b);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(b[i], a[i], 2e-2 * std::abs(a[i])) << "step " << i;
  EXPECT_LT(b.back(), b.front());
}

TEST(Strategy, GradientCompressionFromTheEnvironment) {
  ::setenv("LOCKSTEP_GRADIENT_COMPRESSION", "bfloat16", 1);
  EXPECT_EQ(MirroredStrategy().communication_options().gradient_compression, GradientCompression::BFLOAT16);
  ::setenv("LOCKSTEP_GRADIENT_COMPRESSION", "none", 1);
  EXPECT_EQ(MirroredStrategy().communication_options().gradient_compression, GradientCompression::NONE);
  ::setenv("LOCKSTEP_GRADIENT_COMPRESSION", "fp8", 1);
  EXPECT_THROW(MirroredStrategy(), ValueError);
  ::unsetenv("LOCKSTEP_GRADIENT_COMPRESSION");
}

TEST(MirroredStrategy, FitUnderTheStrategyMatchesOneReplica) {
  auto train = [](Strategy& strategy) {
    keras::utils::set_random_seed(9);
    keras::Sequential model;
    {
      auto scope = strategy.scope();
      model = keras::Sequential({keras::Input({6, 6}), kl::Flatten(), kl::Dense(16, {.activation = "relu"}), kl::Dense(4)});
      model.compile({.optimizer = keras::optimizers::Adam({.learning_rate = 0.01}),
                     .loss = keras::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                     .metrics = {"accuracy"}});
    }
    auto h = model.fit(toy_data(256).batch(32), {.epochs = 2, .verbose = 0});
    return std::pair{h.history["loss"], model.get_weights()};
  };
  MirroredStrategy one, two({"/cpu:0", "/cpu:1"});
  auto [la, wa] = train(one);
  auto [lb, wb] = train(two);
  for (size_t i = 0; i < la.size(); ++i) EXPECT_NEAR(lb[i], la[i], 1e-5 * la[i]);
  for (size_t i = 0; i < wa.size(); ++i) {
    auto x = wa[i].to_vector<float>(), y = wb[i].to_vector<float>();
    for (size_t j = 0; j < x.size(); ++j) ASSERT_NEAR(y[j], x[j], 1e-4) << "weight " << i << "[" << j << "]";
  }
}

TEST(Strategy, RunReduceGatherAndReplicaContext) {
  MirroredStrategy s({"/cpu:0", "/cpu:1", "/cpu:2"});
  EXPECT_FALSE(in_replica_context());
  auto ids = s.run([](int base) { return base + replica_id_in_sync_group(); }, 10);
  EXPECT_EQ(ids.values, (std::vector<int>{10, 11, 12}));
  auto values = s.run([] { return full({2}, replica_id_in_sync_group() + 1.0); });
  EXPECT_EQ(s.reduce(ReduceOp::SUM, values).to_vector<float>(), (std::vector<float>{6, 6}));
  EXPECT_EQ(s.reduce(ReduceOp::MEAN, values).to_vector<float>(), (std::vector<float>{2, 2}));
  EXPECT_FLOAT_EQ(s.reduce(ReduceOp::MEAN, values, 0).item<float>(), 2.0f);
  EXPECT_EQ(s.gather(values, 0).to_vector<float>(), (std::vector<float>{1, 1, 2, 2, 3, 3}));
  EXPECT_THROW(s.run([] { throw ValueError("replica failure"); }), ValueError);
}

TEST(Strategy, AFailingReplicaReleasesTheOthersWaitingForItInACollective) {
  CommunicationOptions options;
  options.timeout_seconds = 60;
  for (int failing : {0, 1}) {
    MirroredStrategy s({"/cpu:0", "/cpu:1"}, options);
    const auto start = std::chrono::steady_clock::now();
    EXPECT_THROW(s.run([&] {
      if (replica_id_in_sync_group() == failing) throw ValueError("replica failure");
      std::vector<double> values{1};
      s.all_reduce_sum(values);  // waits for the failed replica
    }), Error);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10)) << "failing replica " << failing;
  }
}

// A step that computes gradients of mirrored variables without all_reduce_gradients (a custom loop that reduces
// them itself) leaves nothing behind for the next step's all_reduce_gradients.
TEST(MirroredStrategy, GradientsAStepDidNotCollectDoNotReachTheNextStep) {
  MirroredStrategy s({"/cpu:0", "/cpu:1"});
  std::optional<Variable> w;
  {
    auto scope = s.scope();
    w.emplace(full({2}, 1.0));
  }
  auto grad_of = [&](double scale) {  // each replica's gradient of scale * (replica + 1) * sum(w)
    GradientTape tape;
    Tensor loss = reduce_sum(multiply(w->read(), full({2}, scale * (replica_id_in_sync_group() + 1))), {0}, false);
    return tape.gradient(loss, std::vector<Variable>{*w});
  };
  auto reduced = s.run([&] { return grad_of(100)[0]; });  // not collected
  EXPECT_EQ(s.reduce(ReduceOp::SUM, reduced).to_vector<float>(), (std::vector<float>{300, 300}));
  auto collected = s.run([&] { return s.all_reduce_gradients(grad_of(1), {*w})[0]; });
  for (const Tensor& g : collected.values) EXPECT_EQ(g.to_vector<float>(), (std::vector<float>{3, 3}));
}

TEST(Strategy, DistributedDatasetSplitsEachGlobalBatch) {
  MirroredStrategy s({"/cpu:0", "/cpu:1"});
  auto dist = s.experimental_distribute_dataset(data::Dataset::range(0, 8).batch(4));
  std::vector<std::vector<int64_t>> seen;
  for (const auto& per : dist)
    for (const data::Batch& b : per.values) seen.push_back(b.x().to_vector<int64_t>());
  // Each step's replicas hold exactly that step's global batch, dealt out element by element.
  EXPECT_EQ(seen, (std::vector<std::vector<int64_t>>{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  // A final partial global batch is spread over the replicas instead of starving one.
  auto partial = s.experimental_distribute_dataset(data::Dataset::range(0, 6).batch(4));
  std::vector<int64_t> sizes;
  for (const auto& per : partial)
    for (const data::Batch& b : per.values) sizes.push_back(b.x().dim(0));
  EXPECT_EQ(sizes, (std::vector<int64_t>{2, 2, 1, 1}));
  EXPECT_THROW(s.experimental_distribute_dataset(data::Dataset::range(0, 8).batch(3)), ValueError);  // 3 % 2
  EXPECT_THROW(s.experimental_distribute_dataset(data::Dataset::range(0, 8)), ValueError);          // not batched
  EXPECT_THROW(s.experimental_distribute_dataset(data::Dataset::range(0, 1).batch(2)), ValueError);  // 1 element, 2 replicas
}

TEST(Strategy, InputContextAndDevices) {
  InputContext ctx{2, 1, 4};
  EXPECT_EQ(ctx.get_per_replica_batch_size(64), 16);
  EXPECT_THROW(ctx.get_per_replica_batch_size(30), ValueError);
  EXPECT_THROW(MirroredStrategy({"/gpu:0"}), ValueError);
  MirroredStrategy s({"/cpu:0", "/cpu:1"});
  auto dist = s.distribute_datasets_from_function([](const InputContext& c) {
    EXPECT_EQ(c.num_replicas_in_sync, 2);
    return data::Dataset::range(0, 4).batch(c.get_per_replica_batch_size(2));
  });
  auto it = dist.begin();
  auto first = it.next();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->values[0].x().to_vector<int64_t>(), (std::vector<int64_t>{0}));
  EXPECT_EQ(first->values[1].x().to_vector<int64_t>(), (std::vector<int64_t>{1}));
}

TEST(Strategy, AveragingLossesAreRefusedInACustomLoopUnderAStrategy) {
  MirroredStrategy s({"/cpu:0", "/cpu:1"});
  auto mean_loss = keras::losses::SparseCategoricalCrossentropy({.from_logits = true});
  auto sum_loss = keras::losses::SparseCategoricalCrossentropy({.from_logits = true, .reduction = keras::losses::Reduction::SUM});
  Tensor y = from_vector<int64_t>({1}, {1}), logits = zeros({1, 3});
  EXPECT_THROW(s.run([&] { return (*mean_loss)(y, logits); }), ValueError);
  EXPECT_NO_THROW(s.run([&] { return (*sum_loss)(y, logits); }));
  EXPECT_NO_THROW((*mean_loss)(y, logits));  // outside the replicas, as in TF
}

TEST(MirroredStrategy, BatchNormalizationAveragesStatisticsOverReplicas) {
  MirroredStrategy s({"/cpu:0", "/cpu:1"});
  keras::Sequential model;
  {
    auto scope = s.scope();
    model = keras::Sequential({keras::Input({2}), kl::BatchNormalization({.momentum = 0.5}), kl::Dropout(0.5)});
  }
  distribute::PerReplica<Tensor> x{{full({4, 2}, 1.0), full({4, 2}, 3.0)}};
  s.run([&](const Tensor& b) { return model(b, {.training = true}); }, x);
  // Replicas saw means 1 and 3: the moving mean moves halfway to their average, 2.
  EXPECT_EQ(model.non_trainable_variables()[0].value().to_vector<float>(), (std::vector<float>{1, 1}));
}

TEST(Strategy, DefaultStrategyAndScopes) {
  EXPECT_FALSE(has_strategy());
  EXPECT_EQ(get_strategy().num_replicas_in_sync(), 1);
  MirroredStrategy s({"/cpu:0", "/cpu:1"});
  {
    auto scope = s.scope();
    EXPECT_EQ(&get_strategy(), &s);
    Variable v(zeros({3}));
    EXPECT_EQ(s.mirrored_variables().size(), 1u);
  }
  EXPECT_FALSE(has_strategy());
}

}  // namespace
}  // namespace lockstep::distribute
