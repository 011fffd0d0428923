"""tqdm progress bars, one per operator, only when asked (default: stderr is a terminal)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bridge.execution.operators import PhysicalOp


class ProgressBars:
    def __init__(self, ops: list[PhysicalOp], enabled: bool) -> None:
        self._bars: dict[int, Any] = {}
        if not enabled:
            return
        try:
            from tqdm.auto import tqdm
        except ImportError:  # tqdm is a dependency, but a broken env should not stop the work
            return
        for pos, op in enumerate(ops):
            self._bars[id(op)] = tqdm(
                total=op.estimated_rows, desc=op.name[:40], position=pos, unit=" rows", leave=False,
                dynamic_ncols=True,
            )

    def update(self, op: PhysicalOp, rows: int) -> None:
        bar = self._bars.get(id(op))
        if bar is not None:
            bar.update(rows)

    def close(self) -> None:
        for bar in self._bars.values():
            bar.close()
        self._bars.clear()
