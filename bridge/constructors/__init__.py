"""Where Datasets come from: in-memory objects (``memory``: ``from_items``, ``from_pandas``,
``from_arrow``, ``from_numpy``, ``range``, ``from_blocks`` and the ``*_refs`` doors) and files
(``read_api``: ``read_parquet``, ``read_csv``, ... over the datasources of :mod:`bridge.io`).
``bridge`` exports each by name."""
