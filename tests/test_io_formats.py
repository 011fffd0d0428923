"""CSV, JSON, text, binary, NumPy and image files: write -> read round trips and reader options."""

from __future__ import annotations

import gzip

import numpy as np
import pyarrow as pa
import pytest

import bridge
from tests.io_helpers import flat_table


def test_csv_round_trip_flat_types(tmp_path):
    table = flat_table()
    paths = bridge.from_arrow(table).write_csv(str(tmp_path / "c"))
    assert paths[0].endswith("part-00000.csv")
    back = bridge.read_csv(str(tmp_path / "c")).to_arrow()
    assert back.column_names == table.column_names
    for name in ["i64", "f64", "b", "s", "d"]:
        assert back.column(name).to_pylist() == table.column(name).to_pylist(), name
    assert back.column("ts_us").cast(pa.timestamp("us")).equals(table.column("ts_us"))


def test_csv_options_gzip_projection_and_paths(tmp_path):
    (tmp_path / "a.csv.gz").write_bytes(gzip.compress(b"x;y\n1;a\n2;b\n"))
    import pyarrow.csv as pcsv

    ds = bridge.read_csv(str(tmp_path), parse_options=pcsv.ParseOptions(delimiter=";"), include_paths=True)
    rows = ds.take_all()
    assert [r["x"] for r in rows] == [1, 2] and rows[0]["path"].endswith("a.csv.gz")
    assert bridge.read_csv(str(tmp_path), parse_options=pcsv.ParseOptions(delimiter=";")).select_columns(
        ["y"]).take_all() == [{"y": "a"}, {"y": "b"}]


def test_csv_split_by_file_keeps_order(tmp_path):
    for i in range(5):
        (tmp_path / f"f{i}.csv").write_text("v\n" + "\n".join(str(i * 10 + j) for j in range(10)) + "\n")
    # Tiny files share a task (task overhead dominates below target_min_block_size) ...
    assert len(bridge.read_csv(str(tmp_path))._plan.datasource.get_read_tasks(0)) == 1
    # ... and can be forced apart, one task per file at most.
    ds = bridge.read_csv(str(tmp_path), override_num_blocks=5)
    assert len(ds._plan.datasource.get_read_tasks(0)) == 5
    assert ds.to_arrow().column("v").to_pylist() == list(range(50))
    assert bridge.read_csv(str(tmp_path), override_num_blocks=2).num_blocks() == 2


def test_json_round_trip(tmp_path):
    table = pa.table({
        "i": [1, None, 3], "f": [0.5, 1.5, None], "s": ["a", None, "c"], "b": [True, False, None],
        "lst": [[1, 2], None, [3]], "st": [{"x": 1}, {"x": 2}, None],
        "ts": pa.array([0, 1_000_000, None], pa.timestamp("s")),
    })
    bridge.from_arrow(table).write_json(str(tmp_path / "j"))
    back = bridge.read_json(str(tmp_path / "j")).to_arrow()
    for name in ["i", "f", "s", "b", "lst", "st", "ts"]:
        assert back.column(name).to_pylist() == table.column(name).to_pylist(), name
    assert pa.types.is_timestamp(back.schema.field("ts").type)


def test_json_tensor_as_nested_lists_and_array_file(tmp_path):
    bridge.range_tensor(3, shape=(2, 2)).write_json(str(tmp_path / "t"))
    rows = bridge.read_json(str(tmp_path / "t")).take_all()
    assert rows[2]["data"] == [[2, 2], [2, 2]]
    (tmp_path / "arr.json").write_text('[{"a": 1}, {"a": 2}]')
    assert bridge.read_json(str(tmp_path / "arr.json")).take_all() == [{"a": 1}, {"a": 2}]


def test_text_and_binary(tmp_path):
    (tmp_path / "t1.txt").write_text("hello\nwörld\n\nlast")
    assert [r["text"] for r in bridge.read_text(str(tmp_path / "t1.txt")).take_all()] == ["hello", "wörld", "", "last"]
    assert bridge.read_text(str(tmp_path / "t1.txt"), drop_empty_lines=True).count() == 3
    blobs = tmp_path / "blobs"
    blobs.mkdir()
    (blobs / "a.bin").write_bytes(b"\x00\x01\xff")
    (blobs / "b.bin").write_bytes(b"")
    (blobs / "_SUCCESS").write_bytes(b"")
    rows = bridge.read_binary_files(str(blobs)).take_all()
    assert [(r["path"].rsplit("/", 1)[1], r["bytes"]) for r in rows] == [("a.bin", b"\x00\x01\xff"), ("b.bin", b"")]
    assert bridge.read_binary_files(str(blobs), include_paths=False).columns() == ["bytes"]


def test_text_drops_a_utf8_byte_order_mark(tmp_path):
    """A file saved by a Windows editor starts with U+FEFF: it was kept in the first row's text."""
    (tmp_path / "bom.txt").write_bytes("\ufeffhello\r\nworld\r\n".encode())
    assert [r["text"] for r in bridge.read_text(str(tmp_path / "bom.txt")).take_all()] == ["hello", "world"]
    (tmp_path / "utf16.txt").write_bytes("hello\nworld".encode("utf-16"))  # the codec itself reads its mark
    assert [r["text"] for r in bridge.read_text(str(tmp_path / "utf16.txt"), encoding="utf-16").take_all()] == [
        "hello", "world"]


def test_numpy_round_trip(tmp_path):
    arr = np.arange(24, dtype=np.float32).reshape(4, 2, 3)
    bridge.from_numpy(arr).write_numpy(str(tmp_path / "n"), column="data")
    back = bridge.read_numpy(str(tmp_path / "n")).take_batch(4)["data"]
    assert back.dtype == np.float32 and np.array_equal(back, arr)
    np.save(tmp_path / "one.npy", np.array([1, 2, 3], dtype=np.int16))
    assert bridge.read_numpy(str(tmp_path / "one.npy")).to_arrow().column("data").type == pa.int16()
    with pytest.raises(bridge.BridgeError, match="no column 'nope'"):
        bridge.from_numpy(arr).write_numpy(str(tmp_path / "n2"), column="nope")


def test_images_fixed_and_variable_shape(tmp_path):
    PIL = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(0)
    a = rng.integers(0, 255, (8, 6, 3), dtype=np.uint8)
    b = rng.integers(0, 255, (4, 5, 3), dtype=np.uint8)
    PIL.fromarray(a).save(tmp_path / "a.png")
    PIL.fromarray(b).save(tmp_path / "b.png")
    (tmp_path / "notes.txt").write_text("not an image")  # filtered by extension
    ds = bridge.read_images(str(tmp_path), override_num_blocks=1)
    imgs = ds.take_batch(2)["image"]
    assert np.array_equal(imgs[0], a) and np.array_equal(imgs[1], b)  # lossless PNG, shapes vary
    fixed = bridge.read_images(str(tmp_path), size=(4, 4), mode="L", include_paths=True)
    assert isinstance(fixed.schema().field("image").type, pa.FixedShapeTensorType)
    batch = fixed.take_batch(2)
    assert batch["image"].shape == (2, 4, 4) and batch["image"].dtype == np.uint8
    assert batch["path"][0].endswith("a.png")


def test_images_of_mixed_modes_are_refused_with_the_files_and_read_with_mode(tmp_path):
    """Grayscale among colour images: 2-d and 3-d arrays raised ArrowInvalid from inside a read task
    (or, in different tasks, made blocks of two types); now the file, its shape and the first file are
    named, in every task, with the mode= that reads them."""
    PIL = pytest.importorskip("PIL.Image")
    from bridge.io.paths import FileReadError

    PIL.fromarray(np.full((4, 4, 3), 9, np.uint8)).save(tmp_path / "a.png")
    PIL.fromarray(np.full((4, 4), 7, np.uint8)).save(tmp_path / "b.png")
    PIL.fromarray(np.full((5, 4, 3), 9, np.uint8)).save(tmp_path / "c.png")
    for blocks in (1, 3):
        with pytest.raises(FileReadError, match=r"b\.png' decodes to 2-d uint8") as err:
            bridge.read_images(str(tmp_path), override_num_blocks=blocks).materialize()
        assert "mode='RGB'" in err.value.hint and "a.png" in err.value.what
    rows = bridge.read_images(str(tmp_path), mode="RGB").take_all()
    assert [r["image"].shape for r in rows] == [(4, 4, 3), (4, 4, 3), (5, 4, 3)]
    assert rows[1]["image"][0, 0].tolist() == [7, 7, 7]
