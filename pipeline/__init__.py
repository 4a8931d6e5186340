"""Rill's PySpark data source (short name ``rill``) and the example pipeline built on it.

    from pipeline import RillDataSource
    spark.dataSource.register(RillDataSource)
    spark.read.format("rill").option("streams", "orders").load()

It talks to Rill only over RESP (redis-py), so it works against redis-server too, and never
imports the node.  ``pipeline.ids``, ``pipeline.options`` and ``pipeline.planning`` need no
Spark; the rest needs the ``spark`` extra (pyspark, pyarrow).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pipeline.source import RillDataSource

__all__ = ["RillDataSource"]


def __getattr__(name: str) -> Any:
    # Lazy, so the Spark-free modules import without pyspark installed.
    if name == "RillDataSource":
        from pipeline.source import RillDataSource

        return RillDataSource
    raise AttributeError(name)
