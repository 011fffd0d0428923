"""Conformance constructors for the DataFrame engines: Dask, Dask-on-Ray, Modin, Xorbits (Mars), Ray Data.

Imported by ``tests/constructors.py``; each entry turns a dict of columns into
the engine's native object and reads one back into ``{column: [values]}``.
"""

from __future__ import annotations

from tests.constructors import Constructor, register


def _dask_make(d, npartitions=3):
    import dask.dataframe as dd
    import pandas as pd

    return dd.from_pandas(pd.DataFrame(d), npartitions=npartitions)


def _dask_back(ddf):
    df = ddf.compute()
    return {c: df[c].tolist() for c in df.columns}


def _dask_on_ray_back(ddf):
    import dask
    from ray.util.dask import ray_dask_get

    with dask.config.set(scheduler=ray_dask_get):
        return _dask_back(ddf)


def _modin_make(d):
    import modin.config as cfg

    cfg.Engine.put("ray")
    import modin.pandas as mpd

    return mpd.DataFrame(d)


def _modin_back(mdf):
    df = mdf._to_pandas()
    return {c: df[c].tolist() for c in df.columns}


_xorbits_started = False


def ensure_xorbits() -> None:
    """One local Xorbits cluster for the test session (it starts in ~6 s)."""
    global _xorbits_started
    if not _xorbits_started:
        import xorbits

        xorbits.init(n_cpu=1)
        _xorbits_started = True


def _xorbits_make(d):
    import xorbits.pandas as xpd

    ensure_xorbits()
    return xpd.DataFrame(d, chunk_size=2)


def _xorbits_back(xdf):
    df = xdf.to_pandas()
    return {c: df[c].tolist() for c in df.columns}


def _ray_data_make(d):
    import pyarrow as pa
    import ray.data

    return ray.data.from_arrow(pa.table(d))


def _ray_data_back(rds):
    return rds.to_arrow_refs() and _concat_refs(rds.to_arrow_refs())


def _concat_refs(refs):
    import pyarrow as pa
    import ray

    tables = [t for t in ray.get(refs) if t.num_rows] or ray.get(refs)[:1]
    return pa.concat_tables(tables).to_pydict()


register(Constructor("dask", "dask", _dask_make, _dask_back, "dask"))
register(Constructor("dask-on-ray", "dask", lambda d: _dask_make(d, 2), _dask_on_ray_back, "dask"))
register(Constructor("modin", "modin", _modin_make, _modin_back, "modin"))
register(Constructor("xorbits", "xorbits", _xorbits_make, _xorbits_back, "mars"))
register(Constructor("ray_data", "ray", _ray_data_make, _ray_data_back, "ray_data"))
