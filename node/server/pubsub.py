"""Pub/Sub: who subscribes to what, and delivering published messages (Redis 7.2's pubsub.c).

Three namespaces, as in Redis: channels (SUBSCRIBE), patterns (PSUBSCRIBE, glob-matched
against every published channel with Redis's stringmatchlen, node.commands.glob) and shard
channels (SSUBSCRIBE/SPUBLISH, which never match patterns). The server keeps, per name, the
subscribed sessions in subscription order; each session keeps its own names
(`ClientSession.subscriptions`, None while it subscribes to nothing).

Everything a client receives here is a push (`ClientSession.push`): the confirmations of
(P|S)(UN)SUBSCRIBE (one per name, with the client's count after it) and the messages, as
RESP2 arrays or RESP3 `>` pushes by the client's protocol. A client with at least one
subscription is in Pub/Sub mode: flag `pubsub` (CLIENT LIST `flags=P`, `TYPE pubsub`, the
`pubsub` output-buffer class), and under RESP2 only the commands the dispatcher allows.

`publish` is also the server-side hook: a server built on the core (a sentinel) publishes its
own events with it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from node.commands.context import CHANNEL, PATTERN, SHARD, ClientSession
from node.commands.glob import compile_glob
from node.commands.subscriptions import Subscriptions
from node.log.encode import bulk_header

_CRLF: Final = b"\r\n"
# The first word of each confirmation, by kind: (subscribe, unsubscribe).
_WORDS: Final = {
    CHANNEL: (b"$9\r\nsubscribe\r\n", b"$11\r\nunsubscribe\r\n"),
    PATTERN: (b"$10\r\npsubscribe\r\n", b"$12\r\npunsubscribe\r\n"),
    SHARD: (b"$10\r\nssubscribe\r\n", b"$12\r\nsunsubscribe\r\n"),
}
_MESSAGE: Final = b"$7\r\nmessage\r\n"
_PMESSAGE: Final = b"$8\r\npmessage\r\n"
_SMESSAGE: Final = b"$8\r\nsmessage\r\n"
# A frame's header by protocol: RESP2 sends an array, RESP3 a push.
_HEADER3: Final = {2: b"*3\r\n", 3: b">3\r\n"}
_HEADER4: Final = {2: b"*4\r\n", 3: b">4\r\n"}

Subscribers = dict[ClientSession, None]  # insertion-ordered: delivery follows subscription order


def _bulk(data: bytes) -> bytes:
    return bulk_header(len(data)) + data + _CRLF


class _Message:
    """One published message, encoded once per protocol that receives it."""

    __slots__ = ("body", "frames")

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.frames: dict[int, bytes] = {}

    def frame(self, header: dict[int, bytes], proto: int) -> bytes:
        data = self.frames.get(proto)
        if data is None:
            data = self.frames[proto] = header[proto] + self.body
        return data


class PubSubRegistry:
    """The server's subscriptions. `mode_changed(session)` is called when a session enters
    or leaves Pub/Sub mode (its connection changes output-buffer class)."""

    def __init__(self, mode_changed: Callable[[ClientSession], None] | None = None) -> None:
        self._channels: dict[bytes, Subscribers] = {}
        # Pattern -> (its matcher, subscribers).
        self._patterns: dict[bytes, tuple[Callable[[bytes], bool], Subscribers]] = {}
        self._shard_channels: dict[bytes, Subscribers] = {}
        self._mode_changed = mode_changed

    # -- subscribing --------------------------------------------------------------------------

    def subscribe(self, session: ClientSession, kind: int, names: list[bytes]) -> None:
        """(P|S)SUBSCRIBE: each name added (once), each confirmed with the client's count."""
        subs = session.subscriptions
        entering = subs is None
        if subs is None:
            subs = session.subscriptions = Subscriptions()
            session.flags.add("pubsub")
        mine = _own(subs, kind)
        for name in names:
            if name not in mine:
                mine[name] = None
                self._subscribers(kind, name, create=True)[session] = None
            session.push(_confirmation(session, kind, 0, name, _count(subs, kind)))
        if entering and self._mode_changed is not None:
            self._mode_changed(session)

    def unsubscribe(self, session: ClientSession, kind: int, names: list[bytes]) -> None:
        """(P|S)UNSUBSCRIBE: the names given (all the client's of that kind when none), each
        confirmed; with nothing to unsubscribe from, one confirmation with a null name."""
        subs = session.subscriptions
        if not names:
            names = list(_own(subs, kind)) if subs is not None else []
            if not names:
                session.push(_confirmation(session, kind, 1, None, _count(subs, kind)))
                return
        for name in names:
            if subs is not None:
                self._remove(session, subs, kind, name)
            session.push(_confirmation(session, kind, 1, name, _count(subs, kind)))
        if subs is not None and not subs.count():
            self._leave(session)

    def unsubscribe_all(self, session: ClientSession) -> None:
        """Every subscription dropped silently (RESET, a closed connection)."""
        subs = session.subscriptions
        if subs is None:
            return
        for kind in (CHANNEL, PATTERN, SHARD):
            for name in list(_own(subs, kind)):
                self._remove(session, subs, kind, name)
        self._leave(session)

    def _leave(self, session: ClientSession) -> None:
        session.subscriptions = None
        session.flags.discard("pubsub")
        if self._mode_changed is not None:
            self._mode_changed(session)

    def _remove(self, session: ClientSession, subs: Subscriptions, kind: int, name: bytes) -> None:
        mine = _own(subs, kind)
        if name not in mine:
            return
        del mine[name]
        if kind == PATTERN:
            entry = self._patterns[name]
            del entry[1][session]
            if not entry[1]:
                del self._patterns[name]
            return
        table = self._channels if kind == CHANNEL else self._shard_channels
        subscribers = table[name]
        del subscribers[session]
        if not subscribers:
            # No empty entries: PUBSUB CHANNELS lists only channels with subscribers.
            del table[name]

    def _subscribers(self, kind: int, name: bytes, create: bool = False) -> Subscribers:
        if kind == PATTERN:
            entry = self._patterns.get(name)
            if entry is None:
                entry = (compile_glob(name), {})
                if create:
                    self._patterns[name] = entry
            return entry[1]
        table = self._channels if kind == CHANNEL else self._shard_channels
        subscribers = table.get(name)
        if subscribers is None:
            subscribers = {}
            if create:
                table[name] = subscribers
        return subscribers

    # -- publishing ---------------------------------------------------------------------------

    def publish(self, channel: bytes, message: bytes) -> int:
        """Delivers `message` to the subscribers of `channel`, then to those of every matching
        pattern (one pmessage per matching pattern of a client); returns how many deliveries."""
        receivers = 0
        tail = _bulk(channel) + _bulk(message)
        subscribers = self._channels.get(channel)
        if subscribers:
            msg = _Message(_MESSAGE + tail)
            for session in list(subscribers):
                session.push(msg.frame(_HEADER3, session.proto))
                receivers += 1
        if self._patterns:
            for pattern, (matches, subscribers) in list(self._patterns.items()):
                if not matches(channel):
                    continue
                pmsg = _Message(_PMESSAGE + _bulk(pattern) + tail)
                for session in list(subscribers):
                    session.push(pmsg.frame(_HEADER4, session.proto))
                    receivers += 1
        return receivers

    def spublish(self, channel: bytes, message: bytes) -> int:
        """SPUBLISH: shard channels only (patterns never see them)."""
        subscribers = self._shard_channels.get(channel)
        if not subscribers:
            return 0
        msg = _Message(_SMESSAGE + _bulk(channel) + _bulk(message))
        for session in list(subscribers):
            session.push(msg.frame(_HEADER3, session.proto))
        return len(subscribers)

    # -- introspection (PUBSUB, INFO) -----------------------------------------------------------

    def channel_names(self, kind: int, pattern: bytes | None) -> list[bytes]:
        """PUBSUB CHANNELS / SHARDCHANNELS: the names with subscribers matching `pattern`."""
        table = self._channels if kind == CHANNEL else self._shard_channels
        if pattern is None:
            return list(table)
        matches = compile_glob(pattern)
        return [name for name in table if matches(name)]

    def subscriber_count(self, kind: int, channel: bytes) -> int:
        """PUBSUB NUMSUB / SHARDNUMSUB of one channel (pattern subscribers not counted)."""
        table = self._channels if kind == CHANNEL else self._shard_channels
        subscribers = table.get(channel)
        return len(subscribers) if subscribers else 0

    def pattern_count(self) -> int:
        """PUBSUB NUMPAT and INFO pubsub_patterns: distinct patterns with subscribers."""
        return len(self._patterns)

    def channel_count(self) -> int:
        return len(self._channels)

    def shard_channel_count(self) -> int:
        return len(self._shard_channels)


def _own(subs: Subscriptions | None, kind: int) -> dict[bytes, None]:
    if subs is None:
        return {}
    if kind == CHANNEL:
        return subs.channels
    if kind == PATTERN:
        return subs.patterns
    return subs.shard_channels


def _count(subs: Subscriptions | None, kind: int) -> int:
    """The count a confirmation reports: channels + patterns (clientSubscriptionsCount), or
    shard channels alone for the S commands."""
    if subs is None:
        return 0
    if kind == SHARD:
        return len(subs.shard_channels)
    return len(subs.channels) + len(subs.patterns)


def _confirmation(session: ClientSession, kind: int, index: int, name: bytes | None, count: int) -> bytes:
    if name is None:
        named = b"_\r\n" if session.proto == 3 else b"$-1\r\n"
    else:
        named = _bulk(name)
    return _HEADER3[session.proto] + _WORDS[kind][index] + named + b":%d\r\n" % count
