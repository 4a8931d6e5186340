"""Streaming reads through real local Spark, against Rill and redis-server: admission control
(the sizes of the micro-batches), restart from a checkpoint without gap or duplicate, and
entries trimmed away after the committed offset with failOnDataLoss true and false."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Server
from tests.spark.conftest import fill, run_available_now, url


class Batches:
    """What foreachBatch saw: the IDs of each micro-batch, in order."""

    def __init__(self) -> None:
        self.ids: list[list[str]] = []

    def __call__(self, df: Any, batch_id: int) -> None:
        self.ids.append([r.id for r in df.select("id").collect()])

    @property
    def sizes(self) -> list[int]:
        return [len(b) for b in self.ids]

    @property
    def all(self) -> list[str]:
        return [i for b in self.ids for i in b]


def test_max_entries_per_trigger_sizes_the_batches(spark: Any, server: Server, checkpoint: str) -> None:
    with server.client() as c:
        a = fill(c, "a", 15, spread=True)
        b = fill(c, "b", 10, start=5, spread=True)  # b's entries interleave a's in time
    batches = Batches()
    run_available_now(spark, {"url": url(server), "streams": "b,a", "startingOffsets": "earliest",
                              "maxEntriesPerTrigger": "10"}, checkpoint, batches)
    assert batches.sizes == [10, 10, 5]
    # each batch takes the oldest entries across the streams
    times = [[int(i.split("-")[0]) for i in batch] for batch in batches.ids]
    assert all(max(earlier) <= min(later) for earlier, later in zip(times, times[1:]))
    assert sorted(batches.all) == sorted(a + b)


def test_restart_from_checkpoint_continues_without_gap_or_duplicate(spark: Any, server: Server,
                                                                    checkpoint: str) -> None:
    options = {"url": url(server), "streams": "s", "startingOffsets": "earliest", "maxEntriesPerTrigger": "7"}
    with server.client() as c:
        first = fill(c, "s", 20)
        run1 = Batches()
        run_available_now(spark, options, checkpoint, run1)
        second = fill(c, "s", 12, start=20)
        run2 = Batches()
        run_available_now(spark, options, checkpoint, run2)
    assert run1.sizes == [7, 7, 6]
    assert run1.all == first
    assert run2.all == second  # exactly after the last committed batch


def test_starting_offsets_latest_reads_only_new_entries(spark: Any, server: Server, checkpoint: str) -> None:
    with server.client() as c:
        fill(c, "s", 5)
        batches = Batches()
        run_available_now(spark, {"url": url(server), "streams": "s"}, checkpoint, batches)
        assert batches.all == []
        new = fill(c, "s", 3, start=5)
        run_available_now(spark, {"url": url(server), "streams": "s"}, checkpoint, batches)
    assert batches.all == new


@pytest.mark.parametrize("fail_on_data_loss", [True, False])
def test_entries_trimmed_after_the_committed_offset(spark: Any, server: Server, checkpoint: str,
                                                   fail_on_data_loss: bool) -> None:
    options = {"url": url(server), "streams": "s", "startingOffsets": "earliest",
               "failOnDataLoss": str(fail_on_data_loss).lower()}
    with server.client() as c:
        read = fill(c, "s", 10)
        run_available_now(spark, options, checkpoint, Batches())
        later = fill(c, "s", 20, start=10)
        c.xtrim("s", maxlen=5, approximate=False)  # 15 of the 20 unread entries go
        batches = Batches()
        if fail_on_data_loss:
            with pytest.raises(Exception, match=f"stream 's', committed offset {read[-1]}: .*(removed|trimming)"):
                run_available_now(spark, options, checkpoint, batches)
            assert batches.all == []
        else:
            run_available_now(spark, options, checkpoint, batches)
            assert batches.all == later[15:]


def test_trimming_read_entries_is_no_data_loss(spark: Any, server: Server, checkpoint: str) -> None:
    """Within a run the reader knows how many entries it has read, so trimming the entries
    it read, its committed one included, is told apart from losing unread ones."""
    options = {"url": url(server), "streams": "s", "startingOffsets": "earliest", "maxEntriesPerTrigger": "4"}
    with server.client() as c:
        entry_ids = fill(c, "s", 8)
        seen: list[str] = []

        def trim_behind(df: Any, batch_id: int) -> None:
            seen.extend(r.id for r in df.select("id").collect())
            if batch_id == 0:  # the next batch is planned after this: drop what was read
                c.xtrim("s", minid=entry_ids[4], approximate=False)

        run_available_now(spark, options, checkpoint, trim_behind)
    assert seen == entry_ids
