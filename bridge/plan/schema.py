"""The output schema a plan states without running: what ``repr`` shows and ``schema()`` trusts.

Known: blocks already in the object store, sources that read their schema
up front (range, Parquet footers), and what passes a schema through unchanged
(limit, a column selection).  Unknown (``None``): user functions, all-to-all
operators, unions and zips; ``Dataset.schema()`` then runs the plan to its
first non-empty block.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bridge.plan.logical import InputData, Limit, LogicalOp, Project, Read

if TYPE_CHECKING:
    import pyarrow as pa


def known_schema(op: LogicalOp) -> pa.Schema | None:
    """The schema of ``op``'s output if the plan alone says it, else ``None``."""
    if isinstance(op, InputData):
        fallback = None
        for bundle in op.bundles:
            for meta in bundle.metas:
                if meta.schema is not None:
                    if meta.num_rows:
                        return meta.schema
                    fallback = fallback or meta.schema
        return fallback
    if isinstance(op, Read):
        return op.datasource.known_schema()
    if isinstance(op, Limit):
        return known_schema(op.input)
    if isinstance(op, Project) and op.columns is not None:
        schema = known_schema(op.input)
        if schema is None or any(c not in schema.names for c in op.columns):
            return None  # a missing column raises when the plan runs; say nothing here
        return _select(schema, op.columns)
    return None


def _select(schema: pa.Schema, columns: list[str]) -> pa.Schema:
    import pyarrow as pa

    return pa.schema([schema.field(c) for c in columns], metadata=schema.metadata)
