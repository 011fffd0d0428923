"""The torch and tf exporters' casts, fills and checks that let a value change or an error come out raw
(session 53, from a hunt of the tf path)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import bridge
from bridge.errors import BridgeTypeError, BridgeValueError, UnsupportedTypeError

tf = pytest.importorskip("tensorflow")
torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def numbers():
    return bridge.from_arrow(pa.table({"i": [0, 2, -7], "f": [0.5, 1e300, 1.0], "b01": [0, 1, 1],
                                       "u": pa.array([1, 2**64 - 1, 3], pa.uint64())}))


def _tf(ds, column, **kw):
    return next(iter(ds.select_columns([column]).iter_tf_batches(**kw)))[column]


def _torch(ds, column, **kw):
    return next(iter(ds.select_columns([column]).iter_torch_batches(**kw)))[column]


@pytest.mark.parametrize("read, bool_dtype, complex64", [(_tf, tf.bool, tf.complex64),
                                                          (_torch, torch.bool, torch.complex64)])
def test_casts_to_bool_and_complex_keep_every_value(numbers, read, bool_dtype, complex64):
    """dtypes=bool made 2 and -7 True, and complex64 made 1e300 inf+0j, without a word (int and float targets
    were checked)."""
    with pytest.raises(BridgeValueError, match=r"column 'i' \(int64\) holds 2, which is neither 0 nor 1.*would make "
                                               r"it True(?s:.*)Hint: make the column bool first"):
        read(numbers, "i", dtypes={"i": bool_dtype})
    assert np.asarray(read(numbers, "b01", dtypes={"b01": bool_dtype})).tolist() == [False, True, True]
    with pytest.raises(BridgeValueError, match=r"column 'f' \(float64\) holds 1e\+300, past float32's largest.*"
                                               r"complex64 would make it inf"):
        read(numbers, "f", dtypes={"f": complex64})
    with pytest.raises(BridgeValueError, match=r"Hint: pass a wider complex dtype for 'f' \((tf|torch).complex128\)"):
        read(numbers, "f", dtypes={"f": complex64})
    wide = np.asarray(read(numbers, "f", dtypes={"f": tf.complex128 if read is _tf else torch.complex128}))
    assert wide.tolist() == [0.5 + 0j, 1e300 + 0j, 1 + 0j]


def test_tf_casts_to_quantized_string_and_other_dtypes_are_checked(numbers):
    """qint8 wrapped 2**64 - 1 to -1; tf.string failed in tf's Cast kernel naming no column; tf.resource too."""
    with pytest.raises(BridgeValueError, match=r"holds 18446744073709551615, above qint8's largest value \(127\)"):
        _tf(numbers, "u", dtypes={"u": tf.qint8})
    with pytest.raises(BridgeValueError, match=r"column 'f' as tf.string, but it holds float64 numbers(?s:.*)"
                                               r"Hint: format them as text first"):
        _tf(numbers, "f", dtypes=tf.string)
    with pytest.raises(BridgeTypeError, match=r"dtypes asks for tf.resource, which no column is cast to"):
        numbers.iter_tf_batches(dtypes=tf.resource)


@pytest.mark.parametrize("read, module", [(_tf, "tf"), (_torch, "torch")])
def test_uint64_past_int64_hints_at_the_type_that_holds_it(numbers, read, module):
    """The hints named int64 or float64, which the next try refused too (2**64 - 1 fits neither)."""
    lib = tf if module == "tf" else torch
    refused = (BridgeValueError, UnsupportedTypeError)  # (torch's uint64 path raises the latter)
    with pytest.raises(refused, match=rf"(?s)above int32's largest.*Hint: .*{{'u': {module}.uint64}}"):
        read(numbers, "u", dtypes={"u": lib.int32})
    with pytest.raises(refused, match=rf"(?s)which float64 cannot hold exactly.*Hint: keep an integer dtype "
                                               rf"for 'u' \({module}.uint64\)"):
        read(numbers, "u", dtypes={"u": lib.float64})
    assert np.asarray(read(numbers, "u", dtypes={"u": lib.uint64})).tolist() == [1, 2**64 - 1, 3]


def test_fill_nulls_keys_naming_no_column_are_refused():
    ds = bridge.from_arrow(pa.table({"a": [1, None]}))
    for call in (lambda: next(iter(ds.iter_torch_batches(fill_nulls={"typo": 0}))),
                 lambda: next(iter(ds.iter_tf_batches(fill_nulls={"typo": 0}))),
                 lambda: ds.to_tf("a", fill_nulls={"typo": 0}),
                 lambda: ds.iterator().to_tf("a", fill_nulls={"typo": 0})):
        with pytest.raises(BridgeValueError, match=r"fill_nulls names \['typo'\] but the data has no such column"):
            call()
    # A key naming a column of the Dataset that to_tf does not select is no typo.
    both = bridge.from_arrow(pa.table({"i": [1, None], "f": [1.0, None]}))
    assert [x.numpy().tolist() for x in both.to_tf("i", fill_nulls={"i": 0, "f": 0.0}, batch_size=2)] == [[1, 0]]


def test_to_tf_checks_fills_list_elements_dictionary_nulls_and_names_at_the_call():
    """Each of these failed only in the first iteration, as tf's InvalidArgumentError around our message."""
    flags = bridge.from_arrow(pa.table({"b": pa.array([True, None]), "s": ["x", "y"]}))
    with pytest.raises(UnsupportedTypeError, match=r"cannot fill the nulls of column 'b' \(bool\) with 0"):
        flags.to_tf("b", fill_nulls={"b": 0})
    # One value for every column: checked only where a column holds a null (the text column has none).
    assert [x["b"].numpy().tolist() for x in flags.to_tf(["b", "s"], fill_nulls=False)] == [[True], [False]]
    # A fill value its column cannot hold, where the column holds no null: never used, so taken (as the
    # iterators take it).
    assert len(list(bridge.from_arrow(pa.table({"u": pa.array([1, 2], pa.uint8())})).to_tf(
        "u", fill_nulls={"u": -1}))) == 2
    small = bridge.from_arrow(pa.table({"x": pa.array([1, None], pa.int8())}))
    with pytest.raises(UnsupportedTypeError, match=r"cannot fill the nulls of column 'x' \(int8\) with 300"):
        small.to_tf("x", fill_nulls=300)
    for rows, fill in (([[1, None], [2]], None), ([[1, None], None], {"l": [0]})):  # (fill_nulls fills rows only)
        with pytest.raises(UnsupportedTypeError, match=r"(?s)list column 'l' .* holds 1 null element.*Hint: fill "
                                                       r"them inside the lists first, e.g. ds.map_batches"):
            bridge.from_arrow(pa.table({"l": pa.array(rows)})).to_tf("l", fill_nulls=fill)
    words = bridge.from_arrow(pa.table({"d": pa.DictionaryArray.from_arrays(pa.array([0, 1]),
                                                                              pa.array(["a", None]))}))
    with pytest.raises(UnsupportedTypeError, match=r"column 'd' .* has 1 null"):
        words.to_tf("d")
    with pytest.raises(BridgeValueError, match=r"feature_columns names \['id'\] more than once"):
        bridge.range(6).to_tf(["id", "id"])


def test_to_tf_of_a_permuted_tensor_and_of_other_column_kinds():
    """A fixed-shape tensor whose permutation is not the identity had its memory-order shape in the signature:
    tf.data failed "generator yielded shape (2, 2, 3) where (None, 3, 2) was expected"."""
    a = np.transpose(np.arange(24, dtype=np.int32).reshape(2, 3, 2, 2), (0, 2, 3, 1))
    ds = bridge.from_arrow(pa.table({"t": pa.FixedShapeTensorArray.from_numpy_ndarray(a)}))
    assert ds.schema().field("t").type.permutation != [0, 1, 2]  # the case: a permuted tensor type
    (batch,) = list(ds.to_tf("t", batch_size=2))
    np.testing.assert_array_equal(batch.numpy(), a)
    np.testing.assert_array_equal(next(iter(ds.iter_tf_batches(batch_size=2)))["t"].numpy(), a)
    fixed = bridge.from_arrow(pa.table({"f": pa.array([b"ab", b"cd"], pa.binary(2))}))
    assert [x.numpy().tolist() for x in fixed.to_tf("f", batch_size=2)] == [[b"ab", b"cd"]]
    runs = pa.chunked_array([pa.RunEndEncodedArray.from_arrays([2, 3], [1.5, 2.5])])
    assert [x.numpy().tolist() for x in bridge.from_arrow(pa.table({"r": runs})).to_tf("r", batch_size=3)] == [
        [1.5, 1.5, 2.5]]
    dec = bridge.from_arrow(pa.table({"d": pa.array([1], pa.decimal128(5, 2))}))
    with pytest.raises(UnsupportedTypeError, match=r"(?s)column 'd' has type decimal128.*Hint: cast it to float64"):
        dec.to_tf("d")


def test_to_tf_of_variable_shape_tensors_gives_ragged_tensors_as_ray_data_does():
    """Refused before ("has no tf.data equivalent"); Ray Data 2.60 gives RaggedTensorSpec([None] * 3,
    ragged_rank=2) for 2-d rows of different shapes, and so does this now, across block edges too."""
    shapes = [(2, 3), (1, 3), (4, 2), (1, 1), (3, 1)]
    arrays = [np.arange(int(np.prod(s)), dtype=np.float32).reshape(s) + 10 * i for i, s in enumerate(shapes)]
    ds = bridge.from_items([{"x": a, "y": i} for i, a in enumerate(arrays)], override_num_blocks=2)
    tfds = ds.to_tf("x", "y", batch_size=2)
    spec = tfds.element_spec[0]
    assert isinstance(spec, tf.RaggedTensorSpec) and spec.ragged_rank == 2 and spec.dtype == tf.float32
    got = [row for x, _ in tfds for row in x.to_list()]
    assert got == [a.tolist() for a in arrays]
    batch = next(iter(ds.iter_tf_batches(batch_size=5, dtypes={"x": tf.float64})))["x"]
    assert batch.dtype == tf.float64 and batch.to_list() == [a.tolist() for a in arrays]
    # A block whose rows happen to share one shape is a fixed-shape tensor block: ragged too, as the signature
    # (from the Dataset's schema) says; tf.data stopped on the dense batch.
    same = [np.ones((2, 2), "f4"), np.ones((1, 3), "f4"), np.full((2, 2), 2, "f4"), np.full((2, 2), 3, "f4")]
    mixed = bridge.from_items([{"x": a} for a in same], override_num_blocks=2)
    assert [row for x in mixed.to_tf("x", batch_size=2) for row in x.to_list()] == [a.tolist() for a in same]
    holes = bridge.from_items([{"x": arrays[0]}, {"x": None}])
    with pytest.raises(UnsupportedTypeError, match=r"column 'x' .* has 1 null"):
        holes.to_tf("x")
