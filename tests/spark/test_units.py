"""The pipeline's pure parts, without Spark: ID ranges, options, offsets and the data-loss rule."""

from __future__ import annotations

import datetime
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline import ids
from pipeline.idempotence import IdempotentIds
from pipeline.offsets import Offset, fingerprint
from pipeline.options import EARLIEST, LATEST, Bound, OptionError, connection_options, read_options, write_options
from pipeline.planning import StreamState, batch_range, initial_offset, lost_after


def i(text: str) -> int:
    return ids.parse(text)


@given(st.integers(0, 2**40), st.integers(0, 2**40), st.integers(0, 5), st.integers(0, 5), st.integers(1, 50))
def test_split_covers_the_range_exactly_with_contiguous_pieces(a: int, b: int, sa: int, sb: int, n: int) -> None:
    lo, hi = sorted((ids.make(a, sa), ids.make(b, sb)))
    pieces = ids.split(lo, hi, n)
    assert 1 <= len(pieces) <= n
    assert pieces[0][0] == lo and pieces[-1][1] == hi
    assert all(x <= y for x, y in pieces)
    assert all(prev[1] + 1 == nxt[0] for prev, nxt in zip(pieces, pieces[1:]))


def test_ids_parse_and_format() -> None:
    assert ids.fmt(i("5-3")) == "5-3"
    assert i("5") == ids.make(5, 0) and ids.parse("5", missing_seq=ids.MAX_PART) == ids.make(5, ids.MAX_PART)
    assert ids.fmt(ids.predecessor(i("5-0"))) == f"4-{ids.MAX_PART}" and ids.successor(i("5-3")) == i("5-4")
    for bad in ("", "x", "1-", "-1", "1-2-3", f"{2**64}-0"):
        with pytest.raises(ids.InvalidStreamId):
            ids.parse(bad)


def test_read_options_bounds_and_errors() -> None:
    opts = read_options({"streams": "a, b,a", "startingoffsets": '{"a": "(5-1"}', "endingoffsets": '{"b": "7"}'},
                        streaming=False)
    assert opts.streams == ("a", "b")
    assert opts.starting == {"a": Bound("id", i("5-1"), False), "b": EARLIEST}
    assert opts.ending == {"a": LATEST, "b": Bound("id", ids.make(7, ids.MAX_PART), True)}
    cases = {
        "streams": ({}, "option streams is required"),
        "json": ({"streams": "a", "startingOffsets": "{"}, "must be earliest, latest or JSON"),
        "unknown": ({"streams": "a", "startingOffsets": '{"z": "1-0"}'}, "names streams that are not in"),
        "id": ({"streams": "a", "startingOffsets": '{"a": "x"}'}, "'x' is not a stream entry ID"),
        "bool": ({"streams": "a", "failOnDataLoss": "yes"}, "failOnDataLoss must be true or false"),
        "group": ({"streams": "a", "group": "g"}, "streaming queries only"),
    }
    for options, message in cases.values():
        with pytest.raises(OptionError, match=message):
            read_options(options, streaming=False)
    with pytest.raises(OptionError, match="needs readFrom=primary"):
        read_options({"streams": "a", "group": "g", "readFrom": "replica"}, streaming=True)
    with pytest.raises(OptionError, match="maxlen takes N"):
        write_options({"maxlen": "many"})
    assert write_options({"maxlen": "=10"}).maxlen_exact and not write_options({"maxlen": "10"}).maxlen_exact


def _state(first: str | None, last: str | None, added: int, length: int, generated: str | None = None) -> StreamState:
    return StreamState(length=length, first_id=i(first) if first else None, last_id=i(last) if last else None,
                       last_generated=i(generated or last or "0-0"), entries_added=added, max_deleted=0)


def test_batch_range_clamps_to_what_the_stream_holds() -> None:
    state = _state("10-0", "50-0", 5, 5)
    assert batch_range(state, EARLIEST, LATEST) == (i("10-0"), i("50-0"))
    assert batch_range(state, Bound("id", i("20-0"), False), Bound("id", i("40-0"), False)) == (i("20-1"),
                                                                                              i("40-0") - 1)
    assert batch_range(state, Bound("id", i("60-0")), LATEST) is None
    assert batch_range(None, EARLIEST, LATEST) is None


def test_initial_offsets() -> None:
    state = _state("10-0", "50-0", 8, 5)  # 3 entries removed before 10-0
    assert initial_offset(state, EARLIEST) == (ids.predecessor(i("10-0")), 3)
    assert initial_offset(state, LATEST) == (i("50-0"), 8)
    assert initial_offset(state, Bound("id", i("20-0"))) == (ids.predecessor(i("20-0")), None)
    assert initial_offset(None, LATEST) == (0, 0)


def test_data_loss_rule() -> None:
    # the offset's successor is the first entry: nothing can have been lost
    assert lost_after(ids.predecessor(i("10-0")), None, _state("10-0", "50-0", 8, 5)) is None
    # the offset is still in the stream (trimming is head-first): nothing lost to trimming
    assert lost_after(i("20-0"), None, _state("10-0", "50-0", 8, 5)) is None
    # read 4 entries up to 5-0, then 4 were trimmed: exactly those read, no loss
    assert lost_after(i("5-0"), 4, _state("10-0", "50-0", 9, 5)) is None
    # read 4 up to 5-0, 6 removed: 2 unread entries went
    assert "2 entries after 5-0 were removed" in (lost_after(i("5-0"), 4, _state("10-0", "50-0", 11, 5)) or "")
    # after a restart (ordinal unknown) a trimmed committed entry is reported
    assert "may be among them" in (lost_after(i("5-0"), None, _state("10-0", "50-0", 11, 5)) or "")
    # empty stream: lost only if something was added after the offset
    assert lost_after(i("50-0"), None, _state(None, None, 5, 0, generated="50-0")) is None
    assert lost_after(i("40-0"), 4, _state(None, None, 5, 0, generated="50-0")) is not None


def test_data_loss_rule_sees_deletions_and_a_deleted_stream() -> None:
    deleted = StreamState(length=5, first_id=i("10-0"), last_id=i("50-0"), last_generated=i("50-0"),
                          entries_added=6, max_deleted=i("30-0"))
    # an entry after the offset was XDELed before it was read
    assert "deleted (XDEL)" in (lost_after(i("20-0"), None, deleted) or "")
    # once reported (or read past), it is not reported again
    assert lost_after(i("20-0"), None, deleted, deletions_seen=i("30-0")) is None
    assert lost_after(i("40-0"), None, deleted) is None
    # a stream the query read is gone; one it never saw is just not there
    assert lost_after(i("40-0"), None, None, existed=True) == "the stream was deleted"
    assert lost_after(i("40-0"), None, None) is None


def test_offsets_round_trip_and_read_the_original_form() -> None:
    offset = Offset({"b": i("5-1"), "a": i("7-0")}, replid="ab" * 20, epoch=3, consumer="c1", tails={"a": "ff"})
    data = offset.to_json()
    assert list(data["streams"]) == ["a", "b"]  # sorted: Spark compares offsets as JSON text
    assert Offset.from_json(json.loads(json.dumps(data))) == offset
    assert Offset.from_json({"s": "5-0"}) == Offset({"s": i("5-0")})
    assert Offset({"s": 0}).to_json() == {"streams": {"s": "0-0"}}
    assert fingerprint(b"1-0", [b"f", b"v"]) != fingerprint(b"1-0", [b"f", b"w"])


def test_idempotent_ids_do_not_depend_on_the_partition() -> None:
    def ids_of(rows: list[list[bytes]]) -> list[tuple[bytes, bytes]]:
        gen = IdempotentIds("q", "7", 16)
        return [gen.next(b"s", row) for row in rows]

    rows = [[b"n", str(n).encode()] for n in range(20)]
    whole = dict(zip(map(tuple, rows), ids_of(rows)))
    # the same rows cut into two partitions in another order get the same IDs
    split = ids_of(rows[10:][::-1]) + ids_of(rows[:10])
    assert sorted(split) == sorted(whole.values())
    # identical rows of a partition stay distinct
    assert len(set(ids_of([[b"n", b"1"]] * 3))) == 3


def test_new_options() -> None:
    opts = read_options({"streamsPattern": "ev:*", "startingOffsets": "earliest", "maxTriggerDelay": "30s",
                         "minOffsetsPerTrigger": "10", "readCommitted": "false"}, streaming=True)
    assert opts.streams == () and opts.streams_pattern == "ev:*" and opts.bound("ev:1") == EARLIEST
    assert (opts.max_trigger_delay, opts.min_entries_per_trigger, opts.read_committed) == (30.0, 10, "false")
    assert read_options({"streams": "s"}, streaming=True).consumer is None  # unique per query by default
    cases = {
        "both": ({"streams": "s", "streamsPattern": "x*"}, "not both"),
        "pattern ids": ({"streamsPattern": "x*", "startingOffsets": '{"a": "1-0"}'}, "earliest or latest"),
        "delay": ({"streams": "s", "maxTriggerDelay": "soon"}, "duration like 30s"),
        "min>max": ({"streams": "s", "minOffsetsPerTrigger": "9", "maxEntriesPerTrigger": "5"}, "is above"),
        "committed": ({"streams": "s", "readCommitted": "maybe"}, "readCommitted must be one of"),
    }
    for options, message in cases.values():
        with pytest.raises(OptionError, match=message):
            read_options(options, streaming=True)
    assert write_options({}).write_concern == "auto" and write_options({"writeConcern": "AOF"}).write_concern == "aof"
    with pytest.raises(OptionError, match="writeConcern must be one of"):
        write_options({"writeConcern": "2"})
    with pytest.raises(OptionError, match="sslCertFile and sslKeyFile go together"):
        connection_options({"url": "rediss://h:1", "sslCertFile": "/etc/hostname"})
    with pytest.raises(OptionError, match="need a rediss:// url"):
        connection_options({"sslCaFile": "/etc/hostname"})
    assert connection_options({"failoverTimeoutMs": "2500"}).failover_timeout == 2.5


def test_pushed_filters_narrow_the_id_range() -> None:
    from pyspark.sql.datasource import EqualTo, GreaterThanOrEqual, In, LessThan
    from pyspark.sql.types import MapType, StringType, StructField, StructType, TimestampType

    from pipeline.batch_read import RillFilteringBatchReader

    schema = StructType([StructField("stream", StringType()), StructField("id", StringType()),
                         StructField("ts", TimestampType()), StructField("fields", MapType(StringType(), StringType()))])
    reader = RillFilteringBatchReader({"streams": "a,b"}, schema)
    at = datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)
    ms = int(at.timestamp() * 1000)
    filters = [GreaterThanOrEqual(("ts",), at), LessThan(("ts",), at + datetime.timedelta(seconds=1)),
               In(("stream",), ("b", "c"))]
    assert list(reader.pushFilters(filters)) == filters  # Spark checks them all again
    assert (reader.lo, reader.hi) == (ids.make(ms, 0), ids.make(ms + 999, ids.MAX_PART))
    assert reader.only == {"b", "c"}
    exact = RillFilteringBatchReader({"streams": "a"}, schema)
    list(exact.pushFilters([EqualTo(("id",), "5-3")]))
    assert (exact.lo, exact.hi) == (i("5-3"), i("5-3"))


def test_a_range_whose_first_entry_went_is_data_loss() -> None:
    from pipeline.options import connection_options as conn_of
    from pipeline.reading import DataLossError, RangePartition, ReadSpec, _check_first

    def part(fail: bool) -> RangePartition:
        spec = ReadSpec(conn_of({}), None, 10, fail_on_data_loss=fail)  # type: ignore[arg-type]
        return RangePartition("s", i("5-0"), i("9-0"), (), spec, first=i("6-0"))

    _check_first(part(True), [[b"6-0", []]])  # still there
    for entries in ([[b"7-0", []]], []):
        with pytest.raises(DataLossError, match="entry 6-0, the first of the range 5-0..9-0 .* was removed"):
            _check_first(part(True), entries)
        _check_first(part(False), entries)  # failOnDataLoss=false: said, not raised


def test_the_writer_retries_what_a_failover_refuses() -> None:
    import redis

    from pipeline.write import _retriable_reply

    # redis-py turns "-READONLY You can't write..." into ReadOnlyError without the code.
    assert _retriable_reply(redis.exceptions.ReadOnlyError("You can't write against a read only replica."))
    assert _retriable_reply(redis.exceptions.ResponseError("NOREPLICAS no majority lease: fenced mode ..."))
    assert not _retriable_reply(redis.exceptions.ResponseError("ERR wrong number of arguments"))


def test_queries_start_one_at_a_time_each_after_the_previous_created_its_source() -> None:
    from pipeline.queries import start_in_turn

    events: list[str] = []

    class Query:
        def __init__(self, name: str) -> None:
            self.name, self.id, self.polls = name, name, 0
            self.isActive = True

        @property
        def status(self) -> dict[str, str]:
            self.polls += 1
            events.append(f"poll {self.name}")
            return {"message": "Initializing sources" if self.polls < 3 else "Waiting for data to arrive"}

        def exception(self) -> None:
            return None

        def stop(self) -> None:
            events.append(f"stop {self.name}")

    class Writer:
        def __init__(self, name: str) -> None:
            self.name = name

        def start(self) -> Query:
            events.append(f"start {self.name}")
            return Query(self.name)

    queries = start_in_turn([Writer("a"), Writer("b")])  # type: ignore[list-item]
    assert [q.name for q in queries] == ["a", "b"]
    # b starts only once a left "Initializing": its source exists, the shared map is complete
    assert events == ["start a", "poll a", "poll a", "poll a", "start b", "poll b", "poll b", "poll b"]

    class Failing(Writer):
        def start(self) -> Query:
            raise RuntimeError("cannot start")

    events.clear()
    with pytest.raises(RuntimeError, match="cannot start"):
        start_in_turn([Writer("a"), Failing("b")])  # type: ignore[list-item]
    assert events[-1] == "stop a"  # the started one is stopped again
