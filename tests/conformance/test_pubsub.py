"""Differential tests of Pub/Sub against redis-server, byte for byte over raw sockets, RESP2
and RESP3: (P|S)(UN)SUBSCRIBE confirmations and their counts, message/pmessage/smessage
frames, the RESP2 Pub/Sub context (its error text, PING's array), RESP3 pushes interleaved
with replies in pipelines, inside MULTI/EXEC and under CLIENT REPLY OFF, RESET, PUBSUB
introspection, glob patterns (stringmatchlen, malformed ones included), CLIENT LIST/KILL
TYPE pubsub, INFO's counters, and a subscriber that never reads being disconnected by
`client-output-buffer-limit pubsub` while the others go on.

Where Redis's order depends on its hash tables (which subscription UNSUBSCRIBE without names
drops first, the order of pmessages for several matching patterns, PUBSUB CHANNELS) the test
compares what is order-free: the same frames, the same counts in sequence.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Sequence

import pytest

from tests.conformance.harness import Arg, RawConnection, encode
from tests.conftest import Server


class Twins:
    """`n` connections to each server, in one protocol; every step runs on both."""

    def __init__(self, redis_port: int, rill_port: int, n: int, proto: int) -> None:
        self.ports = (redis_port, rill_port)
        self.sides = [[RawConnection(redis_port) for _ in range(n)], [RawConnection(rill_port) for _ in range(n)]]
        self.proto = proto
        if proto == 3:
            for side in self.sides:
                for conn in side:
                    conn.call("HELLO", "3")

    def close(self) -> None:
        """Closes every connection and waits until both servers dropped their subscriptions,
        so the next test starts from none (a server sees a close when its loop gets to it)."""
        for side in self.sides:
            for conn in side:
                conn.close()
        for port in self.ports:
            probe = RawConnection(port)
            deadline = time.monotonic() + 10
            while any(probe.call("PUBSUB", *q) != want for q, want in _NO_SUBSCRIPTIONS):
                assert time.monotonic() < deadline, f"subscriptions left on port {port}"
                time.sleep(0.01)
            probe.close()

    def send(self, i: int, *args: Arg) -> None:
        for side in self.sides:
            side[i].send(*args)

    def send_many(self, i: int, commands: Sequence[Sequence[Arg]]) -> None:
        """One write holding every command: a pipeline."""
        for side in self.sides:
            side[i].send_raw(b"".join(encode(c) for c in commands))

    def read(self, i: int, frames: int = 1) -> tuple[list[bytes], list[bytes]]:
        redis_side, rill_side = ([side[i].read_reply() for _ in range(frames)] for side in self.sides)
        return redis_side, rill_side

    def check(self, i: int, frames: int = 1) -> list[bytes]:
        """Reads `frames` replies or pushes on connection i of both; asserts they are equal."""
        theirs, ours = self.read(i, frames)
        assert ours == theirs, f"[RESP{self.proto}] conn {i}\n  redis: {theirs!r}\n  rill:  {ours!r}"
        return ours

    def call(self, i: int, *args: Arg, frames: int = 1) -> list[bytes]:
        self.send(i, *args)
        return self.check(i, frames)

    def check_unordered(self, i: int, frames: int) -> None:
        """The same frames in any order (Redis walks a hash table)."""
        theirs, ours = self.read(i, frames)
        assert sorted(ours) == sorted(theirs), f"[RESP{self.proto}]\n  redis: {theirs!r}\n  rill:  {ours!r}"

    def check_stream(self, i: int, commands: Sequence[Sequence[Arg]]) -> None:
        """Sends `commands` as one pipeline, then a PING with a marker; compares everything
        up to the marker's reply as bytes (for framing that reply-by-reply reading cannot
        follow: pushes inside EXEC's array)."""
        marker = b"end-of-stream-marker\r\n"
        self.send_many(i, [*commands, ("PING", "end-of-stream-marker")])
        streams = []
        for side in self.sides:
            conn = side[i]
            while not conn.buf.endswith(marker):
                conn._fill()
            streams.append(conn.buf)
            conn.buf = b""
        assert streams[1] == streams[0], f"[RESP{self.proto}]\n  redis: {streams[0]!r}\n  rill:  {streams[1]!r}"

    def check_names_and_counts(self, i: int, frames: int) -> None:
        """(Un)subscribe confirmations walked in hash order on Redis: the same names, and the
        same counts in sequence."""
        theirs, ours = self.read(i, frames)
        assert _names(ours) == _names(theirs) and _counts(ours) == _counts(theirs), (
            f"[RESP{self.proto}]\n  redis: {theirs!r}\n  rill:  {ours!r}"
        )


_NO_SUBSCRIPTIONS = ((("CHANNELS",), b"*0\r\n"), (("SHARDCHANNELS",), b"*0\r\n"), (("NUMPAT",), b":0\r\n"))


def _names(frames: list[bytes]) -> list[bytes]:
    return sorted(f.split(b"\r\n")[4] for f in frames)


def _counts(frames: list[bytes]) -> list[bytes]:
    return [f.rsplit(b"\r\n", 2)[-2] for f in frames]


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def twins(request: pytest.FixtureRequest, redis_server: Server, rill_node: Server) -> Iterator[Twins]:
    t = Twins(redis_server.port, rill_node.port, 3, int(request.param))
    yield t
    t.close()


@pytest.fixture
def twins2(redis_server: Server, rill_node: Server) -> Iterator[Twins]:
    t = Twins(redis_server.port, rill_node.port, 3, 2)
    yield t
    t.close()


@pytest.fixture
def twins3(redis_server: Server, rill_node: Server) -> Iterator[Twins]:
    t = Twins(redis_server.port, rill_node.port, 3, 3)
    yield t
    t.close()


# -- subscribing --------------------------------------------------------------------------


def test_confirmations_count_channels_and_patterns_and_shards_apart(twins: Twins) -> None:
    twins.call(0, "SUBSCRIBE", "a", "b", "a", frames=3)
    twins.call(0, "PSUBSCRIBE", "p*", "q?", "p*", frames=3)
    twins.call(0, "SSUBSCRIBE", "s1", "s2", "s1", frames=3)
    twins.call(0, "UNSUBSCRIBE", "b", "nosuch", frames=2)
    twins.call(0, "PUNSUBSCRIBE", "q?", "x", frames=2)
    twins.call(0, "SUNSUBSCRIBE", "s2", "zz", frames=2)
    twins.send(0, "SUNSUBSCRIBE")
    twins.check_names_and_counts(0, 1)
    twins.send(0, "UNSUBSCRIBE")
    twins.check_names_and_counts(0, 1)
    twins.call(0, "PUNSUBSCRIBE")
    # Out of Pub/Sub mode: a null name and a count of 0 for each kind.
    twins.call(0, "UNSUBSCRIBE")
    twins.call(0, "PUNSUBSCRIBE")
    twins.call(0, "SUNSUBSCRIBE")
    twins.call(0, "PING")


def test_unsubscribing_by_name_without_subscribing_stays_out_of_pubsub_mode(twins: Twins) -> None:
    twins.call(0, "UNSUBSCRIBE", "a", "b", frames=2)
    twins.call(0, "PUNSUBSCRIBE", "a*", frames=1)
    twins.call(0, "GET", "k")
    twins.call(0, "PING")


def test_unsubscribe_all_walks_every_channel(twins: Twins) -> None:
    twins.call(0, "SUBSCRIBE", *[f"ch{i}" for i in range(12)], frames=12)
    twins.call(0, "PSUBSCRIBE", "a*", "b*", frames=2)
    twins.send(0, "UNSUBSCRIBE")
    twins.check_names_and_counts(0, 12)
    twins.send(0, "PUNSUBSCRIBE")
    twins.check_names_and_counts(0, 2)


def test_messages_reach_channel_then_pattern_subscribers(twins: Twins) -> None:
    twins.call(0, "SUBSCRIBE", "news", "other", frames=2)
    twins.call(1, "PSUBSCRIBE", "n*", frames=1)
    twins.call(2, "PUBLISH", "news", "hello")  # :2
    twins.check(0)
    twins.check(1)
    twins.call(2, "PUBLISH", "nothing-here", "x")  # only the pattern
    twins.check(1)
    twins.call(2, "PUBLISH", "zzz", "x")  # :0
    twins.call(2, "PUBLISH", "news", b"bin\r\n\x00\xff" * 100)
    twins.check(0)
    twins.check(1)
    twins.call(2, "PUBLISH", "", "empty channel")  # no pattern matches an empty channel
    twins.call(2, "SPUBLISH", "news", "shard")  # shard channels are another namespace: :0


def test_a_client_with_several_matching_patterns_gets_one_pmessage_each(twins: Twins) -> None:
    twins.call(0, "PSUBSCRIBE", "*", "h*", "h?llo", "hello", frames=4)
    twins.call(0, "SUBSCRIBE", "hello", frames=1)
    twins.call(1, "PUBLISH", "hello", "m")  # :5
    twins.check(0)  # the channel's message comes first
    twins.check_unordered(0, 4)


def test_shard_messages(twins: Twins) -> None:
    twins.call(0, "SSUBSCRIBE", "s", frames=1)
    twins.call(1, "PSUBSCRIBE", "*", frames=1)
    twins.call(2, "SPUBLISH", "s", "m")
    twins.check(0)
    twins.call(2, "PUBLISH", "s", "m")  # reaches the pattern, not the shard subscriber
    twins.check(1)
    twins.call(0, "PING")


# -- the RESP2 Pub/Sub context and RESP3 pushes --------------------------------------------


CONTEXT_COMMANDS = [
    ("GET", "k"), ("SET", "k", "v"), ("CLIENT", "LIST"), ("CLIENT", "ID"), ("MULTI",), ("HELLO", "3"), ("INFO",),
    ("XADD", "s", "*", "f", "v"), ("PUBLISH", "a", "b"), ("PUBSUB", "NUMPAT"), ("ECHO", "x"), ("SELECT", "1"),
    ("COMMAND", "COUNT"), ("NOSUCH",), ("PING", "a", "b"), ("SUBSCRIBE",), ("XREAD", "BLOCK", "0", "STREAMS", "s", "$"),
]


@pytest.mark.parametrize("cmd", CONTEXT_COMMANDS, ids=lambda c: " ".join(c))
def test_resp2_subscribed_client_runs_only_pubsub_commands(twins2: Twins, cmd: tuple[str, ...]) -> None:
    twins2.call(0, "SUBSCRIBE", "a", frames=1)
    twins2.call(0, *cmd)
    twins2.call(0, "PING")
    twins2.call(0, "PING", "x")
    twins2.call(0, "QUIT")


@pytest.mark.parametrize("cmd", [("GET", "k"), ("CLIENT", "ID"), ("PING",), ("PING", "x"), ("ECHO", "x"), ("SSUBSCRIBE", "x")],
                         ids=lambda c: " ".join(c))
def test_resp3_subscribed_client_runs_anything(twins3: Twins, cmd: tuple[str, ...]) -> None:
    twins3.send(0, "SUBSCRIBE", "a")
    theirs, ours = twins3.read(0)
    assert ours == theirs
    twins3.send(0, *cmd)
    theirs, ours = twins3.read(0)
    if cmd == ("CLIENT", "ID"):
        assert ours[0].startswith(b":") and theirs[0].startswith(b":")
    else:
        assert ours == theirs


def test_pipelined_publishes_to_itself_interleave_with_replies(twins3: Twins) -> None:
    commands = [("SUBSCRIBE", "c"), ("PUBLISH", "c", "1"), ("GET", "nokey"), ("PUBLISH", "c", "2"), ("PING",),
                ("UNSUBSCRIBE", "c"), ("PUBLISH", "c", "3"), ("PING",)]
    twins3.check_stream(0, commands)


def test_pipelined_messages_from_another_client_land_between_replies(twins: Twins) -> None:
    twins.call(0, "SUBSCRIBE", "c", frames=1)
    # The subscriber's PINGs and the other client's PUBLISHes interleave as the server runs them.
    twins.send(0, "PING")
    twins.check(0)
    twins.send_many(1, [("PUBLISH", "c", str(i)) for i in range(5)])
    twins.check(1, 5)
    twins.send_many(0, [("PING", "x"), ("PING", "y")])
    twins.check(0, 7)


@pytest.mark.parametrize("script", [
    [("MULTI",), ("SUBSCRIBE", "a", "b"), ("PING",), ("EXEC",)],
    [("MULTI",), ("SUBSCRIBE", "a"), ("PUBLISH", "a", "x"), ("GET", "k"), ("EXEC",)],
    [("MULTI",), ("SSUBSCRIBE", "a"), ("PSUBSCRIBE", "a*"), ("EXEC",)],
    [("MULTI",), ("UNSUBSCRIBE",), ("PUNSUBSCRIBE", "p"), ("EXEC",)],
], ids=["subscribe-then-ping", "publish-to-itself", "ssubscribe-refused", "unsubscribe"])
def test_pubsub_inside_exec(twins: Twins, script: list[tuple[str, ...]]) -> None:
    # EXEC's array holds the pushes of the commands it ran, inline (Redis writes them to the
    # client's buffer as they run), so the stream is compared as bytes.
    twins.check_stream(0, script)


def test_client_reply_off_still_sends_pushes(twins: Twins) -> None:
    twins.send_many(0, [("CLIENT", "REPLY", "OFF"), ("SUBSCRIBE", "a"), ("PING",), ("UNSUBSCRIBE", "a"),
                        ("SUBSCRIBE", "b")])
    twins.check(0, 3)
    twins.call(1, "PUBLISH", "b", "y")
    twins.check(0)


def test_reset_leaves_every_subscription_silently(twins: Twins) -> None:
    twins.call(0, "SUBSCRIBE", "a", "b", frames=2)
    twins.call(0, "PSUBSCRIBE", "*", frames=1)
    twins.call(0, "RESET")
    twins.call(1, "PUBLISH", "a", "nobody")  # :0
    twins.call(0, "GET", "k")
    twins.call(1, "PUBSUB", "NUMPAT")


# -- introspection ------------------------------------------------------------------------------


def test_pubsub_introspection(twins: Twins) -> None:
    twins.call(0, "SUBSCRIBE", "news.tech", "news.art", "", "sport", frames=4)
    twins.call(1, "SUBSCRIBE", "news.tech", frames=1)
    twins.call(1, "PSUBSCRIBE", "news.*", "x", "news.*", frames=3)
    twins.call(1, "SSUBSCRIBE", "shard1", "shard2", frames=2)
    for args in [("CHANNELS",), ("CHANNELS", "news.*"), ("CHANNELS", "*"), ("CHANNELS", ""), ("CHANNELS", "[n]*"),
                 ("SHARDCHANNELS",), ("SHARDCHANNELS", "*1")]:
        twins.send(2, "PUBSUB", *args)
        theirs, ours = twins.read(2)
        # A set (Redis walks its channel table): same header, same names.
        assert ours[0].split(b"\r\n")[0] == theirs[0].split(b"\r\n")[0], args
        assert _array_items(ours[0]) == _array_items(theirs[0]), args
    for args in [("NUMSUB",), ("NUMSUB", "news.tech", "news.art", "nosuch", "news.*", ""), ("NUMPAT",),
                 ("SHARDNUMSUB", "shard1", "news.tech"), ("SHARDNUMSUB",), ("HELP",), ("CHANNELS", "a", "b"),
                 ("SHARDCHANNELS", "a", "b"), ("NUMPAT", "x"), ("HELP", "x"), ("NOSUCH",), ("nUmPaT",)]:
        twins.call(2, "PUBSUB", *args)
    twins.call(2, "PUBSUB")
    twins.send(2, "INFO", "stats")
    theirs, ours = twins.read(2)
    for field in (b"pubsub_channels", b"pubsub_patterns", b"pubsubshard_channels"):
        assert re.findall(field + rb":\d+", ours[0]) == re.findall(field + rb":\d+", theirs[0]), field


def _array_items(reply: bytes) -> list[bytes]:
    return sorted(re.findall(rb"\$\d+\r\n([^\r]*)\r\n", reply))


# -- patterns ---------------------------------------------------------------------------------

PATTERNS = [
    "*", "h?llo", "h*llo", "h[ae]llo", "h[^e]llo", "h[a-b]llo", "h[b-a]llo", "h[a-]llo", "\\*", "a\\", "[", "[abc",
    "*[", "**", "", "x*y*z", "[\\]]", "h\\[e]llo", "*llo*", "?", "[]]", "[^]", "news.[0-9]*", "ÿ*", "H*",
]
CHANNELS = [
    "hello", "hallo", "hbllo", "hxllo", "hllo", "", "*", "a\\", "[", "abc", "xayaz", "]", "h[e]llo", "news.7x",
    "news.x", "ÿz", "Hello", "-", "^", "heeeello",
]


def test_patterns_match_as_redis_stringmatchlen(twins: Twins) -> None:
    """Every pattern subscribed on one client, every channel published by another: the same
    number of receivers for each PUBLISH and the same pmessages (order-free: Redis walks its
    pattern table)."""
    twins.send(0, "PSUBSCRIBE", *PATTERNS)
    twins.check_names_and_counts(0, len(PATTERNS))
    for channel in CHANNELS:
        theirs, ours = (side[1].call("PUBLISH", channel, "m") for side in twins.sides)
        assert ours == theirs, channel
        count = int(theirs[1:-2])
        if count:
            twins.check_unordered(0, count)
    twins.call(1, "PUBSUB", "NUMPAT")


@pytest.mark.parametrize("pattern", ["h*", "*o", "[a-h]*", "\\h*", "h[", ""], ids=repr)
def test_pubsub_channels_filters_with_the_same_rules(twins: Twins, pattern: str) -> None:
    twins.call(0, "SUBSCRIBE", *CHANNELS, frames=len(CHANNELS))
    twins.send(1, "PUBSUB", "CHANNELS", pattern)
    theirs, ours = twins.read(1)
    assert _array_items(ours[0]) == _array_items(theirs[0])


# -- clients ----------------------------------------------------------------------------------


def _client_fields(line: bytes) -> dict[bytes, bytes]:
    return dict(f.split(b"=", 1) for f in line.split() if b"=" in f)


def test_client_list_shows_subscriptions_and_pubsub_type(twins: Twins) -> None:
    twins.call(0, "SUBSCRIBE", "a", "b", frames=2)
    twins.call(0, "PSUBSCRIBE", "x*", frames=1)
    twins.call(0, "SSUBSCRIBE", "s", frames=1)
    for args in [("CLIENT", "LIST", "TYPE", "pubsub"), ("CLIENT", "LIST", "TYPE", "normal")]:
        twins.send(1, *args)
        theirs, ours = twins.read(1)
        mine = [_client_fields(line) for line in ours[0].split(b"\n") if b"id=" in line]
        want = [_client_fields(line) for line in theirs[0].split(b"\n") if b"id=" in line]
        keys = (b"flags", b"sub", b"psub", b"ssub", b"cmd", b"resp")
        assert [{k: f[k] for k in keys} for f in mine] == [{k: f[k] for k in keys} for f in want], args
    # In RESP3 the subscribed client may ask itself.
    if twins.proto == 3:
        twins.send(0, "CLIENT", "INFO")
        theirs, ours = twins.read(0)
        keys = (b"flags", b"sub", b"psub", b"ssub")
        assert {k: _client_fields(ours[0])[k] for k in keys} == {k: _client_fields(theirs[0])[k] for k in keys}


def test_client_kill_type_pubsub_closes_the_subscribers(twins: Twins) -> None:
    twins.call(0, "SUBSCRIBE", "a", frames=1)
    twins.call(1, "PSUBSCRIBE", "*", frames=1)
    twins.call(2, "CLIENT", "KILL", "TYPE", "pubsub")  # :2
    twins.call(2, "PUBSUB", "NUMSUB", "a")
    twins.call(2, "PUBSUB", "NUMPAT")
    for side in twins.sides:
        with pytest.raises(ConnectionError):
            side[0].read_reply()
