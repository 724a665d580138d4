#!/usr/bin/env python3
"""lockstep against its peers and against this machine's limits, in one run (bench/compare.sh builds and
installs what this needs, then calls it).

Every figure it reports is a ratio to something measured in the same run: a peer (PyTorch, TensorFlow,
OpenMPI) run alternately with lockstep in each round (A B A B ...), the ratio taken per round and then
the median; or a limit (single-thread SGEMM, FMA peak, STREAM triad, iperf3 loopback). Every child has
a timeout. Writes the report to <build>/bench-compare.md and .json, and with --write into BENCHMARKS.md:
its section for this CPU kind (vendor, family and model, as lockstep --version reports them) between the
bench-compare markers that name that kind, and this kind's rows of the mixed_bfloat16 table, leaving the
sections and rows of other CPU kinds as they are: figures are compared only within one CPU kind.

Usage: bench/compare.py --build DIR [--quick] [--write] [--tf-python PATH | --tf-skip REASON]
"""
import argparse
import datetime
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TORCH_PYTHON = "/usr/bin/python3"  # Debian's python3-torch
# One thread everywhere: the figures compare one core's work, and a library pool that ignores its API call
# still reads these.
ENV = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", TF_CPP_MIN_LOG_LEVEL="2",
           CUDA_VISIBLE_DEVICES="-1")
ENV.pop("TF_CONFIG", None)
# BENCHMARKS.md's markers: one section per CPU kind (begin/end followed by the kind), and the table of the
# mixed_bfloat16 step with a row per CPU kind and oneDNN ISA.
BEGIN, END = "<!-- bench-compare:begin", "<!-- bench-compare:end"
CPUS_BEGIN, CPUS_END = "<!-- bench-compare:cpus:begin -->", "<!-- bench-compare:cpus:end -->"
HELD_ISA = "AVX2"  # the path of CPUs without bfloat16 instructions, measured also where the CPU has them


class Run:
    """A finished child: exit code, its output lines with the seconds from its start, and whether it timed out."""

    def __init__(self, cmd, code, lines, timed_out, wall):
        self.cmd, self.code, self.lines, self.timed_out, self.wall = cmd, code, lines, timed_out, wall

    @property
    def ok(self):
        return self.code == 0 and not self.timed_out

    def text(self):
        return "\n".join(line for _, line in self.lines)

    def first_time(self, pattern):
        for t, line in self.lines:
            if re.search(pattern, line):
                return t
        return None

    def why(self):
        tail = " | ".join(line for _, line in self.lines[-3:])
        return f"timed out after {self.wall:.0f} s" if self.timed_out else f"exit {self.code}: {tail[-300:]}"


def run(cmd, timeout, env=ENV, log=None):
    """Runs cmd in its own session, timestamping each output line; on timeout SIGTERM then SIGKILL to the session."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT,
                            start_new_session=True, errors="replace")
    lines = []

    def read():
        for line in proc.stdout:
            lines.append((time.monotonic() - start, line.rstrip("\n")))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    timed_out = False
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        for sig, grace in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
            try:
                os.killpg(proc.pid, sig)
                proc.wait(grace)
                break
            except (ProcessLookupError, subprocess.TimeoutExpired):
                continue
    reader.join(5)
    r = Run(cmd, proc.returncode, lines, timed_out, time.monotonic() - start)
    if log is not None:
        log.append({"cmd": cmd, "code": r.code, "timed_out": timed_out, "wall_s": round(r.wall, 3), "output": r.text()[-4000:]})
    if not r.ok:
        print(f"  ! {' '.join(cmd)}: {r.why()}", flush=True)
    return r


def median(xs):
    return statistics.median(xs) if xs else None


def fmt(x, spec=".2f", none="—"):
    return none if x is None else format(x, spec)


def shell(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=60).stdout.strip()
    except subprocess.TimeoutExpired:
        return ""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---- parsing what each program prints ----

def parse_lockstep_step(r):
    text = r.text()
    last = re.search(r"([0-9.]+) ms/step$", r.lines[-1][1]) if r.lines else None
    if not r.ok or not last:
        return None
    get = lambda pattern: (m := re.search(pattern, text, re.M)) and float(m.group(1))
    return {"ms": float(last.group(1)), "sps": get(r"samples/s ([0-9.]+)"), "threads": get(r"threads (\d+) per worker"),
            "cpu_wall": get(r"cpu/wall over the timed steps ([0-9.]+)"), "flops": get(r"FLOPs per step ([0-9.e+]+)"),
            "rss": get(r"peak RSS ([0-9.]+) MiB"), "startup": r.first_time(r"start-up: first step done")}


def parse_peer_step(r):
    text = r.text()
    m = re.search(r"threads=(\d+) batch=\d+: ([0-9.]+) ms/step, ([0-9.]+) samples/s", text)
    if not r.ok or not m:
        return None
    rss = [float(x) for x in re.findall(r"peak RSS ([0-9.]+) MiB", text)]
    return {"ms": float(m.group(2)), "sps": float(m.group(3)), "threads": int(m.group(1)),
            "rss": max(rss) if rss else None, "startup": r.first_time(r"start-up: first step done")}


def parse_allreduce(r):
    out = {}
    for m in re.finditer(r"(\d+) MiB +([0-9.]+) ms +algbw +([0-9.]+) GB/s +busbw +([0-9.]+) GB/s", r.text()):
        out[int(m.group(1))] = float(m.group(4))
    return out if r.ok and out else None


# ---- the measurements ----

class Compare:
    def __init__(self, a):
        self.a = a
        self.build = os.path.abspath(a.build)
        self.lockstep = os.path.join(self.build, "bin", "lockstep")
        self.tf_python = a.tf_python if not a.tf_skip else None
        self.log = []
        self.result = {"quick": a.quick}
        self.quick = a.quick
        q = a.quick
        self.rounds = {"step": 1 if q else 5, "scaling": 1 if q else 3, "allreduce": 1 if q else 3, "startup": 1 if q else 5}
        self.steps, self.warmup = (30, 5) if q else (100, 10)

    def lockstep_step(self, *extra, workers=1, steps=None, warmup=None, mpi=False, env=ENV):
        cmd = [self.lockstep, "bench", "step", "--threads", "1", "--steps", str(steps or self.steps),
               "--warmup", str(warmup or self.warmup), *extra]
        if mpi:  # ranks of mpirun: the MPI backend, over OpenMPI's shared-memory transport
            cmd = MPIRUN + [str(workers)] + cmd
        elif workers > 1:
            cmd = [self.lockstep, "launch", "-n", str(workers), "--", "lockstep", *cmd[1:]]
        r = run(cmd, 300, env=env, log=self.log)
        if workers > 1 and r.lines:  # the launcher prefixes every line; the last is worker 0's ms/step
            r.lines = [(t, re.sub(r"^\[worker \d+\] ", "", line)) for t, line in r.lines]
        return parse_lockstep_step(r)

    def peer_step(self, peer, *extra, workers=1, steps=None, warmup=None):
        python, script = (TORCH_PYTHON, "bench/peers/torch_cnn.py") if peer == "torch" else (self.tf_python, "bench/peers/tf_cnn.py")
        if python is None:
            return None
        cmd = [python, script, "--threads", "1", "--steps", str(steps or self.steps), "--warmup", str(warmup or self.warmup),
               "--workers", str(workers), *extra]
        if peer == "torch" and workers > 1:
            cmd += ["--port", str(free_port())]
        return parse_peer_step(run(cmd, 600 if peer == "tf" else 300, log=self.log))

    def peers(self):
        return ["torch"] + (["tf"] if self.tf_python else [])

    def machine(self):
        lscpu = shell("lscpu")
        field = lambda name: (m := re.search(rf"^{name}:\s*(.*)$", lscpu, re.M)) and m.group(1).strip()
        flags = (field("Flags") or "").split()
        simd = [f for f in flags if re.match(r"(sse4_2|avx|avx2|fma|f16c|avx512\w*|amx\w*|avx_vnni)$", f)]
        mhz = shell("grep -m1 'cpu MHz' /proc/cpuinfo | sed 's/.*: //'")
        self.result["machine"] = {
            "model": field("Model name"), "family": field("CPU family"), "model_number": field("Model"),
            "cpus": field(r"CPU\(s\)"), "hypervisor": field("Hypervisor vendor"), "simd_flags": " ".join(simd),
            "l2": field("L2 cache"), "l3": field("L3 cache"), "cpuinfo_mhz": mhz,
            "load_average": shell("cut -d' ' -f1-3 /proc/loadavg"),
        }
        self.result["machine"].update(lockstep_cpu(shell(f"{self.lockstep} --version")))
        dpkg = lambda p: shell(f"dpkg-query -W -f='${{Version}}' {p} 2>/dev/null")
        self.result["versions"] = {
            "lockstep": shell(f"git -C {ROOT} rev-parse --short HEAD") + (" (with local changes)" if shell(f"git -C {ROOT} status --porcelain --untracked-files=no") else ""),
            "compiler": shell("c++ --version | head -1"),
            "oneDNN": dpkg("libdnnl-dev"), "OpenBLAS": dpkg("libopenblas0-pthread") or dpkg("libopenblas0"),
            "gloo": dpkg("libgloo-dev"), "OpenMPI": shell("mpirun --version 2>/dev/null | head -1"),
            "iperf3": shell("iperf3 --version | head -1"),
            "torch": shell(f"{TORCH_PYTHON} -c 'import torch; print(torch.__version__)' 2>/dev/null"),
            "tensorflow": shell(f"{self.tf_python} -c 'import tensorflow as tf; print(tf.__version__)' 2>/dev/null")
            if self.tf_python else f"not measured: {self.a.tf_skip}",
        }

    def limits(self):
        lim = {}
        r = run([os.path.join(self.build, "bench-bin", "machine_limits")], 300, log=self.log)
        for m in re.finditer(r"^(\w+) ([0-9.]+)", r.text(), re.M):
            lim[m.group(1)] = float(m.group(2))
        # The nominal FMA peak: two FMA pipes, 8 fp32 lanes each with AVX2, 16 with AVX-512 (Zen 4 splits each
        # 512-bit FMA in two, so the AVX-512 figure measured there is the nominal's half).
        avx512 = "avx512f" in self.result["machine"]["simd_flags"]
        lim["fma_flop_per_cycle_nominal"] = 64.0 if avx512 else 32.0
        if "clock" in lim:
            lim["fma_peak_nominal"] = lim["clock"] * lim["fma_flop_per_cycle_nominal"]
        out = os.path.join(self.build, "bench-micro-kernels.json")
        pattern = "(matmul|openblas)/sgemm_2048" if self.a.quick else "(matmul|openblas)/(sgemm_2048|dense_21632x128/.*)"
        r = run([os.path.join(self.build, "bin", "micro_kernels"), f"--benchmark_filter={pattern}",
                 f"--benchmark_min_time={0.2 if self.a.quick else 0.5}", f"--benchmark_out={out}",
                 "--benchmark_out_format=json"], 600, log=self.log)
        lim["micro_kernels_threads_line"] = next((l for _, l in r.lines if l.startswith("omp_get_max_threads")), None)
        kernels = {}
        if r.ok:
            for b in json.load(open(out))["benchmarks"]:
                kernels[b["name"]] = {"gflops": b["GFLOP/s"] / 1e9 if "GFLOP/s" in b else None,  # the counter is FLOP/s
                                      "threads": b.get("threads")}
        lim["kernels"] = kernels
        one, blas = kernels.get("matmul/sgemm_2048", {}), kernels.get("openblas/sgemm_2048", {})
        lim["sgemm_onednn"], lim["sgemm_openblas"] = one.get("gflops"), blas.get("gflops")
        lim["sgemm_peak"] = max([x for x in (lim["sgemm_onednn"], lim["sgemm_openblas"]) if x] or [0]) or None
        lim["iperf3_gbs"] = self.iperf3()
        self.result["limits"] = lim
        print(f"  limits: {json.dumps({k: v for k, v in lim.items() if k != 'kernels'})}", flush=True)

    def iperf3(self):
        port = free_port()
        server = subprocess.Popen(["iperf3", "-s", "-1", "-p", str(port)], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            time.sleep(0.5)
            r = run(["iperf3", "-c", "127.0.0.1", "-p", str(port), "-t", "2" if self.a.quick else "5", "-J"], 60, log=self.log)
            return json.loads(r.text())["end"]["sum_received"]["bits_per_second"] / 8e9 if r.ok else None
        except (ValueError, KeyError):
            return None
        finally:
            server.kill()
            server.wait()

    def step(self):
        """ms/step of one worker, one thread, batch 64: lockstep vs the peers, alternating, per model/optimizer."""
        configs = [("tutorial_cnn", "sgd"), ("fashion_cnn", "adam")] if self.a.quick else \
            [("tutorial_cnn", "sgd"), ("tutorial_cnn", "adam"), ("fashion_cnn", "sgd"), ("fashion_cnn", "adam")]
        rows = []
        for model, opt in configs:
            runs = {k: [] for k in ["lockstep"] + self.peers()}
            for _ in range(self.rounds["step"]):
                runs["lockstep"].append(self.lockstep_step("--model", model, "--optimizer", opt))
                for p in self.peers():
                    runs[p].append(self.peer_step(p, "--model", model, "--optimizer", opt))
            rows.append(self.summarise_step(f"{model}, {opt}", runs))
        self.result["step"] = rows
        self.result["dtype_policy"] = self.dtype_policy()

    def summarise_step(self, name, runs):
        row = {"setting": name}
        ls = runs["lockstep"]
        row["lockstep_ms"] = median([r["ms"] for r in ls if r])
        row["lockstep_threads"] = sorted({r["threads"] for r in ls if r})
        row["lockstep_cpu_wall"] = median([r["cpu_wall"] for r in ls if r and r["cpu_wall"]])
        flops = next((r["flops"] for r in ls if r and r["flops"]), None)
        row["flops"] = flops
        peak = self.result["limits"].get("sgemm_peak")
        if flops and peak and row["lockstep_ms"]:
            row["limit_ms"] = flops / (peak * 1e9) * 1e3
            row["of_limit"] = row["limit_ms"] / row["lockstep_ms"]
        for p in self.peers():
            pr = runs[p]
            row[f"{p}_ms"] = median([r["ms"] for r in pr if r])
            row[f"{p}_threads"] = sorted({r["threads"] for r in pr if r})
            ratios = [b["ms"] / a["ms"] for a, b in zip(ls, pr) if a and b]  # neighbours in time
            row[f"{p}_ratio"] = median(ratios)
            row[f"{p}_ratio_range"] = (min(ratios), max(ratios)) if ratios else None
        print(f"  step {name}: {json.dumps(row)}", flush=True)
        return row

    def policy_step(self, env=ENV):
        """mixed_bfloat16's step against float32's, alternating."""
        f32, bf16 = [], []
        for _ in range(self.rounds["step"]):
            f32.append(self.lockstep_step("--dtype-policy", "float32", env=env))
            bf16.append(self.lockstep_step("--dtype-policy", "mixed_bfloat16", env=env))
        ratios = [a["ms"] / b["ms"] for a, b in zip(f32, bf16) if a and b]
        return {"float32_ms": median([r["ms"] for r in f32 if r]), "bf16_ms": median([r["ms"] for r in bf16 if r]),
                "speedup": median(ratios), "speedup_range": (min(ratios), max(ratios)) if ratios else None}

    def dtype_policy(self):
        """Keras' mixed_bfloat16 against float32: the step, alternating, also with oneDNN held to AVX2 where the CPU
        has bfloat16 instructions (the path of CPUs without them), and (not with --quick) the test accuracy after one
        epoch of the tutorial CNN on Fashion-MNIST with Adam."""
        row = self.policy_step()
        row["onednn_isa"] = self.result["machine"].get("onednn_isa")
        if self.result["machine"].get("bfloat16_instructions"):
            row["held"] = self.policy_step(env=dict(ENV, ONEDNN_MAX_CPU_ISA=HELD_ISA))
            row["held"]["onednn_isa"] = HELD_ISA.lower()
        if not self.quick:
            for policy in ("float32", "mixed_bfloat16"):
                metrics = os.path.join(self.build, f"bench-accuracy-{policy}.json")
                r = run([self.lockstep, "train", "--model", "tutorial_cnn", "--dataset", "fashion_mnist", "--epochs", "1",
                         "--batch-size", "64", "--optimizer", "adam", "--threads", "1", "--verbose", "0",
                         "--dtype-policy", policy, "--metrics-out", metrics], 900, log=self.log)
                if r.ok:
                    with open(metrics) as f:
                        row[f"{policy}_accuracy"] = 100 * json.load(f)["test_accuracy"]
                    os.remove(metrics)
        print(f"  dtype policy: {json.dumps(row)}", flush=True)
        return row

    def scaling(self):
        """samples/s of 2 workers x 1 thread over 1 worker x 1 thread (64 per worker), each system in turn."""
        systems = {"lockstep (the default: shared memory)": lambda w: self.lockstep_step(workers=w),
                   "lockstep over the network (LOCKSTEP_COLLECTIVE=ring: UCX over TCP)":
                       lambda w: self.lockstep_step(workers=w, env={**ENV, "LOCKSTEP_COLLECTIVE": "ring"})}
        for p in self.peers():
            systems[p] = lambda w, p=p: self.peer_step(p, workers=w)
        systems["lockstep MirroredStrategy"] = lambda w: self.lockstep_step("--replicas", str(w))
        systems["lockstep under mpirun (MPI, shared memory)"] = lambda w: self.lockstep_step(workers=w, mpi=True)
        rows = []
        per = {k: [] for k in systems}
        for _ in range(self.rounds["scaling"]):
            for name, fn in systems.items():
                one, two = fn(1), fn(2)
                per[name].append((one, two))
        for name, pairs in per.items():
            ratios = [b["sps"] / a["sps"] for a, b in pairs if a and b]
            rows.append({"system": name, "sps_1": median([a["sps"] for a, _ in pairs if a]),
                         "sps_2": median([b["sps"] for _, b in pairs if b]), "ratio": median(ratios),
                         "range": (min(ratios), max(ratios)) if ratios else None})
            print(f"  scaling {json.dumps(rows[-1])}", flush=True)
        self.result["scaling"] = rows

    def allreduce(self):
        sizes = [1, 16] if self.a.quick else [1, 4, 16, 64]
        iters = 3 if self.a.quick else 10
        bins = os.path.join(self.build, "bench-bin")
        mpirun = MPIRUN + ["2"]
        systems = {
            "lockstep shared memory (UCX, the default)": [self.lockstep, "launch", "-n", "2", "--", "lockstep", "bench",
                                                          "allreduce", "--sizes-mib", ",".join(map(str, sizes)),
                                                          "--iters", str(iters)],
            "lockstep ring (UCX over TCP loopback)": [self.lockstep, "launch", "-n", "2", "--", "lockstep", "bench",
                                                      "allreduce", "--implementation", "ring", "--sizes-mib",
                                                      ",".join(map(str, sizes)), "--iters", str(iters)],
            "lockstep gloo (LOCKSTEP_COLLECTIVE=gloo, TCP loopback)": ["env", "LOCKSTEP_COLLECTIVE=gloo", self.lockstep, "launch",
                                                                      "-n", "2", "--", "lockstep", "bench", "allreduce",
                                                                      "--sizes-mib", ",".join(map(str, sizes)), "--iters", str(iters)],
            "lockstep mpi": mpirun + [self.lockstep, "bench", "allreduce", "--implementation", "mpi", "--sizes-mib",
                                      ",".join(map(str, sizes)), "--iters", str(iters)],
            "OpenMPI, shared memory": mpirun + [os.path.join(bins, "mpi_allreduce")],
            "OpenMPI, --mca btl tcp,self": mpirun[:-2] + ["--mca", "btl", "tcp,self", "-np", "2", os.path.join(bins, "mpi_allreduce")],
        }
        per = {k: [] for k in systems}
        unavailable = {}
        for _ in range(self.rounds["allreduce"]):
            for name, cmd in systems.items():
                if name in unavailable:
                    continue
                r = run(cmd, 180, log=self.log)
                parsed = parse_allreduce(r)
                if parsed is None and name == "lockstep mpi":
                    unavailable[name] = r.why()
                per[name].append(parsed)
        iperf = self.result["limits"].get("iperf3_gbs")
        rows = []
        for size in sizes:
            row = {"mib": size}
            for name in systems:
                vals = [p[size] for p in per[name] if p and size in p]
                row[name] = median(vals)
            ours_columns = {"shm": "lockstep shared memory (UCX, the default)", "ring": "lockstep ring (UCX over TCP loopback)",
                            "mpi": "lockstep mpi"}
            for ours, ref in (("shm", "OpenMPI, shared memory"), ("ring", "OpenMPI, --mca btl tcp,self"),
                              ("ring", "OpenMPI, shared memory"), ("mpi", "OpenMPI, shared memory")):
                mine = per[ours_columns[ours]]
                ratios = [a[size] / b[size] for a, b in zip(mine, per[ref])
                          if a and b and size in a and size in b and b[size] > 0]
                row[f"{ours}/{ref}"] = median(ratios)
            ring = row["lockstep ring (UCX over TCP loopback)"]
            row["ring/iperf3"] = ring / iperf if ring and iperf else None
            rows.append(row)
            print(f"  allreduce {json.dumps(row)}", flush=True)
        self.result["allreduce"] = {"rows": rows, "systems": list(systems), "unavailable": unavailable, "iters": iters}

    def startup(self):
        """From the command's start to worker 0's first finished step, 2 workers; peak RSS of the largest worker."""
        data = ("--dataset", "fashion_mnist")
        systems = {"lockstep": lambda: self.lockstep_step(*data, workers=2, steps=1, warmup=1)}
        for p in self.peers():
            systems[p] = lambda p=p: self.peer_step(p, *data, workers=2, steps=1, warmup=1)
        per = {k: [] for k in systems}
        for _ in range(self.rounds["startup"]):
            for name, fn in systems.items():
                per[name].append(fn())
        rows = []
        ls = per["lockstep"]
        for name, runs in per.items():
            row = {"system": name, "startup_s": median([r["startup"] for r in runs if r and r["startup"]]),
                   "rss_mib": median([r["rss"] for r in runs if r and r["rss"]])}
            if name != "lockstep":
                row["startup_ratio"] = median([b["startup"] / a["startup"] for a, b in zip(ls, runs)
                                               if a and b and a["startup"] and b["startup"]])
                row["rss_ratio"] = median([b["rss"] / a["rss"] for a, b in zip(ls, runs) if a and b and a["rss"] and b["rss"]])
            rows.append(row)
            print(f"  startup {json.dumps(row)}", flush=True)
        self.result["startup"] = rows

    # ---- the report ----

    def markdown(self, commands):
        r, m, v, lim = self.result, self.result["machine"], self.result["versions"], self.result["limits"]
        L = []
        L.append(f"Written by `bench/compare.sh{' --quick' if self.a.quick else ''}` on {r['date']} in {r['minutes']:.1f} minutes. "
                 "Every ratio compares runs of the same invocation: peers alternate with lockstep in each round "
                 "and the ratio is taken per round, then the median (range in brackets); limits are measured in the same run.")
        L.append("")
        L.append(f"- Machine: `{m['model']}`, CPU family {m['family']} model {m['model_number']}, {m['cpus']} CPUs"
                 f"{', ' + m['hypervisor'] + ' guest' if m['hypervisor'] else ''}; SIMD flags: {m['simd_flags']}; "
                 f"L2 {m['l2']}, L3 {m['l3']}; /proc/cpuinfo {m['cpuinfo_mhz']} MHz; load average at the start {m['load_average']}.")
        L.append(f"- lockstep's report (`lockstep --version`): `{m.get('cpu_line')}`.")
        L.append("- Versions: " + ", ".join(f"{k} {val}" for k, val in v.items() if val))
        L.append("- Threads: every run has one thread per worker (`--threads 1`, `torch.set_num_threads(1)`, TF's intra/inter-op "
                 "pools of 1, and OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=1 in the environment); lockstep prints "
                 "`num_threads()` and its CPU time over wall time, `micro_kernels` its thread counts and the same ratio.")
        L.append("")
        L.append("**Limits** (this run)")
        L.append("")
        L.append("| limit | measured | note |")
        L.append("| --- | ---: | --- |")
        L.append(f"| core clock (dependent adds, thread CPU time) | {fmt(lim.get('clock'), '.2f')} GHz | |")
        lanes = 16 if lim["fma_flop_per_cycle_nominal"] == 64.0 else 8
        L.append(f"| FMA peak, nominal | {fmt(lim.get('fma_peak_nominal'), '.1f')} GFLOP/s | clock × {lim['fma_flop_per_cycle_nominal']:.0f} FLOP/cycle "
                 f"(2 FMA pipes × {lanes} fp32 lanes × 2) |")
        widths = f"AVX2 {fmt(lim.get('fma_peak_avx2'), '.1f')}" + (
            f", AVX-512 {fmt(lim.get('fma_peak_avx512'), '.1f')}" if lim.get("fma_peak_avx512") else "")
        L.append(f"| FMA peak, measured (12 chains of FMAs, the wider that runs faster, 1 thread) | "
                 f"{fmt(lim.get('fma_peak_1thread'), '.1f')} GFLOP/s | {fmt(lim.get('fma_flop_per_cycle'), '.1f')} FLOP/cycle "
                 f"({widths} GFLOP/s) |")
        for key, name in (("matmul/sgemm_2048", "oneDNN"), ("openblas/sgemm_2048", "OpenBLAS")):
            k = lim["kernels"].get(key, {})
            fma = lim.get("fma_peak_1thread")
            L.append(f"| SGEMM 2048³, {name}, 1 thread | {fmt(k.get('gflops'), '.1f')} GFLOP/s | "
                     f"{fmt(k['gflops'] / fma * 100 if k.get('gflops') and fma else None, '.0f')}% of the measured FMA peak; "
                     f"threads that ran (CPU/wall) {fmt(k.get('threads'), '.2f')} |")
        L.append(f"| STREAM triad, 1 thread / all {int(lim.get('threads_all', 0))} | {fmt(lim.get('triad_1thread'))} / "
                 f"{fmt(lim.get('triad_all_threads'))} GB/s | |")
        L.append(f"| iperf3 loopback TCP, 1 stream | {fmt(lim.get('iperf3_gbs'))} GB/s | |")
        L.append("")
        L.append(f"`micro_kernels` reported: `{lim.get('micro_kernels_threads_line')}`.")
        dense = {k: x for k, x in lim["kernels"].items() if "dense_21632" in k}
        if dense:
            L.append("Dense 21632→128 shapes, 1 thread (GFLOP/s, threads that ran): " + "; ".join(
                f"{k} {fmt(x.get('gflops'), '.1f')} ({fmt(x.get('threads'), '.2f')})" for k, x in sorted(dense.items())) + ".")
        L.append("")
        L.append("**Training step**, one worker, one thread, batch 64, synthetic data, warm steps "
                 f"({self.steps} timed after {self.warmup}, {self.rounds['step']} rounds). "
                 "Limit: the step's FLOPs (forward 2 × multiply-adds of Conv2D and Dense, backward 2 × forward) over the SGEMM "
                 "peak measured above.")
        L.append("")
        peers = self.peers()
        head = "| model, optimizer | lockstep ms/step | " + " | ".join(f"{PEER_NAMES[p]} ms/step" for p in peers) + \
               " | " + " | ".join(f"{PEER_NAMES[p]} / lockstep" for p in peers) + " | FLOPs | limit ms | lockstep / limit |"
        L.append(head)
        L.append("| --- " + "| ---: " * (head.count("|") - 2) + "|")
        for row in r["step"]:
            cells = [row["setting"], fmt(row["lockstep_ms"])] + [fmt(row.get(f"{p}_ms")) for p in peers]
            cells += [f"{fmt(row.get(f'{p}_ratio'))}{range_text(row.get(f'{p}_ratio_range'))}" for p in peers]
            cells += [fmt(row.get("flops"), ".3g"), fmt(row.get("limit_ms")), fmt(row.get("of_limit") and row["of_limit"] * 100, ".0f") + "%"]
            L.append("| " + " | ".join(cells) + " |")
        threads = sorted({int(t) for row in r["step"] for t in row["lockstep_threads"]})
        cpu = [row["lockstep_cpu_wall"] for row in r["step"] if row["lockstep_cpu_wall"]]
        L.append("")
        L.append(f"lockstep reported num_threads() = {threads}, CPU time over wall time in the timed steps {fmt(min(cpu) if cpu else None)}–"
                 f"{fmt(max(cpu) if cpu else None)}. Targets: ≥ 1.5× PyTorch and TensorFlow, ≥ 85% of the limit.")
        dp = r["dtype_policy"]
        accuracy = (f"; test accuracy after 1 epoch {fmt(dp['mixed_bfloat16_accuracy'])}% vs {fmt(dp['float32_accuracy'])}% "
                    "(target: within 0.5 points)") if "float32_accuracy" in dp and "mixed_bfloat16_accuracy" in dp else ""
        L.append(f"mixed_bfloat16 (`--dtype-policy mixed_bfloat16`, oneDNN ISA {dp['onednn_isa']}): {fmt(dp['bf16_ms'])} ms/step vs "
                 f"float32 {fmt(dp['float32_ms'])} ms, speed-up {fmt(dp['speedup'])}×{range_text(dp['speedup_range'])} "
                 f"(target ≥ 1.6× where the CPU has bfloat16 instructions){accuracy}.")
        if "held" in dp:
            h = dp["held"]
            L.append(f"With oneDNN held to {HELD_ISA} (`ONEDNN_MAX_CPU_ISA={HELD_ISA}`, the path of CPUs without bfloat16 "
                     f"instructions): {fmt(h['bf16_ms'])} ms/step vs float32 {fmt(h['float32_ms'])} ms, "
                     f"{fmt(h['speedup'])}×{range_text(h['speedup_range'])}.")
        L.append("")
        L.append(f"**Scaling**: samples/s of 2 workers × 1 thread over 1 worker × 1 thread, 64 per worker ({self.rounds['scaling']} rounds; "
                 "2 workers on this machine's 2 cores). MirroredStrategy: 2 replicas in one process over 1 replica.")
        L.append("")
        L.append("| system | 1 worker samples/s | 2 workers samples/s | 2 / 1 |")
        L.append("| --- | ---: | ---: | ---: |")
        for row in r["scaling"]:
            L.append(f"| {PEER_NAMES.get(row['system'], row['system'])} | {fmt(row['sps_1'], '.0f')} | {fmt(row['sps_2'], '.0f')} | {fmt(row['ratio'])}{range_text(row['range'])} |")
        L.append("")
        L.append("Targets: 2 workers (the default path, no flags) ≥ 1.6× of 1; MirroredStrategy 2 replicas ≥ 1.7×.")
        L.append("")
        ar = r["allreduce"]
        L.append(f"**All-reduce** bus bandwidth (algbw × 2(n−1)/n, GB/s), float32, 2 processes, best of {ar['iters']} after a warm-up, "
                 f"{self.rounds['allreduce']} rounds (median).")
        L.append("")
        cols = ar["systems"]
        L.append("| MiB | " + " | ".join(cols) +
                 " | shared memory / OpenMPI sm | ring / OpenMPI tcp | ring / OpenMPI sm | ring / iperf3 | mpi / OpenMPI sm |")
        L.append("| ---: " * (len(cols) + 6) + "|")
        for row in ar["rows"]:
            L.append(f"| {row['mib']} | " + " | ".join(fmt(row[c]) for c in cols) +
                     f" | {fmt(row['shm/OpenMPI, shared memory'])}"
                     f" | {fmt(row['ring/OpenMPI, --mca btl tcp,self'])} | {fmt(row['ring/OpenMPI, shared memory'])} | {fmt(row['ring/iperf3'])}"
                     f" | {fmt(row['mpi/OpenMPI, shared memory'])} |")
        for name, why in ar["unavailable"].items():
            L.append("")
            L.append(f"{name}: not available in this build ({why[:200]}).")
        L.append("")
        L.append("Targets: busbw at every size ≥ OpenMPI's shared memory for the default backend of workers on one host "
                 "(shared memory, started by `lockstep launch` or TF_CONFIG) and for the MPI backend (a job started by mpirun); "
                 "the network backend's ring (UCX over TCP), the engine across hosts, against OpenMPI over TCP.")
        L.append("")
        L.append("**Start-up and memory**, 2 workers: seconds from the command's start to worker 0's first finished step "
                 "(the tutorial CNN on Fashion-MNIST from Debian's dataset-fashion-mnist, read and converted by each worker), "
                 "and the peak RSS of the largest worker "
                 f"({self.rounds['startup']} rounds).")
        L.append("")
        L.append("| system | start-up s | peak RSS per worker MiB | start-up / lockstep's | RSS / lockstep's |")
        L.append("| --- | ---: | ---: | ---: | ---: |")
        for row in r["startup"]:
            L.append(f"| {PEER_NAMES.get(row['system'], row['system'])} | {fmt(row['startup_s'])} | {fmt(row['rss_mib'], '.0f')} | "
                     f"{fmt(row.get('startup_ratio'), none='')} | {fmt(row.get('rss_ratio'), none='')} |")
        L.append("")
        L.append("Targets: start-up ≤ 1.5 s; peak RSS per worker ≤ PyTorch's.")
        L.append("")
        L.append("Commands (each with OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1):")
        L.append("")
        for c in commands:
            L.append(f"- `{c}`")
        return "\n".join(L)


PEER_NAMES = {"torch": "PyTorch", "tf": "TensorFlow", "lockstep": "lockstep"}
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np"]  # then the number of ranks


def range_text(rng):
    return f" ({rng[0]:.2f}–{rng[1]:.2f})" if rng and rng[0] != rng[1] else ""


def representative_commands(c):
    rel = os.path.relpath(c.build, ROOT)
    s, w = c.steps, c.warmup
    cmds = [f"{rel}/bench-bin/machine_limits", f"{rel}/bin/micro_kernels --benchmark_filter='(matmul|openblas)/sgemm_2048'",
            "iperf3 -s -1 & iperf3 -c 127.0.0.1 -J",
            f"{rel}/bin/lockstep bench step --model M --optimizer O --threads 1 --steps {s} --warmup {w}",
            f"/usr/bin/python3 bench/peers/torch_cnn.py --model M --optimizer O --threads 1 --steps {s} --warmup {w}"]
    if c.tf_python:
        cmds.append(f"{os.path.relpath(c.tf_python, ROOT)} bench/peers/tf_cnn.py --model M --optimizer O --threads 1 --steps {s} --warmup {w}")
    cmds += [f"[ONEDNN_MAX_CPU_ISA={HELD_ISA}] {rel}/bin/lockstep bench step --dtype-policy float32|mixed_bfloat16 --threads 1 "
             f"--steps {s} --warmup {w}",
             f"{rel}/bin/lockstep train --model tutorial_cnn --dataset fashion_mnist --epochs 1 --batch-size 64 --optimizer adam "
             "--threads 1 --dtype-policy float32|mixed_bfloat16 (accuracy)",
             f"[LOCKSTEP_COLLECTIVE=ring] {rel}/bin/lockstep launch -n 2 -- lockstep bench step --threads 1 --steps {s} --warmup {w}",
             f"mpirun -np 1|2 {rel}/bin/lockstep bench step --threads 1 --steps {s} --warmup {w}",
             f"{rel}/bin/lockstep bench step --replicas 2 --threads 1 --steps {s} --warmup {w}",
             "/usr/bin/python3 bench/peers/torch_cnn.py --workers 2 --threads 1 ...", "tf_cnn.py --workers 2 --threads 1 ...",
             f"[LOCKSTEP_COLLECTIVE=gloo] {rel}/bin/lockstep launch -n 2 -- lockstep bench allreduce [--implementation ring]",
             f"mpirun -np 2 {rel}/bin/lockstep bench allreduce --implementation mpi",
             f"mpirun -np 2 {rel}/bench-bin/mpi_allreduce", f"mpirun --mca btl tcp,self -np 2 {rel}/bench-bin/mpi_allreduce",
             f"{rel}/bin/lockstep launch -n 2 -- lockstep bench step --dataset fashion_mnist --threads 1 --steps 1 --warmup 1 "
             "(start-up, RSS; the peers with --workers 2 --dataset fashion_mnist)"]
    return cmds


def lockstep_cpu(version_output):
    """The CPU as `lockstep --version` reports it (kernels/cpu/features.h): its line, kind, oneDNN ISA."""
    m = re.search(r"^cpu: (.*), (\S+) family (\d+) model (\d+) stepping \d+;.*; oneDNN ISA (\S+), bfloat16 instructions (yes|no)$",
                  version_output, re.M)
    if not m:
        return {"cpu_line": None, "kind": "unknown CPU", "onednn_isa": None, "bfloat16_instructions": False}
    return {"cpu_line": m.group(0), "kind": f"{m.group(2)} family {m.group(3)} model {m.group(4)}",
            "onednn_isa": m.group(5), "bfloat16_instructions": m.group(6) == "yes"}


def policy_rows(c):
    """This run's rows of the mixed_bfloat16 table: CPU kind, model name, oneDNN ISA, float32 and mixed_bfloat16
    ms/step, the speed-up and where it comes from."""
    m, dp = c.result["machine"], c.result["dtype_policy"]
    how = (f"`make bench-compare` {c.result['date']} at {c.result['versions']['lockstep']}, "
           f"{c.rounds['step']} alternating rounds")
    runs = [(dp, m["onednn_isa"], how)]
    if "held" in dp:
        runs.append((dp["held"], f"{dp['held']['onednn_isa']} (`ONEDNN_MAX_CPU_ISA={HELD_ISA}`)", how))
    return [f"| `{m['kind']}` | {m['model']} | {isa} | {fmt(p['float32_ms'])} | {fmt(p['bf16_ms'])} | "
            f"{fmt(p['speedup'])}×{range_text(p['speedup_range'])} | {source} |" for p, isa, source in runs]


def replace_rows(table, rows):
    """`table` (the lines between the CPU markers) with `rows` in place of those of the same CPU kind and ISA."""
    key = lambda line: tuple(cell.strip() for cell in line.split("|")[1:4:2])  # the kind and the ISA
    new = {key(r) for r in rows}
    kept = [line for line in table if not (line.startswith("| `") and key(line) in new)]
    return kept + rows


def rewrite_benchmarks(section, kind, rows):
    """This CPU kind's section and its rows of the mixed_bfloat16 table; other kinds' are kept."""
    path = os.path.join(ROOT, "BENCHMARKS.md")
    text = open(path).read()
    begin, end = f"{BEGIN} {kind} -->", f"{END} {kind} -->"
    block = f"{begin}\n{section}\n{end}"
    if begin in text and end in text:
        text = text[:text.index(begin)] + block + text[text.index(end) + len(end):]
    elif END in text:  # after the last CPU kind's section
        at = text.index("-->", text.rindex(END)) + len("-->")
        text = text[:at] + "\n\n" + block + text[at:]
    else:
        text = text.rstrip("\n") + "\n\n## lockstep against its peers and the machine's limits (`make bench-compare`)\n\n" + block + "\n"
    if CPUS_BEGIN in text and CPUS_END in text:
        a, b = text.index(CPUS_BEGIN) + len(CPUS_BEGIN), text.index(CPUS_END)
        table = replace_rows(text[a:b].strip("\n").split("\n"), rows)
        text = text[:a] + "\n" + "\n".join(table) + "\n" + text[b:]
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build")
    p.add_argument("--quick", action="store_true", help="one round of fewer steps and sizes (a few minutes)")
    p.add_argument("--write", action="store_true", help="rewrite the bench-compare section of BENCHMARKS.md")
    p.add_argument("--tf-python", help="the python of a virtualenv with tensorflow-cpu")
    p.add_argument("--tf-skip", help="why TensorFlow is not measured")
    a = p.parse_args()
    if not a.tf_python and not a.tf_skip:
        a.tf_skip = "no --tf-python given"
    c = Compare(a)
    start = time.monotonic()
    c.result["date"] = datetime.date.today().isoformat()
    for name in ("machine", "limits", "step", "scaling", "allreduce", "startup"):
        print(f"== {name}", flush=True)
        getattr(c, name)()
    c.result["minutes"] = (time.monotonic() - start) / 60
    section = c.markdown(representative_commands(c))
    with open(os.path.join(c.build, "bench-compare.md"), "w") as f:
        f.write(section + "\n")
    with open(os.path.join(c.build, "bench-compare.json"), "w") as f:
        json.dump({"result": c.result, "runs": c.log}, f, indent=1)
    print(section)
    if a.write:
        rewrite_benchmarks(section, c.result["machine"]["kind"], policy_rows(c))
        print(f"\nBENCHMARKS.md: the bench-compare section of {c.result['machine']['kind']} and its mixed_bfloat16 rows are rewritten.")


if __name__ == "__main__":
    main()
