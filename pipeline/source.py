"""The ``rill`` data source: the entry point Spark registers (``spark.dataSource.register``),
which hands out the batch and streaming readers and writers."""

from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from pipeline.arrow import DEFAULT_SCHEMA
from pipeline.options import OptionError


def _append_only(overwrite: bool) -> None:
    if overwrite:
        raise OptionError("streams are append-only: use mode append (overwrite would have to delete entries)")


class RillDataSource(DataSource):
    """Reads and writes Rill (or Redis) streams. Options: docs/pipeline.md."""

    @classmethod
    def name(cls) -> str:
        return "rill"

    def schema(self) -> str:
        return DEFAULT_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        from pipeline.batch_read import RillBatchReader, RillFilteringBatchReader

        # Spark 4.3 refuses a reader that offers filter pushdown while its conf turns it off.
        if str(self.options.get("pushfilters", "false")).strip().lower() == "true":
            return RillFilteringBatchReader(self.options, schema)
        return RillBatchReader(self.options, schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802 (Spark's name)
        from pipeline.stream_read import RillStreamReader

        return RillStreamReader(self.options, schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from pipeline.write import RillBatchWriter

        _append_only(overwrite)
        return RillBatchWriter(self.options, schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:  # noqa: N802
        from pipeline.write import RillStreamWriter

        _append_only(overwrite)
        return RillStreamWriter(self.options, schema)
