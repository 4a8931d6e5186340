"""The pipeline's pure parts, without Spark: ID ranges, options, offsets and the data-loss rule."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline import ids
from pipeline.options import EARLIEST, LATEST, Bound, OptionError, read_options, write_options
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
