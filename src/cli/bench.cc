// `lockstep bench`: what bench/compare.sh measures against the peers. `bench step` times warm Keras fit steps
// of a built-in model on synthetic data (one worker of the TF_CONFIG cluster, or MirroredStrategy replicas);
// `bench allreduce` times the cross-worker all-reduce of one backend, in the format of bench/peers/mpi_allreduce.c.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>
#include <vector>

#include "cli.h"
#include "flags.h"
#include "lockstep/core/dtype.h"
#include "lockstep/core/error.h"
#include "lockstep/core/threads.h"
#include "lockstep/data/datasets.h"
#include "lockstep/distribute/strategy/strategy.h"
#include "lockstep/keras/callbacks.h"
#include "lockstep/keras/layers.h"
#include "lockstep/kernels/cpu/features.h"

namespace lockstep::cli {

namespace {

using Clock = std::chrono::steady_clock;

// "1,4,16" as sizes in MiB from 1 to 4096; nullopt when any is not.
std::optional<std::vector<int64_t>> parse_sizes(const std::string& text) {
  std::vector<int64_t> sizes;
  std::istringstream in(text);
  for (std::string part; std::getline(in, part, ',');) {
    auto mib = parse_number<int64_t>(part, [](int64_t v) { return v >= 1 && v <= 4096; });
    if (!mib) return std::nullopt;
    sizes.push_back(*mib);
  }
  if (sizes.empty() || text.back() == ',') return std::nullopt;
  return sizes;
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // KiB on Linux
}

// Seconds since this process started (/proc/self/stat's start time against the boot-time clock).
std::optional<double> seconds_since_process_start() {
  FILE* f = std::fopen("/proc/self/stat", "r");
  if (!f) return std::nullopt;
  char buf[1024];
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = 0;
  const char* p = std::strrchr(buf, ')');  // the command name may hold spaces
  unsigned long long start_ticks = 0;
  if (!p || std::sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                        &start_ticks) != 1)
    return std::nullopt;
  timespec now{};
  clock_gettime(CLOCK_BOOTTIME, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec) -
         static_cast<double>(start_ticks) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// ---- bench allreduce ----

struct AllreduceArgs {
  std::vector<int64_t> sizes_mib = {1, 4, 16, 64};
  int64_t iters = 10;
  std::string implementation = "auto";
  std::string dtype = "float32";
};

int run_allreduce(const AllreduceArgs& a) {
  using distribute::CommunicationImplementation;
  const CommunicationImplementation implementation = a.implementation == "ring"  ? CommunicationImplementation::RING
                                                     : a.implementation == "mpi" ? CommunicationImplementation::MPI
                                                                                 : CommunicationImplementation::AUTO;
  distribute::MultiWorkerMirroredStrategy strategy({.implementation = implementation});
  distribute::Communicator* comm = strategy.cross_worker();
  LS_CHECK(comm, ValueError, "lockstep bench allreduce measures the all-reduce between workers, but this process "
           "is a single worker: run it under `lockstep launch -n 2 --`, with TF_CONFIG, or under mpirun");
  const DType dtype = a.dtype == "bfloat16" ? DType::bfloat16 : DType::float32;
  const size_t element = dtype_size(dtype);
  const int n = comm->size();
  if (comm->rank() == 0) std::printf("%s\n", kernels::cpu::cpu_features().summary().c_str());
  for (const int64_t mib : a.sizes_mib) {
    const size_t bytes = static_cast<size_t>(mib) << 20, count = bytes / element;
    std::vector<unsigned char> buffer(bytes);
    if (dtype == DType::bfloat16) {
      std::vector<bfloat16> ones(count, bfloat16(1.0f));
      std::memcpy(buffer.data(), ones.data(), bytes);
    } else {
      std::vector<float> ones(count, 1.0f);
      std::memcpy(buffer.data(), ones.data(), bytes);
    }
    comm->all_reduce(buffer.data(), count, dtype, distribute::ReduceOp::SUM);  // warm-up: connections, buffers
    double best = 1e30;
    for (int64_t i = 0; i < a.iters; ++i) {
      comm->barrier();
      const auto start = Clock::now();
      comm->all_reduce(buffer.data(), count, dtype, distribute::ReduceOp::SUM);
      best = std::min(best, std::chrono::duration<double>(Clock::now() - start).count());
    }
    const double algbw = static_cast<double>(bytes) / best / 1e9;
    if (comm->rank() == 0) {
      std::printf("lockstep %s %2lld MiB  %8.3f ms  algbw %5.2f GB/s  busbw %5.2f GB/s\n", a.implementation.c_str(),
                  static_cast<long long>(mib), best * 1e3, algbw, algbw * 2.0 * (n - 1) / n);
      std::fflush(stdout);
    }
  }
  return 0;
}

// ---- bench step ----

struct StepArgs {
  std::string model = "tutorial_cnn";
  int64_t batch_size = 64;  // per replica: per worker under MultiWorkerMirroredStrategy
  int threads = 1;
  int64_t steps = 100;
  int64_t warmup = 10;
  std::string optimizer = "sgd";
  std::string dataset = "synthetic";
  int replicas = 1;
  int64_t backup_every = 0;
  bool backup_sync = false;
  std::string gradient_compression = "none";
  std::string dtype_policy = "float32";
};

// Training FLOPs of one example: forward 2 x the multiply-adds of every Conv2D and Dense, backward twice the
// forward (gradients of the inputs and of the weights). Other layers are memory-bound and not counted.
double training_flops_per_example(const keras::Sequential& model) {
  double macs = 0;
  Shape shape({28, 28});
  for (const keras::LayerPtr& layer : model.layers()) {
    shape = layer->compute_output_shape(shape);
    const Variable* kernel = nullptr;
    if (auto* conv = dynamic_cast<const keras::layers::Conv2D*>(layer.get())) kernel = &conv->kernel();
    if (auto* dense = dynamic_cast<const keras::layers::Dense*>(layer.get())) kernel = &dense->kernel();
    if (!kernel) continue;
    // Each output element takes kernel.numel() / filters multiply-adds.
    const Shape& k = kernel->shape();
    macs += static_cast<double>(k.numel()) * static_cast<double>(shape.numel()) / static_cast<double>(k.dims().back());
  }
  return 3 * 2 * macs;
}

// Times the warm steps of fit (from the end of the last warm-up step to the end of the last step) and notes the
// first finished step, which ends the start-up.
class StepTimer : public keras::Callback {
 public:
  StepTimer(int64_t warmup, bool chief) : warmup_(warmup), chief_(chief) {}
  void on_train_batch_end(int64_t, const keras::Logs&) override {
    ++done_;
    if (done_ == 1 && chief_) {
      // Printed as it happens: bench/compare.sh times the start-up from its command's start to this line.
      if (auto s = seconds_since_process_start()) std::printf("start-up: first step done %.3f s after the process started\n", *s);
      else std::printf("start-up: first step done\n");
      std::fflush(stdout);
    }
    if (done_ == warmup_) mark(start_, start_cpu_);
    mark(end_, end_cpu_);
  }
  double seconds() const { return std::chrono::duration<double>(end_ - start_).count(); }
  double cpu_seconds_used() const { return end_cpu_ - start_cpu_; }

 private:
  static void mark(Clock::time_point& t, double& cpu) {
    t = Clock::now();
    cpu = cpu_seconds();
  }
  int64_t warmup_, done_ = 0;
  bool chief_;
  Clock::time_point start_, end_;
  double start_cpu_ = 0, end_cpu_ = 0;
};

std::unique_ptr<distribute::Strategy> make_strategy(int replicas, const distribute::CommunicationOptions& options) {
  if (replicas == 1) return std::make_unique<distribute::MultiWorkerMirroredStrategy>(options);
  LS_CHECK(!std::getenv("TF_CONFIG"), ValueError, "--replicas ", replicas, " runs MirroredStrategy's replicas in "
           "this one process, but TF_CONFIG makes it a worker of a cluster: use --replicas 1 under lockstep launch, "
           "or unset TF_CONFIG");
  std::vector<std::string> devices;
  for (int r = 0; r < replicas; ++r) devices.push_back("/cpu:" + std::to_string(r));
  return std::make_unique<distribute::MirroredStrategy>(devices, options);
}

// --optimizer by Keras name, at a learning rate of 0.001.
std::shared_ptr<keras::optimizers::Optimizer> make_optimizer(const std::string& name) {
  std::shared_ptr<keras::optimizers::Optimizer> optimizer = keras::optimizers::get(name);
  optimizer->set_learning_rate(0.001);
  return optimizer;
}

int run_step(const StepArgs& a) {
  LS_CHECK(!a.backup_sync || a.backup_every > 0, ValueError,
           "--backup-sync makes the backups of --backup-every synchronous: add --backup-every N");
  LS_CHECK(a.warmup <= INT64_MAX - a.steps, ValueError, "--warmup ", a.warmup, " plus --steps ", a.steps,
           " is more steps than fit() can count: ask for fewer");
  set_num_threads(a.threads);
  std::unique_ptr<distribute::Strategy> strategy =
      make_strategy(a.replicas, {.gradient_compression = gradient_compression(a.gradient_compression)});
  // Each step gathers one global batch (the synthetic data is one): one that cannot fit is refused up front.
  const double batch_bytes = static_cast<double>(a.batch_size) * strategy->num_replicas_in_sync() *
                             (28 * 28 * sizeof(float) + sizeof(int64_t));
  const std::optional<double> available = available_memory_bytes();
  LS_CHECK(!available || batch_bytes <= *available, ValueError, "--batch-size ", a.batch_size, " x ",
           strategy->num_replicas_in_sync(), " replicas needs ", static_cast<int64_t>(batch_bytes / (1 << 20)),
           " MiB for one batch of input alone, but ", static_cast<int64_t>(*available / (1 << 20)),
           " MiB are available: use a smaller --batch-size");
  const int64_t global = a.batch_size * strategy->num_replicas_in_sync();
  keras::mixed_precision::set_global_policy(a.dtype_policy);
  keras::Sequential model = [&] {
    auto scope = strategy->scope();
    keras::Sequential m = build_model(a.model);
    m.compile({.optimizer = make_optimizer(a.optimizer),
               .loss = keras::losses::SparseCategoricalCrossentropy({.from_logits = true})});
    return m;
  }();
  // Fashion-MNIST makes the start-up that of a real job (reading and converting the 60000 images); the steps
  // cost the same either way.
  Tensor x, y;
  if (a.dataset == "fashion_mnist") {
    datasets::Split train = datasets::fashion_mnist::load_data().first;
    x = cast(train.images, DType::float32) / 255.0;
    y = cast(train.labels, DType::int64);
  } else {
    Philox rng(0);
    x = random_uniform({global, 28, 28}, rng);
    y = cast(random_uniform({global}, rng, 0, 10, DType::float64), DType::int64);
  }
  data::Dataset ds = data::Dataset::from_tensor_slices(x, y).repeat().batch(global);

  const bool chief = strategy->is_chief();
  auto timer = std::make_shared<StepTimer>(a.warmup, chief);
  std::vector<keras::CallbackPtr> callbacks{timer};
  std::filesystem::path backup_dir;
  if (a.backup_every > 0) {
    backup_dir = std::filesystem::temp_directory_path() / ("lockstep_bench_backup_" + std::to_string(::getpid()));
    std::filesystem::remove_all(backup_dir);
    callbacks.insert(callbacks.begin(), keras::callbacks::BackupAndRestore({.backup_dir = backup_dir.string(),
                                                                             .save_freq = a.backup_every,
                                                                             .async_checkpoint = !a.backup_sync}));
  }
  model.fit(ds, {.epochs = 1, .steps_per_epoch = a.warmup + a.steps, .callbacks = callbacks, .verbose = 0});
  if (!backup_dir.empty()) std::filesystem::remove_all(backup_dir);

  double rss = peak_rss_mib();  // the largest of any worker
  if (distribute::Communicator* cross = strategy->cross_worker())
    cross->all_reduce(&rss, 1, DType::float64, distribute::ReduceOp::MAX);
  if (!chief) return 0;
  const double s = timer->seconds(), per_step = s / static_cast<double>(a.steps);
  std::printf("%s\n", kernels::cpu::cpu_features().summary().c_str());
  std::printf("model %s, optimizer %s, %s data, %d worker(s) x %d replica(s), batch %lld per replica (global %lld), %s%s\n",
              a.model.c_str(), a.optimizer.c_str(), a.dataset.c_str(), strategy->num_workers(), strategy->num_local_replicas(),
              static_cast<long long>(a.batch_size), static_cast<long long>(global), a.dtype_policy.c_str(),
              a.backup_every > 0 ? (", backup every " + std::to_string(a.backup_every) + " steps" +
                                    (a.backup_sync ? " (synchronous)" : " (asynchronous)")).c_str()
                                 : "");
  // CPU over wall time shows how many threads really ran (gloo's threads included on several workers).
  std::printf("threads %d per worker (num_threads), cpu/wall over the timed steps %.2f\n", num_threads(),
              timer->cpu_seconds_used() / s);
  std::printf("FLOPs per step %.4g per replica (forward 2 x multiply-adds, backward 2 x forward)\n",
              training_flops_per_example(model) * static_cast<double>(a.batch_size));
  std::printf("peak RSS %.1f MiB per worker (the largest)\n", rss);
  std::printf("samples/s %.1f\n", static_cast<double>(global * a.steps) / s);
  std::printf("%.3f ms/step\n", per_step * 1e3);
  return 0;
}

}  // namespace

std::function<int()> add_bench_command(CLI::App& app) {
  CLI::App* bench = app.add_subcommand("bench", "benchmarks for bench/compare.sh: a training step, an all-reduce");
  bench->require_subcommand(1);
  auto at_least = [](auto lo) { return [lo](auto v) { return v >= lo; }; };

  auto st = std::make_shared<StepArgs>();
  CLI::App* step = bench->add_subcommand(
      "step", "warm Keras fit steps on synthetic data; the last line is `<x> ms/step` (under lockstep launch: worker 0's)");
  step->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  step->add_option("--model", st->model, keras::join_names(builtin_model_names(), " | "))
      ->check(CLI::IsMember(builtin_model_names()));
  add_number(step, "--batch-size", st->batch_size, at_least(int64_t{1}), "an integer from 1 to 2^63-1",
             "examples per replica (per worker with one replica each)");
  add_number(step, "--threads", st->threads, at_least(0), "an integer from 0 to 2^31-1",
             "intra-op threads per worker; 0: all cores");
  add_number(step, "--steps", st->steps, at_least(int64_t{1}), "an integer from 1 to 2^63-1", "timed steps");
  add_number(step, "--warmup", st->warmup, at_least(int64_t{1}), "an integer from 1 to 2^63-1",
             "untimed steps first (plans, buffers, connections)");
  const std::vector<std::string> optimizer_names = keras::optimizers::registry().identifiers();
  step->add_option("--optimizer", st->optimizer, keras::join_names(optimizer_names, " | ") + " (learning rate 0.001)")
      ->check(CLI::IsMember(optimizer_names));
  step->add_option("--dataset", st->dataset, "synthetic (random images, the default) | fashion_mnist (its training images, in order)")
      ->check(CLI::IsMember({"synthetic", "fashion_mnist"}));
  add_number(step, "--replicas", st->replicas, [](int v) { return v >= 1 && v <= 64; }, "an integer from 1 to 64",
             "local replicas: more than 1 runs MirroredStrategy in this process instead of MultiWorkerMirroredStrategy");
  add_number(step, "--backup-every", st->backup_every, at_least(int64_t{1}), "an integer from 1 to 2^63-1",
             "BackupAndRestore every N steps into a temporary directory (removed at the end)");
  step->add_flag("--backup-sync", st->backup_sync, "with --backup-every: synchronous saves (asynchronous by default)");
  add_gradient_compression_option(step, st->gradient_compression);
  add_dtype_policy_option(step, st->dtype_policy);

  auto ar = std::make_shared<AllreduceArgs>();
  CLI::App* allreduce = bench->add_subcommand(
      "allreduce", "best time of a cross-worker all-reduce per size (run as one worker: lockstep launch -n N --)");
  allreduce->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  allreduce
      ->add_option_function<std::string>(
          "--sizes-mib", [ar](const std::string& text) { ar->sizes_mib = *parse_sizes(text); },
          "buffer sizes in MiB, comma-separated (integers from 1 to 4096; default 1,4,16,64)")
      ->check(CLI::Validator(
          [](std::string& text) {
            return parse_sizes(text) ? std::string() : quote(text) + " is not a list like 1,4,16,64 of integers from 1 to 4096";
          },
          ""))
      ->type_name("LIST");
  add_number(allreduce, "--iters", ar->iters, at_least(int64_t{1}), "an integer from 1 to 2^63-1",
             "timed all-reduces per size, after one warm-up; the best is reported");
  allreduce->add_option("--implementation", ar->implementation, "auto | ring | mpi (CommunicationImplementation)")
      ->check(CLI::IsMember({"auto", "ring", "mpi"}));
  allreduce->add_option("--dtype", ar->dtype, "float32 | bfloat16")->check(CLI::IsMember({"float32", "bfloat16"}));

  return [bench, step, st, allreduce, ar]() -> int {
    if (bench->got_subcommand(step)) return run_step(*st);
    if (bench->got_subcommand(allreduce)) return run_allreduce(*ar);
    return 0;
  };
}

}  // namespace lockstep::cli
