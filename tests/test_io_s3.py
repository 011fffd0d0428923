"""S3-compatible storage: a real local S3 server (moto's ThreadedMotoServer on 127.0.0.1).

Not tested here (no network): real AWS, GCS (``gs://``) and HDFS (``hdfs://``); they go
through the same ``pyarrow.fs`` code path as ``s3://``.
"""

from __future__ import annotations

import pyarrow.compute as pc
import pyarrow.fs as pafs
import pytest

import bridge

moto_server = pytest.importorskip("moto.server", reason="moto[s3] is in the test extra")


@pytest.fixture(scope="module")
def s3_endpoint():
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"{host}:{port}"
    server.stop()


def _fs(endpoint: str) -> pafs.S3FileSystem:
    return pafs.S3FileSystem(access_key="testing", secret_key="testing", endpoint_override=endpoint, scheme="http",
                             region="us-east-1", allow_bucket_creation=True)


def test_parquet_round_trip_through_s3(s3_endpoint):
    fs = _fs(s3_endpoint)
    fs.create_dir("rb-bucket")
    ds = bridge.range(1000, override_num_blocks=4).map_batches(lambda b: {"id": b["id"], "x": b["id"] * 2})
    paths = ds.write_parquet("s3://rb-bucket/data", filesystem=fs)
    assert paths == [f"rb-bucket/data/part-0000{i}.parquet" for i in range(4)]
    # Nothing but the final objects: the temporary names were moved away.
    listed = sorted(i.path for i in fs.get_file_info(pafs.FileSelector("rb-bucket/data")))
    assert listed == paths

    back = bridge.read_parquet("s3://rb-bucket/data", filesystem=fs)
    assert back.count() == 1000
    assert back.to_arrow().column("x").to_pylist() == [2 * i for i in range(1000)]
    filtered = bridge.read_parquet("s3://rb-bucket/data", filesystem=fs, columns=["x"], filter=pc.field("id") >= 990)
    assert [r["x"] for r in filtered.take_all()] == [2 * i for i in range(990, 1000)]


def test_s3_uri_with_explicit_endpoint(s3_endpoint):
    fs = _fs(s3_endpoint)
    fs.create_dir("rb-uri")
    bridge.range(10).write_csv("s3://rb-uri/csv", filesystem=fs)
    uri = f"s3://testing:testing@rb-uri/csv?scheme=http&endpoint_override={s3_endpoint}&region=us-east-1"
    assert sorted(r["id"] for r in bridge.read_csv(uri).take_all()) == list(range(10))
    with pytest.raises(bridge.BridgeError, match="not found|no files"):
        bridge.read_parquet(uri.replace("/csv?", "/missing?"))
