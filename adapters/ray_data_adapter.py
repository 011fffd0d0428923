"""``ray.data.Dataset`` <-> Dataset: the same Arrow blocks in the same object store.

Where Ray Data already holds Arrow blocks, ``from_ray_data`` hands the block
references across with their metadata: no copy and no task.  Blocks in other
formats (pandas) are converted to Arrow in Ray tasks.  ``to_ray_data`` gives
Ray Data the references of this Dataset's blocks (Ray Data reads each block's
metadata in a small task; the data is not copied).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from bridge.block import BlockMetadata
from bridge.errors import BridgeError

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
    """A ``ray.data.Dataset`` -> Dataset, sharing its Arrow blocks without copying.

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
        return from_block_refs(*shared, name="FromRayData")
    # pandas (or sliced) blocks: Ray Data converts them to Arrow tables in its own tasks.
    return from_arrow_refs(materialized.to_arrow_refs())


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
