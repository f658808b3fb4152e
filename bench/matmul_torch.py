"""The anchor of bench/matmul.sh: PyTorch's `x @ w.T` on the shapes given (bench_matmul's, as
`MxKxN`), f32 and bf16 tensors (oneDNN, AMX where the CPU has it), best time of REPEATS calls
after one untimed call, printed as `m x k x n | f32 GFLOP/s | bf16 GFLOP/s`.

Usage: matmul_torch.py REPEATS MxKxN [MxKxN ...]"""
import os
import sys
import time

import torch


def best(reps, f):
    f()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    reps = int(sys.argv[1])
    shapes = [tuple(int(d) for d in a.split("x")) for a in sys.argv[2:]]
    torch.set_num_threads(int(os.environ.get("THREADS", "2")))
    g = torch.Generator().manual_seed(0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, cpu capability "
          f"{torch.backends.cpu.get_cpu_capability()}")
    print("m x k x n | torch f32 | torch bf16 (GFLOP/s)")
    for m, k, n in shapes:
        x = torch.rand(m, k, generator=g) - 0.5
        w = torch.rand(n, k, generator=g) - 0.5
        r = max(1, reps // 3) if m * n > 1 << 24 else reps
        gflop = 2 * m * k * n / 1e9
        with torch.no_grad():
            t32 = best(r, lambda: x @ w.T)
            xb, wb = x.bfloat16(), w.bfloat16()
            t16 = best(r, lambda: xb @ wb.T)
        print(f"{m} x {k} x {n} | {gflop / t32:.0f} | {gflop / t16:.0f}")


if __name__ == "__main__":
    main()
