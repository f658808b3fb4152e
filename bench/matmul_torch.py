"""The anchor of bench/matmul.sh: PyTorch's `x @ w.T` on the model's product shapes, f32 and
bf16 tensors (oneDNN, AMX where the CPU has it), best time of REPEATS calls after one untimed
call, printed as `m x k x n | f32 GFLOP/s | bf16 GFLOP/s`."""
import os
import sys
import time

import torch

# bench_matmul's shapes (bench/matmul.sh fails on one of these that bench_matmul lacks).
SHAPES = [
    (32, 576, 1536),
    (32, 1536, 576),
    (32, 576, 49152),
    (2048, 576, 1536),
    (2048, 1536, 576),
    (2048, 576, 576),
    (2048, 576, 49152),
]


def best(reps, f):
    f()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    torch.set_num_threads(int(os.environ.get("THREADS", "2")))
    g = torch.Generator().manual_seed(0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, cpu capability "
          f"{torch.backends.cpu.get_cpu_capability()}")
    print("m x k x n | torch f32 | torch bf16 (GFLOP/s)")
    for m, k, n in SHAPES:
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
