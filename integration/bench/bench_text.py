"""Text columns out to pandas and NumPy: a column of sentences that hardly repeat, and one of 20 labels.

The same N-row table (int64 id, a distinct ~30-character sentence per row, one of 20 labels) in 16
blocks in the object store for both libraries.  ``text_to_pandas`` times ``to_pandas()`` (raybridge:
object columns of ``str``, as pyarrow's own ``Table.to_pandas``, the third contender, on the same table in
memory; Ray Data 2.60 gives ``string[pyarrow]`` columns instead, no Python objects at all, so its figure is
for another result); ``text_numpy_batches`` iterates NumPy batches of 65,536 rows to the end (object
arrays for both).  Making one Python object per row, or one per distinct value, is most of the time
(bridge/text_objects.py).  ``categorical_numpy_batches`` does the same over two dictionary columns of
text (pandas ``Categorical`` columns as Arrow holds them: 100 labels, ``int8`` indices; 5,000 labels,
``int16``), which NumPy gets as object arrays of their values.
"""

from __future__ import annotations

import time

from integration.bench.registry import Benchmark

ROWS = {"small": 500_000, "full": 4_000_000}
BLOCKS = 16
BATCH = 65_536


def _table(n: int):
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(0)
    labels = np.array([f"label-{i:02d}" for i in range(20)], dtype=object)
    return pa.table({
        "id": np.arange(n),
        "text": pa.array([f"sentence {i} of the corpus, {i * 7919 % 100003}" for i in range(n)]),
        "label": pa.array(labels[rng.integers(0, 20, n)]),
    })


def _dataset(lib, scale: str, make_table=_table):
    table = make_table(ROWS[scale])
    n = table.num_rows
    return lib.from_arrow([table.slice(i * n // BLOCKS, n // BLOCKS) for i in range(BLOCKS)]).materialize(), n


def _to_pandas(lib_name: str):
    def setup(scale: str):
        import importlib

        ds, n = _dataset(importlib.import_module(lib_name), scale)

        def run() -> float:
            t = time.perf_counter()
            df = ds.to_pandas()
            elapsed = time.perf_counter() - t
            assert len(df) == n
            return elapsed

        return run

    return setup


def _pyarrow_to_pandas(scale: str):
    table = _table(ROWS[scale])

    def run() -> float:
        t = time.perf_counter()
        df = table.to_pandas()
        elapsed = time.perf_counter() - t
        assert len(df) == table.num_rows and df["text"].dtype == object
        return elapsed

    return run


def _numpy_batches(lib_name: str, make_table=_table, column: str = "text"):
    def setup(scale: str):
        import importlib

        ds, n = _dataset(importlib.import_module(lib_name), scale, make_table)

        def run() -> float:
            t = time.perf_counter()
            rows = 0
            for b in ds.iter_batches(batch_size=BATCH, batch_format="numpy", prefetch_batches=0):
                assert b[column].dtype == object
                rows += len(b[column])
            assert rows == n
            return n / (time.perf_counter() - t)

        return run

    return setup


PARAMS = {s: f"{n:,} rows x (int64, distinct text, 20 labels), {BLOCKS} blocks" for s, n in ROWS.items()}

BENCHMARK_TO_PANDAS = Benchmark(
    name="text_to_pandas",
    title="to_pandas() of text columns",
    unit="s",
    contenders={"raybridge": _to_pandas("bridge"), "ray_data": _to_pandas("ray.data"),
                "pyarrow_to_pandas": _pyarrow_to_pandas},
    params=PARAMS,
)

BENCHMARK_NUMPY_BATCHES = Benchmark(
    name="text_numpy_batches",
    title=f"iter_batches({BATCH}, numpy) of text columns to the end",
    unit="rows/s",
    contenders={"raybridge": _numpy_batches("bridge"), "ray_data": _numpy_batches("ray.data")},
    params=PARAMS,
)


def _categorical_table(n: int):
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(1)
    few = pa.array([f"category-{i:03d}" for i in range(100)])
    many = pa.array([f"user-{i:05d}@example.org" for i in range(5_000)])
    return pa.table({
        "id": np.arange(n),
        "few": pa.DictionaryArray.from_arrays(pa.array(rng.integers(0, 100, n).astype(np.int8)), few),
        "many": pa.DictionaryArray.from_arrays(pa.array(rng.integers(0, 5_000, n).astype(np.int16)), many),
    })


BENCHMARK_CATEGORICAL_BATCHES = Benchmark(
    name="categorical_numpy_batches",
    title=f"iter_batches({BATCH}, numpy) of dictionary (Categorical) text columns to the end",
    unit="rows/s",
    contenders={"raybridge": _numpy_batches("bridge", _categorical_table, "few"),
                "ray_data": _numpy_batches("ray.data", _categorical_table, "few")},
    params={s: f"{n:,} rows x (int64, dictionary<int8> of 100 labels, dictionary<int16> of 5,000), {BLOCKS} blocks"
            for s, n in ROWS.items()},
)
