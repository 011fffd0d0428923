"""Job 2 end to end: Dask feature engineering -> Dataset -> per-epoch shuffle -> torch training."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import bridge

dd = pytest.importorskip("dask.dataframe")
torch = pytest.importorskip("torch")


def _raw_events(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    x1 = rng.normal(size=n)
    x2 = rng.normal(size=n)
    label = (2.0 * x1 - 1.0 * x2 > 0).astype("int64")
    return pd.DataFrame({"user": rng.integers(0, 50, n), "x1": x1, "x2": x2, "tags": [[1, 2]] * n, "label": label})


def test_dask_features_train_a_torch_model():
    ddf = dd.from_pandas(_raw_events(), npartitions=8)
    # Feature engineering in Dask: standardise with global statistics, add a derived column.
    mean, std = ddf[["x1", "x2"]].mean().compute(), ddf[["x1", "x2"]].std().compute()
    ddf = ddf.assign(f1=(ddf.x1 - mean["x1"]) / std["x1"], f2=(ddf.x2 - mean["x2"]) / std["x2"])
    ddf = ddf.assign(n_tags=ddf.tags.map(len, meta=("n_tags", "int64")))

    ds = bridge.from_dask(ddf[["f1", "f2", "n_tags", "label"]]).materialize()
    assert ds.count() == 4000 and ds.num_blocks() == 8
    assert set(ds.take(5)[0]) == {"f1", "f2", "n_tags", "label"}

    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    for epoch in range(3):
        seen = 0
        batches = ds.randomize_block_order(seed=epoch).iter_torch_batches(
            batch_size=256, local_shuffle_buffer_size=512, local_shuffle_seed=epoch)
        for batch in batches:
            features = torch.stack([batch["f1"], batch["f2"]], dim=1).float()
            logits = model(features).squeeze(1)
            loss = loss_fn(logits, batch["label"].float())
            opt.zero_grad()
            loss.backward()
            opt.step()
            seen += len(batch["label"])
        assert seen == 4000
    with torch.no_grad():
        full = ds.to_arrow()
        features = torch.tensor(np.stack([full["f1"].to_numpy(), full["f2"].to_numpy()], axis=1)).float()
        accuracy = ((model(features).squeeze(1) > 0).long().numpy() == full["label"].to_numpy()).mean()
    assert accuracy > 0.9
