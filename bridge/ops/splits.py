"""Static splits of a Dataset: ``split``, ``split_at_indices``, ``train_test_split``.

The Dataset is materialised once; each part is a :class:`MaterializedDataset`
over block references of the whole.  Only the blocks that straddle a boundary
are cut, in Ray tasks that copy just the rows of each piece, so no row is
shipped to the driver and the parts own their buffers.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import ray

from bridge.block import BlockMetadata
from bridge.errors import BridgeValueError
from bridge.execution.bundle import RefBundle, slice_block
from bridge.plan.logical import InputData

if TYPE_CHECKING:
    from bridge.dataset import Dataset, MaterializedDataset


def _bundles_of(ds: Dataset) -> list[RefBundle]:
    plan = ds._plan
    if isinstance(plan, InputData):
        from bridge.plan.logical import check_blocks_alive

        check_blocks_alive(plan)
        return list(plan.bundles)
    return list(ds.materialize()._plan.bundles)  # type: ignore[attr-defined]


def cut_rows(bundles: list[RefBundle], bounds: Sequence[tuple[int, int]]) -> list[list[RefBundle]]:
    """For each ``(start, stop)`` row range, the bundles holding exactly those rows."""
    singles = [s for b in bundles for s in b.split_singletons() if s.num_rows]
    offsets = []
    pos = 0
    for s in singles:
        offsets.append(pos)
        pos += s.num_rows
    parts: list[list[RefBundle]] = []
    pending_meta: list[tuple[int, ray.ObjectRef, ray.ObjectRef]] = []
    for start, stop in bounds:
        part: list[RefBundle] = []
        for s, off in zip(singles, offsets):
            lo, hi = max(start, off), min(stop, off + s.num_rows)
            if lo >= hi:
                continue
            if lo == off and hi == off + s.num_rows:
                part.append(s)
            else:
                block_ref, meta_ref = slice_block.remote(s.refs[0], lo - off, hi - lo)
                part.append(RefBundle([block_ref], []))
                pending_meta.append((len(parts), block_ref, meta_ref))
        parts.append(part)
    if pending_meta:
        metas = ray.get([m for _, _, m in pending_meta])
        by_ref = {id(b): meta for (_, b, _), meta in zip(pending_meta, metas)}
        for part in parts:
            for b in part:
                if not b.metas:
                    b.metas.append(by_ref[id(b.refs[0])])
    return parts


def _as_datasets(parts: list[list[RefBundle]], name: str, schema_like: list[RefBundle]) -> list[MaterializedDataset]:
    from bridge.dataset import MaterializedDataset

    out = []
    for i, part in enumerate(parts):
        if not part and schema_like:
            # An empty part keeps the schema: one empty slice of the first block.
            first = schema_like[0].split_singletons()[0]
            block_ref, meta_ref = slice_block.remote(first.refs[0], 0, 0)
            meta = cast("BlockMetadata", ray.get(meta_ref))  # num_returns=2: Ray's stubs cannot type the pair
            part = [RefBundle([block_ref], [meta])]
        out.append(MaterializedDataset(InputData([], part, f"{name}[{i}]")))
    return out


def split(ds: Dataset, n: int, *, equal: bool = False) -> list[MaterializedDataset]:
    """``n`` contiguous parts; sizes differ by at most one row (``equal=True``: identical, the
    remainder of fewer than ``n`` rows dropped, with a ``UserWarning`` saying how many)."""
    if not isinstance(n, int) or n < 1:
        raise BridgeValueError(f"split(n) needs a positive number of parts; got {n!r}", "call split(2)")
    bundles = _bundles_of(ds)
    total = sum(b.num_rows for b in bundles)
    base, extra = divmod(total, n)
    if equal and extra:
        import warnings

        warnings.warn(f"split({n}, equal=True): {total} rows do not divide by {n}; "
                      f"{extra} row{'' if extra == 1 else 's'} dropped so that every part has {base}. "
                      "Pass equal=False to keep every row (parts then differ by at most one row).",
                      UserWarning, stacklevel=3)
    bounds, pos = [], 0
    for i in range(n):
        size = base + (0 if equal or i >= extra else 1)
        bounds.append((pos, pos + size))
        pos += size
    return _as_datasets(cut_rows(bundles, bounds), "Split", bundles)


def _cut_at(bundles: list[RefBundle], idx: list[int]) -> list[MaterializedDataset]:
    total = sum(b.num_rows for b in bundles)
    cuts = [0] + [min(i, total) for i in idx] + [total]
    bounds = list(zip(cuts[:-1], cuts[1:]))
    return _as_datasets(cut_rows(bundles, bounds), "SplitAt", bundles)


def split_at_indices(ds: Dataset, indices: Sequence[int]) -> list[MaterializedDataset]:
    """Parts ``[0, i0), [i0, i1), ..., [ik, N)``; indices past the end give empty parts."""
    idx = list(indices)
    if any(not isinstance(i, int) or i < 0 for i in idx) or idx != sorted(idx):
        msg = f"split_at_indices needs non-negative, sorted row indices; got {idx}"
        raise BridgeValueError(msg, "pass e.g. split_at_indices([100, 250])")
    return _cut_at(_bundles_of(ds), idx)


def _proportional_indices(op: str, total: int, proportions: Sequence[float], hint: str) -> list[int]:
    """Ray Data's row indices for cumulative ``proportions`` of ``total`` rows, each part non-empty."""
    idx, acc = [], 0.0
    for p in proportions:
        acc += p
        idx.append(int(total * acc))
    # As Ray Data: an index equal to the next one moves (with all before it) one row earlier.
    subtract = 0
    for i in range(len(idx) - 2, -1, -1):
        idx[i] -= subtract
        if idx[i] == idx[i + 1]:
            subtract += 1
            idx[i] -= 1
    if any(i <= 0 for i in idx) or idx[-1] >= total:
        from bridge.errors import BridgeValueError

        msg = (f"{op}: cannot cut {total} row{'' if total == 1 else 's'} into {len(idx) + 1} non-empty parts "
               f"of these proportions (the cuts would be at rows {idx})")
        raise BridgeValueError(msg, hint)
    return idx


def split_proportionately(ds: Dataset, proportions: Sequence[float]) -> list[MaterializedDataset]:
    """Parts holding these fractions of the rows (Ray Data's sizes); the last part gets the rest.

    Every part has at least one row, else ``BridgeValueError``.
    """
    if not proportions or any(p <= 0 for p in proportions) or sum(proportions) >= 1:
        msg = f"proportions must be positive and sum to less than 1; got {list(proportions)}"
        raise BridgeValueError(msg, "pass e.g. [0.8, 0.1] for 80% / 10% / 10%")
    bundles = _bundles_of(ds)  # one run: the sizes are computed from the very rows that are cut
    total = sum(b.num_rows for b in bundles)
    op = f"split_proportionately({list(proportions)})"
    hint = "use larger proportions (or more rows), or split_at_indices([...]), which allows empty parts"
    return _cut_at(bundles, _proportional_indices(op, total, proportions, hint))


def train_test_split(
    ds: Dataset, test_size: float | int, *, shuffle: bool = False, seed: int | None = None,
    stratify: str | None = None,
) -> tuple[MaterializedDataset, MaterializedDataset]:
    """``(train, test)``: the last ``test_size`` rows (a fraction in (0, 1) or a row count) are the test set.

    A fraction cuts at row ``int(N * (1 - test_size))``, as Ray Data; both parts must then be non-empty.
    With ``stratify`` (a column), each group of rows of one value of it (null one group) gives its last
    ``int(n * fraction)`` rows to the test set, as Ray Data does (a row count is ``count / N``).
    """
    if isinstance(test_size, float) and not 0 < test_size < 1:
        msg = f"train_test_split: a float test_size must lie in (0, 1); got {test_size}"
        raise BridgeValueError(msg, "pass a fraction such as 0.25, or a row count such as 1000")
    if stratify is not None:
        return _stratified_split(ds, test_size, shuffle, stratify)
    if shuffle:
        ds = ds.random_shuffle(seed=seed)
    bundles = _bundles_of(ds)  # one run: the size is computed from the very rows that are cut
    total = sum(b.num_rows for b in bundles)
    if isinstance(test_size, float):
        hint = "pass a test_size that leaves rows on both sides, or a row count: train_test_split(1)"
        idx = _proportional_indices(f"train_test_split(test_size={test_size})", total, [1 - test_size], hint)
    elif isinstance(test_size, int) and 0 < test_size < total:
        idx = [total - test_size]
    elif isinstance(test_size, int) and not isinstance(test_size, bool):
        # (Ray Data refuses these too: a split with an empty side is a mistake, as a fraction's is)
        msg = (f"train_test_split(test_size={test_size}): a row count must leave rows on both sides, 1..{total - 1} "
               f"for these {total} rows" if total > 1 else
               f"train_test_split(test_size={test_size}): the Dataset has {total} row(s), too few to split in two")
        raise BridgeValueError(msg, "pass a row count between 1 and the row count minus 1, or a fraction such as 0.2")
    else:
        msg = f"train_test_split: test_size must be a fraction in (0, 1) or a row count; got {test_size!r}"
        raise BridgeValueError(msg, "pass e.g. test_size=0.2")
    train, test = _cut_at(bundles, idx)
    return train, test


#: The column :func:`_stratified_split` marks each row's side in (dropped from both parts).
_TRAIN = "__raybridge_train"


def _flag_group(group: pa.Table, fraction: float) -> pa.Table:
    """One group's rows with :data:`_TRAIN`: its last ``int(n * fraction)`` rows are test rows."""
    n = group.num_rows
    flags = np.arange(n) < n - int(n * fraction)
    return group.append_column(_TRAIN, pa.array(flags, pa.bool_()))


def _side(block: pa.Table, train: bool) -> pa.Table:
    """The rows of ``block`` on one side of the split, without :data:`_TRAIN`."""
    keep = block.column(_TRAIN) if train else pc.invert(block.column(_TRAIN))
    return block.filter(keep).drop_columns([_TRAIN])


def _stratified_split(ds: Dataset, test_size: float | int, shuffle: bool, stratify: str
                      ) -> tuple[MaterializedDataset, MaterializedDataset]:
    """``train_test_split(..., stratify=col)``: the same fraction of every group of ``col`` to the test set."""
    from bridge.errors import BridgeValueError

    if shuffle:
        msg = f"train_test_split: shuffle=True and stratify={stratify!r} given together"
        raise BridgeValueError(msg, "drop shuffle=True: a stratified split takes the same share of every class "
                                    "(as Ray Data, which refuses both too)")
    if not isinstance(stratify, str):
        msg = f"train_test_split: stratify must be one column name; got {stratify!r}"
        raise BridgeValueError(msg, "pass e.g. stratify='label'")
    if isinstance(test_size, float):
        fraction = test_size
    else:
        total = ds.count()
        if not isinstance(test_size, int) or isinstance(test_size, bool) or not 0 <= test_size <= total:
            msg = (f"train_test_split: test_size must be a fraction in (0, 1) or a row count <= {total}; "
                   f"got {test_size!r}")
            raise BridgeValueError(msg, "pass e.g. test_size=0.2")
        fraction = test_size / total if total else 0.0
    flagged = ds.groupby(stratify).map_groups(partial(_flag_group, fraction=fraction),
                                              batch_format="pyarrow").materialize()
    train = flagged.map_batches(partial(_side, train=True), batch_format="pyarrow").materialize()
    test = flagged.map_batches(partial(_side, train=False), batch_format="pyarrow").materialize()
    return train, test
