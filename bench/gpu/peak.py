"""The GPU's matrix-multiply limit, measured with cuBLAS through PyTorch: float32 GEMM with TF32 off (lockstep's
arithmetic) and with TF32 on (the tensor cores' float32 rate). n x n x n products timed with CUDA events, the median
of 10 after 3 warm-ups. Prints one line per mode: TFLOP/s.
Usage: peak.py [--n 8192]"""
import argparse, statistics, torch

p = argparse.ArgumentParser()
p.add_argument("--n", type=int, default=8192)
n = p.parse_args().n
a, b = torch.rand(n, n, device="cuda"), torch.rand(n, n, device="cuda")
print(torch.cuda.get_device_name(), f"torch {torch.__version__}")
for mode, tf32 in (("float32 (TF32 off)", False), ("TF32", True)):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    for _ in range(3): a @ b
    times = []
    for _ in range(10):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); a @ b; e.record(); torch.cuda.synchronize()
        times.append(s.elapsed_time(e) / 1e3)
    print(f"sgemm {mode}: {2 * n ** 3 / statistics.median(times) / 1e12:.1f} TFLOP/s (n={n})")
