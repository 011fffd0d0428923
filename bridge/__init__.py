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

from bridge import tensor as _tensor  # noqa: F401  (registers the variable-shape tensor type)
from bridge.compute import ActorPoolStrategy, TaskPoolStrategy
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
    UnsupportedTypeError,
    UserCodeError,
)
from bridge.io.memory import (
    from_arrow,
    from_arrow_refs,
    from_items,
    from_numpy,
    from_numpy_refs,
    from_pandas,
    from_pandas_refs,
    range,  # noqa: A004 - bridge.range mirrors ray.data.range
    range_tensor,
)

__version__ = "0.1.0"


def from_any(obj: Any, **options: Any) -> Dataset:
    """Convert any supported object (DataFrame of any engine, Arrow, NumPy, ...) to a Dataset."""
    from bridge.registry import from_any as _from_any

    return _from_any(obj, **options)


def from_blocks(blocks: Any) -> MaterializedDataset:
    """A Dataset with exactly these blocks, in order: ``pyarrow.Table`` s or pandas DataFrames (Ray Data's door).

    Example:
        >>> import bridge, pyarrow as pa
        >>> ds = bridge.from_blocks([pa.table({"a": [1, 2]}), pa.table({"a": [3]})])
        >>> ds.num_blocks(), ds.take_all()
        (2, [{'a': 1}, {'a': 2}, {'a': 3}])
    """
    import pyarrow as pa

    from bridge.io.memory import _put_blocks, pandas_to_block

    tables = []
    for i, b in enumerate(blocks):
        if isinstance(b, pa.Table):
            tables.append(b)
        elif type(b).__name__ == "DataFrame" and type(b).__module__.startswith("pandas"):
            tables.append(pandas_to_block(b))
        else:
            msg = f"from_blocks: block {i} is a {type(b).__name__}; blocks are pyarrow.Tables or pandas DataFrames"
            raise BridgeTypeError(msg, "convert it first, e.g. pa.table({...}), or use from_items / from_numpy")
    return _put_blocks(tables, "FromBlocks")


def _adapter_door(adapter: str, direction: str, doc: str) -> Any:
    def door(obj: Any, **options: Any) -> Any:
        from bridge.registry import get_adapter

        return get_adapter(adapter).to_dataset(obj, **options)

    door.__doc__ = doc
    door.__name__ = direction
    return door


from_dask = _adapter_door("dask", "from_dask", "A Dask DataFrame -> Dataset (see adapters/dask_adapter.py).")
from_spark = _adapter_door("spark", "from_spark", "A Spark DataFrame -> Dataset (see adapters/spark_adapter.py).")
from_modin = _adapter_door("modin", "from_modin", "A Modin DataFrame -> Dataset (see adapters/modin_adapter.py).")
from_mars = _adapter_door("mars", "from_mars", "A Mars/Xorbits DataFrame -> Dataset (see adapters/mars_adapter.py).")
from_torch = _adapter_door("torch", "from_torch", "A torch Dataset -> Dataset (see adapters/torch_adapter.py).")
from_tf = _adapter_door("tf", "from_tf", "A tf.data.Dataset -> Dataset (see adapters/tf_adapter.py).")

#: Names resolved on first use, so that optional parts load only when used and
#: each domain registers its public functions in its own module.
_LAZY = {
    # I/O (bridge/io/read_api.py)
    "read_parquet": "bridge.io.read_api",
    "read_csv": "bridge.io.read_api",
    "read_json": "bridge.io.read_api",
    "read_text": "bridge.io.read_api",
    "read_binary_files": "bridge.io.read_api",
    "read_numpy": "bridge.io.read_api",
    "read_images": "bridge.io.read_api",
    "read_datasource": "bridge.io.read_api",
    # Aggregations (bridge/ops/aggregate.py)
    "AggregateFn": "bridge.ops.aggregate",
    "Count": "bridge.ops.aggregate",
    "Sum": "bridge.ops.aggregate",
    "Min": "bridge.ops.aggregate",
    "Max": "bridge.ops.aggregate",
    "Mean": "bridge.ops.aggregate",
    "Std": "bridge.ops.aggregate",
    "Unique": "bridge.ops.aggregate",
    "AbsMax": "bridge.ops.aggregate",
    "Quantile": "bridge.ops.aggregate",
    # Iteration (bridge/iteration/data_iterator.py)
    "DataIterator": "bridge.iteration.data_iterator",
    # Spark on Ray (adapters/spark_adapter.py)
    "init_spark": "adapters.spark_adapter",
    "stop_spark": "adapters.spark_adapter",
    # Ray Data interop (adapters/ray_data_adapter.py)
    "from_ray_data": "adapters.ray_data_adapter",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
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
    "UnsupportedTypeError",
    "UserCodeError",
    "from_any",
    "from_arrow",
    "from_arrow_refs",
    "from_blocks",
    "from_dask",
    "from_items",
    "from_mars",
    "from_modin",
    "from_numpy",
    "from_numpy_refs",
    "from_pandas",
    "from_pandas_refs",
    "from_spark",
    "from_tf",
    "from_torch",
    "range",
    "range_tensor",
]
