"""A `rill` data source whose write tasks fail on their first attempt after part of their rows
went out: the retry resends everything, which only idempotent writes absorb. Imported by the
Spark workers (hence a module of its own, not a test file)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from pipeline import RillDataSource
from pipeline.write import RillCommitMessage, RillStreamWriter

FAIL_AFTER_ROWS = 50  # with batchSize 20: two round trips (40 XADDs) are sent before the failure
SLICE = 10


class InjectedFailure(RuntimeError):
    pass


def _first_attempt_fails(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    from pyspark import TaskContext

    task = TaskContext.get()
    first = task is not None and task.attemptNumber() == 0
    given = 0
    for batch in batches:
        for offset in range(0, batch.num_rows, SLICE):  # small slices: the writer flushes as rows come
            if first and given >= FAIL_AFTER_ROWS:
                raise InjectedFailure(f"injected failure after {given} rows of the first attempt")
            piece = batch.slice(offset, SLICE)
            given += piece.num_rows
            yield piece


class FlakyStreamWriter(RillStreamWriter):
    def write(self, iterator: Iterator[pa.RecordBatch]) -> RillCommitMessage:
        return super().write(_first_attempt_fails(iterator))


class FlakyRillDataSource(RillDataSource):
    @classmethod
    def name(cls) -> str:
        return "rill_flaky"

    def streamWriter(self, schema: Any, overwrite: bool) -> FlakyStreamWriter:  # noqa: N802
        return FlakyStreamWriter(self.options, schema)
