#!/usr/bin/env python3
"""Fits T(n, p, m) = a(p)·α + b(p)·m·β to the all-reduce times run.py measured, per backend, and projects the
step time and efficiency of data-parallel training for 8..1024 workers from the fit (docs/scaling.md).

  bench/netns/fit.py bench/netns/results/*.csv [--project lockstep-ucx] [--alpha-us 36.2] [--link-gbit 10]
                     [--latency-us 50]
                     [--residuals] [--markdown]

The fit minimises the squared *relative* error (each row weighted by 1/T²), so 4 KiB and 64 MiB runs count
alike and α (latency per step) and β (seconds per byte) are both identified. Step counts per algorithm for
p ranks and m bytes per rank: ring 2(p-1)·α + 2(p-1)/p·m·β; recursive doubling log2(p)·α + log2(p)·m·β;
Rabenseifner (halving-doubling) 2·log2(p)·α + 2(p-1)/p·m·β. Plain Python, no numpy.
"""
import argparse
import collections
import csv
import math
import re

ALGORITHM = {"openmpi-ring": "ring", "openmpi-rd": "rd", "openmpi-rab": "rab", "openmpi-default": "ring",
             "lockstep-ucx": "ring", "lockstep-gloo": "ring", "lockstep-mpi": "ring"}


def coefficients(algorithm, p):
    if algorithm == "ring":
        return 2 * (p - 1), 2 * (p - 1) / p
    if algorithm == "rd":
        return math.log2(p), math.log2(p)
    if algorithm == "rab":
        return 2 * math.log2(p), 2 * (p - 1) / p
    raise ValueError(f"unknown algorithm {algorithm}")


def rate_bits(rate):
    m = re.fullmatch(r"([\d.]+)([kmg]?)bit", rate.lower())
    return float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)]


def fit(rows, algorithm):
    """Weighted least squares for (α, β) ≥ 0 on rows of (p, bytes, seconds); returns α, β, relative residuals."""
    sxx = sxy = syy = sx = sy = 0.0
    for p, m, t in rows:
        a, b = coefficients(algorithm, p)
        x, y = a / t, b * m / t  # each row divided by t: the target becomes 1
        sxx, sxy, syy, sx, sy = sxx + x * x, sxy + x * y, syy + y * y, sx + x, sy + y
    det = sxx * syy - sxy * sxy
    alpha, beta = (syy * sx - sxy * sy) / det, (sxx * sy - sxy * sx) / det
    if alpha < 0:  # refit with α = 0 (and likewise β): the constrained optimum lies on the boundary
        alpha, beta = 0.0, sy / syy
    elif beta < 0:
        alpha, beta = sx / sxx, 0.0
    return fit_residuals(rows, algorithm, alpha, beta)


def fit_residuals(rows, algorithm, alpha, beta):
    residuals = []
    for p, m, t in rows:
        a, b = coefficients(algorithm, p)
        residuals.append(((a * alpha + b * m * beta) - t) / t)
    return alpha, beta, residuals


def allreduce_time(m, workers, alpha, beta, hierarchical=False, per_host=8, alpha_shm=2e-6, beta_shm=1e-10):
    """One all-reduce of m bytes over `workers` workers. Flat ring: every one of its 2(P-1) steps waits for
    the inter-host hop. Hierarchical: reduce-scatter and all-gather inside each host through shared memory
    around a ring between the H = P/per_host hosts (per_host concurrent rings sharing each host's NIC)."""
    if workers <= 1:
        return 0.0
    if not hierarchical:
        return 2 * (workers - 1) * alpha + 2 * (workers - 1) / workers * m * beta
    g = min(per_host, workers)
    hosts = max(1, workers // g)
    local = 2 * (g - 1) * alpha_shm + 2 * (g - 1) / g * m * beta_shm
    return local + (2 * (hosts - 1) * alpha + 2 * (hosts - 1) / hosts * m * beta if hosts > 1 else 0.0)


def step_time(model, workers, alpha, beta, bucket_bytes, bytes_per_element=4, hierarchical=False):
    """Step = forward + backward + what of the all-reduces backward does not hide. Buckets go out in order on
    one communication thread as soon as their gradients are ready; gradients appear uniformly over backward
    (2/3 of the compute), except the tutorial CNN's, whose one 11 MB Dense kernel is ~all of it (model
    'tail_only': a single bucket, ready when backward ends)."""
    compute, params = model["compute_s"], model["params"]
    total = params * bytes_per_element
    if model.get("tail_only"):
        return compute + allreduce_time(total, workers, alpha, beta, hierarchical)
    forward, backward = compute / 3, 2 * compute / 3
    buckets = max(1, math.ceil(total / bucket_bytes))
    done = forward
    for i in range(buckets):
        size = min(bucket_bytes, total - i * bucket_bytes)
        ready = forward + backward * min(1.0, (i + 1) * bucket_bytes / total)
        done = max(done, ready) + allreduce_time(size, workers, alpha, beta, hierarchical)
    return max(done, compute)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv", nargs="+")
    parser.add_argument("--project", default="lockstep-gloo", help="backend whose fit the projections use")
    parser.add_argument("--link-gbit", type=float, default=10.0, help="projected NIC rate")
    parser.add_argument("--alpha-us", type=float, default=None, help="α for the projections in place of the projected "
                        "backend's fitted one (rows that start at 1 MiB leave α unidentified: take another backend's)")
    parser.add_argument("--latency-us", type=float, default=50.0, help="link latency added to the fitted α "
                        "(the simulation has none: no netem in the kernel)")
    parser.add_argument("--cnn-ms", type=float, default=9.8, help="one worker's tutorial CNN step, batch 64")
    parser.add_argument("--exclude-kib", default="16,64,256", help="sizes left out of the fit (still shown by "
                        "--residuals): tbf's 128 KiB bucket lets these pass faster than the link")
    parser.add_argument("--residuals", action="store_true", help="print every row's relative residual")
    args = parser.parse_args()

    excluded = {round(float(k) * 1024) for k in args.exclude_kib.split(",") if k}
    groups = collections.defaultdict(list)
    for path in args.csv:
        with open(path) as f:
            for r in csv.DictReader(f):
                groups[(r["backend"], r["rate"])].append((int(r["hosts"]), int(r["bytes"]), float(r["ms"]) / 1e3))

    print("| backend | link | algorithm | α (µs) | β (ns/B) | 1/β (GB/s) | wire 1/β (GB/s) | rows | RMS rel. err | max rel. err |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    fits = {}
    for (backend, rate), rows in sorted(groups.items()):
        algorithm = ALGORITHM.get(backend.split("+")[0], "ring")
        alpha, beta, res = fit([r for r in rows if r[1] not in excluded], algorithm)
        _, _, res_all = fit_residuals(rows, algorithm, alpha, beta)
        fits[backend] = (alpha, beta, rate_bits(rate))
        rms = math.sqrt(sum(e * e for e in res) / len(res))
        print(f"| {backend} | {rate} | {algorithm} | {alpha * 1e6:.1f} | {beta * 1e9:.2f} | {1e-9 / beta:.4f} | "
              f"{rate_bits(rate) / 8e9:.4f} | {len(res)} | {rms:.0%} | {max(abs(e) for e in res):.0%} |")
        if args.residuals:
            for (p, m, t), e in sorted(zip(rows, res_all)):
                note = " (not fitted)" if m in excluded else ""
                print(f"|   | p={p} | {m} B{note} | measured {t * 1e3:.3f} ms | model {t * (1 + e) * 1e3:.3f} ms | {e:+.0%} |")

    if args.project not in fits:
        return
    alpha_fit, beta_fit, sim_bits = fits[args.project]
    if args.alpha_us is not None:
        alpha_fit = args.alpha_us * 1e-6
    # The backend keeps the fraction of the wire it reached in the simulation; the link adds its latency.
    alpha = alpha_fit + args.latency_us * 1e-6
    beta = beta_fit * sim_bits / (args.link_gbit * 1e9)
    cnn_params, big_params = 2_770_634, 100_000_000
    models = [
        ("tutorial CNN (2.77 M)", {"params": cnn_params, "compute_s": args.cnn_ms / 1e3, "tail_only": True}),
        ("100M-parameter", {"params": big_params, "compute_s": args.cnn_ms / 1e3 * big_params / cnn_params}),
    ]
    given = "given" if args.alpha_us is not None else "fitted"
    print(f"\nProjection from {args.project}: α = {alpha_fit * 1e6:.1f} µs {given} + {args.latency_us:g} µs link = "
          f"{alpha * 1e6:.1f} µs; β = {beta * 1e9:.3f} ns/B at {args.link_gbit:g} Gbit/s "
          f"({1e-9 / beta:.2f} GB/s, the simulation's fraction of the wire); 8 workers per host.")
    variants = [("flat ring, 25 MiB buckets, fp32", dict(bucket_bytes=25 << 20)),
                ("hierarchical, 25 MiB, fp32", dict(bucket_bytes=25 << 20, hierarchical=True)),
                ("flat ring, 25 MiB, bf16 wire", dict(bucket_bytes=25 << 20, bytes_per_element=2)),
                ("hierarchical, 25 MiB, bf16 wire", dict(bucket_bytes=25 << 20, bytes_per_element=2, hierarchical=True)),
                ("flat ring, 1 MiB buckets", dict(bucket_bytes=1 << 20)),
                ("flat ring, 4 MiB buckets", dict(bucket_bytes=4 << 20)),
                ("flat ring, 100 MiB buckets", dict(bucket_bytes=100 << 20)),
                ("flat ring, one bucket (no overlap)", dict(bucket_bytes=1 << 40))]
    workers = [8, 16, 32, 64, 128, 256, 512, 1024]
    for name, model in models:
        t1 = model["compute_s"]
        print(f"\n{name}: one worker {t1 * 1e3:.1f} ms/step; cells: step ms (efficiency T1/Tp)\n")
        print("| variant | " + " | ".join(str(w) for w in workers) + " |")
        print("| --- |" + " ---: |" * len(workers))
        for label, kw in variants:
            if model.get("tail_only") and "buckets" in label and "25 MiB" not in label or \
               model.get("tail_only") and "one bucket" in label:
                continue  # the CNN is one bucket whatever the size
            cells = []
            for w in workers:
                t = step_time(model, w, alpha, beta, **kw)
                cells.append(f"{t * 1e3:.0f} ({t1 / t:.0%})" if t >= 0.1 else f"{t * 1e3:.1f} ({t1 / t:.0%})")
            print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
