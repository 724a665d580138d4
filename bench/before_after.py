#!/usr/bin/env python3
"""A refactor's speed check: two builds of lockstep (before and after a change) measured alternately in one run,
one thread each, on the figures bench-compare and bench-python report for the tutorial CNN:

  - step: `lockstep bench step` ms/step (Adam, batch 64), one worker;
  - scaling: the same step on two workers (`lockstep launch -n 2`), as samples/s of two workers over one;
  - fit: samples/s of Python's `fit` (bench/python/train_steps.py) over the C++ CLI's (`lockstep train`).

Each figure is the median of its rounds; the ratios after/before are taken round by round.
  python3 bench/before_after.py --before OLD_BUILD [--after build] [--rounds 7]
OLD_BUILD is a Release build directory of the other commit (for example a `git worktree` of it, configured with
its venv linked to build/venv, and `cmake --build OLD_BUILD --target lockstep _lockstep`).
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
ENV = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
ENV.pop("TF_CONFIG", None)
STEP = ["bench", "step", "--model", "tutorial_cnn", "--optimizer", "adam", "--batch-size", "64", "--threads", "1"]


def output(cmd, env=ENV):
    r = subprocess.run([str(c) for c in cmd], env=env, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        sys.exit(f"before_after: {' '.join(map(str, cmd))} failed ({r.returncode}): {r.stderr.strip()[-400:]}")
    return r.stdout


def ms_per_step(text):
    """The last line's "<x> ms/step" (under launch prefixed by "[worker 0] ")."""
    return float(text.strip().splitlines()[-1].split()[-2])


def figures(build, steps):
    """One round of every figure for one build."""
    cli = build / "bin" / "lockstep"
    one = ms_per_step(output([cli, *STEP, "--steps", steps, "--warmup", "5"]))
    two = ms_per_step(output([cli, "launch", "-n", "2", "--", cli, *STEP, "--steps", steps, "--warmup", "5"]))
    with tempfile.TemporaryDirectory() as d:
        output([cli, "train", "--model", "tutorial_cnn", "--dataset", "fashion_mnist", "--loop", "fit", "--epochs", "1",
                "--steps-per-epoch", steps, "--batch-size", "64", "--optimizer", "adam", "--threads", "1",
                "--verbose", "0", "--metrics-out", f"{d}/m.json"])
        cpp = json.loads(pathlib.Path(f"{d}/m.json").read_text())["samples_per_second"]
    env = dict(ENV, PYTHONPATH=str(build / "python"))
    py = json.loads(output([sys.executable, ROOT / "bench/python/train_steps.py", "--loop", "fit", "--steps", steps],
                           env).splitlines()[-1])["samples_per_second"]
    return {"step ms": one, "scaling": 2 * one / two, "fit python/cli": py / cpp}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=pathlib.Path, required=True)
    parser.add_argument("--after", type=pathlib.Path, default=ROOT / "build")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", default="200")
    args = parser.parse_args()
    rounds = {"before": [], "after": []}
    for i in range(args.rounds):
        for name in ("before", "after") if i % 2 == 0 else ("after", "before"):
            rounds[name].append(figures(getattr(args, name).resolve(), args.steps))
        print(f"round {i + 1}: {json.dumps(rounds)}", file=sys.stderr, flush=True)
    print(f"| figure | before | after | after/before (median of rounds) |\n|---|---|---|---|")
    for key in rounds["before"][0]:
        b = [r[key] for r in rounds["before"]]
        a = [r[key] for r in rounds["after"]]
        ratio = statistics.median(x / y for x, y in zip(a, b))
        print(f"| {key} | {statistics.median(b):.3f} | {statistics.median(a):.3f} | {ratio:.3f} |")


if __name__ == "__main__":
    main()
