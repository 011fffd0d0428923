"""The output schema a plan states without running: what ``repr`` shows and ``schema()`` trusts.

Known: blocks already in the object store, sources that read their schema
up front (range, Parquet footers), what passes a schema through unchanged
(limit, a column selection), an operator that states its output's (``with_column`` of a
known schema), and a union of inputs whose schemas are all known
(their promotion, as its blocks are promoted when combined).  Unknown (``None``):
user functions, all-to-all operators, zips, unions with an input not known;
``Dataset.schema()`` then runs the plan to its first non-empty block.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from bridge.plan.logical import InputData, Limit, LogicalOp, MapLike, Project, Read, Union

if TYPE_CHECKING:
    import pyarrow as pa

    from bridge.block import BlockMetadata


def known_schema(op: LogicalOp) -> pa.Schema | None:
    """The schema of ``op``'s output if the plan alone says it, else ``None``."""
    if isinstance(op, InputData):
        from bridge.errors import SchemaMismatchError

        try:
            return blocks_schema([m for b in op.bundles for m in b.metas], "schema")
        except SchemaMismatchError:
            return None  # blocks of types no one type holds: schema() says which
    if isinstance(op, Read):
        return op.datasource.known_schema()
    if isinstance(op, Limit):
        return known_schema(op.input)
    if isinstance(op, MapLike) and op.schema is not None:
        return op.schema
    if isinstance(op, Project) and op.columns is not None:
        schema = known_schema(op.input)
        if schema is None or any(c not in schema.names for c in op.columns):
            return None  # a missing column raises when the plan runs; say nothing here
        return _select(schema, op.columns)
    if isinstance(op, Union):
        return _union_schema(op)
    return None


def _union_schema(op: Union) -> pa.Schema | None:
    return union_schema([known_schema(i) for i in op.inputs])


def union_schema(schemas: Sequence[pa.Schema | None]) -> pa.Schema | None:
    """A union's schema: the promotion of its inputs' (int64 + double -> double, null + int64 -> int64),
    as ``to_arrow()`` and ``materialize().schema()`` give, not the first input's alone.  ``None`` where
    an input's is unknown or the inputs do not unify (the run raises then, naming the column)."""
    from bridge.errors import SchemaMismatchError

    if not schemas or any(s is None for s in schemas):
        return None
    known = [s for s in schemas if s is not None]
    if any(set(s.names) != set(known[0].names) for s in known[1:]):
        return None
    # The union's blocks take the first input's column order.
    ordered = [s if s.names == known[0].names else _select(s, known[0].names) for s in known]
    try:
        return unified_schema(ordered, "union")
    except SchemaMismatchError:
        return None


def _select(schema: pa.Schema, columns: list[str]) -> pa.Schema:
    import pyarrow as pa

    return pa.schema([schema.field(c) for c in columns], metadata=schema.metadata)


def unified_schema(schemas: Sequence[pa.Schema], where: str) -> pa.Schema:
    """One schema for blocks that make one Dataset: the first's when all agree (the usual case, one
    comparison each), else Arrow's permissive promotion of them, as Ray Data's ``schema()`` gives
    (int32 + int64 -> int64, decimal(3, 2) + decimal(21, 20) -> decimal(21, 20), null + any -> any).
    The first schema's metadata is kept.

    Raises :class:`~bridge.errors.SchemaMismatchError` naming the column where no type holds both
    (int vs string, timestamps in two time zones) or where promotion would round values (a decimal
    with a float).
    """
    import pyarrow as pa

    from bridge.block import rounds_on_promotion
    from bridge.errors import SchemaMismatchError

    first = schemas[0]
    distinct = [first]
    for s in schemas[1:]:
        if not any(s.equals(d) for d in distinct):
            distinct.append(s)
    if len(distinct) == 1:
        return first
    hint = "cast the column to one type in every part (e.g. table.cast / df.astype) before building the Dataset"
    # Every pair of a column's types, not each against the first: int64 + float64 and int64 + decimal
    # promote, float64 + decimal rounds (and would, through the float64 the three promote to).
    types: dict[str, list[pa.DataType]] = {}
    for schema in distinct:
        for field in schema:
            seen = types.setdefault(field.name, [])
            if not any(field.type.equals(t) for t in seen):
                seen.append(field.type)
    for name, kinds in types.items():
        for i, a in enumerate(kinds):
            for b in kinds[i + 1:]:
                rounds = rounds_on_promotion(a, b)
                if not rounds and _promotes(name, a, b):
                    continue
                why = " (a float would round the decimals)" if rounds else ""
                msg = f"{where}: column {name!r} is {a} in one block and {b} in another: no one type holds both{why}"
                raise SchemaMismatchError(msg, hint)
    try:
        return pa.unify_schemas(distinct, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as err:
        msg = f"{where}: the blocks' schemas do not unify ({len(distinct)} different ones): {err}"
        raise SchemaMismatchError(msg, hint) from None


def _promotes(name: str, a: pa.DataType, b: pa.DataType) -> bool:
    import pyarrow as pa

    try:
        pa.unify_schemas([pa.schema([pa.field(name, a)]), pa.schema([pa.field(name, b)])],
                         promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return False
    return True


def blocks_schema(metas: Sequence[BlockMetadata], where: str) -> pa.Schema | None:
    """The schema of a Dataset's blocks (:func:`unified_schema` of the blocks with rows), else of the
    first block that has one (an empty Dataset keeps its columns)."""
    with_rows = [m.schema for m in metas if m.schema is not None and m.num_rows]
    if with_rows:
        return unified_schema(with_rows, where)
    return next((m.schema for m in metas if m.schema is not None), None)
