"""PyTorch eager reference for op_overhead_bench: the same chain of 100 ops on 64-element
tensors, with autograd, forward + backward, one thread. Prints microseconds per op."""
import statistics
import time

import torch

torch.set_num_threads(1)
torch.manual_seed(0)
w = (torch.rand(64) * 0.2 + 0.9).requires_grad_()
x = torch.rand(64)
c = torch.rand(64) * 0.02 - 0.01


def step():
    h = x
    for _ in range(50):
        h = h * w + c
    h.backward(torch.ones(64))
    w.grad = None


for _ in range(50):
    step()
samples = []
for _ in range(9):
    start = time.perf_counter()
    for _ in range(200):
        step()
    samples.append((time.perf_counter() - start) / 200)
print(f"{statistics.median(samples) / 100 * 1e6:.4f}")
