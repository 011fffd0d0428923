"""Job 1 end to end: Spark SQL aggregation -> Dataset -> Spark stops -> map_batches -> torch training."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import bridge

pytest.importorskip("pyspark")
torch = pytest.importorskip("torch")
pytestmark = pytest.mark.spark

USERS = 2_000


def _torch_batches(ds, batch_size):
    if hasattr(ds, "iter_torch_batches"):
        yield from ds.iter_torch_batches(batch_size=batch_size, local_shuffle_buffer_size=512,
                                         local_shuffle_seed=0)
        return
    for batch in ds.iter_batches(batch_size=batch_size):  # until iter_torch_batches lands
        yield {k: torch.as_tensor(v) for k, v in batch.items()}


def test_spark_aggregation_feeds_torch_training_after_spark_stops():
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    if SparkContext._active_spark_context is not None:
        SparkContext._active_spark_context.stop()
    spark = (SparkSession.builder.master("local[2]").appName("raybridge-etl")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4").getOrCreate())
    try:
        spark.range(0, USERS * 10, numPartitions=4).selectExpr(
            f"id % {USERS} as user_id", "cast(id % 13 as double) as amount", "id % 3 = 0 as returned",
        ).createOrReplaceTempView("orders")
        features = spark.sql("""
            select user_id, count(*) as n_orders, avg(amount) as avg_amount,
                   sum(cast(returned as int)) as n_returned
            from orders group by user_id
        """)
        ds = bridge.from_spark(features)
    finally:
        spark.stop()  # the Dataset must not need Spark from here on

    assert ds.count() == USERS

    def to_features(batch):
        x = np.stack([batch["n_orders"].astype(np.float32) / 10.0, batch["avg_amount"].astype(np.float32) / 12.0,
                      batch["n_returned"].astype(np.float32) / 10.0], axis=1)
        # The label is a known linear function of the features, so a model can learn it.
        y = (2.0 * x[:, 1] - 1.0 * x[:, 2] + 0.5).astype(np.float32)
        return {"x": x, "y": y}

    train = ds.map_batches(to_features).materialize()
    assert train.count() == USERS

    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    losses, rows_seen = [], 0
    for _epoch in range(4):
        for batch in _torch_batches(train, 128):
            x, y = batch["x"], batch["y"]
            assert x.dtype == torch.float32 and x.shape[1] == 3
            loss = torch.nn.functional.mse_loss(model(x).squeeze(1), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
            rows_seen += len(y)
    assert rows_seen == 4 * USERS
    assert np.mean(losses[-5:]) < np.mean(losses[:5]) / 10
