"""Ray Data's parameter names for take / limit, the torch iterable's seed check on every path, and
decimal Sum / Mean that never give back a wrapped sum (real Ray, no mocks)."""

from __future__ import annotations

import decimal
import inspect

import pyarrow as pa
import pytest

import bridge
from bridge import Mean, Sum
from bridge.errors import BridgeTypeError, BridgeValueError

# ------------------------------------------------------------------ take / limit: Ray Data's names


@pytest.mark.parametrize("method", ["take", "limit", "take_all", "take_batch", "show"])
def test_row_count_parameter_names_are_ray_datas(method):
    ray_data = pytest.importorskip("ray.data")
    ours = [p for p in inspect.signature(getattr(bridge.Dataset, method)).parameters if p != "self"]
    theirs = [p for p in inspect.signature(getattr(ray_data.Dataset, method)).parameters if p != "self"]
    assert ours[:1] == theirs[:1]


def test_take_and_limit_take_limit_by_keyword_and_position():
    ds = bridge.range(10)
    assert ds.take(limit=3) == [{"id": 0}, {"id": 1}, {"id": 2}]
    assert ds.take(2) == [{"id": 0}, {"id": 1}]
    assert len(ds.take()) == 10
    assert ds.limit(limit=2).take_all() == [{"id": 0}, {"id": 1}]
    assert ds.limit(1).take_all() == [{"id": 0}]
    with pytest.raises(TypeError):
        ds.take(n=3)  # Ray Data has no ``n`` either


def test_take_limit_keyword_is_checked():
    with pytest.raises(BridgeTypeError, match=r"take: .* must be .*got '5'"):
        bridge.range(10).take(limit="5")
    with pytest.raises(BridgeValueError, match=r"limit: limit must be a number of rows >= 0; got -1"):
        bridge.range(10).limit(limit=-1)


# ------------------------------------------------------------------ torch iterable seed


def _seed_error(call):
    with pytest.raises((BridgeTypeError, BridgeValueError)) as err:
        call()
    return type(err.value), str(err.value)


@pytest.mark.parametrize("seed", ["x", 1.5, True, -1])
def test_every_path_to_the_torch_iterable_checks_seed_as_to_torch(seed):
    pytest.importorskip("torch")
    ds = bridge.range(10)
    expected = _seed_error(lambda: ds.to_torch(seed=seed))
    assert "to_torch: seed must be an int >= 0 or None" in expected[1]
    assert _seed_error(lambda: ds.to_any("torch", seed=seed)) == expected
    assert _seed_error(lambda: ds.to_any("torch", batch_size=4, seed=seed)) == expected
    from raybridge_adapters.torch_adapter import TorchIterableDataset

    assert _seed_error(lambda: TorchIterableDataset(ds, seed=seed)) == expected


def test_to_any_torch_takes_a_numpy_seed():
    np = pytest.importorskip("numpy")
    pytest.importorskip("torch")
    tds = bridge.range(10).to_any("torch", batch_size=5, seed=np.int64(7))
    assert tds.seed == 7 and isinstance(tds.seed, int)
    assert sum(len(b["id"]) for b in tds) == 10


# ------------------------------------------------------------------ decimal Mean / Sum never wrap

_BIG = 9 * 10**75  # 76 digits: 20 of them sum past 2**255, where Arrow's decimal256 sum wraps


def _dec256(values, scale=0):
    return pa.array([None if v is None else decimal.Decimal(v).scaleb(-scale) for v in values],
                    pa.decimal256(76, scale))


def test_decimal256_mean_past_2_255_raises_not_wraps():
    t = pa.table({"k": [1] * 20 + [2] * 2, "x": _dec256([_BIG] * 20 + [_BIG, 1])})
    ds = bridge.from_arrow(t)
    with pytest.raises(BridgeValueError, match=r"mean\(x\): .*beyond decimal256") as err:
        ds.aggregate(Mean("x"))
    assert "float64" in err.value.hint
    with pytest.raises(BridgeValueError, match=r"mean\(x\)"):
        ds.groupby("k").mean("x").take_all()
    with pytest.raises(BridgeValueError, match=r"mean\(x\)"):
        bridge.from_arrow(t, override_num_blocks=4).mean("x")  # blocks that fit, a total that does not


def test_decimal256_mean_exact_where_the_sum_fits():
    # 6 * 9e75 = 5.4e76: past 76 digits, below 2**255 (5.79e76): summed exactly, no error.
    ds = bridge.from_arrow(pa.table({"k": [1] * 6 + [2] * 3, "x": _dec256([_BIG] * 6 + [1, 2, None])}))
    rows = ds.groupby("k").mean("x").take_all()
    assert rows == [{"k": 1, "mean(x)": 9e75}, {"k": 2, "mean(x)": 1.5}]
    # Partial sums past 2**255 that come back in range are exact (the sum wraps modulo 2**256).
    swing = bridge.from_arrow(pa.table({"x": _dec256([_BIG] * 7 + [-_BIG] * 7 + [30])}))
    assert swing.aggregate(Mean("x")) == {"mean(x)": 2.0}
    assert swing.aggregate(Sum("x")) == {"sum(x)": decimal.Decimal(30)}


def test_decimal256_mean_with_scale_past_2_255_raises():
    ds = bridge.from_arrow(pa.table({"x": _dec256([_BIG] * 20, scale=10)}))
    with pytest.raises(BridgeValueError, match=r"mean\(x\)"):
        ds.aggregate(Mean("x"))


def _mixed_blocks(values):
    """Block 0: decimal128(38, 0) (the type the aggregation is planned with); block 1: decimal256 ``values``."""

    def udf(batch: pa.Table) -> pa.Table:
        if batch["id"][0].as_py() == 0:
            return pa.table({"k": [1], "x": pa.array([decimal.Decimal(1)], pa.decimal128(38, 0))})
        return pa.table({"k": [1] * len(values), "x": _dec256(values)})

    return bridge.range(2, override_num_blocks=2).map_batches(udf, batch_format="pyarrow", batch_size=1)


def test_decimal_sum_typed_decimal128_by_its_first_block_checks_a_decimal256_wrap():
    # 1 + (2**256 + 4) wraps to 5 in Arrow's decimal256 sum, which fits decimal128: it came back as 5.
    n = 2**256 + 4
    values = [n // 12] * 11 + [n - 11 * (n // 12)]
    assert all(0 < v < 10**76 for v in values)
    ds = _mixed_blocks(values)
    with pytest.raises(BridgeValueError, match=r"sum\(x\)") as err:
        ds.groupby("k").sum("x").take_all()
    assert "float64" in err.value.hint  # not "cast to decimal256": it already is
    with pytest.raises(BridgeValueError, match=r"sum\(x\)"):
        ds.sum("x")
    with pytest.raises(BridgeValueError, match=r"mean\(x\)"):
        ds.groupby("k").mean("x").take_all()


def test_decimal_sum_of_mixed_blocks_that_fits_is_exact():
    ds = _mixed_blocks([10**30, 2 * 10**30])
    assert ds.groupby("k").sum("x").take_all() == [{"k": 1, "sum(x)": decimal.Decimal(3 * 10**30 + 1)}]


def test_map_batches_decimal128_sum_exact_or_refused():
    def udf(batch: pa.Table) -> pa.Table:
        n = batch.num_rows
        return pa.table({"k": [1] * n, "x": pa.array([decimal.Decimal(9 * 10**36)] * n, pa.decimal128(38, 0))})

    fits = bridge.range(10, override_num_blocks=2).map_batches(udf, batch_format="pyarrow")
    out = fits.groupby("k").sum("x").take_all()
    assert out == [{"k": 1, "sum(x)": decimal.Decimal(9 * 10**37)}]
    over = bridge.range(20, override_num_blocks=2).map_batches(udf, batch_format="pyarrow")
    with pytest.raises(BridgeValueError, match=r"sum\(x\).*beyond decimal128\(38, 0\)"):
        over.groupby("k").sum("x").take_all()
    assert over.groupby("k").mean("x").take_all()[0]["mean(x)"] == pytest.approx(9e36, rel=1e-15)
