"""Logical map operators are records of what the user asked for (the function, its arguments, the
compute strategy); the per-block transform is built from them only when the plan becomes physical."""

from __future__ import annotations

import functools

import pytest

import bridge
from bridge.context import DataContext
from bridge.errors import BridgeValueError
from bridge.execution.actor_pool import ActorPoolOp
from bridge.execution.operators import MapOp
from bridge.execution.planner import plan
from bridge.execution.transform import map_batches_transform
from bridge.plan.logical import Compute, MapLike


class Scale:
    def __init__(self, factor):
        self.factor = factor

    def __call__(self, batch):
        return {"id": batch["id"] * self.factor}


def _double(batch, k=2):
    return {"id": batch["id"] * k}


def test_map_batches_records_the_function_its_arguments_and_compute():
    ds = bridge.range(8).map_batches(_double, fn_kwargs={"k": 3}, batch_size=4, num_cpus=0.5, memory=10**8)
    op = ds._plan
    assert isinstance(op, MapLike) and op.label == "MapBatches(_double)"
    assert op.fn is not None and op.fn.fn is _double and op.fn.kwargs == {"k": 3}
    assert op.compute == Compute(actors=False, concurrency=None, num_cpus=0.5, num_gpus=None,
                                 ray_remote_args={"memory": 10**8})
    assert isinstance(op.make, functools.partial) and op.make.func is map_batches_transform
    assert op.make.args[2] == 4 and op.min_rows_per_bundle == 4  # batch_size, as the factory's argument
    assert [r["id"] for r in ds.take_all()] == [3 * i for i in range(8)]


def test_a_class_records_an_actor_pool_and_each_plan_builds_its_own_transform():
    ds = bridge.range(6).map_batches(Scale, fn_constructor_args=(10,), concurrency=(1, 2), batch_size=3)
    assert ds._plan.compute.actors and ds._plan.compute.concurrency == (1, 2)
    ctx = DataContext.get_current()
    first = [p for p in plan(ds._plan, ctx) if isinstance(p, ActorPoolOp)]
    second = [p for p in plan(ds._plan, ctx) if isinstance(p, ActorPoolOp)]
    assert len(first) == len(second) == 1
    assert first[0].transform is not second[0].transform  # built per plan, from the record
    assert first[0].pool.scaling.max_actors >= 1
    assert [r["id"] for r in ds.take_all()] == [10 * i for i in range(6)]


def test_fused_tasks_are_built_from_the_records_of_every_step():
    ds = bridge.range(10).map_batches(_double).filter(expr="id > 4").map(lambda r: {"id": r["id"] + 1})
    ops = plan(ds._plan, DataContext.get_current())
    fused = [p for p in ops if isinstance(p, MapOp) and "MapBatches(_double)" in p.name]
    assert len(fused) == 1 and "Filter" in fused[0].name and "Map(<lambda>)" in fused[0].name
    assert [r["id"] for r in ds.take_all()] == [7, 9, 11, 13, 15, 17, 19]


def test_bad_arguments_still_fail_at_the_call_not_at_execution():
    with pytest.raises(BridgeValueError, match="batch_format"):
        bridge.range(3).map_batches(_double, batch_format="parquet")
    with pytest.raises(BridgeValueError, match="batch_format"):
        bridge.range(3).add_column("x", lambda df: df["id"], batch_format="nope")
