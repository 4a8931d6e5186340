"""Differential tests of the stream data commands (XADD, XRANGE, XREVRANGE, XLEN, XDEL, XTRIM,
XSETID, plus DEL/TYPE on streams and WRONGTYPE for every stream command): each command goes
to redis-server and to Rill, in RESP2 and RESP3, and the replies must be byte-identical.

Entry IDs are explicit wherever the reply would show them: `*` IDs come from two different
clocks. `~` trimming depends on node boundaries, so the tests that use it first set
stream-node-max-entries to a small value on both servers (restored afterwards).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tests.conformance.harness import Pair
from tests.conformance.stream_support import check_masked, without_field

MAX = "18446744073709551615"


@pytest.fixture
def small_nodes(pair_any: Pair) -> Iterator[Pair]:
    """stream-node-max-entries 3 on both servers, so `~` trims whole 3-entry nodes."""
    pair_any.check("CONFIG", "SET", "stream-node-max-entries", "3")
    yield pair_any
    pair_any.oracle.call("CONFIG", "SET", "stream-node-max-entries", "100")
    pair_any.rill.call("CONFIG", "SET", "stream-node-max-entries", "100")


def fill(pair: Pair, key: str, ids: list[str], field: str = "f") -> None:
    for i, entry_id in enumerate(ids):
        pair.check("XADD", key, entry_id, field, str(i))


def check_stream_state(pair: Pair, key: str) -> None:
    """Contents and counters of `key`: XRANGE both ways, XLEN, and XINFO STREAM without
    radix-tree-nodes (pinned on its own by test_xinfo_stream_reports_node_layout)."""
    pair.check("XRANGE", key, "-", "+")
    pair.check("XREVRANGE", key, "+", "-")
    pair.check("XLEN", key)
    check_masked(pair, lambda v: without_field(v, b"radix-tree-nodes")[0], "XINFO", "STREAM", key)


# ---------------------------------------------------------------------------------------
# XADD
# ---------------------------------------------------------------------------------------


def test_xadd_explicit_ids_reply_the_id_and_incomplete_id_gets_seq_zero(pair_any: Pair) -> None:
    pair_any.check_all([
        ("XADD", "s", "1-1", "a", "1"),
        ("XADD", "s", "1-2", "b", "2", "c", "3"),
        ("XADD", "s", "2", "a", "4"),
        ("XADD", "s", "00003-0000", "a", "5"),
        ("XLEN", "s"),
        ("TYPE", "s"),
    ])
    check_stream_state(pair_any, "s")


def test_xadd_keeps_field_order_duplicates_and_binary_values(pair_any: Pair) -> None:
    pair_any.check_all([
        ("XADD", "s", "1", "z", "1", "a", "2", "z", "3"),
        ("XADD", "s", "2", b"\x00\xff", b"bin\r\nary", "", ""),
        ("XADD", "s", "3", "n", "12345678901234567890"),
        ("XRANGE", "s", "-", "+"),
    ])


def test_xadd_star_generates_increasing_ids(pair_any: Pair) -> None:
    # A `*` ID comes from each server's clock: check its shape and order on Rill, then
    # compare what does not depend on the clock.
    pattern = re.compile(rb"^\$\d+\r\n(\d+)-(\d+)\r\n$")
    last = (0, 0)
    for _ in range(5):
        _, raw = pair_any.both("XADD", "s", "*", "f", "v")
        m = pattern.match(raw)
        assert m, raw
        cur = (int(m[1]), int(m[2]))
        assert cur > last
        last = cur
    pair_any.check("XLEN", "s")


def test_xadd_star_after_future_id_increments_the_sequence(pair_any: Pair) -> None:
    pair_any.check_all([
        ("XADD", "s", "99999999999999-5", "f", "v"),
        ("XADD", "s", "*", "f", "v"),
        ("XADD", "s", "*", "f", "v"),
        ("XRANGE", "s", "-", "+"),
    ])


def test_xadd_ms_star_autosequences_within_the_same_millisecond(pair_any: Pair) -> None:
    pair_any.check_all([
        ("XADD", "s", "5-*", "f", "v"),
        ("XADD", "s", "5-*", "f", "v"),
        ("XADD", "s", "5-*", "f", "v"),
        ("XADD", "s", "6-*", "f", "v"),
        ("XADD", "s", "5-*", "f", "v"),
        ("XADD", "s", "6-10", "f", "v"),
        ("XADD", "s", "6-*", "f", "v"),
        ("XADD", "z", "0-*", "f", "v"),
        ("XADD", "z", "0-*", "f", "v"),
        ("XRANGE", "s", "-", "+"),
        ("XRANGE", "z", "-", "+"),
    ])


def test_xadd_ms_star_when_sequence_is_exhausted_fails(pair_any: Pair) -> None:
    pair_any.check("XADD", "s", f"5-{MAX}", "f", "v")
    # streamAppendItem refuses `5-*` here; Redis 7.0 returns C_ERR without setting errno, so
    # xaddCommand reports whatever errno holds ("Elements are too large to be stored" on
    # 7.0.15). Later Redis sets errno = EDOM on this path (t_stream.c streamAppendItem), which
    # is the deterministic answer Rill gives (docs/compatibility.md, "Streams").
    assert pair_any.rill.call("XADD", "s", "5-*", "f", "v") == (
        b"-ERR The ID specified in XADD is equal or smaller than the target stream top item\r\n"
    )
    pair_any.oracle.call("XADD", "s", "5-*", "f", "v")
    pair_any.check_all([
        ("XADD", "s", "6-*", "f", "v"),
        ("XRANGE", "s", "-", "+"),
    ])


def test_xadd_id_must_exceed_the_top_item(pair_any: Pair) -> None:
    pair_any.check_all([
        ("XADD", "s", "5-5", "f", "v"),
        ("XADD", "s", "5-5", "f", "v"),
        ("XADD", "s", "5-4", "f", "v"),
        ("XADD", "s", "4", "f", "v"),
        ("XADD", "s", "4-*", "f", "v"),
        ("XADD", "s", "5", "f", "v"),
        ("XLEN", "s"),
    ])


def test_xadd_rejects_0_0(pair_any: Pair) -> None:
    pair_any.check_all([
        ("XADD", "s", "0-0", "f", "v"),
        ("XADD", "s", "0", "f", "v"),
        ("TYPE", "s"),
        ("XADD", "s", "0-1", "f", "v"),
        ("XADD", "s", "0-0", "f", "v"),
    ])


def test_xadd_at_the_maximum_id_then_star_is_exhausted(pair_any: Pair) -> None:
    pair_any.check_all([
        ("XADD", "s", f"{MAX}-{MAX}", "f", "v"),
        ("XADD", "s", "*", "f", "v"),
        ("XADD", "s", f"{MAX}-*", "f", "v"),
        ("XRANGE", "s", "-", "+"),
        ("XLEN", "s"),
    ])


@pytest.mark.parametrize("bad_id", ["abc", "1-a", "-1", "1-2-3", "18446744073709551616", "1-18446744073709551616",
                                    "", "-", "+", "$", ">", "1-*-1"])
def test_xadd_invalid_id_is_rejected(pair_any: Pair, bad_id: str) -> None:
    pair_any.check("XADD", "s", bad_id, "f", "v")
    pair_any.check("TYPE", "s")


def test_xadd_argument_count_errors(pair_any: Pair) -> None:
    pair_any.check_all([
        ("XADD", "s", "1", "f"),
        ("XADD", "s", "1"),
        ("XADD", "s", "1", "f", "v", "g"),
        ("XADD", "s", "MAXLEN", "1"),
        ("XADD", "s", "MAXLEN", "1", "2", "f"),
        ("TYPE", "s"),
    ])


def test_xadd_nomkstream_does_not_create_the_key(pair_any: Pair) -> None:
    pair_any.check_all([
        ("XADD", "s", "NOMKSTREAM", "1", "f", "v"),
        ("XADD", "s", "NOMKSTREAM", "*", "f", "v"),
        ("TYPE", "s"),
        ("XLEN", "s"),
        ("XADD", "s", "1", "f", "v"),
        ("XADD", "s", "NOMKSTREAM", "2", "f", "v"),
        ("XADD", "s", "nomkstream", "NOMKSTREAM", "3", "f", "v"),
        ("XRANGE", "s", "-", "+"),
    ])


def test_xadd_option_errors(pair_any: Pair) -> None:
    pair_any.check_all([
        ("XADD", "s", "MAXLEN", "-1", "1", "f", "v"),
        ("XADD", "s", "MAXLEN", "1", "MINID", "1", "1", "f", "v"),
        ("XADD", "s", "MINID", "1", "MAXLEN", "1", "1", "f", "v"),
        ("XADD", "s", "MAXLEN", "=", "1", "LIMIT", "10", "1", "f", "v"),
        ("XADD", "s", "MAXLEN", "1", "LIMIT", "10", "1", "f", "v"),
        ("XADD", "s", "MAXLEN", "~", "1", "LIMIT", "-1", "1", "f", "v"),
        ("XADD", "s", "MAXLEN", "~", "1", "LIMIT", "x", "1", "f", "v"),
        ("XADD", "s", "MAXLEN", "x", "1", "f", "v"),
        ("XADD", "s", "MAXLEN", "1.5", "1", "f", "v"),
        ("XADD", "s", "MINID", "x", "1", "f", "v"),
        ("XADD", "s", "MINID", "-1", "1", "f", "v"),
        ("XADD", "s", "FOO", "1", "f", "v"),
        ("TYPE", "s"),
    ])


def test_xadd_maxlen_exact_trims_oldest(pair_any: Pair) -> None:
    fill(pair_any, "s", ["1", "2", "3", "4", "5"])
    pair_any.check_all([
        ("XADD", "s", "MAXLEN", "3", "6", "f", "v"),
        ("XRANGE", "s", "-", "+"),
        ("XADD", "s", "MAXLEN", "=", "1", "7", "f", "v"),
        ("XRANGE", "s", "-", "+"),
        ("XADD", "s", "maxlen", "0", "8", "f", "v"),
        ("XLEN", "s"),
        ("TYPE", "s"),
    ])
    check_stream_state(pair_any, "s")


def test_xadd_minid_exact_trims_below_the_id(pair_any: Pair) -> None:
    fill(pair_any, "s", ["1", "2", "3", "4", "5"])
    pair_any.check_all([
        ("XADD", "s", "MINID", "3", "6", "f", "v"),
        ("XRANGE", "s", "-", "+"),
        ("XADD", "s", "MINID", "=", "6-0", "7", "f", "v"),
        ("XRANGE", "s", "-", "+"),
        ("XADD", "s", "MINID", "99", "8", "f", "v"),
        ("XRANGE", "s", "-", "+"),
    ])
    check_stream_state(pair_any, "s")


def test_xadd_maxlen_approx_removes_whole_nodes_only(small_nodes: Pair) -> None:
    pair = small_nodes
    fill(pair, "s", [str(i) for i in range(1, 11)])
    pair.check_all([
        ("XADD", "s", "MAXLEN", "~", "8", "11", "f", "v"),
        ("XLEN", "s"),
        ("XADD", "s", "MAXLEN", "~", "5", "12", "f", "v"),
        ("XLEN", "s"),
        ("XRANGE", "s", "-", "+"),
        ("XADD", "s", "MAXLEN", "~", "1", "LIMIT", "3", "13", "f", "v"),
        ("XLEN", "s"),
        ("XADD", "s", "MAXLEN", "~", "1", "LIMIT", "2", "14", "f", "v"),
        ("XLEN", "s"),
        ("XADD", "s", "MAXLEN", "~", "0", "LIMIT", "0", "15", "f", "v"),
        ("XRANGE", "s", "-", "+"),
    ])
    check_stream_state(pair, "s")


def test_xadd_minid_approx_with_limit(small_nodes: Pair) -> None:
    pair = small_nodes
    fill(pair, "s", [str(i) for i in range(1, 11)])
    pair.check_all([
        ("XADD", "s", "MINID", "~", "5", "11", "f", "v"),
        ("XRANGE", "s", "-", "+"),
        ("XADD", "s", "MINID", "~", "11", "LIMIT", "3", "12", "f", "v"),
        ("XRANGE", "s", "-", "+"),
        ("XADD", "s", "MINID", "~", "12", "LIMIT", "1", "13", "f", "v"),
        ("XRANGE", "s", "-", "+"),
    ])
    check_stream_state(pair, "s")


# ---------------------------------------------------------------------------------------
# XRANGE / XREVRANGE
# ---------------------------------------------------------------------------------------


@pytest.fixture
def ranged(pair_any: Pair) -> Pair:
    fill(pair_any, "s", ["1-1", "1-2", "2-0", "3-5", "3-6", f"4-{MAX}", "5-0"])
    return pair_any


@pytest.mark.parametrize("bounds", [
    ("-", "+"), ("1-2", "3-5"), ("1", "1"), ("2", "3"), ("3", "3-5"), ("0", "0"), ("3", "2"),
    ("(1-1", "+"), ("-", "(5-0"), ("(1-2", "(3-6"), ("(1-1", "(1-2"), ("(2", "+"), ("-", "(3"),
    ("(4", "5"), (f"(4-{MAX}", "+"), ("(0-0", "+"), ("-", f"({MAX}-{MAX}"), ("1-3", "1-9"),
    ("00002", "0002-0"), ("6", "+"),
])
def test_xrange_and_xrevrange_bounds(ranged: Pair, bounds: tuple[str, str]) -> None:
    lo, hi = bounds
    ranged.check("XRANGE", "s", lo, hi)
    ranged.check("XREVRANGE", "s", hi, lo)


@pytest.mark.parametrize("count", ["1", "3", "7", "100", "0", "-1", "-100"])
def test_xrange_count(ranged: Pair, count: str) -> None:
    ranged.check("XRANGE", "s", "-", "+", "COUNT", count)
    ranged.check("XREVRANGE", "s", "+", "-", "count", count)
    ranged.check("XRANGE", "s", "(1-2", "+", "COUNT", count)


@pytest.mark.parametrize("args", [
    ("(-", "+"), ("-", "(+"), ("(", "+"), ("-", "("), ("((1", "+"), (f"({MAX}-{MAX}", "+"),
    ("-", "(0-0"), ("-", "(0"), ("x", "+"), ("-", "y"), ("1-", "+"), ("-1", "+"),
    ("-", "+", "COUNT"), ("-", "+", "COUNT", "x"), ("-", "+", "LIMIT", "1"), ("-", "+", "COUNT", "1", "2"),
    ("-", "+", "COUNT", "99999999999999999999"),
])
def test_xrange_errors(ranged: Pair, args: tuple[str, ...]) -> None:
    ranged.check("XRANGE", "s", *args)
    ranged.check("XREVRANGE", "s", *args)


def test_xrange_on_missing_key_is_empty_and_errors_still_apply(pair_any: Pair) -> None:
    pair_any.check_all([
        ("XRANGE", "missing", "-", "+"),
        ("XREVRANGE", "missing", "+", "-"),
        ("XRANGE", "missing", "-", "+", "COUNT", "0"),
        ("XRANGE", "missing", "x", "+"),
        ("XRANGE", "missing", f"({MAX}-{MAX}", "+"),
        ("XRANGE", "missing"),
    ])


# ---------------------------------------------------------------------------------------
# XLEN / XDEL / DEL / TYPE
# ---------------------------------------------------------------------------------------


def test_xlen_of_missing_key_and_arity(pair_any: Pair) -> None:
    pair_any.check_all([
        ("XLEN", "missing"),
        ("XLEN",),
        ("XLEN", "a", "b"),
    ])


def test_xdel_existing_missing_and_duplicate_ids(pair_any: Pair) -> None:
    fill(pair_any, "s", ["1", "2", "3", "4"])
    pair_any.check_all([
        ("XDEL", "s", "2"),
        ("XDEL", "s", "2"),
        ("XDEL", "s", "9-9"),
        ("XDEL", "s", "1-0", "3", "3", "7"),
        ("XDEL", "missing", "1-1"),
        ("XDEL", "s"),
        ("XRANGE", "s", "-", "+"),
    ])
    check_stream_state(pair_any, "s")


def test_xdel_with_an_invalid_id_deletes_nothing(pair_any: Pair) -> None:
    fill(pair_any, "s", ["1", "2"])
    pair_any.check_all([
        ("XDEL", "s", "1", "bad"),
        ("XDEL", "s", "1", "+"),
        ("XDEL", "s", "-"),
        ("XLEN", "s"),
    ])


def test_xdel_of_the_last_entry_keeps_an_empty_stream(pair_any: Pair) -> None:
    fill(pair_any, "s", ["1", "2"])
    pair_any.check_all([
        ("XDEL", "s", "1", "2"),
        ("XLEN", "s"),
        ("TYPE", "s"),
        ("XRANGE", "s", "-", "+"),
        ("XREVRANGE", "s", "+", "-", "COUNT", "1"),
    ])
    check_stream_state(pair_any, "s")
    # The last ID survives: XADD must still exceed it.
    pair_any.check_all([
        ("XADD", "s", "2", "f", "v"),
        ("XADD", "s", "1-5", "f", "v"),
        ("XADD", "s", "2-*", "f", "v"),
        ("XADD", "s", "3", "f", "v"),
        ("XRANGE", "s", "-", "+"),
    ])
    check_stream_state(pair_any, "s")


def test_xdel_in_the_middle_of_nodes(small_nodes: Pair) -> None:
    pair = small_nodes
    fill(pair, "s", [str(i) for i in range(1, 10)])
    pair.check_all([
        ("XDEL", "s", "4", "5", "6"),
        ("XDEL", "s", "2", "8"),
        ("XRANGE", "s", "-", "+"),
        ("XREVRANGE", "s", "+", "-", "COUNT", "2"),
        ("XRANGE", "s", "(1", "(9"),
    ])
    check_stream_state(pair, "s")


def test_del_and_type_of_a_stream(pair_any: Pair) -> None:
    pair_any.check_all([
        ("TYPE", "s"),
        ("XADD", "s", "1", "f", "v"),
        ("TYPE", "s"),
        ("DEL", "s"),
        ("TYPE", "s"),
        ("XLEN", "s"),
        ("XADD", "s", "1", "f", "v"),
        ("XRANGE", "s", "-", "+"),
        ("DEL", "s", "s"),
        ("DEL", "s"),
    ])


# ---------------------------------------------------------------------------------------
# XTRIM
# ---------------------------------------------------------------------------------------


def test_xtrim_maxlen_exact(pair_any: Pair) -> None:
    fill(pair_any, "s", [str(i) for i in range(1, 8)])
    pair_any.check_all([
        ("XTRIM", "s", "MAXLEN", "5"),
        ("XTRIM", "s", "MAXLEN", "5"),
        ("XTRIM", "s", "MAXLEN", "=", "3"),
        ("XTRIM", "s", "maxlen", "100"),
        ("XRANGE", "s", "-", "+"),
        ("XTRIM", "s", "MAXLEN", "0"),
        ("XLEN", "s"),
        ("TYPE", "s"),
    ])
    check_stream_state(pair_any, "s")


def test_xtrim_minid_exact(pair_any: Pair) -> None:
    fill(pair_any, "s", ["1-1", "1-2", "2-0", "3-0", "4-0"])
    pair_any.check_all([
        ("XTRIM", "s", "MINID", "1-2"),
        ("XTRIM", "s", "MINID", "1-2"),
        ("XTRIM", "s", "MINID", "=", "3"),
        ("XTRIM", "s", "minid", "0"),
        ("XRANGE", "s", "-", "+"),
        ("XTRIM", "s", "MINID", "5"),
        ("XLEN", "s"),
    ])
    check_stream_state(pair_any, "s")


def test_xtrim_approx_and_limit(small_nodes: Pair) -> None:
    pair = small_nodes
    fill(pair, "s", [str(i) for i in range(1, 15)])
    pair.check_all([
        ("XTRIM", "s", "MAXLEN", "~", "13"),
        ("XTRIM", "s", "MAXLEN", "~", "10"),
        ("XRANGE", "s", "-", "+"),
        ("XTRIM", "s", "MAXLEN", "~", "0", "LIMIT", "4"),
        ("XRANGE", "s", "-", "+"),
        ("XTRIM", "s", "MAXLEN", "~", "0", "LIMIT", "2"),
        ("XTRIM", "s", "MINID", "~", "12"),
        ("XRANGE", "s", "-", "+"),
        ("XTRIM", "s", "MINID", "~", "100", "LIMIT", "0"),
        ("XLEN", "s"),
    ])
    check_stream_state(pair, "s")


def test_xtrim_approx_with_tombstones(small_nodes: Pair) -> None:
    pair = small_nodes
    fill(pair, "s", [str(i) for i in range(1, 10)])
    pair.check_all([
        ("XDEL", "s", "1", "2"),
        ("XTRIM", "s", "MAXLEN", "~", "6"),
        ("XRANGE", "s", "-", "+"),
        ("XDEL", "s", "6"),
        ("XTRIM", "s", "MINID", "7"),
        ("XRANGE", "s", "-", "+"),
    ])
    check_stream_state(pair, "s")


def test_xtrim_errors(pair_any: Pair) -> None:
    fill(pair_any, "s", ["1", "2"])
    pair_any.check_all([
        ("XTRIM", "s"),
        ("XTRIM", "s", "MAXLEN"),
        ("XTRIM", "s", "FOO", "1"),
        ("XTRIM", "s", "MAXLEN", "-1"),
        ("XTRIM", "s", "MAXLEN", "x"),
        ("XTRIM", "s", "MINID", "x"),
        ("XTRIM", "s", "MAXLEN", "1", "MINID", "1"),
        ("XTRIM", "s", "MAXLEN", "=", "1", "LIMIT", "1"),
        ("XTRIM", "s", "MAXLEN", "1", "LIMIT", "1"),
        ("XTRIM", "s", "MAXLEN", "~", "1", "LIMIT", "-1"),
        ("XTRIM", "s", "MAXLEN", "~", "0", "LIMIT", "1", "extra"),
        ("XTRIM", "s", "MAXLEN", "1", "NOMKSTREAM"),
        ("XTRIM", "s", "LIMIT", "1"),
        ("XTRIM", "missing", "MAXLEN", "0"),
        ("XTRIM", "missing", "MAXLEN", "x"),
        ("TYPE", "missing"),
        ("XLEN", "s"),
    ])


# ---------------------------------------------------------------------------------------
# XSETID
# ---------------------------------------------------------------------------------------


def test_xsetid_moves_the_last_id_forward(pair_any: Pair) -> None:
    fill(pair_any, "s", ["1-1", "2-0", "3-5"])
    pair_any.check_all([
        ("XSETID", "s", "3-5"),
        ("XSETID", "s", "10-0"),
        ("XADD", "s", "9-9", "f", "v"),
        ("XADD", "s", "10-*", "f", "v"),
        ("XSETID", "s", "11"),
    ])
    check_stream_state(pair_any, "s")


def test_xsetid_entriesadded_and_maxdeletedid(pair_any: Pair) -> None:
    fill(pair_any, "s", ["1-1", "2-0", "3-5"])
    pair_any.check_all([
        ("XDEL", "s", "2-0"),
        ("XSETID", "s", "4-0", "ENTRIESADDED", "10", "MAXDELETEDID", "3-9"),
    ])
    check_stream_state(pair_any, "s")
    pair_any.check_all([
        ("XSETID", "s", "5-0", "MAXDELETEDID", "0-0"),
        ("XSETID", "s", "5-0", "entriesadded", "2"),
        ("XSETID", "s", "6-0", "ENTRIESADDED", "2", "ENTRIESADDED", "20"),
    ])
    check_stream_state(pair_any, "s")


def test_xsetid_on_an_emptied_stream_may_go_backwards(pair_any: Pair) -> None:
    # XTRIM leaves max_deleted_entry_id alone, so only the (empty) stream's top item could
    # stop XSETID, and there is none.
    fill(pair_any, "s", ["5", "6"])
    pair_any.check_all([
        ("XTRIM", "s", "MAXLEN", "0"),
        ("XSETID", "s", "1-1"),
        ("XADD", "s", "1-2", "f", "v"),
    ])
    check_stream_state(pair_any, "s")


def test_xsetid_below_the_greatest_deleted_id_is_refused(pair_any: Pair) -> None:
    # redis#11444 (Redis 7.2): XSETID may not go below the stream's max_deleted_entry_id.
    # Redis 7.0 (the oracle) accepted it, so Rill's 7.2 reply is asserted directly.
    fill(pair_any, "s", ["5", "6"])
    pair_any.check("XDEL", "s", "5", "6")
    for args in (("1-1",), ("5-9",), ("5", "ENTRIESADDED", "9")):
        assert pair_any.rill.call("XSETID", "s", *args) == (
            b"-ERR The ID specified in XSETID is smaller than current max_deleted_entry_id\r\n"
        )
    assert pair_any.rill.call("XSETID", "s", "6") == b"+OK\r\n"
    pair_any.oracle.call("XSETID", "s", "6")
    check_stream_state(pair_any, "s")


@pytest.mark.parametrize("args", [
    ("1-0",),
    ("3-4",),
    ("3-5", "ENTRIESADDED", "1"),
    ("3-5", "ENTRIESADDED", "-1"),
    ("3-5", "ENTRIESADDED", "x"),
    ("3-5", "ENTRIESADDED"),
    ("3-5", "MAXDELETEDID", "4-0"),
    ("3-5", "MAXDELETEDID", "x"),
    ("3-5", "MAXDELETEDID"),
    ("3-5", "FOO", "1"),
    ("$",),
    ("+",),
    ("x",),
    ("3-5", "ENTRIESADDED", "3", "extra"),
])
def test_xsetid_errors(pair_any: Pair, args: tuple[str, ...]) -> None:
    fill(pair_any, "s", ["1-1", "2-0", "3-5"])
    pair_any.check("XSETID", "s", *args)
    check_stream_state(pair_any, "s")


def test_xsetid_missing_key_and_arity(pair_any: Pair) -> None:
    pair_any.check_all([
        ("XSETID", "missing", "1-1"),
        ("XSETID", "missing", "x"),
        ("XSETID", "missing"),
        ("TYPE", "missing"),
    ])


# ---------------------------------------------------------------------------------------
# XINFO STREAM layout and WRONGTYPE
# ---------------------------------------------------------------------------------------


def test_xinfo_stream_reports_node_layout(small_nodes: Pair) -> None:
    pair = small_nodes
    pair.check("XGROUP", "CREATE", "e", "g", "$", "MKSTREAM")
    pair.check("XINFO", "STREAM", "e")
    fill(pair, "s", ["1"])
    pair.check("XINFO", "STREAM", "s")
    fill(pair, "s", [str(i) for i in range(2, 11)])
    pair.check("XINFO", "STREAM", "s")
    pair.check("XDEL", "s", "4", "5", "6")
    pair.check("XINFO", "STREAM", "s")
    pair.check("XTRIM", "s", "MAXLEN", "2")
    pair.check("XINFO", "STREAM", "s")


def test_xinfo_stream_errors(pair_any: Pair) -> None:
    fill(pair_any, "s", ["1"])
    pair_any.check_all([
        ("XINFO", "STREAM", "missing"),
        ("XINFO", "STREAM", "s", "FOO"),
        ("XINFO", "STREAM", "s", "FULL", "COUNT"),
        ("XINFO", "STREAM", "s", "FULL", "COUNT", "x"),
        ("XINFO", "STREAM", "s", "FULL", "LIMIT", "1"),
        ("XINFO", "STREAM", "s", "FULL", "COUNT", "1", "x"),
        ("XINFO", "STREAM"),
        ("XINFO", "FOO", "s"),
        ("XINFO",),
    ])


STREAM_COMMANDS_ON_A_STRING: list[tuple[str, ...]] = [
    ("XADD", "str", "*", "f", "v"),
    ("XADD", "str", "NOMKSTREAM", "*", "f", "v"),
    ("XADD", "str", "MAXLEN", "0", "1", "f", "v"),
    ("XRANGE", "str", "-", "+"),
    ("XREVRANGE", "str", "+", "-"),
    ("XLEN", "str"),
    ("XDEL", "str", "1-1"),
    ("XTRIM", "str", "MAXLEN", "0"),
    ("XSETID", "str", "1-1"),
    ("XREAD", "STREAMS", "str", "0"),
    ("XREAD", "BLOCK", "10", "STREAMS", "str", "$"),
    ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "str", ">"),
    ("XGROUP", "CREATE", "str", "g", "$"),
    ("XGROUP", "CREATE", "str", "g", "$", "MKSTREAM"),
    ("XGROUP", "SETID", "str", "g", "0"),
    ("XGROUP", "DESTROY", "str", "g"),
    ("XGROUP", "CREATECONSUMER", "str", "g", "c"),
    ("XGROUP", "DELCONSUMER", "str", "g", "c"),
    ("XACK", "str", "g", "1-1"),
    ("XPENDING", "str", "g"),
    ("XPENDING", "str", "g", "-", "+", "10"),
    ("XCLAIM", "str", "g", "c", "0", "1-1"),
    ("XAUTOCLAIM", "str", "g", "c", "0", "0"),
    ("XINFO", "STREAM", "str"),
    ("XINFO", "STREAM", "str", "FULL"),
    ("XINFO", "GROUPS", "str"),
    ("XINFO", "CONSUMERS", "str", "g"),
]


@pytest.mark.parametrize("cmd", STREAM_COMMANDS_ON_A_STRING, ids=lambda c: " ".join(c[:2]))
def test_stream_commands_against_a_string_reply_wrongtype(pair_any: Pair, cmd: tuple[str, ...]) -> None:
    pair_any.check("SET", "str", "x")
    pair_any.check(*cmd)
    pair_any.check("GET", "str")


def test_stream_value_survives_keyspace_roundtrip(pair_any: Pair) -> None:
    """TYPE/EXISTS/DEL see a stream as a key like any other; a string SET over it replaces it."""
    fill(pair_any, "s", ["1", "2"])
    pair_any.check_all([
        ("EXISTS", "s"),
        ("SET", "s", "x"),
        ("TYPE", "s"),
        ("XLEN", "s"),
        ("DEL", "s"),
        ("XADD", "s", "1", "f", "v"),
        ("GET", "s"),
    ])

