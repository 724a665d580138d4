#!/usr/bin/env python3
"""All-reduce timed on 2-8 simulated hosts (network namespaces joined by shaped veth links, cluster.sh),
once per backend, into one CSV row per (hosts, backend, size). Needs root, ip, tc, mpicc/mpirun.

  sudo bench/netns/run.py --hosts 2,4,8 --rate 1gbit --out bench/netns/results/1gbit.csv
       [--backends openmpi-ring,openmpi-rd,openmpi-rab,lockstep-ucx,lockstep-gloo,lockstep-mpi]
       [--sizes-kib 4,16,64,256,1024,4096,16384,65536] [--iters 5] [--lockstep build/bin/lockstep]
       [--mpi-mca btl_tcp_links=2 --tag links2]   # extra OpenMPI settings; the tag marks their rows
       [--timeout 300]   # seconds per backend run; every process is killed after it

Backends: openmpi-<alg> is OpenMPI's MPI_Allreduce forced to one algorithm of its tuned component (ring,
rd = recursive doubling, rab = Rabenseifner's halving-doubling), measured by mpi_allreduce.c (compiled here);
lockstep-ucx is `lockstep bench allreduce --implementation ring` (the network backend: UCX over TCP), one worker
per host found through TF_CONFIG; lockstep-gloo is the same with LOCKSTEP_COLLECTIVE=gloo; lockstep-mpi is `--implementation mpi` under mpirun. lockstep's command takes whole MiB only, so
its rows start at 1 MiB. A lockstep backend whose binary or option is missing is skipped with a note. The cluster is always torn down, on errors and Ctrl-C too.
Fit the rows with bench/netns/fit.py.
"""
import argparse
import csv
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CLUSTER = os.path.join(HERE, "cluster.sh")
SUBNET = "10.213.0"
# OpenMPI 4.1 coll_tuned_allreduce_algorithm numbers.
MPI_ALGORITHMS = {"openmpi-ring": 4, "openmpi-rd": 3, "openmpi-rab": 6, "openmpi-default": 0}
LINE = re.compile(r"^(?P<label>.*?)\s+(?P<mib>[\d.eE+-]+) MiB\s+(?P<ms>[\d.]+) ms\s+algbw\s+(?P<algbw>[\d.]+) GB/s"
                  r"\s+busbw\s+(?P<busbw>[\d.]+) GB/s")
FIELDS = ["hosts", "rate", "backend", "bytes", "ms", "algbw_gbs", "busbw_gbs"]


def fail(message):
    print(f"run.py: {message}", file=sys.stderr)
    sys.exit(2)


def check_prerequisites(args):
    if os.geteuid() != 0:
        fail("needs root (network namespaces, veth, tc); run it with sudo")
    for tool in ["ip", "tc"] + (["mpicc", "mpirun"] if any(b.startswith("openmpi") or b == "lockstep-mpi"
                                                             for b in args.backends) else []):
        if shutil.which(tool) is None:
            fail(f"needs '{tool}' on PATH")


def mpi_env():
    # PMIx's shared-memory store refused some runs (NO-PERMISSIONS) when jobs follow each other; hash avoids it.
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1",
               PMIX_MCA_gds="hash")
    env.pop("TF_CONFIG", None)
    return env


def mpirun(hosts, hostfile, program, extra_mca=()):
    """mpirun started in host 0's namespace; ns_rsh.sh starts orted in the others'. Ranks yield when idle
    because the simulated hosts share two cores: a spinning rank would starve the one with work."""
    mca = [("plm_rsh_agent", os.path.join(HERE, "ns_rsh.sh")), ("btl", "tcp,self"),
           ("btl_tcp_if_include", f"{SUBNET}.0/24"), ("oob_tcp_if_include", f"{SUBNET}.0/24"), ("routed", "direct"),
           ("mpi_yield_when_idle", "1"), *extra_mca]
    cmd = ["ip", "netns", "exec", "lsn-h0", "mpirun", "-np", str(hosts), "--hostfile", hostfile]
    for key, value in mca:
        cmd += ["--mca", key, str(value)]
    return cmd + program


def run_bounded(cmd, timeout, env):
    """Runs cmd in its own process group and kills the group after `timeout` s; returns (rc, stdout)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return 124, out
    except BaseException:  # SIGTERM, Ctrl-C: the group is in its own session, so it would outlive this script
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    return proc.returncode, out


def lockstep_workers(args, hosts, implementation, collective=None):
    """One `lockstep bench allreduce` per host, each in its namespace with its own TF_CONFIG (and LOCKSTEP_COLLECTIVE
    when `collective` is given)."""
    workers = [f"{SUBNET}.{i + 1}:2222" for i in range(hosts)]
    sizes_mib = ",".join(str(mib) for mib in lockstep_sizes_mib(args))
    procs = []
    for i in range(hosts):
        tf_config = '{"cluster":{"worker":[%s]},"task":{"type":"worker","index":%d}}' % (
            ",".join(f'"{w}"' for w in workers), i)
        env = dict(os.environ, TF_CONFIG=tf_config, OMP_NUM_THREADS="1")
        if collective:
            env["LOCKSTEP_COLLECTIVE"] = collective
        cmd = ["ip", "netns", "exec", f"lsn-h{i}", "timeout", "-s", "KILL", str(args.timeout), args.lockstep, "bench",
               "allreduce", "--sizes-mib", sizes_mib, "--iters", str(args.iters), "--implementation", implementation]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                      start_new_session=True))
    outputs = []
    try:
        for proc in procs:
            try:
                out, _ = proc.communicate(timeout=args.timeout + 10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                out, _ = proc.communicate()
            outputs.append((proc.returncode, out))
    except BaseException:  # SIGTERM, Ctrl-C: no worker outlives the script
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        raise
    rc = max(abs(r) for r, _ in outputs)
    return rc, outputs[0][1] if rc == 0 else "\n".join(o for _, o in outputs)


def lockstep_sizes_mib(args):
    """`lockstep bench allreduce` takes whole MiB from 1 up: smaller sizes are measured by OpenMPI only."""
    return [int(kib) // 1024 for kib in args.sizes_kib if kib >= 1024 and kib % 1024 == 0]


def lockstep_supports(args, what):
    if not os.access(args.lockstep, os.X_OK):
        return f"{args.lockstep} not found (build it: make build)"
    rc, out = run_bounded([args.lockstep, "bench", "allreduce", "--help"], 30, dict(os.environ))
    if rc != 0 or "--implementation" not in out:
        return f"{args.lockstep} has no 'bench allreduce'"
    if what == "mpi" and "mpi" not in out:
        return f"{args.lockstep} bench allreduce has no --implementation mpi"
    return None


def measure(args, hosts, backend, hostfile, mpi_binary):
    if backend.startswith("openmpi"):
        label = "openmpi " + backend.split("-", 1)[1]
        program = [mpi_binary, "--sizes-kib", ",".join(f"{k:g}" for k in args.sizes_kib), "--iters", str(args.iters),
                   "--label", label]
        extra = [("coll_tuned_use_dynamic_rules", 1), ("coll_tuned_allreduce_algorithm", MPI_ALGORITHMS[backend]),
                 *args.mpi_mca]
        return run_bounded(mpirun(hosts, hostfile, program, extra), args.timeout, mpi_env())
    if backend == "lockstep-ucx":
        return lockstep_workers(args, hosts, "ring")
    if backend == "lockstep-gloo":
        return lockstep_workers(args, hosts, "ring", collective="gloo")
    if backend == "lockstep-mpi":
        # The namespaces share one host name, so the MPI resolver would take the ranks for one machine and use
        # 127.0.0.1: each rank names its own namespace's address instead (LOCKSTEP_HOST).
        program = ["sh", "-c", 'LOCKSTEP_HOST=$(hostname -I | cut -d" " -f1) exec "$0" "$@"', args.lockstep, "bench",
                   "allreduce", "--sizes-mib", ",".join(map(str, lockstep_sizes_mib(args))), "--iters",
                   str(args.iters), "--implementation", "mpi"]
        return run_bounded(mpirun(hosts, hostfile, program, args.mpi_mca), args.timeout, mpi_env())
    fail(f"unknown backend {backend}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", default="2,4,8", help="host counts, 2..8 each")
    parser.add_argument("--rate", default="1gbit", help="tc rate of every link, each direction")
    parser.add_argument("--delay", default="0", help="netem delay per link direction (needs sch_netem)")
    parser.add_argument("--backends", default="openmpi-ring,openmpi-rd,openmpi-rab,lockstep-ucx,lockstep-gloo,lockstep-mpi")
    parser.add_argument("--sizes-kib", default="4,16,64,256,1024,4096,16384,65536")
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--lockstep", default="build/bin/lockstep")
    parser.add_argument("--mpi-mca", default="", help="extra OpenMPI settings key=value,key=value (e.g. btl_tcp_links=2)")
    parser.add_argument("--tag", default="", help="appended to the backend names in the CSV (backend+TAG)")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per backend run")
    parser.add_argument("--out", default=os.path.join(HERE, "results", "allreduce.csv"))
    args = parser.parse_args()
    args.backends = args.backends.split(",")
    args.sizes_kib = [float(s) for s in args.sizes_kib.split(",")]
    args.lockstep = os.path.abspath(args.lockstep)
    args.mpi_mca = [tuple(kv.split("=", 1)) for kv in args.mpi_mca.split(",") if kv]
    host_counts = [int(h) for h in args.hosts.split(",")]
    check_prerequisites(args)

    skip = {}
    for backend, what in (("lockstep-ucx", "ring"), ("lockstep-gloo", "ring"), ("lockstep-mpi", "mpi")):
        if backend in args.backends:
            reason = lockstep_supports(args, what)
            if reason:
                skip[backend] = reason
                print(f"run.py: skipping {backend}: {reason}", file=sys.stderr)

    workdir = tempfile.mkdtemp(prefix="lsn-")
    mpi_binary = os.path.join(workdir, "mpi_allreduce")
    if any(b.startswith("openmpi") for b in args.backends):
        subprocess.run(["mpicc", "-O2", "-o", mpi_binary, os.path.join(HERE, "mpi_allreduce.c")], check=True)
    os.chmod(workdir, 0o755)

    # SIGTERM/SIGHUP become exceptions so the finally below tears the namespaces down.
    def stop(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)

    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    new_file = not os.path.exists(args.out)
    with open(args.out, "a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        if new_file:
            writer.writeheader()
        try:
            for hosts in host_counts:
                subprocess.run([CLUSTER, "down"], check=True)
                subprocess.run([CLUSTER, "up", str(hosts), "--rate", args.rate, "--delay", args.delay], check=True)
                hostfile = os.path.join(workdir, f"hosts{hosts}")
                with open(hostfile, "w") as h:
                    h.writelines(f"{SUBNET}.{i + 1} slots=1\n" for i in range(hosts))
                for backend in args.backends:
                    if backend in skip:
                        continue
                    # Up to three tries: on two oversubscribed cores a connection setup sometimes times out.
                    for attempt in range(3):
                        rc, out = measure(args, hosts, backend, hostfile, mpi_binary)
                        rows = [m for m in map(LINE.match, out.splitlines()) if m]
                        expected = len(args.sizes_kib if backend.startswith("openmpi") else lockstep_sizes_mib(args))
                        if rc == 0 and len(rows) == expected:
                            break
                        tail = "\n".join(out.splitlines()[-15:])
                        print(f"run.py: {backend} on {hosts} hosts failed (exit {rc}, try {attempt + 1}):\n{tail}",
                              file=sys.stderr)
                    else:
                        rows = []
                    for m in rows:
                        row = {"hosts": hosts, "rate": args.rate, "backend": backend + (f"+{args.tag}" if args.tag else ""),
                               "bytes": round(float(m["mib"]) * 1048576), "ms": m["ms"],
                               "algbw_gbs": m["algbw"], "busbw_gbs": m["busbw"]}
                        writer.writerow(row)
                        f.flush()
                        print(f"{hosts} hosts {args.rate} {backend:15s} {row['bytes']:>10d} B {float(m['ms']):10.3f} ms"
                              f"  busbw {m['busbw']} GB/s", flush=True)
        finally:
            subprocess.run([CLUSTER, "down"])
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
