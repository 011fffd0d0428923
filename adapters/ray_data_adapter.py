"""``ray.data.Dataset`` <-> Dataset: the same Arrow blocks in the same object store.

Where Ray Data already holds Arrow blocks, ``from_ray_data`` hands the block
references across with their metadata: no copy and no task.  Blocks in other
formats (pandas) are converted to Arrow in Ray tasks.  ``to_ray_data`` gives
Ray Data the references of this Dataset's blocks (Ray Data reads each block's
metadata in a small task; the data is not copied).

Ray Data's tensor columns (``ray.data.arrow_tensor`` / ``arrow_tensor_v2`` /
``arrow_variable_shaped_tensor``) become this library's tensor types, as
``read_parquet`` reads them (:mod:`bridge.io.ray_tensor_files`): one task per
block converts them (the values are not reinterpreted: a fixed shape keeps its
values buffer), and a column whose blocks hold tensors of several shapes of one
number of dimensions (Ray Data's ragged tensors) becomes one variable-shape
tensor column.  The torch and tf exporters, ``to_numpy_refs`` and ``union``
with this library's tensors take them then.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from bridge.block import BlockMetadata
from bridge.errors import BridgeError, UnsupportedTypeError
from bridge.io.parquet_schema import unify_tensor_types
from bridge.io.ray_tensor_files import convert_column, file_tensors, needs_conversion

if TYPE_CHECKING:
    from bridge.dataset import Dataset, MaterializedDataset


def _shared_blocks(ray_ds: Any) -> tuple[list[Any], list[BlockMetadata]] | None:
    """Ray Data's Arrow blocks as (refs, our metadata), or None when some block is not a whole Arrow table."""
    refs, metas = [], []
    for bundle in ray_ds.iter_internal_ref_bundles():
        if not isinstance(bundle.schema, pa.Schema) and bundle.num_rows():
            return None
        if any(s is not None for s in bundle.slices):
            return None
        for entry in bundle.blocks:
            meta = entry.metadata
            if meta.num_rows is None:
                return None
            refs.append(entry.ref)
            metas.append(BlockMetadata(num_rows=meta.num_rows, size_bytes=int(meta.size_bytes or 0),
                                       schema=bundle.schema if isinstance(bundle.schema, pa.Schema) else None))
    return refs, metas


def from_ray_data(ray_ds: Any) -> MaterializedDataset:
    """A ``ray.data.Dataset`` -> Dataset, sharing its Arrow blocks without copying (blocks with Ray Data's
    tensor columns are converted to this library's tensor types, one task per block).

    Example:
        >>> import bridge, ray
        >>> bridge.from_ray_data(ray.data.range(10)).count()
        10
    """
    from bridge import from_arrow_refs, from_block_refs

    data = sys.modules.get("ray.data")
    if data is None or not isinstance(ray_ds, data.Dataset):
        msg = f"from_ray_data() needs a ray.data.Dataset; got {type(ray_ds).__module__}.{type(ray_ds).__name__}"
        raise BridgeError(msg, "build one with ray.data.from_arrow(...) / ray.data.read_parquet(...)")
    materialized = ray_ds.materialize()
    shared = _shared_blocks(materialized)
    if shared is not None:
        ds = from_block_refs(*shared, name="FromRayData")
    else:
        # pandas (or sliced) blocks: Ray Data converts them to Arrow tables in its own tasks.
        ds = from_arrow_refs(materialized.to_arrow_refs())
    columns = ray_tensor_columns([m.schema for b in ds.iter_internal_ref_bundles() for m in b.metas])
    if not columns:
        return ds
    # Each block's Ray Data tensors as this library's type of that block's shape (a bundle's schema may not
    # say every block's shape), then, where blocks differ in shape, one type for all of them.
    own = ds.map_batches(partial(own_tensors, targets=dict.fromkeys(columns)), batch_format="pyarrow",
                         batch_size=None).materialize()
    schemas = [m.schema for b in own.iter_internal_ref_bundles() for m in b.metas if m.schema is not None]
    targets = _one_type_each(columns, schemas)
    if all(s.field(n).type == t for s in schemas for n, t in targets.items() if n in s.names):
        return own
    return own.map_batches(partial(own_tensors, targets=targets), batch_format="pyarrow",
                           batch_size=None).materialize()


#: Where a converted column came from, in :mod:`bridge.io.ray_tensor_files`' messages.
_WHERE = "a Ray Data block"


def ray_tensor_columns(schemas: Sequence[pa.Schema | None]) -> list[str]:
    """The columns of Ray Data's tensor types in ``schemas``.  Raises :class:`UnsupportedTypeError` for one
    no tensor type of this library holds (a tensor of strings)."""
    names: list[str] = []
    for schema in schemas:
        for name, source in (file_tensors(schema, _WHERE)[1] if schema is not None else {}).items():
            if source.ray is None or name in names:
                continue
            if source.type is None:
                raise UnsupportedTypeError(f"from_ray_data: {source.problem}",
                                           f"convert {name!r} in Ray Data first (map_batches), or drop it")
            names.append(name)
    return names


def _one_type_each(columns: list[str], schemas: list[pa.Schema]) -> dict[str, pa.DataType]:
    """Per column, the tensor type that holds every block's tensors (shapes of one number of dimensions:
    a variable-shape tensor)."""
    targets: dict[str, pa.DataType] = {}
    for name in columns:
        types = [s.field(name).type for s in schemas if name in s.names]
        target: pa.DataType | None = types[0] if types else None
        for t in types[1:]:
            unified = unify_tensor_types(target, t) if target is not None else None
            if unified is None:
                msg = (f"from_ray_data: column {name!r} holds tensors no one tensor type holds: {target} in one "
                       f"block, {t} in another")
                raise UnsupportedTypeError(msg, f"reshape {name!r} to one number of dimensions in Ray Data first "
                                                "(map_batches), or drop it")
            target = unified
        if target is not None:
            targets[name] = target
    return targets


def own_tensors(block: pa.Table, targets: dict[str, pa.DataType | None]) -> pa.Table:
    """``block`` with the tensor columns named in ``targets`` as the type given there (``None``: this library's
    type of the block's own shape)."""
    sources = file_tensors(block.schema, _WHERE)[1]
    for name, wanted in targets.items():
        source = sources.get(name)
        target = wanted if wanted is not None else (source.type if source is not None else None)
        if source is None or target is None or not needs_conversion(source, target):
            continue
        i = block.schema.get_field_index(name)
        field = block.schema.field(i)
        column = convert_column(block.column(i), source, target, name, _WHERE)
        block = block.set_column(i, pa.field(name, target, field.nullable), column)
    return block


def to_ray_data(ds: Dataset) -> Any:
    """Dataset -> ``ray.data.MaterializedDataset`` over the same block references."""
    import ray.data

    refs = ds.to_arrow_refs()
    if not refs:
        from bridge.block import empty_table

        return ray.data.from_arrow(empty_table(ds.schema() or pa.schema([])))
    return ray.data.from_arrow_refs(refs)  # type: ignore[arg-type]  # ray types the two ObjectRef classes apart


class RayDataAdapter:
    name = "ray_data"
    package = "ray"
    extra = "raybridge"

    def is_native(self, obj: Any) -> bool:
        data = sys.modules.get("ray.data")
        return data is not None and isinstance(obj, data.Dataset)

    def to_dataset(self, obj: Any, **options: Any) -> MaterializedDataset:
        if options:
            msg = f"from_ray_data() takes no options; got {sorted(options)}"
            raise BridgeError(msg, "repartition with ray_ds.repartition(n) before converting")
        return from_ray_data(obj)

    def from_dataset(self, ds: Any, **options: Any) -> Any:
        if options:
            msg = f"to_ray_data() takes no options; got {sorted(options)}"
            raise BridgeError(msg, "call ds.repartition(n) before converting")
        return to_ray_data(ds)


ADAPTER = RayDataAdapter()
