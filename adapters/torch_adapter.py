"""PyTorch <-> Dataset: ``iter_torch_batches``, ``to_torch`` (an IterableDataset) and ``from_torch``.

The dtype rules and the device copy are in :mod:`raybridge_adapters.torch_format`; the
``IterableDataset`` (ranks, DataLoader workers, resume) in :mod:`raybridge_adapters.torch_iterable`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .torch_format import _torch, make_formatter, torch_batch_converter, torch_batch_stream


def from_torch(dataset: Any, *, rows_per_block: int = 1024) -> Any:
    """A torch map-style or iterable dataset -> Dataset (items read on the driver, in order).

    A dict item becomes a row; a tuple ``(x, y, ...)`` becomes columns ``item_0, item_1, ...``;
    anything else a column ``item``.  Tensors of one shape stack into tensor columns.

    Example:
        >>> import bridge, torch
        >>> tds = torch.utils.data.TensorDataset(torch.arange(4.0), torch.arange(4))
        >>> bridge.from_torch(tds).take(1)  # doctest: +SKIP
        [{'item_0': 0.0, 'item_1': 0}]
    """
    from bridge import from_blocks
    from bridge.batch import to_block

    torch = _torch()

    def as_numpy(v: Any) -> Any:
        return v.detach().cpu().numpy() if isinstance(v, torch.Tensor) else v

    def as_row(item: Any) -> dict[str, Any]:
        if isinstance(item, dict):
            return {str(k): as_numpy(v) for k, v in item.items()}
        if isinstance(item, (tuple, list)):
            return {f"item_{i}": as_numpy(v) for i, v in enumerate(item)}
        return {"item": as_numpy(item)}

    def column(values: list[Any]) -> Any:
        first = values[0] if values else None
        if isinstance(first, np.ndarray) and all(isinstance(v, np.ndarray) and v.shape == first.shape
                                                 for v in values):
            return np.stack(values)  # (0-d tensors: a column of numbers)
        if isinstance(first, np.generic) and all(type(v) is type(first) for v in values):
            return np.asarray(values)
        # Anything else as Python values, checked as from_items checks them: np.asarray made (True, 2) ints,
        # rounded an int64 2**53 + 1 next to a float32 to a float, and 2**63 next to 1 to float64.
        return list(values)

    def block_of(rows: list[dict[str, Any]]) -> Any:
        from bridge.batch import BatchTypeError
        from bridge.errors import BridgeTypeError

        names = dict.fromkeys(k for r in rows for k in r)  # every item's keys: a key one item lacks is null
        try:
            return to_block({k: column([r.get(k) for r in rows]) for k in names})
        except BatchTypeError as err:
            raise BridgeTypeError(f"from_torch: {err.what}", err.hint or "give each item's field one kind of "
                                  "value (a tensor or number of one dtype), None where it is missing") from err

    def blocks() -> Iterator[Any]:
        rows: list[dict[str, Any]] = []
        for item in dataset:
            rows.append(as_row(item))
            if len(rows) >= rows_per_block:
                yield block_of(rows)
                rows = []
        if rows:
            yield block_of(rows)

    return from_blocks(blocks(), name="FromTorch")


class TorchAdapter:
    name = "torch"
    package = "torch"
    extra = "raybridge[torch]"

    def is_native(self, obj: Any) -> bool:
        torch = sys.modules.get("torch")
        if torch is None:
            return False
        return isinstance(obj, (torch.utils.data.Dataset, torch.Tensor))

    def to_dataset(self, obj: Any, **options: Any) -> Any:
        torch = _torch()
        rows = options.get("rows_per_block", 1024)
        if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
            from bridge.errors import BridgeValueError

            raise BridgeValueError(f"from_torch: rows_per_block must be a positive int, got {rows!r}",
                                   "pass e.g. rows_per_block=1024 (rows per block), or leave it out")
        if isinstance(obj, torch.Tensor):
            from bridge import from_numpy

            arr = obj.detach().cpu().numpy()
            rows = options.pop("rows_per_block", None)  # (from_torch's option: from_numpy takes none)
            if rows and arr.ndim and len(arr) > rows:  # one block per rows_per_block rows
                return from_numpy([arr[i:i + rows] for i in range(0, len(arr), rows)], **options)
            return from_numpy(arr, **options)
        return from_torch(obj, **options)

    def from_dataset(self, ds: Any, **options: Any) -> Any:
        cls = _iterable_dataset_class()
        _refuse_unknown_options(cls, options)
        return cls(ds, **options)

    # What the core's iterators and map tasks call through the registry (``get_adapter("torch")``).
    def batch_formatter(self, **options: Any) -> Callable[[Any], Any]:
        """``iter_torch_batches``' format: :func:`make_formatter`."""
        return make_formatter(**options)

    def batch_stream(self, run: Callable[[Callable[[Any], Any], dict[str, Any]], Iterator[Any]],
                     options: dict[str, Any]) -> Iterator[Any]:
        """A split iterator's ``iter_torch_batches``: :func:`torch_batch_stream`."""
        return torch_batch_stream(run, options)

    def batch_converter(self, device: Any = None) -> tuple[Callable[[Any], Any], Callable[[Any], Any] | None]:
        """``map_batches(batch_format="torch", device=...)``: :func:`torch_batch_converter`."""
        return torch_batch_converter(device)


ADAPTER = TorchAdapter()


def __getattr__(name: str) -> Any:
    # ``TorchIterableDataset`` subclasses a torch class: its module imports torch, so it loads on first use.
    if name == "TorchIterableDataset":
        return _iterable_dataset_class()
    raise AttributeError(name)


def _iterable_dataset_class() -> type:
    _torch()  # a clear MissingDependencyError when torch is absent
    from .torch_iterable import TorchIterableDataset

    return TorchIterableDataset


#: Ray Data's old ``Dataset.to_torch`` arguments (Ray 1.x - 2.9), and what does that here.
_RAY_DATA_TO_TORCH = {
    "label_column": "batches are dicts of tensors by column: take batch['label'] in the loop, or pass "
                    "collate_fn=lambda b: (torch.stack([b[c] for c in features], 1), b['label'])",
    "feature_columns": "select them first (ds.select_columns([...]).to_torch(...)); batches are dicts of "
                       "tensors by column, or what collate_fn makes of them",
    "label_column_dtype": "pass dtypes={'label': torch.float32}",
    "feature_column_dtypes": "pass dtypes={'column': torch.float32, ...}",
    "prefetch_blocks": "pass prefetch_batches=",
    "unsqueeze_label_tensor": "reshape in the loop (t.unsqueeze(1)) or in collate_fn",
    "unsqueeze_feature_tensors": "reshape in the loop (t.unsqueeze(1)) or in collate_fn",
}


def _refuse_unknown_options(cls: Any, options: dict[str, Any]) -> None:
    """``to_torch(**options)`` that the iterable dataset does not take: named, with Ray Data's way here
    (Python's own error named the internal class: ``TorchIterableDataset.__init__() got an unexpected ...``)."""
    import inspect

    from bridge.keywords import refuse_unknown

    refuse_unknown("to_torch", options, list(inspect.signature(cls.__init__).parameters), _RAY_DATA_TO_TORCH)

