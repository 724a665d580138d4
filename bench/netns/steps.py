#!/usr/bin/env python3
"""Checks the α–β model of docs/scaling.md against measured training steps on simulated hosts: for each host count,
the step time of one `lockstep bench step` worker per host (the tutorial CNN, batch 64, 1 thread, TF_CONFIG across
the hosts, the network backend) against the model's step = compute + one all-reduce of the 11.1 MB gradient
(fit.py's step_time), with α and β fitted to run.py's all-reduce rows of the same backend and link.

  sudo bench/netns/steps.py --hosts 2,4 --rate 1gbit --fit-csv bench/netns/results/network-1gbit.csv
       [--backend lockstep-ucx] [--steps 30] [--warmup 5] [--lockstep build/bin/lockstep] [--out FILE.csv]

Each host's processes are pinned to core (host index mod the cores this process may use): on a machine with a core
per host each host has its own. "compute" is measured under the same pinning, every host at once but each worker
alone (no TF_CONFIG): the step time with the all-reduce left out, including whatever the cores' sharing costs. The
cluster is torn down on exit, errors and Ctrl-C included.
"""
import argparse
import csv
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fit as model  # noqa: E402  (bench/netns/fit.py)
from run import CLUSTER, SUBNET, check_prerequisites, fail, run_bounded  # noqa: E402

STEP = re.compile(r"^([\d.]+) ms/step$", re.M)
CNN_PARAMS = 2_770_634


def step_times(args, hosts, distributed):
    """ms/step of every host's worker (all started at once), pinned; TF_CONFIG across the hosts if `distributed`,
    when only worker 0 reports (the step is the job's)."""
    cores = sorted(os.sched_getaffinity(0))
    workers = [f"{SUBNET}.{i + 1}:2222" for i in range(hosts)]
    procs = []
    for i in range(hosts):
        env = dict(os.environ, OMP_NUM_THREADS="1")
        env.pop("TF_CONFIG", None)
        if distributed:
            env["TF_CONFIG"] = '{"cluster":{"worker":[%s]},"task":{"type":"worker","index":%d}}' % (
                ",".join(f'"{w}"' for w in workers), i)
        cmd = ["ip", "netns", "exec", f"lsn-h{i}", "taskset", "-c", str(cores[i % len(cores)]), "timeout", "-s", "KILL",
               str(args.timeout), args.lockstep, "bench", "step", "--threads", "1", "--steps", str(args.steps),
               "--warmup", str(args.warmup)]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                      start_new_session=True))
    times = []
    try:
        for i, proc in enumerate(procs):
            out, _ = proc.communicate(timeout=args.timeout + 10)
            found = STEP.findall(out)
            if proc.returncode != 0 or (not found and (i == 0 or not distributed)):
                fail(f"host {i} ({'distributed' if distributed else 'alone'}) exited {proc.returncode}: {out[-800:]}")
            times += [float(found[-1])] if found else []
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, 9)
    return times


def fitted(args):
    rows = []
    with open(args.fit_csv) as f:
        for r in csv.DictReader(f):
            if r["backend"] == args.backend and r["rate"] == args.rate:
                rows.append((int(r["hosts"]), int(r["bytes"]), float(r["ms"]) / 1e3))
    if not rows:
        fail(f"{args.fit_csv} has no rows of {args.backend} at {args.rate}: run run.py for them first")
    alpha, beta, _ = model.fit(rows, "ring")
    return alpha, beta


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", default="2,4")
    parser.add_argument("--rate", default="1gbit")
    parser.add_argument("--fit-csv", default=os.path.join(HERE, "results", "network-1gbit.csv"))
    parser.add_argument("--backend", default="lockstep-ucx", help="the fit's rows (run.py's backend name)")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--lockstep", default="build/bin/lockstep")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per run")
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    args.lockstep = os.path.abspath(args.lockstep)
    args.backends = []
    check_prerequisites(args)
    alpha, beta = fitted(args)
    print(f"fit of {args.backend} at {args.rate}: α = {alpha * 1e6:.1f} µs, β = {beta * 1e9:.2f} ns/B", flush=True)
    results = []
    for hosts in [int(h) for h in args.hosts.split(",")]:
        rc, out = run_bounded([CLUSTER, "up", str(hosts), "--rate", args.rate], 60, dict(os.environ))
        if rc != 0:
            fail(f"cluster.sh up {hosts} failed: {out}")
        try:
            alone = step_times(args, hosts, distributed=False)
            together = step_times(args, hosts, distributed=True)
        finally:
            run_bounded([CLUSTER, "down"], 60, dict(os.environ))
        compute = max(alone) / 1e3  # synchronous steps wait for the slowest worker
        predicted = model.step_time({"params": CNN_PARAMS, "compute_s": compute, "tail_only": True}, hosts, alpha,
                                    beta, bucket_bytes=25 << 20)
        measured = together[0] / 1e3
        row = {"hosts": hosts, "rate": args.rate, "compute_ms": round(compute * 1e3, 2),
               "allreduce_model_ms": round((predicted - compute) * 1e3, 2), "predicted_ms": round(predicted * 1e3, 2),
               "measured_ms": round(measured * 1e3, 2), "error": round((measured - predicted) / predicted, 4),
               "alone_ms": " ".join(f"{t:.2f}" for t in alone)}
        results.append(row)
        print(f"{hosts} hosts {args.rate}: compute {row['compute_ms']} ms (each alone: {row['alone_ms']}) + all-reduce "
              f"{row['allreduce_model_ms']} ms = predicted {row['predicted_ms']} ms; measured {row['measured_ms']} ms "
              f"({row['error']:+.1%})", flush=True)
    if args.out:
        with open(args.out, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(results[0]))
            writer.writeheader()
            writer.writerows(results)


if __name__ == "__main__":
    main()
