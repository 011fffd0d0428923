"""Batch inference with a real torch model in an actor pool, fed by CPU pre-processing tasks."""

from __future__ import annotations

import numpy as np
import pytest
import ray

import bridge

torch = pytest.importorskip("torch")

N_ROWS = 10_000
N_FEATURES = 16


def decode(batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """CPU pre-processing: derive and normalise a feature vector from each id."""
    ids = batch["id"].astype(np.float32)
    k = np.arange(1, N_FEATURES + 1, dtype=np.float32)
    feats = np.sin(ids[:, None] * k[None, :] / 100.0)
    feats = (feats - feats.mean(axis=1, keepdims=True)) / (feats.std(axis=1, keepdims=True) + 1e-6)
    return {"id": batch["id"], "features": feats.astype(np.float32)}


def build_model() -> torch.nn.Module:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(N_FEATURES, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8), torch.nn.Tanh()
    )
    return model.eval()


class TorchPredictor:
    """Loads the model once per actor; runs it on the actor's device."""

    def __init__(self) -> None:
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = build_model().to(self.device)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        with torch.inference_mode():
            x = torch.as_tensor(batch["features"], device=self.device)
            y = self.model(x).cpu().numpy()
        device_index = torch.cuda.current_device() if self.device.type == "cuda" else -1
        return {"id": batch["id"], "pred": y, "device": np.full(len(y), device_index)}


def _expected() -> np.ndarray:
    feats = decode({"id": np.arange(N_ROWS)})["features"]
    with torch.inference_mode():
        return build_model()(torch.as_tensor(feats)).numpy()


def _pipeline(**actor_args) -> bridge.Dataset:
    return (
        bridge.range(N_ROWS, override_num_blocks=20)
        .map_batches(decode)
        .map_batches(TorchPredictor, batch_size=1000, **actor_args)
    )


@pytest.mark.timeout(300)
def test_torch_model_in_two_actors_equals_running_the_model_directly():
    ds = _pipeline(concurrency=2)
    out = ds.to_arrow()
    assert out.column("id").to_pylist() == list(range(N_ROWS))
    pred = np.stack(out.column("pred").to_numpy(zero_copy_only=False))
    np.testing.assert_allclose(pred, _expected(), rtol=1e-5, atol=1e-6)
    pool = next(o for o in ds._last_stats.ops if o.name.startswith("MapBatches(TorchPredictor)"))
    assert pool.extra["batches"] == N_ROWS // 1000
    assert pool.extra["actors_peak"] == 2


@pytest.mark.timeout(300)
def test_torch_model_on_gpu_actors():
    if not ray.cluster_resources().get("GPU", 0):
        pytest.skip("no GPU in this Ray cluster")
    ds = _pipeline(concurrency=1, num_gpus=1)
    out = ds.to_arrow()
    assert set(out.column("device").to_pylist()) == {0}
    pred = np.stack(out.column("pred").to_numpy(zero_copy_only=False))
    np.testing.assert_allclose(pred, _expected(), rtol=1e-4, atol=1e-5)
    pool = next(o for o in ds._last_stats.ops if o.name.startswith("MapBatches(TorchPredictor)"))
    print("GPU pool stats:", pool.summary())
    assert pool.extra["gpus_per_actor"] == 1
