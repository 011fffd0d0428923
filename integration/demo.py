"""The three jobs end to end: ``make demo`` (or ``python -m integration.demo [--scale 0.05]``).

1. Spark-on-Ray ETL handoff: Spark SQL (on Ray through ``bridge.init_spark``) joins and
   aggregates generated orders into a feature table -> ``bridge.from_spark`` ->
   ``bridge.stop_spark()`` -> the Dataset lives on (counted, aggregated, checked).
2. Dask to training: scikit-learn's bundled digits, expanded with noise in Dask ->
   ``bridge.from_dask`` -> ``map_batches`` (normalise into a tensor column) -> batch
   inference with a torch encoder in an actor pool -> per-epoch ``random_shuffle`` ->
   ``to_torch`` DataLoader training a classifier for 2 epochs.
3. Exporters: the same Dataset through ``to_tf`` into ``keras.Model.fit`` for one epoch.
4. Report: ``ds.stats()`` per stage, ``summary.json`` and a timeline PNG in ``demo_out/``.

Every stage prints its rows and time; the process exits non-zero if any stage fails.
Progress bars show when stderr is a terminal (``DataContext.enable_progress_bars``).
Runs on the Ray named by ``RAY_ADDRESS`` when set, else on a local Ray started here.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import sys
import time
import traceback
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

#: Full-scale sizes; ``--scale`` multiplies them.
SPARK_ORDERS = 1_000_000
DIGIT_COPIES = 40  # 1,797 digits x 40 noisy copies = 71,880 images
EMBED_DIM = 256
EPOCHS_TORCH = 2


@dataclasses.dataclass
class StageResult:
    name: str
    ok: bool = False
    rows: int = 0
    seconds: float = 0.0
    facts: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: (label, DatasetStats) of every execution the stage ran, for stats.txt and the timeline.
    executions: list[tuple[str, Any]] = dataclasses.field(default_factory=list)
    error: str | None = None
    start_ts: float = 0.0
    end_ts: float = 0.0
    #: (label, start_ts, end_ts) of driver-side phases (Spark start-up, training epochs), for the timeline.
    phases: list[tuple[str, float, float]] = dataclasses.field(default_factory=list)

    @contextlib.contextmanager
    def phase(self, label: str) -> Iterator[None]:
        start = time.time()
        try:
            yield
        finally:
            self.phases.append((label, start, time.time()))

    def keep_stats(self, label: str, ds: Any) -> None:
        stats = getattr(ds, "_last_stats", None)
        if stats is not None:
            self.executions.append((label, stats))


# ---------------------------------------------------------------- stage 1: Spark on Ray -> Dataset
def spark_etl(scale: float, spark_mode: str, result: StageResult) -> Any:
    """Spark SQL builds a per-order feature table; the Dataset outlives Spark."""
    import pyarrow.compute as pc

    import bridge

    n_orders = max(int(SPARK_ORDERS * scale), 1_000)
    n_users = max(n_orders // 50, 100)
    t0 = time.perf_counter()
    with result.phase("init_spark" if spark_mode == "ray" else "SparkSession start"):
        spark = _start_spark(spark_mode)
    result.facts["spark"] = spark_mode
    result.facts["spark_start_s"] = round(time.perf_counter() - t0, 1)
    print(f"spark ({spark_mode}) started in {result.facts['spark_start_s']}s: {spark.sparkContext.master}")
    try:
        spark.range(0, n_users, numPartitions=2).selectExpr(
            "id as user_id", "cast(id % 5 as int) as segment", "cast(id % 97 as double) / 97 as tenure",
        ).createOrReplaceTempView("users")
        spark.range(0, n_orders, numPartitions=4).selectExpr(
            "id as order_id", f"pmod(id * 7919, {n_users}) as user_id",
            "cast(pmod(id * 31 + (id div 1000) * 7, 997) as double) / 10 + 1 as amount",
            "pmod(id, 11) = 0 as returned",
        ).createOrReplaceTempView("orders")
        features = spark.sql("""
            with per_user as (
                select user_id, count(*) as n_orders, avg(amount) as avg_amount,
                       avg(cast(returned as double)) as return_rate
                from orders group by user_id)
            select o.order_id, o.user_id, u.segment, u.tenure, o.amount,
                   o.amount / p.avg_amount as amount_vs_user_avg, p.n_orders, p.return_rate,
                   cast(o.returned as int) as returned
            from orders o join users u on o.user_id = u.user_id join per_user p on o.user_id = p.user_id
        """)
        t1 = time.perf_counter()
        with result.phase("Spark SQL + from_spark"):
            ds = bridge.from_spark(features)
        result.facts["from_spark_s"] = round(time.perf_counter() - t1, 1)
    finally:
        with result.phase("stop_spark"):
            _stop_spark(spark_mode, spark)
    print(f"from_spark: {ds.num_blocks()} blocks in {result.facts['from_spark_s']}s; Spark is stopped now")

    # The Dataset lives on: its blocks belong to this driver, not to the (gone) executors.
    rows = ds.count()
    returned = int(ds.sum("returned"))
    expected_returned = (n_orders + 10) // 11
    by_segment = ds.groupby("segment").count()
    segments = {r["segment"]: r["count()"] for r in by_segment.take_all()}
    result.keep_stats("spark: groupby(segment).count()", by_segment)
    high = ds.filter(expr=pc.field("amount_vs_user_avg") > 1.5)
    n_high = high.count()
    result.keep_stats("spark: filter(amount_vs_user_avg > 1.5)", high)
    print(f"after stop_spark: {rows:,} rows, columns {ds.columns()}")
    print(f"  returned orders {returned:,} (expected {expected_returned:,}); per segment {segments}")
    print(f"  orders above 1.5x their user's average: {n_high:,}")
    if rows != n_orders or returned != expected_returned or sum(segments.values()) != n_orders or not n_high:
        msg = f"the feature table lost rows: {rows} rows, {returned} returned, segments {segments}"
        raise AssertionError(msg)
    result.rows = rows
    result.facts.update(expected_rows=n_orders, returned=returned, segments=len(segments), above_avg=n_high)
    return ds


def _start_spark(mode: str) -> Any:
    import bridge

    configs = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4",
               "spark.ui.showConsoleProgress": str(sys.stderr.isatty()).lower(),
               "spark.sql.autoBroadcastJoinThreshold": str(64 * 1024 * 1024)}
    if mode == "ray":
        spark = bridge.init_spark("raybridge-demo", num_executors=1, executor_cores=1, executor_memory="1g",
                                  configs=configs)
    else:
        from pyspark.sql import SparkSession

        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = SparkSession.builder.master("local[2]").appName("raybridge-demo")
        for key, value in configs.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _stop_spark(mode: str, spark: Any) -> None:
    import bridge

    if mode == "ray":
        bridge.stop_spark()
    else:
        spark.stop()


# ---------------------------------------------------------------- stage 2: Dask -> actors -> torch
def noisy_digits(part: Any) -> Any:
    """Dask partition -> the same digits with Gaussian pixel noise and a random one-pixel shift."""
    pixels = part[[f"p{i}" for i in range(64)]].to_numpy(np.float32).reshape(-1, 8, 8)
    rng = np.random.default_rng(int(part.index[0]) if len(part) else 0)  # seeded per partition
    shifts = rng.integers(-1, 2, size=(len(part), 2))
    for axis in (0, 1):  # a shift of -1, 0 or +1 pixel along each axis
        for s in (-1, 1):
            rows = shifts[:, axis] == s
            pixels[rows] = np.roll(pixels[rows], s, axis=axis + 1)
    pixels = np.clip(pixels + rng.normal(0.0, 1.5, pixels.shape).astype(np.float32), 0.0, 16.0)
    out = part.copy()
    out[[f"p{i}" for i in range(64)]] = pixels.reshape(-1, 64)
    return out


def normalise(batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Last-mile feature transform: 64 pixel columns -> one (1, 8, 8) float32 image, standardised."""
    pixels = np.stack([batch[f"p{i}"] for i in range(64)], axis=1).astype(np.float32) / 16.0
    pixels = (pixels - 0.3) / 0.4
    return {"image": pixels.reshape(-1, 1, 8, 8), "label": batch["label"], "held_out": batch["held_out"]}


class DigitEncoder:
    """A frozen convolutional encoder, loaded once per actor (on the GPU when the actor has one)."""

    def __init__(self) -> None:
        import torch

        torch.manual_seed(0)  # every actor holds the same weights
        torch.set_num_threads(1)
        self.torch = torch
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = torch.nn.Sequential(
            torch.nn.Conv2d(1, 32, 3, padding=1), torch.nn.ReLU(),
            torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(2), torch.nn.Flatten(),
        ).to(self.device).eval()

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        with self.torch.inference_mode():
            x = self.torch.tensor(batch["image"], device=self.device)  # batches are read-only views
            emb = self.model(x)
            emb = (emb - emb.mean(dim=1, keepdim=True)) / (emb.std(dim=1, keepdim=True) + 1e-6)
        return {"embedding": emb.cpu().numpy(), "label": batch["label"], "held_out": batch["held_out"]}


def dask_training(scale: float, result: StageResult) -> tuple[Any, Any]:
    """Dask -> Dataset -> normalise -> actor-pool inference -> torch training; returns (train, test)."""
    import dask.dataframe as dd
    import pandas as pd
    import pyarrow.compute as pc
    import ray
    import torch
    from sklearn.datasets import load_digits

    import bridge

    digits = load_digits()
    copies = max(round(DIGIT_COPIES * scale), 2)
    n = len(digits.target) * copies
    base = pd.DataFrame(np.tile(digits.data.astype(np.float32), (copies, 1)), columns=[f"p{i}" for i in range(64)])
    base["label"] = np.tile(digits.target, copies).astype(np.int64)
    base["source"] = np.tile(np.arange(len(digits.target)), copies).astype(np.int64)
    base["held_out"] = base["source"] % 5 == 0
    ddf = dd.from_pandas(base, npartitions=8).map_partitions(noisy_digits, meta=base.head(0))

    t0 = time.perf_counter()
    with result.phase("from_dask"):
        raw = bridge.from_dask(ddf)
    result.facts["from_dask_s"] = round(time.perf_counter() - t0, 1)
    print(f"from_dask: {raw.count():,} rows in {raw.num_blocks()} blocks, {result.facts['from_dask_s']}s")

    gpus = ray.cluster_resources().get("GPU", 0)
    # Two actors; on a CPU-only machine each asks for half a CPU so the normalise tasks still get one.
    actor_args: dict[str, Any] = {"num_gpus": 1} if gpus else {"num_cpus": 0.5}
    n_actors = max(1, min(2, int(gpus))) if gpus else 2
    embedded = (raw.map_batches(normalise)
                .map_batches(DigitEncoder, batch_size=1024, concurrency=n_actors, **actor_args)
                .materialize())  # inference runs once; the per-epoch shuffle below runs every epoch
    result.keep_stats("dask: normalise -> DigitEncoder (actors)", embedded)
    print(f"inference: {embedded.count():,} embeddings of {EMBED_DIM} floats ({'GPU' if gpus else 'CPU'} actors)")

    # Hold out every fifth source digit: its noisy copies are never trained on.
    train = embedded.filter(expr=~pc.field("held_out")).materialize()
    test = embedded.filter(expr=pc.field("held_out")).materialize()
    result.keep_stats("dask: split train", train)

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(EMBED_DIM, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    epochs = []
    for epoch in range(EPOCHS_TORCH):
        shuffled = train.random_shuffle(seed=epoch)  # a fresh order every epoch
        loader = torch.utils.data.DataLoader(shuffled.to_torch(batch_size=128), batch_size=None)
        seen, losses, correct = 0, [], 0
        epoch_start = time.time()
        for batch in loader:
            logits = model(batch["embedding"])
            loss = torch.nn.functional.cross_entropy(logits, batch["label"])
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
            correct += int((logits.argmax(1) == batch["label"]).sum())
            seen += len(batch["label"])
        result.phases.append((f"torch epoch {epoch}", epoch_start, time.time()))
        result.keep_stats(f"dask: epoch {epoch} random_shuffle -> to_torch", shuffled)
        acc = _torch_accuracy(torch, model, test)
        epochs.append({"epoch": epoch, "rows": seen, "loss": round(float(np.mean(losses)), 4),
                       "train_accuracy": round(correct / max(seen, 1), 4), "test_accuracy": round(acc, 4)})
        print(f"torch epoch {epoch}: {seen:,} rows, loss {np.mean(losses):.3f}, "
              f"train accuracy {correct / max(seen, 1):.3f}, held-out accuracy {acc:.3f}")
    n_train, n_test = train.count(), test.count()
    if n_train + n_test != n or any(e["rows"] != n_train for e in epochs):
        raise AssertionError(f"rows went missing: {n_train} + {n_test} != {n} or epochs {epochs}")
    result.rows = n
    result.facts.update(expected_rows=n, train_rows=n_train, test_rows=n_test, epochs=epochs,
                        test_accuracy=epochs[-1]["test_accuracy"], gpus=gpus)
    return train, test


def _torch_accuracy(torch: Any, model: Any, ds: Any) -> float:
    correct = total = 0
    with torch.no_grad():
        for batch in ds.iter_torch_batches(batch_size=1024):
            correct += int((model(batch["embedding"]).argmax(1) == batch["label"]).sum())
            total += len(batch["label"])
    return correct / max(total, 1)


# ---------------------------------------------------------------- stage 3: the same Dataset -> tf.data
def tf_export(train: Any, test: Any, result: StageResult) -> None:
    """``to_tf`` -> ``keras.Model.fit`` for one epoch, then evaluate on the held-out digits."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    tf.keras.utils.set_random_seed(0)
    model = tf.keras.Sequential([tf.keras.Input((EMBED_DIM,)), tf.keras.layers.Dense(64, activation="relu"),
                                 tf.keras.layers.Dense(10)])
    model.compile(optimizer=tf.keras.optimizers.Adam(3e-3), metrics=["accuracy"],
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    n_batches = -(-train.count() // 128)
    train_tf = train.to_tf("embedding", "label", batch_size=128, local_shuffle_buffer_size=4096,
                           local_shuffle_seed=0).apply(tf.data.experimental.assert_cardinality(n_batches))
    with warnings.catch_warnings():  # keras asks for .shuffle()/.repeat() on any tf.data input; ours shuffles
        warnings.simplefilter("ignore", UserWarning)
        with result.phase("keras fit (1 epoch)"):
            history = model.fit(train_tf, epochs=1, verbose=2 if sys.stdout.isatty() else 0)
    loss, acc = model.evaluate(test.to_tf("embedding", "label", batch_size=1024), verbose=0)
    n_fit = sum(int(y.shape[0]) for _, y in train_tf)
    print(f"keras fit: loss {history.history['loss'][-1]:.3f}, train accuracy {history.history['accuracy'][-1]:.3f}, "
          f"held-out accuracy {acc:.3f}")
    if n_fit != train.count():
        raise AssertionError(f"to_tf yielded {n_fit} rows; the Dataset has {train.count()}")
    result.rows = n_fit
    result.facts.update(expected_rows=train.count(), loss=round(float(history.history["loss"][-1]), 4),
                        train_accuracy=round(float(history.history["accuracy"][-1]), 4),
                        test_accuracy=round(float(acc), 4), test_loss=round(float(loss), 4))


# ---------------------------------------------------------------- running the stages
def run_stage(result: StageResult, fn: Any, *args: Any) -> Any:
    print(f"\n=== {result.name} ===", flush=True)
    t = time.perf_counter()
    result.start_ts = time.time()
    try:
        value = fn(*args, result)
        result.ok = True
        return value
    except Exception as err:  # noqa: BLE001 - report every stage, then fail the run
        traceback.print_exc()
        result.error = f"{type(err).__name__}: {err}"
        return None
    finally:
        result.seconds = round(time.perf_counter() - t, 1)
        result.end_ts = time.time()
        status = "ok" if result.ok else "FAILED"
        print(f"--- {result.name}: {result.rows:,} rows in {result.seconds:.1f}s [{status}]", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m integration.demo", description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the full data sizes (CI: 0.05)")
    ap.add_argument("--spark", choices=("ray", "local"), default="ray",
                    help="Spark on Ray through bridge.init_spark (default) or a local[2] SparkSession")
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("RAYBRIDGE_DEMO_OUT", "demo_out")))
    args = ap.parse_args(argv)
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    import ray

    import bridge
    from integration.demo_report import write_report

    started = time.time()
    if not ray.is_initialized():
        if os.environ.get("RAY_ADDRESS"):
            ray.init(include_dashboard=False, configure_logging=False)
        else:
            # address="local": a fresh Ray of our own, even when other Ray clusters run on this machine.
            ray.init(address="local", object_store_memory=10**9, include_dashboard=False, configure_logging=False)
    print(f"Ray: {ray.cluster_resources().get('CPU', 0):.0f} CPUs, {ray.cluster_resources().get('GPU', 0):.0f} GPUs;"
          f" progress bars {'on' if bridge.DataContext.get_current().enable_progress_bars else 'off'}")
    args.out.mkdir(parents=True, exist_ok=True)

    spark = StageResult("1. Spark-on-Ray ETL handoff" if args.spark == "ray" else "1. Spark (local) ETL handoff")
    dask = StageResult("2. Dask -> actor-pool inference -> torch training")
    tf = StageResult("3. The same Dataset -> tf.data -> keras fit")
    run_stage(spark, spark_etl, args.scale, args.spark)
    split = run_stage(dask, dask_training, args.scale)
    if split is not None:
        run_stage(tf, tf_export, *split)
    else:
        tf.error = "skipped: stage 2 produced no Dataset"
    stages = [spark, dask, tf]
    paths = write_report(args.out, stages, started, scale=args.scale)
    print("\n=== 4. Report ===")
    for stage in stages:
        print(f"{stage.name}: {'ok' if stage.ok else 'FAILED'}, {stage.rows:,} rows, {stage.seconds:.1f}s")
    for kind, path in paths.items():
        print(f"{kind}: {path}")
    failed = [s.name for s in stages if not s.ok] + ([] if "timeline" in paths else ["4. Report (timeline)"])
    if failed:
        print(f"\nFAILED stages: {failed}", file=sys.stderr)
        return 1
    print(f"\nAll stages passed in {time.time() - started:.0f}s.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
