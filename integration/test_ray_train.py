"""Ray Train's TorchTrainer fed by raybridge: streaming_split iterators in train_loop_config, or
``to_ray_data()`` into ``datasets=`` (the README's recipe).  Every rank writes the ids it saw per
epoch; each epoch must cover every row exactly once across the ranks."""

from __future__ import annotations

import json

import pytest

import bridge

pytest.importorskip("torch")
train = pytest.importorskip("ray.train")
torch_train = pytest.importorskip("ray.train.torch")

ROWS = 2048
EPOCHS = 2


def _loop(config):
    import ray.train
    import torch

    ctx = ray.train.get_context()
    rank = ctx.get_world_rank()
    source = config["splits"][rank] if "splits" in config else ray.train.get_dataset_shard("train")
    model = ray.train.torch.prepare_model(torch.nn.Linear(1, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    seen = []
    for _ in range(EPOCHS):
        ids = []
        for batch in source.iter_torch_batches(batch_size=256):
            loss = torch.nn.functional.mse_loss(model(batch["x"][:, None]).squeeze(1), batch["y"])
            opt.zero_grad()
            loss.backward()
            opt.step()
            ids.extend(int(i) for i in batch["id"])
        seen.append(ids)
    with open(f"{config['out']}/rank{rank}.json", "w") as f:
        json.dump(seen, f)
    ray.train.report({"rows": sum(map(len, seen))})


def _dataset() -> bridge.Dataset:
    return bridge.range(ROWS, override_num_blocks=8).map_batches(
        lambda b: {"id": b["id"], "x": b["id"].astype("float32") / ROWS, "y": (b["id"] % 2).astype("float32")})


def _fit(tmp_path, config, datasets=None):
    trainer = torch_train.TorchTrainer(
        _loop, train_loop_config={**config, "out": str(tmp_path)}, datasets=datasets,
        # 2 CPUs in the test cluster: the workers take one, the reads the other.
        scaling_config=train.ScalingConfig(num_workers=2, resources_per_worker={"CPU": 0.5}),
        run_config=train.RunConfig(storage_path=str(tmp_path / "results"), name="raybridge"),
    )
    result = trainer.fit()
    assert result.error is None
    return [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]


def _assert_each_epoch_covers_every_row_once(per_rank):
    for epoch in range(EPOCHS):
        ids = [i for rank in per_rank for i in rank[epoch]]
        assert sorted(ids) == list(range(ROWS)), f"epoch {epoch}: rows lost or repeated across ranks"
        assert len(per_rank[0][epoch]) == len(per_rank[1][epoch]) == ROWS // 2


@pytest.mark.timeout(300)
def test_torch_trainer_workers_fed_by_streaming_split(tmp_path):
    splits = _dataset().streaming_split(2, equal=True)
    _assert_each_epoch_covers_every_row_once(_fit(tmp_path, {"splits": splits}))


@pytest.mark.timeout(300)
def test_torch_trainer_fed_by_to_ray_data(tmp_path):
    _assert_each_epoch_covers_every_row_once(_fit(tmp_path, {}, datasets={"train": _dataset().to_ray_data()}))
