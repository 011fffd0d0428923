"""Logical operators: small declarative records of what the user asked for.

A plan is the last operator; each operator points at its inputs.  Nothing here
runs anything; :mod:`bridge.plan.optimizer` rewrites plans and
:mod:`bridge.execution.planner` turns them into physical operators.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

    from bridge.execution.bundle import RefBundle
    from bridge.execution.transform import BlockTransform, UserFn
    from bridge.io.datasource import Datasource


@dataclasses.dataclass(eq=False)
class LogicalOp:
    inputs: list[LogicalOp]

    @property
    def name(self) -> str:
        return type(self).__name__

    @property
    def input(self) -> LogicalOp:
        return self.inputs[0]

    def replace_inputs(self, inputs: list[LogicalOp]) -> LogicalOp:
        return dataclasses.replace(self, inputs=inputs)

    def to_physical(self, ctx: Any, build: Any) -> Any:
        """The physical operator for this one; ``build(child)`` plans an input first.

        The operators of this module are planned by ``bridge.execution.planner``; an
        operator defined elsewhere (e.g. ``ops.epochs.Repeat``) overrides this.
        """
        from bridge.errors import BridgeError

        msg = f"no physical plan for logical operator {self.name}"
        raise BridgeError(msg, "this is a raybridge bug; please report it with the plan")

    def chain(self) -> list[LogicalOp]:
        """Operators from the source to this one (first input only)."""
        out: list[LogicalOp] = []
        op: LogicalOp | None = self
        while op is not None:
            out.append(op)
            op = op.inputs[0] if op.inputs else None
        return out[::-1]


@dataclasses.dataclass(eq=False)
class Read(LogicalOp):
    datasource: Datasource
    #: Read tasks asked for (``read_datasource(override_num_blocks=)``); ``None``: sized from the
    #: datasource's estimates (see :meth:`parallelism_for`).
    parallelism: int | None = None

    def parallelism_for(self) -> int:
        """The ``parallelism`` handed to ``get_read_tasks``: the number asked for, else enough
        read tasks for every CPU twice over, each at least ``target_min_block_size``
        (:func:`bridge.io.datasource.default_num_blocks` of the datasource's estimates)."""
        from bridge.io.datasource import default_num_blocks

        ds = self.datasource
        return default_num_blocks(ds.estimate_inmemory_data_size(), ds.estimate_num_rows(), self.parallelism)

    @property
    def name(self) -> str:
        return f"Read{self.datasource.name}"


@dataclasses.dataclass(eq=False)
class InputData(LogicalOp):
    """Blocks that already sit in the object store (a materialised Dataset)."""

    bundles: list[RefBundle]
    source_name: str = "InputData"
    #: The plan that produced these blocks, for lineage and ``stats()``.
    lineage: LogicalOp | None = None
    #: The Ray session whose object store holds the blocks (:func:`bridge._ray.ray_session`): after
    #: ``ray.shutdown()`` they are gone, and a run refuses them by name (:func:`check_blocks_alive`).
    session: str | None = dataclasses.field(default_factory=lambda: _ray_session())

    @property
    def name(self) -> str:
        return self.source_name


def _ray_session() -> str | None:
    from bridge._ray import ray_session

    return ray_session()


def check_blocks_alive(plan: LogicalOp) -> None:
    """Refuse a plan whose materialised blocks belong to a Ray session that has ended.

    After ``ray.shutdown()`` a run started Ray again and then failed inside Ray ("trying to access a
    Ray object whose owner is unknown"), 10-15 s later, naming no Dataset."""
    from bridge._ray import ray_session

    stack, seen = [plan], set()
    while stack:
        op = stack.pop()
        if id(op) in seen:
            continue
        seen.add(id(op))
        if isinstance(op, InputData) and op.session is not None and any(b.refs for b in op.bundles):
            now = ray_session()
            if now != op.session:
                from bridge.errors import BridgeError

                when = "Ray was shut down since" if now is None else "Ray was shut down and started again since"
                msg = (f"{op.source_name}: its blocks were held by the Ray session {op.session}, which has ended "
                       f"({when} they were made), so they are gone")
                raise BridgeError(msg, "build the Dataset again after ray.init() (from its source, e.g. "
                                       "bridge.read_parquet(...) or from_pandas(...)), or keep Ray running while "
                                       "you use it; to keep data across sessions, write it out (ds.write_parquet)")
        stack.extend(op.inputs)


@dataclasses.dataclass(frozen=True)
class Compute:
    """Where a map-like operator runs, and what each of its tasks or actors asks of Ray."""

    #: An actor pool (a callable class keeps its state in long-lived actors); else stateless tasks.
    actors: bool = False
    #: Actors: ``n`` or ``(min, max)`` (``None``: 1 to the CPU count); tasks: a cap on tasks in flight.
    concurrency: int | tuple[int, int] | None = None
    num_cpus: float | None = None
    num_gpus: float | None = None
    ray_remote_args: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(eq=False)
class MapLike(LogicalOp):
    """A one-to-one-block operator: what to run per block, with what, and where.

    A record, not a built transform: ``make`` is the transform's factory with its arguments
    (a :func:`functools.partial`, e.g. ``partial(map_batches_transform, fn, "numpy", 256, label)``),
    called when the plan becomes physical; ``fn`` is the user's function or class with its
    arguments; ``compute`` says tasks or actors and the resources of each.
    """

    label: str
    #: Builds the per-block transform run in the worker (the factory and its arguments).
    make: Callable[[], BlockTransform]
    #: The user's function or class and its arguments (``None``: the library's own code).
    fn: UserFn | None = None
    compute: Compute = dataclasses.field(default_factory=Compute)
    #: Rows the operator would like per call (batch_size); inputs are bundled up to it.
    min_rows_per_bundle: int | None = None
    #: Row count in == row count out (projections, row maps): limits may pass it.
    preserves_rows: bool = False
    #: ``min_rows_per_bundle`` must hold even right after a read (writes' ``min_rows_per_file``):
    #: the operator then runs after the read's tasks instead of inside them.
    bundle_after_read: bool = False
    #: The output's schema where the operator states it without running (``with_column`` of an input whose
    #: schema is known: the expression evaluated on no rows); ``None``: known only by running.
    schema: pa.Schema | None = None

    @property
    def name(self) -> str:
        return self.label

    @property
    def uses_actors(self) -> bool:
        return self.compute.actors


@dataclasses.dataclass(eq=False)
class Project(MapLike):
    """select/drop/rename: pure column bookkeeping, pushed into sources that can read fewer columns."""

    #: Columns kept, in order, when this is a selection the source can take.
    columns: list[str] | None = None


@dataclasses.dataclass(eq=False)
class Limit(LogicalOp):
    n: int

    @property
    def name(self) -> str:
        return f"Limit[{self.n}]"


@dataclasses.dataclass(eq=False)
class AllToAll(LogicalOp):
    """A barrier operator: sees every input bundle, then runs its own Ray tasks.

    ``fn(bundles, ctx) -> list[RefBundle]`` is called once on the driver with all
    input bundles; it submits map/reduce tasks and returns the output bundles.
    """

    fn: Callable[..., list[RefBundle]]
    label: str
    #: Row count in == row count out (sorts, shuffles, repartitions): ``count()`` need not run it.
    preserves_rows: bool = False

    @property
    def name(self) -> str:
        return self.label


@dataclasses.dataclass(eq=False)
class Union(LogicalOp):
    """Blocks of every input, in input order."""


@dataclasses.dataclass(eq=False)
class Zip(LogicalOp):
    """Columns of two inputs side by side (equal row counts)."""


def known_num_rows(op: LogicalOp) -> int | None:
    """The rows ``op`` gives, where the plan says so without running anything: blocks already in the
    store, a source that knows its exact count, and what keeps or cuts rows by a known rule on top of
    those (selections and renames, sorts, shuffles, repartitions, limits, unions); ``None`` elsewhere
    (a function's output, a filter, an aggregation, a zip, which checks its inputs' counts when it runs)."""
    if isinstance(op, InputData):
        return sum(b.num_rows for b in op.bundles)
    if isinstance(op, Read):
        return int(op.datasource.estimate_num_rows() or 0) if op.datasource.exact_num_rows else None
    if isinstance(op, Project) or (isinstance(op, AllToAll) and op.preserves_rows):
        return known_num_rows(op.input)
    if isinstance(op, Limit):
        below = known_num_rows(op.input)
        return None if below is None else min(op.n, below)
    if type(op) is Union:
        counts = [known_num_rows(i) for i in op.inputs]
        return None if any(c is None for c in counts) else sum(c for c in counts if c is not None)
    return None
