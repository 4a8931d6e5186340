"""Starting several streaming queries that read a Python data source (such as `rill`) in one
Spark session: one at a time, each once the previous one has created its source.

Why: in PySpark 4.3 every Python data source registered with `spark.dataSource.register` holds
one `java.util.HashMap` of environment variables (`UserDefinedPythonDataSource.dataSourceCls
.envVars`), shared by reference with every Python function Spark derives from the source: the
reader's and the writer's, which travel inside every task of every query using the source. A
streaming query creates its source in its own thread (`PythonScan.toMicroBatchStream`), and
`PythonStreamingSourceRunner.init` then puts four keys into that shared map without a copy or a
lock (Spark's `PythonPlannerRunner` copies it first; this one does not). Two queries started at
once can do so at the same moment, and two unsynchronized `HashMap.put`s of a new key can leave
the map counting an entry it does not hold. From then on every task that carries the map is
written with one entry fewer than its count says, and the executor fails to read it back:
`java.io.OptionalDataException` in `HashMap.readObject`, on every attempt (every attempt
deserializes the same bytes), for every query on that source. Once one query has created its
source the keys exist, and later `put`s only replace values: queries started after that are
safe, hence one at a time. Starting them in turn also avoids spawning their Python workers
together, each of which Spark 4.3 gives 10 s to connect back.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.streaming.readwriter import DataStreamWriter

DEFAULT_TIMEOUT = 300.0


def wait_for_sources(query: StreamingQuery, timeout: float = DEFAULT_TIMEOUT) -> None:
    """Until `query` has created its sources (its status leaves "Initializing ..."); raises the
    query's error if it failed meanwhile, TimeoutError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while query.isActive and query.status["message"].startswith("Initializing"):
        if time.monotonic() > deadline:
            raise TimeoutError(f"query {query.name or query.id} did not create its sources within {timeout:.0f}s")
        time.sleep(0.05)
    error = query.exception()
    if error is not None:
        raise error


def start_in_turn(writers: Sequence[DataStreamWriter], timeout: float = DEFAULT_TIMEOUT) -> list[StreamingQuery]:
    """Starts each query once the previous one has created its sources; if one fails to start,
    stops those already started and raises."""
    queries: list[StreamingQuery] = []
    try:
        for writer in writers:
            query = writer.start()
            queries.append(query)
            wait_for_sources(query, timeout)
    except BaseException:
        for query in queries:
            if query.isActive:
                query.stop()
        raise
    return queries
