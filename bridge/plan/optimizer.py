"""Rule-based rewrites of a logical plan.

* **Limit pushdown**: a ``Limit`` moves before operators that keep the row
  count (projections, row maps) and into sources that can read fewer rows.
* **Projection pushdown**: ``select_columns`` right after a source that can
  read fewer columns is handed to the source.

Fusion of map-like operators happens when the plan becomes physical
(:mod:`bridge.execution.planner`), where compute strategies are known.
"""

from __future__ import annotations

from bridge.plan.logical import Limit, LogicalOp, MapLike, Project, Read


def optimize(op: LogicalOp) -> LogicalOp:
    op = op.replace_inputs([optimize(i) for i in op.inputs]) if op.inputs else op
    if isinstance(op, Limit):
        return _push_limit(op)
    if isinstance(op, Project) and op.columns is not None:
        return _push_projection(op)
    return op


def _push_limit(limit: Limit) -> LogicalOp:
    child = limit.input
    if isinstance(child, Limit):
        return _push_limit(Limit([child.input], min(limit.n, child.n)))
    if isinstance(child, MapLike) and child.preserves_rows and not child.uses_actors:
        # (limit(0) calls no function of the user's: the columns come from the source's first block)
        pushed = _push_limit(Limit([child.input], limit.n))
        return child.replace_inputs([pushed])
    if isinstance(child, Read) and child.datasource.supports_limit:
        # limit(0) still reads a row: its block gives the result's columns (LimitOp passes none of its rows).
        read = Read([], child.datasource.with_limit(max(limit.n, 1)), child.parallelism)
        return Limit([read], limit.n)
    return limit


def _push_projection(project: Project) -> LogicalOp:
    child = project.input
    if isinstance(child, Read) and child.datasource.supports_projection and project.columns is not None:
        read = Read([], child.datasource.with_projection(project.columns), child.parallelism)
        return project.replace_inputs([read])
    return project
