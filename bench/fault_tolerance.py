#!/usr/bin/env python3
"""Fault-tolerance benchmarks for BENCHMARKS.md, in one run on this machine.

1. Overhead of BackupAndRestore every 50 steps: warm ms/step of Keras fit with and without it
   (`lockstep bench step`, tutorial CNN, batch 64, 1 thread), runs alternating, medians and their ratio;
   asynchronous (the default) and synchronous saves.
2. Recovery: `lockstep train --workers 2 --max-restarts 1 --backup-dir D --backup-freq 50` on Fashion-MNIST
   with worker 1 killed by SIGKILL at step 120; the time from the launcher seeing the kill to the chief's
   first completed step after the restore, timed from the arrival of the output lines.

Usage: bench/fault_tolerance.py [--build build] [--rounds 5] [--steps 300]
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def step_ms(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    threads = re.search(r"^threads (\d+) per worker", out, re.M)
    ms = re.search(r"^([0-9.]+) ms/step$", out.strip().splitlines()[-1])
    return float(ms.group(1)), int(threads.group(1))


def overhead(build, rounds, steps):
    base = [f"{build}/bin/lockstep", "bench", "step", "--threads", "1", "--steps", str(steps)]
    variants = {"none": [], "async": ["--backup-every", "50"], "sync": ["--backup-every", "50", "--backup-sync"]}
    times = {k: [] for k in variants}
    threads = set()
    for _ in range(rounds):
        for name, extra in variants.items():  # alternating, so all see the same machine
            ms, t = step_ms(base + extra)
            times[name].append(ms)
            threads.add(t)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"threads actually used: {sorted(threads)}")
    for k in variants:
        print(f"{k:>5}: median {med[k]:.2f} ms/step  (runs: {', '.join(f'{x:.2f}' for x in times[k])})")
    for k in ("async", "sync"):
        # Runs of one round are neighbours in time: their ratio cancels most of the machine's drift.
        ratios = [b / a for a, b in zip(times["none"], times[k])]
        print(f"overhead of BackupAndRestore every 50 steps ({k}): median of paired ratios "
              f"{100 * (statistics.median(ratios) - 1):+.1f}% (range {100 * (min(ratios) - 1):+.1f}% to "
              f"{100 * (max(ratios) - 1):+.1f}%)")


def recovery(build, rounds):
    results = []
    for _ in range(rounds):
        backup = tempfile.mkdtemp(prefix="lockstep_bench_recovery_")
        shutil.rmtree(backup)
        cmd = [f"{build}/bin/lockstep", "train", "--workers", "2", "--max-restarts", "1", "--model", "tutorial_cnn",
               "--epochs", "1", "--steps-per-epoch", "200", "--batch-size", "64", "--threads", "1", "--verbose", "0",
               "--backup-dir", backup, "--backup-freq", "50"]
        env = dict(os.environ, LOCKSTEP_FAULT_INJECT="kill:1:120")
        killed = first = None
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in proc.stdout:
            now = time.monotonic()
            if killed is None and "was killed by signal SIGKILL" in line:
                killed = now
            if killed is not None and first is None and "first step after the restore done" in line:
                first = now
        proc.wait()
        shutil.rmtree(backup, ignore_errors=True)
        if proc.returncode != 0 or killed is None or first is None:
            sys.exit(f"recovery run failed (exit {proc.returncode}, kill seen: {killed is not None})")
        results.append(first - killed)
    print(f"recovery from kill -9 to the first resumed step (2 workers): median {statistics.median(results):.2f} s "
          f"(runs: {', '.join(f'{x:.2f}' for x in results)})")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--steps", type=int, default=300)
    a = p.parse_args()
    print(subprocess.run(["sh", "-c", "lscpu | grep -E 'Model name|CPU family|^CPU\\(s\\)'"], capture_output=True,
                         text=True).stdout.strip())
    overhead(a.build, a.rounds, a.steps)
    recovery(a.build, max(1, a.rounds // 2 + 1))


if __name__ == "__main__":
    main()
