"""PyTorch reference for embedding_bench: the retrieval tutorial's two-tower step (two
embedding tables, a dot product, MSE, Adagrad(0.2)) with tables of V rows, batch 1000,
one thread, with sparse gradients (nn.Embedding(sparse=True), which torch's Adagrad
updates row by row) and dense ones. Prints one JSON line per (V, mode): microseconds
per step, median of 7 samples."""
import json
import statistics
import sys
import time

import torch

torch.set_num_threads(1)
BATCH, DIM = 1000, 32
rows_list = [int(v) for v in sys.argv[1:]] or [1000, 10000, 100000, 1000000]


class TwoTower(torch.nn.Module):
    def __init__(self, rows, sparse):
        super().__init__()
        self.user = torch.nn.Embedding(rows, DIM, sparse=sparse)
        self.movie = torch.nn.Embedding(rows, DIM, sparse=sparse)
        for table in (self.user, self.movie):
            torch.nn.init.uniform_(table.weight, -0.05, 0.05)

    def forward(self, users, movies):
        return (self.user(users) * self.movie(movies)).sum(dim=1, keepdim=True)


def step_us(rows, sparse):
    torch.manual_seed(0)
    model = TwoTower(rows, sparse)
    opt = torch.optim.Adagrad(model.parameters(), lr=0.2, initial_accumulator_value=0.1, eps=1e-7)
    batches = [(torch.randint(0, rows, (BATCH,)), torch.randint(0, rows, (BATCH,)), torch.rand(BATCH, 1))
               for _ in range(8)]
    loss_fn = torch.nn.MSELoss()

    def step(i):
        users, movies, labels = batches[i % len(batches)]
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(users, movies), labels)
        loss.backward()
        opt.step()

    for i in range(5):
        step(i)
    start = time.perf_counter()
    step(0)
    one = time.perf_counter() - start
    iters = max(3, min(2000, int(0.05 / max(one, 1e-6))))
    samples = []
    for _ in range(7):
        start = time.perf_counter()
        for i in range(iters):
            step(i)
        samples.append((time.perf_counter() - start) / iters)
    return statistics.median(samples) * 1e6


for rows in rows_list:
    for sparse in (True, False):
        print(json.dumps({"rows": rows, "sparse": sparse, "us_per_step": step_us(rows, sparse)}), flush=True)
