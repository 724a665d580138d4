#!/usr/bin/env python3
"""lockstep's Python front end measured (issue 22, deliverable 10), every figure a ratio within this run:

  - fit and a custom-loop step of the tutorial CNN from Python against the same from C++ (`lockstep train`),
    alternated round by round, one thread each;
  - the per-call cost of a small op from Python against nanobind's floor (and TensorFlow's eager op);
  - each seed program of examples/python end to end (start-up, data, training, evaluation: the wall time a user
    waits for) under lockstep and under TensorFlow 2.21, with its accuracy.

Writes build/bench-python.md and .json, and with --write the bench-python section of BENCHMARKS.md.
  build/venv/bin/python3 bench/python/run.py [--rounds N] [--quick] [--write]
The data: Fashion-MNIST from Debian's dataset-fashion-mnist, also standing in for MNIST (not packaged, not
downloadable here); TensorFlow's mnist.load_data is pointed at the same files by bench/python/tf_datasets.
"""
import argparse
import json
import os
import pathlib
import platform
import statistics
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = ROOT / "build"
PY = sys.executable
FASHION = pathlib.Path("/usr/share/datasets/fashion-mnist")
BEGIN, END = "<!-- bench-python:begin -->", "<!-- bench-python:end -->"
ENV = dict(os.environ, OMP_NUM_THREADS="1", TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="-1",
           PYTHONUNBUFFERED="1")
ENV.pop("TF_CONFIG", None)

# The tutorials are Keras 2 programs (metrics' reset_states, fit on PerReplica values): TensorFlow 2.21 runs them
# with its legacy Keras package, tf_keras, as TensorFlow documents for Keras 2 code.
TF_ENV = {"TF_USE_LEGACY_KERAS": "1"}


def run(cmd, env, timeout):
    start = time.perf_counter()
    r = subprocess.run([str(c) for c in cmd], env=env, capture_output=True, text=True, timeout=timeout)
    return r, time.perf_counter() - start


def last_json(text):
    return json.loads([line for line in text.splitlines() if line.startswith("{")][-1])


def cpu():
    info = pathlib.Path("/proc/cpuinfo").read_text()
    field = lambda k: next((l.split(":", 1)[1].strip() for l in info.splitlines() if l.startswith(k)), "?")
    flags = field("flags").split()
    isa = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f in flags]
    return f"{field('model name')} (family {field('cpu family')}, model {field('model')}; {', '.join(isa)})"


def training_rows(rounds, steps):
    rows = {}
    for loop in ("fit", "ctl"):
        cpp, py = [], []
        for _ in range(rounds):
            with tempfile.TemporaryDirectory() as d:
                r, _ = run([BUILD / "bin" / "lockstep", "train", "--model", "tutorial_cnn", "--dataset", "fashion_mnist",
                            "--loop", loop, "--epochs", "1", "--steps-per-epoch", steps, "--batch-size", "64",
                            "--optimizer", "adam", "--threads", "1", "--verbose", "0", "--metrics-out",
                            f"{d}/m.json"], ENV, 600)
                assert r.returncode == 0, r.stderr
                cpp.append(json.loads(pathlib.Path(f"{d}/m.json").read_text())["samples_per_second"])
            r, _ = run([PY, ROOT / "bench/python/train_steps.py", "--loop", loop, "--steps", steps], ENV, 600)
            assert r.returncode == 0, r.stderr
            py.append(last_json(r.stdout)["samples_per_second"])
        ratios = [p / c for p, c in zip(py, cpp)]
        rows[loop] = {"cpp": statistics.median(cpp), "python": statistics.median(py),
                      "ratio": statistics.median(ratios)}
    return rows


def example_rows(quick, rounds):
    """Each seed program end to end under both frameworks, alternated, at each framework's default thread count
    (what a user runs); then once each from the same start (same_start.py) for the accuracy comparison."""
    work = pathlib.Path(tempfile.mkdtemp(prefix="bench_python_"))
    datasets = work / "datasets"
    home = work / "home"
    for d in (datasets / "mnist", datasets / "fashion-mnist", home / ".keras" / "datasets" / "fashion-mnist"):
        d.mkdir(parents=True)
        for f in FASHION.glob("*-ubyte.gz"):
            (d / f.name).symlink_to(f)
    defaults = {k: v for k, v in ENV.items() if k != "OMP_NUM_THREADS"}
    settings = {"multi_worker_ctl.py": {}, "keras_multi_worker_notebook.py": {},
                "mirrored_custom_training.py": {"EPOCHS": "2"}, "multi_worker_keras.py": {}}
    rows = {}
    for name, extra in settings.items():
        if quick:
            extra = dict(extra, EPOCHS="1", STEPS_PER_EPOCH="10")
        row = {"settings": extra}
        programs = {"lockstep": ROOT / "examples/python" / name, "tensorflow": ROOT / "examples/python/tensorflow" / name}

        def env(lib, output):
            own = {"LOCKSTEP_DATASETS": str(datasets)} if lib == "lockstep" else dict(TF_ENV, PYTHONPATH=str(ROOT / "bench/python/tf_datasets"))
            return dict(defaults, **extra, **own, HOME=str(home), OUTPUT_DIR=str(work / output))

        def outcome(r):
            acc = [l for l in r.stdout.splitlines() if l.startswith("final accuracy:")]
            if r.returncode == 0 and acc:
                return float(acc[-1].split(":")[1]), None
            return None, (r.stderr.strip().splitlines() or ["?"])[-1][:200]

        for lib in programs:
            row[lib] = {"seconds": [], "accuracy": None, "error": None}
        for round_ in range(rounds):
            for lib, program in programs.items():
                r, seconds = run([PY, program], env(lib, f"{lib}_{name}_{round_}"), 1800)
                row[lib]["seconds"].append(seconds)
                row[lib]["accuracy"], row[lib]["error"] = outcome(r)
        weights = work / f"{name}.initial"
        weights.mkdir()
        for lib in ("tensorflow", "lockstep"):  # TensorFlow writes the initial weights, lockstep reads them
            r, _ = run([PY, ROOT / "bench/python/same_start.py", lib, weights, programs[lib]],
                       env(lib, f"{lib}_{name}_same"), 1800)
            row[lib]["same_start_accuracy"], error = outcome(r)
            row[lib]["error"] = row[lib]["error"] or error
        for lib in programs:
            row[lib]["seconds"] = statistics.median(row[lib]["seconds"])
        rows[name] = row
    shutil.rmtree(work)
    return rows


def report(result):
    t, o, e = result["training"], result["overhead"], result["examples"]
    lines = [BEGIN, "", f"`build/venv/bin/python3 bench/python/run.py --write` on {result['date']}: {result['cpu']}, "
             f"training and op rows with 1 thread per process (OMP_NUM_THREADS=1, `--threads 1`, "
             f"tf.config.threading). Medians of "
             f"{result['rounds']} alternating rounds.", "",
             "| tutorial CNN, batch 64, Adam | from C++ (samples/s) | from Python (samples/s) | Python / C++ |",
             "| --- | ---: | ---: | ---: |"]
    for loop, label in (("fit", "`fit`"), ("ctl", "custom loop (`strategy.run` + `GradientTape` + `apply_gradients`)")):
        lines.append(f"| {label} | {t[loop]['cpp']:.0f} | {t[loop]['python']:.0f} | {t[loop]['ratio']:.3f} |")
    lines += ["", "| small op from Python (one-element float32) | ns per call |", "| --- | ---: |"]
    for k, label in (("nanobind_floor", "nanobind's floor (a bound method that returns at once)"),
                     ("lockstep_add", "`tf.add(a, b)`"), ("lockstep_operator", "`a + b`"),
                     ("lockstep_add_python_number", "`a + 1.0`"), ("tensorflow_add", "TensorFlow 2.21 eager `tf.add(a, b)`")):
        if k in o:
            lines.append(f"| {label} | {o[k]:.0f} |")
    lines += ["", f"Seed programs end to end (wall time of the whole process, median of {result['rounds']}; each framework at its "
              "default thread count). TensorFlow runs them with Keras 2 (`TF_USE_LEGACY_KERAS=1`, tf_keras 2.21), "
              "which the tutorials are written for. The accuracy columns are from one more run of each from the same start "
              "(`bench/python/same_start.py`: TensorFlow's initial weights, no shuffle).", "",
              "| seed program | settings | lockstep s | TensorFlow 2.21 s | TF / lockstep time | accuracy lockstep "
              "| accuracy TF | same start: lockstep | same start: TF | difference |",
              "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, row in e.items():
        ls, tfr = row["lockstep"], row["tensorflow"]
        if ls["error"] or tfr["error"]:
            failed = "; ".join(f"{lib} failed: {row[lib]['error']}" for lib in ("lockstep", "tensorflow") if row[lib]["error"])
            lines.append(f"| `{name}` | | | | | {failed} | | | | |")
            continue
        settings = ", ".join(f"{k}={v}" for k, v in row["settings"].items()) or "the tutorial's"
        difference = abs(ls["same_start_accuracy"] - tfr["same_start_accuracy"])
        lines.append(f"| `{name}` | {settings} | {ls['seconds']:.1f} | {tfr['seconds']:.1f} | "
                     f"{tfr['seconds'] / ls['seconds']:.2f} | {ls['accuracy']:.4f} | {tfr['accuracy']:.4f} | "
                     f"{ls['same_start_accuracy']:.4f} | {tfr['same_start_accuracy']:.4f} | {difference:.4f} |")
    lines += ["", END]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--examples-only", action="store_true", help="only the seed programs (no --write)")
    args = parser.parse_args()
    rounds = 1 if args.quick else args.rounds
    result = {"date": time.strftime("%Y-%m-%d"), "cpu": cpu(), "rounds": rounds, "python": platform.python_version()}
    result["examples"] = example_rows(args.quick, rounds)
    if args.examples_only:
        print(json.dumps(result["examples"], indent=1))
        return
    result["training"] = training_rows(rounds, "50" if args.quick else "300")
    r, _ = run([PY, ROOT / "bench/python/overhead.py", "--tf"], ENV, 600)
    result["overhead"] = last_json(r.stdout)
    text = report(result)
    (BUILD / "bench-python.json").write_text(json.dumps(result, indent=1))
    (BUILD / "bench-python.md").write_text(text + "\n")
    print(text)
    if args.write:
        doc = ROOT / "BENCHMARKS.md"
        body = doc.read_text()
        if BEGIN in body:
            body = body.split(BEGIN)[0] + text + body.split(END, 1)[1]
        else:
            body += "\n## Python front end\n\n" + text + "\n"
        doc.write_text(body)


if __name__ == "__main__":
    main()
