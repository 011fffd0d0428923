"""raybridge: move data between Spark, Dask, Modin, Mars, pandas, Arrow, NumPy and
PyTorch / TensorFlow through one Dataset of Arrow blocks in Ray's object store.

Example:
    >>> import bridge
    >>> ds = bridge.range(1000).map_batches(lambda b: {"x": b["id"] * 2})
    >>> ds.count()
    1000

Importing this package imports ray, pyarrow and numpy only; each framework is
imported inside the adapter function that needs it.
"""

from __future__ import annotations

from typing import Any

from bridge import _ray_arrow
from bridge import tensor as _tensor  # noqa: F401  (registers the variable-shape tensor type)
from bridge.compute import ActorPoolStrategy, TaskPoolStrategy
from bridge.constructors.memory import (
    from_arrow,
    from_arrow_refs,
    from_block_refs,
    from_blocks,
    from_items,
    from_numpy,
    from_numpy_refs,
    from_pandas,
    from_pandas_refs,
    range,  # noqa: A004 - bridge.range mirrors ray.data.range
    range_tensor,
)
from bridge.context import DataContext
from bridge.dataset import Dataset, MaterializedDataset
from bridge.errors import (
    BlockLostError,
    BridgeError,
    BridgeTypeError,
    BridgeValueError,
    DatasetEmptyError,
    InsufficientMemoryError,
    MissingDependencyError,
    SchemaMismatchError,
    StallError,
    UnknownSettingError,
    UnsupportedTypeError,
    UserCodeError,
)

__version__ = "0.1.0"

# A Ray worker is connected when it first imports bridge: its blocks are pickled by
# bridge._ray_arrow from here on.  A driver installs it when ensure_ray finds or starts Ray.
_ray_arrow.install()


def from_any(obj: Any, **options: Any) -> Dataset:
    """Convert any supported object (DataFrame of any engine, Arrow, NumPy, ...) to a Dataset.

    The registry picks the adapter by the object's type; anything else with ``__arrow_c_stream__``
    (polars, DuckDB, ``pyarrow.RecordBatchReader``) is read as an Arrow stream.

    Example:
        >>> import pandas as pd
        >>> import bridge
        >>> bridge.from_any(pd.DataFrame({"x": [1, 2]})).take_all()
        [{'x': 1}, {'x': 2}]
        >>> import numpy as np
        >>> bridge.from_any(np.arange(2)).take_all()
        [{'data': 0}, {'data': 1}]
    """
    from bridge.registry import from_any as _from_any

    return _from_any(obj, **options)


def _door(adapter: str, obj: Any, **options: Any) -> MaterializedDataset:
    from bridge.registry import get_adapter

    return get_adapter(adapter).to_dataset(obj, **options)  # type: ignore[return-value]


def from_dask(ddf: Any) -> MaterializedDataset:
    """A Dask DataFrame (or Series) -> Dataset with one block per partition, in order.

    Works with any scheduler, Dask-on-Ray included: partitions the driver already
    holds are put into the object store directly, the others are computed by Ray
    tasks.  The pandas index survives when it is not the default ``RangeIndex``.

    Example:
        >>> import bridge, dask.dataframe as dd, pandas as pd
        >>> bridge.from_dask(dd.from_pandas(pd.DataFrame({"x": range(6)}), npartitions=3)).count()  # doctest: +SKIP
        6
    """
    return _door("dask", ddf)


def from_spark(df: Any, *, parallelism: int | None = None, method: str = "auto") -> MaterializedDataset:
    """A Spark DataFrame (plain ``SparkSession`` or Spark on Ray) -> Dataset owned by this driver.

    The Dataset stays valid after ``spark.stop()``.  ``parallelism``: blocks to
    aim for (default: Spark's partitions); ``method``: ``"auto"`` (the fastest
    the session offers), ``"arrow_collect"`` (Spark's Arrow collection,
    ``toArrow`` / ``_collect_as_arrow``) or ``"map_in_arrow"`` (``mapInArrow``
    on the executors, partition by partition).  Spark -> Arrow types follow the
    rules documented in the Spark adapter.

    Example:
        >>> ds = bridge.from_spark(spark.range(100))  # doctest: +SKIP
    """
    return _door("spark", df, parallelism=parallelism, method=method)


def from_modin(mdf: Any) -> MaterializedDataset:
    """A Modin DataFrame (or Series) -> Dataset whose blocks are Modin's row partitions (Ray engine).

    Example:
        >>> import modin.pandas as mpd
        >>> bridge.from_modin(mpd.DataFrame({"x": [1, 2, 3]})).count()  # doctest: +SKIP
        3
    """
    return _door("modin", mdf)


def from_mars(df: Any, *, batch_size: int | None = None) -> MaterializedDataset:
    """A Mars / Xorbits DataFrame -> Dataset, fetched in chunks of ``batch_size`` rows.

    Example:
        >>> import xorbits.pandas as xpd
        >>> bridge.from_mars(xpd.DataFrame({"x": [1, 2]})).count()  # doctest: +SKIP
        2
    """
    return _door("mars", df, **({} if batch_size is None else {"batch_size": batch_size}))


def from_torch(dataset: Any, *, rows_per_block: int = 1024) -> MaterializedDataset:
    """A torch map-style or iterable dataset, or a tensor -> Dataset (items read on the driver, in order).

    A dict item becomes a row, a tuple ``(x, y, ...)`` columns ``item_0, item_1, ...``;
    tensors of one shape stack into tensor columns.

    Example:
        >>> import torch
        >>> bridge.from_torch(torch.utils.data.TensorDataset(torch.arange(4))).count()  # doctest: +SKIP
        4
    """
    return _door("torch", dataset, rows_per_block=rows_per_block)


def from_tf(dataset: Any, *, rows_per_block: int = 1024) -> MaterializedDataset:
    """A ``tf.data.Dataset`` -> Dataset (elements read on the driver, in order; ragged rows as lists).

    Example:
        >>> import tensorflow as tf
        >>> bridge.from_tf(tf.data.Dataset.from_tensor_slices({"x": [1, 2]})).count()  # doctest: +SKIP
        2
    """
    return _door("tf", dataset, rows_per_block=rows_per_block)


def from_ray_data(ray_ds: Any) -> MaterializedDataset:
    """A ``ray.data.Dataset`` -> Dataset over the same blocks (Ray Data's tensor columns become this library's
    tensor types: ``arrow.fixed_shape_tensor``, or a variable-shape tensor where blocks differ in shape).

    Example:
        >>> import ray.data
        >>> bridge.from_ray_data(ray.data.range(5)).count()  # doctest: +SKIP
        5
    """
    return _door("ray_data", ray_ds)


#: Names resolved on first use, so that optional parts load only when used and
#: each domain registers its public functions in its own module.
_LAZY = {
    # I/O (bridge/constructors/read_api.py)
    "read_parquet": "bridge.constructors.read_api",
    "read_csv": "bridge.constructors.read_api",
    "read_json": "bridge.constructors.read_api",
    "read_text": "bridge.constructors.read_api",
    "read_binary_files": "bridge.constructors.read_api",
    "read_numpy": "bridge.constructors.read_api",
    "read_images": "bridge.constructors.read_api",
    "read_datasource": "bridge.constructors.read_api",
    "FileShuffleConfig": "bridge.io.partitioning",
    "PathPartitionFilter": "bridge.io.partitioning",
    "FilenameProvider": "bridge.io.file_datasink",
    # Aggregations (bridge/ops/aggregate.py)
    "AggregateFn": "bridge.ops.aggregate",
    "Count": "bridge.ops.aggregate",
    "Sum": "bridge.ops.aggregate",
    "Min": "bridge.ops.aggregate",
    "Max": "bridge.ops.aggregate",
    "Mean": "bridge.ops.aggregate",
    "Std": "bridge.ops.aggregate",
    "Unique": "bridge.ops.aggregate",
    "CountDistinct": "bridge.ops.aggregate",
    "AsList": "bridge.ops.aggregate",
    "AbsMax": "bridge.ops.aggregate",
    "Quantile": "bridge.ops.aggregate",
    "ValueCounter": "bridge.ops.aggregate",
    "MissingValuePercentage": "bridge.ops.aggregate",
    "ZeroPercentage": "bridge.ops.aggregate",
    "ApproximateQuantile": "bridge.ops.aggregate",
    "ApproximateTopK": "bridge.ops.aggregate",
    # Iteration (bridge/iteration/data_iterator.py)
    "DataIterator": "bridge.iteration.data_iterator",
    # Spark on Ray (adapters/spark_adapter.py)
    "init_spark": "raybridge_adapters.spark_adapter",
    "stop_spark": "raybridge_adapters.spark_adapter",
    "release_spark_blocks": "raybridge_adapters.spark_adapter",
}


#: Ray Data 2.60 module functions raybridge does not have: asking for one says so and how to reach it.
_RAY_DATA_ONLY = frozenset({
    "read_tfrecords", "read_webdataset", "read_sql", "read_orc", "read_avro", "read_delta", "read_iceberg",
    "read_lance", "read_mongo", "read_bigquery", "read_databricks_tables", "read_hudi", "read_clickhouse",
    "read_snowflake", "read_kafka", "read_mcap", "read_audio", "read_videos", "from_huggingface", "from_daft",
    "from_tf", "from_torch", "Datasink", "ExecutionOptions",
})


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        if name in _RAY_DATA_ONLY:
            raise AttributeError(
                f"module 'bridge' has no attribute {name!r}: Ray Data's ray.data.{name} is not part of raybridge\n\n"
                f"Hint: use Ray Data's and convert: bridge.from_ray_data(ray.data.{name}(...)); see README "
                "'Coming from Ray Data'")
        raise AttributeError(f"module 'bridge' has no attribute {name!r}")
    import importlib

    try:
        value = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as err:
        if isinstance(err, MissingDependencyError):
            raise
        msg = f"bridge.{name} is not available in this build ({module} does not provide it)"
        raise AttributeError(msg) from err
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names, the lazily loaded ones (``read_*``, ``init_spark``, ...) included, and the
    submodules; not what this module imports for itself (``typing.Any``)."""
    import types

    own = {n for n, v in globals().items() if n.startswith("__") or isinstance(v, types.ModuleType)}
    return sorted(own | set(__all__) | set(_LAZY))


__all__ = [
    "ActorPoolStrategy",
    "BlockLostError",
    "BridgeError",
    "BridgeTypeError",
    "BridgeValueError",
    "DataContext",
    "Dataset",
    "DatasetEmptyError",
    "InsufficientMemoryError",
    "MaterializedDataset",
    "MissingDependencyError",
    "SchemaMismatchError",
    "StallError",
    "TaskPoolStrategy",
    "UnknownSettingError",
    "UnsupportedTypeError",
    "UserCodeError",
    "from_any",
    "from_arrow",
    "from_arrow_refs",
    "from_block_refs",
    "from_blocks",
    "from_dask",
    "from_items",
    "from_mars",
    "from_modin",
    "from_numpy",
    "from_numpy_refs",
    "from_pandas",
    "from_pandas_refs",
    "from_ray_data",
    "from_spark",
    "from_tf",
    "from_torch",
    "range",
    "range_tensor",
]
