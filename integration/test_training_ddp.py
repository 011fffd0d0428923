"""Two torch.distributed (gloo) ranks in Ray actors train over streaming_split(2, equal=True) (issue 3)."""

from __future__ import annotations

import socket

import pytest
import ray

import bridge

torch = pytest.importorskip("torch")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@ray.remote(num_cpus=0)
class Rank:
    def train(self, split, rank: int, world: int, port: int, epochs: int) -> list[int]:
        import os

        import torch
        import torch.distributed as dist

        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        dist.init_process_group("gloo", rank=rank, world_size=world)
        model = torch.nn.Linear(2, 1)
        ddp = torch.nn.parallel.DistributedDataParallel(model)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
        counts = []
        try:
            for _ in range(epochs):
                n = 0
                for batch in split.iter_torch_batches(batch_size=64, dtypes=torch.float32):
                    x = torch.stack([batch["x"], batch["y"]], dim=1)
                    loss = ddp(x).pow(2).mean()
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    token = torch.ones(1)
                    dist.all_reduce(token)  # an explicit collective every batch
                    assert token.item() == world
                    n += 1
                counts.append(n)
        finally:
            dist.destroy_process_group()
        return counts


def test_ddp_two_ranks_same_batch_count_on_1001_rows():
    ds = bridge.range(1001, override_num_blocks=6).map_batches(lambda b: {"x": b["id"] * 1.0, "y": b["id"] * 2.0})
    splits = ds.streaming_split(2, equal=True)
    port = _free_port()
    ranks = [Rank.remote() for _ in range(2)]
    counts = ray.get([r.train.remote(s, i, 2, port, 2) for i, (r, s) in enumerate(zip(ranks, splits))], timeout=300)
    assert counts[0] == counts[1] == [8, 8]  # 500 rows each: 7 full batches of 64 + one of 52


def test_to_torch_explicit_ranks_have_equal_lengths():
    ds = bridge.range(1001, override_num_blocks=6)
    lengths = [len(ds.to_torch(batch_size=64, rank=r, world_size=2)) for r in range(2)]
    assert lengths == [8, 8]
