"""zip (columns of two Datasets side by side) and the schema check of union.

zip aligns rows by position from block metadata alone: for each block of the
left Dataset, one task receives that block plus the right-hand blocks that
cover the same rows, slices them and appends their columns.  Blocks never
pass through the driver.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import ray

from bridge.block import Block, BlockMetadata, compact, concat_blocks, rounds_on_promotion
from bridge.context import DataContext
from bridge.errors import BridgeError, SchemaMismatchError
from bridge.execution.bundle import RefBundle
from bridge.ops import exchange
from bridge.ops.shuffle import row_spans


class RowCountMismatchError(BridgeError, ValueError):
    """Two Datasets that must have equally many rows do not."""


def unique_names(left: Sequence[str], right: Sequence[str]) -> list[str]:
    """Right-hand names, with ``_1``, ``_2``... appended where they clash with the left (as Ray Data)."""
    taken = set(left)
    out = []
    for name in right:
        new, k = name, 1
        while new in taken:
            new, k = f"{name}_{k}", k + 1
        taken.add(new)
        out.append(new)
    return out


@ray.remote(num_returns=2)
def _zip_block(left: Block, spans: list[tuple[int, int]], *right: Block) -> tuple[Block, BlockMetadata]:
    parts = [b.slice(s, n) for b, (s, n) in zip(right, spans)]
    other = concat_blocks(parts)
    out = left
    names = unique_names(left.column_names, other.column_names)
    for name, column in zip(names, other.columns):
        out = out.append_column(name, column)
    out = compact(out)
    return out, BlockMetadata.of(out)


def zip_fn(label: str) -> Any:
    """The ``AllToAll`` function of ``zip``: receives ``[left bundles, right bundles]``."""

    def run(inputs: list[list[RefBundle]], ctx: DataContext) -> list[RefBundle]:
        left_refs, left_metas = exchange.flatten_refs(inputs[0])
        right_refs, right_metas = exchange.flatten_refs(inputs[1])
        for bundles in inputs:
            bundles.clear()
        n_left = sum(m.num_rows for m in left_metas)
        n_right = sum(m.num_rows for m in right_metas)
        if n_left != n_right:
            msg = f"{label}: the Datasets have different row counts: {n_left} (left) vs {n_right} (right)"
            raise RowCountMismatchError(msg, "zip needs equal row counts; use limit(n) on the longer one first")
        task = _zip_block.options(max_retries=ctx.max_task_retries)
        outs = []
        offset = 0
        for ref, meta in zip(left_refs, left_metas):
            spans = row_spans(right_metas, offset, offset + meta.num_rows)
            if not spans and right_refs:
                spans = [(0, 0, 0)]
            offset += meta.num_rows
            outs.append(task.remote(ref, [(s, n) for _, s, n in spans], *[right_refs[i] for i, _, _ in spans]))
        out_metas = exchange.get_all([m for _, m in outs], also=[b for b, _ in outs])
        return [RefBundle([b], [m]) for (b, _), m in zip(outs, out_metas)]

    return run


# ------------------------------------------------------------------ union


def check_union_schemas(op: str, schemas: Sequence[pa.Schema | None], inputs: Sequence[int] | None = None) -> None:
    """Raise :class:`SchemaMismatchError` unless every schema has the same columns with unifiable types.

    Types unify when Arrow can promote them without loss of meaning
    (int32 + int64, null + anything, string + large_string); the error names
    the missing columns or the columns whose types conflict.
    """
    numbered = [(n, s) for n, s in zip(inputs or range(len(schemas)), schemas) if s is not None and len(s)]
    if len(numbered) < 2:
        return
    first_input, first = numbered[0]
    for i, other in numbered[1:]:
        missing = [n for n in first.names if n not in other.names]
        extra = [n for n in other.names if n not in first.names]
        if missing or extra:
            msg = (f"{op}: input {i} has different columns than input {first_input}: missing {missing}, "
                   f"unexpected {extra} (input {first_input} has {first.names}, input {i} has {other.names})")
            raise SchemaMismatchError(msg, "select or rename columns so every input has the same ones")
        conflicts = []
        for field in first:
            theirs = other.field(field.name)
            if rounds_on_promotion(field.type, theirs.type):
                conflicts.append(f"{field.name!r}: {field.type} vs {theirs.type} (floats would round the decimals)")
                continue
            try:
                pa.unify_schemas([pa.schema([field]), pa.schema([theirs.with_name(field.name)])],
                                 promote_options="permissive")
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
                conflicts.append(f"{field.name!r}: {field.type} vs {theirs.type}")
        if conflicts:
            msg = f"{op}: column types of input {i} do not unify with input {first_input}: {'; '.join(conflicts)}"
            raise SchemaMismatchError(msg, "cast the columns to one type (map_batches / add_column) before union")
