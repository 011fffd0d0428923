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
