"""Consumer-group mode through real local Spark, against Rill and redis-server: XREADGROUP in
the tasks, XACK when Spark commits, redelivery of a failed batch (at least once)."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from tests.conftest import Server
from tests.spark.conftest import fill, run_available_now, url
from tests.spark.test_stream_read import Batches


def _options(server: Server, **more: str) -> dict[str, str]:
    return {"url": url(server), "streams": "jobs", "group": "spark-jobs", "consumer": "w",
            "startingOffsets": "earliest", **more}


def _pending(client: redis.Redis) -> int:
    return int(client.xpending("jobs", "spark-jobs")["pending"])


def test_group_mode_reads_every_entry_once_and_acks_committed_batches(spark: Any, server: Server,
                                                                      checkpoint: str) -> None:
    with server.client() as c:
        first = fill(c, "jobs", 25)
        run1 = Batches()
        run_available_now(spark, _options(server, maxEntriesPerTrigger="10", partitionsPerStream="2"),
                          checkpoint, run1)
        assert sorted(run1.all) == sorted(first) and run1.sizes == [10, 10, 5]
        # Spark commits a batch when it plans the next one: the last batch stays pending
        assert _pending(c) == 5
        consumers = {x["name"].decode() for x in c.xinfo_consumers("jobs", "spark-jobs")}
        assert consumers <= {"w-0", "w-1"}

        second = fill(c, "jobs", 3, start=25)
        run2 = Batches()
        run_available_now(spark, _options(server, partitionsPerStream="2"), checkpoint, run2)
        # the restart committed the previous run's last batch before reading on: no repeat
        assert sorted(run2.all) == sorted(second)
        assert _pending(c) == 3


def test_group_mode_delivers_a_failed_batch_again(spark: Any, server: Server, checkpoint: str) -> None:
    with server.client() as c:
        entries = fill(c, "jobs", 10)

        def fail(df: Any, batch_id: int) -> None:
            df.count()  # the tasks ran: every entry was delivered to a consumer
            raise RuntimeError("the sink failed")

        with pytest.raises(Exception, match="the sink failed"):
            run_available_now(spark, _options(server), checkpoint, fail)
        assert _pending(c) == 10
        again = Batches()
        run_available_now(spark, _options(server), checkpoint, again)
        assert sorted(again.all) == sorted(entries)  # at least once: the pending entries came again
        assert _pending(c) == 10  # and stay pending until a next batch commits them
