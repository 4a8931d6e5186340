"""The policy's inputs (what the shell observed) and outputs (what the shell must do).

The shell owns every socket and the clock: it opens the connections the policy asks for,
writes the commands, parses replies and Pub/Sub messages and hands them back with the time
they arrived. Connections and requests are named by integers the policy allocates, so a reply
on a connection the policy already closed is recognised and dropped, as hiredis drops the
callbacks of a freed context.

Reply values are the plain RESP values: `str` for a status reply, `RespError` for an error,
`bytes` for a bulk string, `int`, `list` for arrays and `None` for null.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Union

# Log levels (LL_*), as sentinelEvent uses them: debug events are logged, never published.
DEBUG: Final = 0
VERBOSE: Final = 1
NOTICE: Final = 2
WARNING: Final = 3


@dataclass(frozen=True, slots=True)
class RespError:
    """An error reply; `text` is what follows the '-'."""

    text: str


Value = Union[str, RespError, bytes, int, list, None]  # type: ignore[type-arg]


# ---------------------------------------------------------------------------- inputs


@dataclass(frozen=True, slots=True)
class Tick:
    """The timer fired (Redis runs it 10-19 times a second, see Sentinel.next_tick_ms).
    `now`, as in every input, is the monotonic clock every duration is measured on; `wall` is
    the wall clock at the same moment (ms since the epoch), which TILT also watches and dates
    are shown in (None: the same as `now`)."""

    now: int
    wall: int | None = None


@dataclass(frozen=True, slots=True)
class Connected:
    """Connection `conn` is established; `local_ip` is our address on it (announced in hello
    messages when announce-ip is not set)."""

    now: int
    conn: int
    local_ip: str


@dataclass(frozen=True, slots=True)
class Closed:
    """Connection `conn` failed to connect or was closed: its pending requests get no reply."""

    now: int
    conn: int


@dataclass(frozen=True, slots=True)
class Reply:
    """The reply to `request` on connection `conn`."""

    now: int
    conn: int
    request: int
    value: Value


@dataclass(frozen=True, slots=True)
class Message:
    """A Pub/Sub message received on the subscribed connection `conn`."""

    now: int
    conn: int
    channel: bytes
    payload: bytes


Input = Union[Tick, Connected, Closed, Reply, Message]


# ---------------------------------------------------------------------------- actions


@dataclass(frozen=True, slots=True)
class Connect:
    """Open connection `conn` to host:port; `pubsub` says it will only subscribe."""

    conn: int
    host: str
    port: int
    pubsub: bool


@dataclass(frozen=True, slots=True)
class Close:
    """Close connection `conn` (replies still in flight on it are to be dropped)."""

    conn: int


@dataclass(frozen=True, slots=True)
class Send:
    """Write the command `argv` on connection `conn`; its reply comes back as Reply(request)."""

    conn: int
    request: int
    argv: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Event:
    """A Sentinel event: logged as `<type> <message>`, and published on the channel named
    `type` with payload `message` unless the level is DEBUG."""

    level: int
    type: str
    message: str

    @property
    def published(self) -> bool:
        return self.level != DEBUG


@dataclass(frozen=True, slots=True)
class Log:
    """A log line that is not an event."""

    level: int
    text: str


@dataclass(frozen=True, slots=True)
class FlushConfig:
    """Rewrite the configuration file from the policy's state now, before anything that
    follows in the batch (a vote must be on disk before it is answered)."""


@dataclass(frozen=True, slots=True)
class ScriptRun:
    """Run a notification or client-reconfig script with these arguments (the shell queues
    it with Redis's limits: 16 running, 256 queued, 60 s runtime, 10 retries)."""

    path: str
    args: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Crash:
    """Exit now with status 99 (SENTINEL SIMULATE-FAILURE): the actions before it in the
    batch are carried out, the ones after it are not."""


Action = Union[Connect, Close, Send, Event, Log, FlushConfig, ScriptRun, Crash]
