"""Which files a read sees and in which order (partition_filter, shuffle), Hive columns for every format,
and who names the files a write creates (filename_provider)."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import bridge
from bridge.io.partitioning import hive_values
from bridge.io.paths import FileWriteError, PathNotFoundError


def _hive_csv_tree(root) -> str:
    for year, city in [("2023", "NY"), ("2024", "New%20York"), ("__HIVE_DEFAULT_PARTITION__", "SF")]:
        d = root / f"year={year}" / f"city={city}"
        d.mkdir(parents=True)
        (d / "f.csv").write_text("v,w\n1,a\n2,b\n")
        (d / "f.json").write_text('{"v": 1}\n{"v": 2}\n')
    return str(root)


def test_hive_values_decode_and_read_the_null_directory():
    assert hive_values("/d/year=2024/city=New%20York/x=1/f.csv") == {"year": "2024", "city": "New York", "x": "1"}
    assert hive_values("/d/year=__HIVE_DEFAULT_PARTITION__/f.csv") == {"year": None}
    assert hive_values("/d/year=2024") == {}  # the file name is not a directory


def test_read_csv_and_read_json_add_hive_columns_typed_as_read_parquet_types_them(tmp_path):
    root = _hive_csv_tree(tmp_path / "t")
    ds = bridge.read_csv(root, file_extensions=["csv"])
    assert ds.schema().names == ["v", "w", "year", "city"]
    assert ds.schema().field("year").type == pa.int32() and ds.schema().field("city").type == pa.string()
    assert ds.take_all() == [
        {"v": 1, "w": "a", "year": 2023, "city": "NY"}, {"v": 2, "w": "b", "year": 2023, "city": "NY"},
        {"v": 1, "w": "a", "year": 2024, "city": "New York"}, {"v": 2, "w": "b", "year": 2024, "city": "New York"},
        {"v": 1, "w": "a", "year": None, "city": "SF"}, {"v": 2, "w": "b", "year": None, "city": "SF"},
    ]
    js = bridge.read_json(root, file_extensions=["json"], include_paths=True).take(1)[0]
    assert list(js) == ["v", "year", "city", "path"] and js["year"] == 2023
    assert bridge.read_csv(root, file_extensions=["csv"], partitioning=None).schema().names == ["v", "w"]
    # Only the columns asked for, partition columns included.
    assert bridge.read_csv(root, file_extensions=["csv"]).select_columns(["city", "v"]).take(1) == [
        {"city": "NY", "v": 1}]
    # Opt-in for the other formats (Ray Data's default there is no partitioning).
    assert bridge.read_text(root, file_extensions=["csv"]).schema().names == ["text"]
    assert bridge.read_text(root, file_extensions=["csv"], partitioning="hive").schema().names == [
        "text", "year", "city"]


def test_a_partition_key_that_is_not_an_int32_everywhere_reads_as_string(tmp_path):
    for v in ["1", "3000000000"]:
        (tmp_path / f"k={v}").mkdir()
        (tmp_path / f"k={v}" / "f.csv").write_text("v\n1\n")
    ds = bridge.read_csv(str(tmp_path))
    assert ds.schema().field("k").type == pa.string()
    assert sorted(r["k"] for r in ds.take_all()) == ["1", "3000000000"]  # "3000000000" not wrapped or floated


def test_a_file_column_named_like_its_partition_directory_must_hold_its_value(tmp_path):
    (tmp_path / "v=1").mkdir()
    (tmp_path / "v=1" / "f.csv").write_text("v,w\n1,a\n1,b\n")
    assert bridge.read_csv(str(tmp_path)).take_all() == [{"v": 1, "w": "a"}, {"v": 1, "w": "b"}]  # Ray's rule
    (tmp_path / "v=1" / "f.csv").write_text("v\n5\n")
    with pytest.raises(bridge.SchemaMismatchError, match="'v' whose values differ from its partition directory"):
        bridge.read_csv(str(tmp_path)).take_all()
    assert bridge.read_csv(str(tmp_path), partitioning=None).take_all() == [{"v": 5}]


def test_partition_values_pyarrow_would_not_read_as_int32_stay_strings(tmp_path):
    for v in ["+5", "7"]:
        (tmp_path / f"k={v}").mkdir()
        (tmp_path / f"k={v}" / "f.csv").write_text("x\n1\n")
    assert sorted(r["k"] for r in bridge.read_csv(str(tmp_path)).take_all()) == ["+5", "7"]


def test_schema_of_a_partitioned_read_reads_it_back_exactly(tmp_path):
    root = _hive_csv_tree(tmp_path / "t")
    first = bridge.read_csv(root, file_extensions=["csv"])
    schema = first.schema().set(2, pa.field("year", pa.int64()))  # a user's type for the directory column
    again = bridge.read_csv(root, file_extensions=["csv"], schema=schema)
    assert again.schema() == schema
    assert again.take_all() == first.take_all()


def test_partition_filter_reads_only_the_files_it_keeps(tmp_path):
    root = _hive_csv_tree(tmp_path / "t")
    kept = bridge.read_csv(root, file_extensions=["csv"], partition_filter=lambda v: v["year"] == "2024")
    assert [(r["year"], r["city"]) for r in kept.take_all()] == [(2024, "New York")] * 2
    assert kept.input_files() == [f"{root}/year=2024/city=New%20York/f.csv"]
    nulls = bridge.read_json(root, file_extensions=["json"], partition_filter=lambda v: v["year"] is None)
    assert nulls.count() == 2
    ray_style = bridge.PathPartitionFilter.of(lambda v: v["city"] in ("NY", "SF"))
    assert bridge.read_csv(root, file_extensions=["csv"], partition_filter=ray_style).count() == 4
    with pytest.raises(PathNotFoundError, match="kept none of 3 files") as err:
        bridge.read_csv(root, file_extensions=["csv"], partition_filter=lambda v: v["year"] == 2024)
    assert "as strings" in str(err.value)
    with pytest.raises(TypeError, match="partition_filter"):
        bridge.read_csv(root, partition_filter="year=2024")


def test_read_parquet_partition_filter_never_opens_the_files_it_skips(tmp_path):
    out = str(tmp_path / "p")
    bridge.range(20).map(lambda r: {"id": r["id"], "g": r["id"] % 2}).write_parquet(out, partition_cols=["g"])
    (tmp_path / "p" / "g=7").mkdir()
    (tmp_path / "p" / "g=7" / "broken.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(bridge.BridgeError, match="broken.parquet"):
        bridge.read_parquet(out)  # the footer is read at planning: proof the filter below skips the file
    ds = bridge.read_parquet(out, partition_filter=lambda v: v["g"] == "1")
    assert sorted(r["id"] for r in ds.take_all()) == list(range(1, 20, 2))
    assert {r["g"] for r in ds.take_all()} == {1}


def _file_order(ds: bridge.Dataset) -> list[int]:
    return list(dict.fromkeys(r["f"] for r in ds.take_all()))


def test_shuffle_files_reads_in_a_new_order_each_run_or_a_seeded_one(tmp_path):
    for i in range(12):
        pq.write_table(pa.table({"f": [i] * 3}), str(tmp_path / f"f{i:02d}.parquet"))
        (tmp_path / f"f{i:02d}.csv").write_text(f"f\n{i}\n{i}\n{i}\n")
    path = str(tmp_path)
    listed = list(range(12))
    for read in (lambda **kw: bridge.read_parquet(path, file_extensions=["parquet"], **kw),
                 lambda **kw: bridge.read_csv(path, file_extensions=["csv"], **kw)):
        assert _file_order(read()) == listed
        fixed = read(shuffle=bridge.FileShuffleConfig(seed=5, reseed_after_execution=False))
        first = _file_order(fixed)
        assert sorted(first) == listed and first != listed and _file_order(fixed) == first
        reseeded = read(shuffle=bridge.FileShuffleConfig(seed=5))
        epochs = [_file_order(reseeded) for _ in range(3)]
        assert len({tuple(e) for e in epochs}) == 3  # a new order each run ...
        again = read(shuffle=bridge.FileShuffleConfig(seed=5))
        assert [_file_order(again) for _ in range(3)] == epochs  # ... the same sequence in every program run
        unseeded = read(shuffle="files")
        orders = {tuple(_file_order(unseeded)) for _ in range(4)}
        assert len(orders) > 1 and all(sorted(o) == listed for o in orders)
        assert read(shuffle="files").count() == 36  # nothing lost or repeated
    with pytest.raises(ValueError, match="shuffle"):
        bridge.read_csv(path, shuffle=True)
    with pytest.raises(TypeError, match="seed"):
        bridge.FileShuffleConfig(seed="5")


def test_shuffled_parquet_keeps_a_files_row_groups_in_order_and_limit_reads_a_shuffled_file(tmp_path):
    for i in range(6):
        pq.write_table(pa.table({"f": [i] * 8, "r": list(range(8))}), str(tmp_path / f"f{i}.parquet"),
                       row_group_size=2)
    ds = bridge.read_parquet(str(tmp_path), shuffle=bridge.FileShuffleConfig(seed=1, reseed_after_execution=False))
    rows = ds.take_all()
    for f in range(6):
        assert [r["r"] for r in rows if r["f"] == f] == list(range(8))
    assert ds.limit(3).take_all() == rows[:3]


class _TaskNames(bridge.FilenameProvider):
    def get_filename_for_task(self, write_uuid, task_index):
        return f"scores-{task_index:04d}.{self.file_format or 'parquet'}"


def test_filename_provider_names_every_file_and_they_read_back(tmp_path):
    out = str(tmp_path / "o")
    ds = bridge.range(100, override_num_blocks=4)
    assert ds.write_parquet(out, filename_provider=_TaskNames()) == [f"{out}/scores-000{i}.parquet" for i in range(4)]
    assert sorted(os.listdir(out)) == [f"scores-000{i}.parquet" for i in range(4)]  # no staged file left
    assert sorted(r["id"] for r in bridge.read_parquet(out).take_all()) == list(range(100))
    csv = ds.write_csv(str(tmp_path / "c"), filename_provider=_TaskNames(file_format="csv"))
    assert [os.path.basename(p) for p in csv] == [f"scores-000{i}.csv" for i in range(4)]
    default = ds.write_json(str(tmp_path / "j"), filename_provider=bridge.FilenameProvider(file_format="json"))
    uuids = {os.path.basename(p).rsplit("_", 1)[0] for p in default}
    assert len(uuids) == 1 and [p.rsplit("_", 1)[1] for p in default] == [f"00000{i}.json" for i in range(4)]
    parts = bridge.range(10).map(lambda r: {"id": r["id"], "g": r["id"] % 2}).write_parquet(
        str(tmp_path / "h"), partition_cols=["g"], filename_provider=_TaskNames())
    assert parts == [f"{tmp_path}/h/g=0/scores-0000.parquet", f"{tmp_path}/h/g=1/scores-0000.parquet"]


def test_filename_providers_written_for_ray_data_work_old_and_new():
    ray_fp = pytest.importorskip("ray.data.datasource.filename_provider")

    class New(ray_fp.FilenameProvider):
        def get_filename_for_task(self, write_uuid, task_index):
            return f"new-{task_index}.parquet"

    class Old(ray_fp.FilenameProvider):
        def get_filename_for_block(self, block, write_uuid, task_index, block_index):
            return f"old-{task_index}.parquet"

    import tempfile

    with tempfile.TemporaryDirectory() as d:
        ds = bridge.range(4, override_num_blocks=2)
        assert [os.path.basename(p) for p in ds.write_parquet(d + "/n", filename_provider=New())] == [
            "new-0.parquet", "new-1.parquet"]
        assert [os.path.basename(p) for p in ds.write_parquet(d + "/o", filename_provider=Old())] == [
            "old-0.parquet", "old-1.parquet"]


def test_a_provider_that_repeats_a_name_or_hides_it_writes_nothing(tmp_path):
    class Same(bridge.FilenameProvider):
        def get_filename_for_task(self, write_uuid, task_index):
            return "same.csv"

    class Hidden(bridge.FilenameProvider):
        def get_filename_for_task(self, write_uuid, task_index):
            return f"_part{task_index}.csv"

    ds = bridge.range(30, override_num_blocks=3)
    with pytest.raises(FileWriteError, match="two write tasks got the same file name"):
        ds.write_csv(str(tmp_path / "s"), filename_provider=Same())
    assert os.listdir(tmp_path / "s") == []  # staged files removed, nothing renamed
    with pytest.raises(FileWriteError, match="readers skip names starting with"):
        ds.write_csv(str(tmp_path / "h"), filename_provider=Hidden())
    with pytest.raises(TypeError, match="needs a FilenameProvider"):
        ds.write_csv(str(tmp_path / "t"), filename_provider="part-{i}.csv")


def test_overwrite_with_a_provider_replaces_the_earlier_output_only_once_the_new_one_is_in(tmp_path):
    out = str(tmp_path / "o")
    default = bridge.FilenameProvider(file_format="parquet")
    bridge.range(40, override_num_blocks=4).write_parquet(out, filename_prefix="x")
    bridge.range(20, override_num_blocks=2).write_parquet(out, filename_provider=default)
    bridge.range(10, override_num_blocks=2).write_parquet(out, filename_provider=default)  # new write uuid
    assert len(os.listdir(out)) == 2 and bridge.read_parquet(out).count() == 10  # nothing earlier left

    class FailsOnTask1(bridge.FilenameProvider):
        def get_filename_for_task(self, write_uuid, task_index):
            if task_index == 1:
                raise RuntimeError("no name for task 1")
            return f"t{task_index}.parquet"

    before = sorted(os.listdir(out))
    with pytest.raises(bridge.BridgeError, match="no name for task 1"):
        bridge.range(30, override_num_blocks=3).write_parquet(out, filename_provider=FailsOnTask1())
    assert sorted(os.listdir(out)) == before  # the earlier output intact, no staged file left
    assert bridge.read_parquet(out).count() == 10


def test_a_provider_from_before_ray_2_5x_with_three_arguments_still_names_files(tmp_path):
    class Oldest(bridge.FilenameProvider):
        def get_filename_for_block(self, block, task_index, block_index):
            return f"oldest-{task_index}.csv"

    paths = bridge.range(4, override_num_blocks=2).write_csv(str(tmp_path), filename_provider=Oldest())
    assert [os.path.basename(p) for p in paths] == ["oldest-0.csv", "oldest-1.csv"]


def test_append_with_a_provider_never_replaces_a_file(tmp_path):
    out = str(tmp_path / "a")
    ds = bridge.range(20, override_num_blocks=2)
    ds.write_parquet(out, filename_provider=_TaskNames())
    before = {p: os.path.getmtime(os.path.join(out, p)) for p in os.listdir(out)}
    with pytest.raises(FileWriteError, match="already exist"):
        bridge.range(5, override_num_blocks=2).write_parquet(out, filename_provider=_TaskNames(), mode="append")
    assert {p: os.path.getmtime(os.path.join(out, p)) for p in os.listdir(out)} == before
    assert bridge.read_parquet(out).count() == 20
    # overwrite replaces files of the same name
    bridge.range(5, override_num_blocks=2).write_parquet(out, filename_provider=_TaskNames())
    assert bridge.read_parquet(out).count() == 5


def test_read_images_labels_each_image_from_its_directory(tmp_path):
    pil = pytest.importorskip("PIL.Image")
    import numpy as np

    for label, shade in [("cat", 10), ("dog", 200)]:
        (tmp_path / f"label={label}").mkdir()
        for i in range(2):
            pil.fromarray(np.full((4, 4), shade + i, np.uint8)).save(tmp_path / f"label={label}" / f"{i}.png")
    rows = bridge.read_images(str(tmp_path), partitioning="hive", override_num_blocks=1).take_all()
    assert [(r["label"], int(r["image"][0, 0])) for r in rows] == [("cat", 10), ("cat", 11), ("dog", 200), ("dog", 201)]


# ----------------------------------------------------------- directory names that hold their values exactly


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
@pytest.mark.parametrize("tz", [None, "UTC", "Asia/Kolkata"])
def test_timestamp_partitions_of_every_unit_read_back_exactly(tmp_path, unit, tz):
    # ms values were written with six decimals, which pyarrow does not parse as ms (unreadable layout);
    # a seconds column came back as milliseconds (the schema file's Parquet types, not its Arrow ones).
    t = pa.table({"k": pa.array([1, 2, None, 10**10], pa.timestamp(unit, tz)), "x": [1, 2, 3, 4]})
    bridge.from_arrow(t).write_parquet(str(tmp_path / "d"), partition_cols=["k"])
    back = bridge.read_parquet(str(tmp_path / "d")).to_arrow().sort_by("x")
    assert back.schema.field("k").type == t.schema.field("k").type
    assert back.column("k").equals(t.column("k"))


@pytest.mark.parametrize("column", [
    pa.array([1, 2001, None], pa.time32("ms")),
    pa.array([1, 59, None], pa.time32("s")),
    pa.array([86_400_000, 0, None], pa.date64()),
    pa.array([1000, 2000, None], pa.time64("ns")),  # whole microseconds
], ids=["time32-ms", "time32-s", "date64", "time64-ns-whole-us"])
def test_time_and_date64_partitions_read_back_exactly(tmp_path, column):
    t = pa.table({"k": column, "x": [1, 2, 3]})
    bridge.from_arrow(t).write_parquet(str(tmp_path / "d"), partition_cols=["k"])
    back = bridge.read_parquet(str(tmp_path / "d")).to_arrow().sort_by("x")
    assert back.schema.field("k").type == column.type
    assert back.column("k").equals(t.column("k"))


def test_the_null_directorys_name_as_a_string_value_is_refused_not_read_as_null(tmp_path):
    # It and a null shared a directory: the second file replaced the first (a row lost), or it read back as null.
    t = pa.table({"k": ["__HIVE_DEFAULT_PARTITION__", None], "x": [1, 2]})
    with pytest.raises(bridge.BridgeValueError, match=r"(?s)'k' holds __HIVE_DEFAULT_PARTITION__.*reads back "
                                                      r"as null.*name of the null directory"):
        bridge.from_arrow(t).write_parquet(str(tmp_path / "d"), partition_cols=["k"])


def test_nanoseconds_a_directory_name_cannot_hold_are_refused(tmp_path):
    # 1 ns and 2 ns were both named 00:00:00: one directory, one file, a row lost.
    t = pa.table({"k": pa.array([1, 2], pa.time64("ns")), "x": [1, 2]})
    with pytest.raises(bridge.BridgeValueError, match=r"(?s)'k' holds 00:00:00.* = 1 ns \(time64\[ns\]\).*Hint: cast"):
        bridge.from_arrow(t).write_parquet(str(tmp_path / "d"), partition_cols=["k"])


def test_a_partition_value_too_long_for_a_directory_name_is_a_bridge_error(tmp_path):
    t = pa.table({"k": ["a" * 300, "b"], "x": [1, 2]})
    with pytest.raises(bridge.BridgeValueError, match=r"(?s)302 bytes, over the 255.*Hint: partition by a shorter"):
        bridge.from_arrow(t).write_parquet(str(tmp_path / "d"), partition_cols=["k"])
