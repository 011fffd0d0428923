"""to_tf / from_tf: signatures from the Arrow schema, ragged features, keras fit (issue 3)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import bridge
from bridge.errors import SchemaMismatchError, UnsupportedTypeError

tf = pytest.importorskip("tensorflow")


def _table(n: int = 64) -> pa.Table:
    rng = np.random.default_rng(0)
    img = rng.random((n, 4, 4, 1), dtype=np.float32)
    seq = [list(range(i % 5 + 1)) for i in range(n)]
    return pa.table({
        "img": pa.FixedShapeTensorArray.from_numpy_ndarray(img),
        "seq": pa.array(seq, type=pa.list_(pa.int64())),
        "name": [f"r{i}" for i in range(n)],
        "y": pa.array((img.reshape(n, -1).mean(axis=1) > 0.5).astype(np.float32)),
    })


def test_signature_from_schema():
    tfds = bridge.from_arrow(_table()).to_tf(["img", "seq", "name"], "y", batch_size=8)
    feats, label = tfds.element_spec
    assert feats["img"] == tf.TensorSpec([None, 4, 4, 1], tf.float32, name="img")
    assert isinstance(feats["seq"], tf.RaggedTensorSpec) and feats["seq"].dtype == tf.int64
    assert feats["name"].dtype == tf.string and label.dtype == tf.float32
    f, y = next(iter(tfds))
    assert f["img"].shape == (8, 4, 4, 1) and f["seq"].row_lengths().numpy().tolist()[:3] == [1, 2, 3]
    assert f["name"].numpy()[0] == b"r0" and y.shape == (8,)


def test_keras_fit_with_tensor_and_ragged_features():
    keras = tf.keras
    tfds = bridge.from_arrow(_table(96), override_num_blocks=3).to_tf(["img", "seq"], "y", batch_size=16)
    img_in = keras.Input(shape=(4, 4, 1), name="img")
    seq_in = keras.Input(shape=(None,), dtype="int64", ragged=True, name="seq")
    seq_feat = keras.layers.Lambda(lambda r: tf.reshape(tf.cast(tf.reduce_sum(r, axis=1), tf.float32), (-1, 1)),
                                   output_shape=(1,))(seq_in)
    x = keras.layers.Concatenate()([keras.layers.Flatten()(img_in), seq_feat])
    out = keras.layers.Dense(1, activation="sigmoid")(x)
    model = keras.Model({"img": img_in, "seq": seq_in}, out)
    model.compile(optimizer="adam", loss="binary_crossentropy")
    hist = model.fit(tfds, epochs=2, verbose=0)
    assert len(hist.history["loss"]) == 2 and all(np.isfinite(hist.history["loss"]))


def test_missing_column_and_unsupported_type_errors():
    ds = bridge.from_arrow(pa.table({"x": [1.0], "d": pa.array([1], type=pa.decimal128(5, 2))}))
    with pytest.raises(SchemaMismatchError, match="'nope'"):
        ds.to_tf("nope")
    with pytest.raises(UnsupportedTypeError, match="'d'"):
        ds.to_tf("d")


def test_nulls_fail_naming_column_or_fill():
    ds = bridge.from_arrow(pa.table({"x": [1.0, None], "y": [0, 1]}))
    # tf.data re-raises errors from the generator as its own type; our message (column, hint) survives.
    with pytest.raises((UnsupportedTypeError, tf.errors.InvalidArgumentError), match="column 'x'.*null"):
        list(ds.to_tf("x", "y", batch_size=2))
    (x, y), = list(ds.to_tf("x", "y", batch_size=2, fill_nulls=0.0))
    assert x.numpy().tolist() == [1.0, 0.0]


def test_from_tf_round_trip():
    tfds = tf.data.Dataset.from_tensor_slices({"a": np.arange(5), "b": np.arange(5.0) * 2})
    ds = bridge.from_tf(tfds)
    assert ds.take_all() == [{"a": i, "b": i * 2.0} for i in range(5)]
    pairs = bridge.from_tf(tf.data.Dataset.from_tensor_slices((np.ones((3, 2), np.float32), np.arange(3))))
    rows = pairs.take_all()
    assert rows[2]["item_1"] == 2 and list(rows[0]["item_0"]) == [1.0, 1.0]


@pytest.mark.parametrize(("column", "dtype", "message"), [
    (pa.array([1, 300]), tf.int8, "holds 300, above int8"),
    (pa.array([1, 2**40], pa.uint64()), tf.int32, "holds 1099511627776, above int32"),
    (pa.array([1.0, 2.5]), tf.int32, "holds 2.5, not a whole number"),
    (pa.array([[1], [2, 300]]), tf.int8, "holds 300, above int8"),
])
def test_iter_tf_batches_refuses_a_narrowing_cast_that_would_change_a_value(column, dtype, message):
    # tf.cast wrapped (300 -> 44 in int8) or cut (2.5 -> 2) without a word.
    ds = bridge.from_arrow(pa.table({"x": column}))
    with pytest.raises(bridge.errors.BridgeValueError, match=f"^iter_tf_batches: column 'x'.*{message}") as err:
        next(iter(ds.iter_tf_batches(dtypes=dtype)))
    assert "Hint: " in str(err.value)
    fits = bridge.from_arrow(pa.table({"x": [1, -2]}))
    assert next(iter(fits.iter_tf_batches(dtypes=tf.int8)))["x"].numpy().tolist() == [1, -2]


def test_iter_tf_batches_dtypes_naming_no_column_or_no_dtype_are_refused():
    ds = bridge.range(4)
    with pytest.raises(bridge.errors.BridgeValueError, match=r"\['z'\] but the data has no such column"):
        next(iter(ds.iter_tf_batches(dtypes={"z": tf.float32})))
    with pytest.raises(bridge.errors.BridgeTypeError, match="dtypes must be a tf.DType.*'flaot'") as err:
        ds.iter_tf_batches(dtypes="flaot")
    assert "Hint: pass e.g. dtypes=tf.float32" in str(err.value)
    assert next(iter(ds.iter_tf_batches(dtypes="float32")))["id"].dtype == tf.float32


@pytest.mark.parametrize(("column", "fill"), [(pa.array(["a", None]), "''"), (pa.array([True, None]), "False")])
def test_the_tf_null_hint_names_a_fill_value_of_the_column_type(column, fill):
    ds = bridge.from_arrow(pa.table({"c": column}))
    with pytest.raises(UnsupportedTypeError, match="'c'.*null") as err:
        ds.to_tf("c")
    assert f"fill_nulls={{'c': {fill}}}" in str(err.value)
    with pytest.raises(UnsupportedTypeError, match="'c'.*null") as err:
        next(iter(ds.iter_tf_batches()))
    assert f"fill_nulls={{'c': {fill}}}" in str(err.value)
    assert len(list(ds.to_tf("c", batch_size=2, fill_nulls={"c": eval(fill)}))) == 1  # following the hint works


def test_iter_tf_batches_errors_name_iter_tf_batches():
    ds = bridge.from_arrow(pa.table({"d": pa.array([1], type=pa.decimal128(5, 2))}))
    with pytest.raises(UnsupportedTypeError, match="^iter_tf_batches: column 'd'"):
        next(iter(ds.iter_tf_batches()))
    with pytest.raises(UnsupportedTypeError, match="^to_tf: column 'd'"):
        ds.to_tf("d")


def test_iter_tf_batches_widening_float_dtypes_warn_nothing():
    """float32 -> float64 and float16 -> float32 lose nothing, yet the range check compared a float16 maximum
    with a Python float NumPy cast down: "RuntimeWarning: overflow encountered in cast" on every batch (an
    error under -W error)."""
    import warnings

    ds = bridge.from_numpy({"x": np.arange(4, dtype=np.float32), "h": np.arange(4, dtype=np.float16)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (b,) = list(ds.iter_tf_batches(batch_size=None, dtypes={"x": tf.float64, "h": tf.float32}))
    assert b["x"].dtype == tf.float64 and b["h"].dtype == tf.float32
    assert b["h"].numpy().tolist() == [0.0, 1.0, 2.0, 3.0]
