"""Differential tests of MULTI, EXEC, DISCARD, WATCH and UNWATCH against redis-server, in RESP2
and RESP3: queueing replies, EXECABORT, errors inside EXEC, and every rule that makes a
WATCHed transaction fail (or not), with one and with two clients.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conformance.harness import Pair
from tests.conftest import Server


@pytest.fixture
def other(pair_any: Pair, redis_server: Server, rill_node: Server) -> Iterator[Pair]:
    """A second client on both servers, in the same protocol as `pair_any`."""
    second = Pair(redis_server.port, rill_node.port, pair_any.proto)
    yield second
    second.close()


# ---------------------------------------------------------------------------------------
# MULTI / EXEC / DISCARD
# ---------------------------------------------------------------------------------------


def test_exec_returns_every_queued_reply(pair_any: Pair) -> None:
    pair_any.check("MULTI")
    pair_any.check("SET", "a", "1")
    pair_any.check("INCR", "a")
    pair_any.check("GET", "a")
    pair_any.check("MGET", "a", "nokey")
    pair_any.check("PING")
    pair_any.check("EXEC")
    pair_any.check("GET", "a")


def test_empty_transaction(pair_any: Pair) -> None:
    pair_any.check("MULTI")
    pair_any.check("EXEC")


def test_runtime_errors_are_elements_of_the_exec_reply(pair_any: Pair) -> None:
    pair_any.check("SET", "s", "text")
    pair_any.check("MULTI")
    pair_any.check("INCR", "s")
    pair_any.check("SET", "b", "2")
    pair_any.check("RENAME", "nokey", "x")
    pair_any.check("SWAPDB", "0", "99")
    pair_any.check("EXEC")
    pair_any.check("GET", "b")


def test_queue_time_errors_abort_the_transaction(pair_any: Pair) -> None:
    for bad in (("SET", "a"), ("NOSUCHCOMMAND", "x"), ("GET",), ("OBJECT", "NOSUCH")):
        pair_any.check("MULTI")
        pair_any.check("SET", "a", "1")
        pair_any.check(*bad)
        pair_any.check("SET", "b", "1")
        pair_any.check("EXEC")
        pair_any.check("EXISTS", "a", "b")


def test_exec_and_discard_without_multi(pair_any: Pair) -> None:
    pair_any.check("EXEC")
    pair_any.check("DISCARD")
    pair_any.check("MULTI")
    pair_any.check("DISCARD")
    pair_any.check("DISCARD")
    pair_any.check("EXEC")


def test_discard_drops_the_queue(pair_any: Pair) -> None:
    pair_any.check("MULTI")
    pair_any.check("SET", "a", "1")
    pair_any.check("DISCARD")
    pair_any.check("EXISTS", "a")


def test_nested_multi_is_refused_without_aborting(pair_any: Pair) -> None:
    pair_any.check("MULTI")
    pair_any.check("MULTI")
    pair_any.check("SET", "a", "1")
    pair_any.check("EXEC")
    pair_any.check("GET", "a")


def test_watch_inside_multi_is_refused_without_aborting(pair_any: Pair) -> None:
    pair_any.check("MULTI")
    pair_any.check("WATCH", "a")
    pair_any.check("SET", "a", "1")
    pair_any.check("EXEC")
    pair_any.check("GET", "a")


def test_transaction_commands_arity(pair_any: Pair) -> None:
    for cmd in (("MULTI", "x"), ("EXEC", "x"), ("DISCARD", "x"), ("WATCH",), ("UNWATCH", "x")):
        pair_any.check(*cmd)


def test_refused_exec_discards_the_transaction(pair_any: Pair) -> None:
    pair_any.check("SET", "k", "1")
    pair_any.check("WATCH", "k")
    pair_any.check("MULTI")
    pair_any.check("SET", "k", "2")
    pair_any.check("EXEC", "extra")  # EXECABORT with the reason, even for a sound queue
    pair_any.check("EXEC")
    pair_any.check("GET", "k")
    pair_any.check("SET", "k", "3")  # the watch went with the transaction
    pair_any.check("MULTI")
    pair_any.check("PING")
    pair_any.check("EXEC")


def test_select_inside_exec_applies_to_later_commands(pair_any: Pair) -> None:
    pair_any.check("MULTI")
    pair_any.check("SELECT", "4")
    pair_any.check("SET", "in4", "x")
    pair_any.check("EXEC")
    pair_any.check("GET", "in4")
    pair_any.check("SELECT", "0")
    pair_any.check("EXISTS", "in4")


def test_blocking_reads_inside_exec_do_not_block(pair_any: Pair) -> None:
    # Inside EXEC a blocking command answers as if its timeout had expired at once.
    pair_any.check("XADD", "s", "1-1", "f", "v")
    pair_any.check("XGROUP", "CREATE", "s", "g", "$")
    pair_any.check("MULTI")
    pair_any.check("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    pair_any.check("XREAD", "BLOCK", "5000", "STREAMS", "s", "0")
    pair_any.check("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    pair_any.check("XADD", "s", "2-1", "f", "w")
    pair_any.check("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    pair_any.check("EXEC")


def test_watch_on_a_stream_key_fails_exec_after_xadd(pair_any: Pair, other: Pair) -> None:
    pair_any.check("XADD", "s", "1-1", "f", "v")
    pair_any.check("WATCH", "s")
    other.check("XADD", "s", "2-1", "f", "v")
    pair_any.check("MULTI")
    pair_any.check("XLEN", "s")
    pair_any.check("EXEC")


# ---------------------------------------------------------------------------------------
# WATCH, one client
# ---------------------------------------------------------------------------------------


def test_watched_key_modified_by_the_same_client_fails_exec(pair_any: Pair) -> None:
    pair_any.check("SET", "a", "1")
    pair_any.check("WATCH", "a")
    pair_any.check("SET", "a", "2")
    pair_any.check("MULTI")
    pair_any.check("SET", "a", "3")
    pair_any.check("EXEC")
    pair_any.check("GET", "a")


def test_unmodified_watch_lets_exec_run(pair_any: Pair) -> None:
    pair_any.check("SET", "a", "1")
    pair_any.check("WATCH", "a", "nokey")
    pair_any.check("GET", "a")
    pair_any.check("DEL", "nokey")  # deleting a missing key changes nothing
    pair_any.check("MULTI")
    pair_any.check("INCR", "a")
    pair_any.check("EXEC")


def test_exec_unwatches(pair_any: Pair) -> None:
    pair_any.check("WATCH", "a")
    pair_any.check("MULTI")
    pair_any.check("EXEC")
    pair_any.check("SET", "a", "1")
    pair_any.check("MULTI")
    pair_any.check("PING")
    pair_any.check("EXEC")


def test_unwatch_and_discard_forget_watches(pair_any: Pair) -> None:
    pair_any.check("WATCH", "a")
    pair_any.check("SET", "a", "1")
    pair_any.check("UNWATCH")
    pair_any.check("MULTI")
    pair_any.check("PING")
    pair_any.check("EXEC")
    pair_any.check("WATCH", "a")
    pair_any.check("SET", "a", "2")
    pair_any.check("MULTI")
    pair_any.check("DISCARD")
    pair_any.check("MULTI")
    pair_any.check("PING")
    pair_any.check("EXEC")


def test_unwatch_inside_multi_is_queued(pair_any: Pair) -> None:
    pair_any.check("WATCH", "a")
    pair_any.check("MULTI")
    pair_any.check("UNWATCH")
    pair_any.check("EXEC")


def test_doomed_transaction_wins_over_dirty_watch(pair_any: Pair) -> None:
    pair_any.check("WATCH", "a")
    pair_any.check("SET", "a", "1")
    pair_any.check("MULTI")
    pair_any.check("GET")
    pair_any.check("EXEC")


def test_flush_fails_exec_only_for_watched_keys_that_existed(pair_any: Pair) -> None:
    pair_any.check("WATCH", "missing")
    pair_any.check("FLUSHALL")
    pair_any.check("MULTI")
    pair_any.check("PING")
    pair_any.check("EXEC")
    for flush in (("FLUSHDB",), ("FLUSHALL",), ("FLUSHALL", "ASYNC")):
        pair_any.check("SET", "k", "v")
        pair_any.check("WATCH", "k")
        pair_any.check(*flush)
        pair_any.check("MULTI")
        pair_any.check("PING")
        pair_any.check("EXEC")


def test_flushing_another_database_keeps_the_watch(pair_any: Pair) -> None:
    pair_any.check("SET", "k", "v")
    pair_any.check("WATCH", "k")
    pair_any.check("SELECT", "1")
    pair_any.check("SET", "k", "other")
    pair_any.check("FLUSHDB")
    pair_any.check("SELECT", "0")
    pair_any.check("MULTI")
    pair_any.check("GET", "k")
    pair_any.check("EXEC")


def test_swapdb_fails_exec_when_either_database_holds_the_key(pair_any: Pair) -> None:
    pair_any.check("WATCH", "k")
    pair_any.check("SWAPDB", "0", "1")  # k exists in neither: the watch survives
    pair_any.check("MULTI")
    pair_any.check("PING")
    pair_any.check("EXEC")
    pair_any.check("SELECT", "1")
    pair_any.check("SET", "k", "in1")
    pair_any.check("SELECT", "0")
    pair_any.check("WATCH", "k")
    pair_any.check("SWAPDB", "0", "1")  # k only in db 1 before the swap
    pair_any.check("MULTI")
    pair_any.check("PING")
    pair_any.check("EXEC")


def test_rename_touches_both_keys(pair_any: Pair) -> None:
    for watched in ("src", "dst"):
        pair_any.check("SET", "src", "v")
        pair_any.check("WATCH", watched)
        pair_any.check("RENAME", "src", "dst")
        pair_any.check("MULTI")
        pair_any.check("PING")
        pair_any.check("EXEC")


def test_failed_writes_do_not_touch_watched_keys(pair_any: Pair) -> None:
    pair_any.check("SET", "k", "text")
    pair_any.check("SET", "taken", "1")
    pair_any.check("WATCH", "k", "taken", "nokey")
    pair_any.check("INCR", "k")  # error: nothing changed
    pair_any.check("SETNX", "taken", "2")
    pair_any.check("SET", "k", "x", "NX")
    pair_any.check("SET", "nokey", "x", "XX")
    pair_any.check("RENAMENX", "k", "taken")
    pair_any.check("MSETNX", "taken", "1", "nokey", "2")
    pair_any.check("GETDEL", "nokey")
    pair_any.check("MULTI")
    pair_any.check("PING")
    pair_any.check("EXEC")


# ---------------------------------------------------------------------------------------
# WATCH, two clients
# ---------------------------------------------------------------------------------------


def test_key_modified_by_another_client_fails_exec(pair_any: Pair, other: Pair) -> None:
    pair_any.check("SET", "balance", "10")
    pair_any.check("WATCH", "balance")
    pair_any.check("GET", "balance")
    other.check("INCRBY", "balance", "5")
    pair_any.check("MULTI")
    pair_any.check("SET", "balance", "9")
    pair_any.check("EXEC")
    pair_any.check("GET", "balance")


def test_another_client_creating_a_watched_key_fails_exec(pair_any: Pair, other: Pair) -> None:
    pair_any.check("WATCH", "lock")
    other.check("SET", "lock", "theirs", "NX")
    pair_any.check("MULTI")
    pair_any.check("SET", "lock", "mine")
    pair_any.check("EXEC")
    pair_any.check("GET", "lock")


def test_another_client_writing_elsewhere_does_not_fail_exec(pair_any: Pair, other: Pair) -> None:
    pair_any.check("SET", "k", "1")
    pair_any.check("WATCH", "k")
    other.check("SET", "unrelated", "1")
    other.check("SELECT", "2")
    other.check("SET", "k", "same name, other db")
    pair_any.check("MULTI")
    pair_any.check("INCR", "k")
    pair_any.check("EXEC")


def test_another_clients_exec_fails_a_watch(pair_any: Pair, other: Pair) -> None:
    pair_any.check("WATCH", "k")
    other.check("MULTI")
    other.check("SET", "k", "1")
    other.check("EXEC")
    pair_any.check("MULTI")
    pair_any.check("SET", "k", "2")
    pair_any.check("EXEC")
    pair_any.check("GET", "k")


def test_queued_commands_see_writes_made_before_exec(pair_any: Pair, other: Pair) -> None:
    pair_any.check("MULTI")
    pair_any.check("GET", "k")
    other.check("SET", "k", "written after MULTI")
    pair_any.check("EXEC")
