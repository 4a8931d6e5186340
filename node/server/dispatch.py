"""Executing one command for one client: table lookup, arity, authentication, MULTI
queueing, read-only replicas, the handler call, error texts and per-command statistics.

The rules and texts are Redis 7.2's (server.c processCommand/call).
"""

from __future__ import annotations

import time
from typing import Any, Final

from node.commands.context import Block, Session
from node.commands.reply import QUEUED, CommandError, ReplyError
from node.commands.table import TABLE, CommandSpec

# Commands that run immediately even inside MULTI (processCommand's exec/discard/multi/
# watch/quit/reset exception).
_MULTI_IMMEDIATE: Final = frozenset({b"exec", b"discard", b"multi", b"watch", b"quit", b"reset"})


class CommandStats:
    __slots__ = ("calls", "usec", "rejected", "failed")

    def __init__(self) -> None:
        self.calls = 0
        self.usec = 0
        self.rejected = 0
        self.failed = 0


class Dispatcher:
    """Owns the lookup cache and the statistics; the server calls `execute`."""

    def __init__(self) -> None:
        # Name as sent (e.g. b"XADD") → spec; avoids lower-casing on every call.
        self._cache: dict[bytes, CommandSpec] = {}
        self.stats: dict[str, CommandStats] = {}
        self.errors: dict[str, int] = {}
        self.total_commands = 0
        self.total_errors = 0

    def reset_stats(self) -> None:
        self.stats.clear()
        self.errors.clear()
        self.total_errors = 0

    def resolve(self, argv: list[bytes]) -> CommandSpec | None:
        name = argv[0]
        spec = self._cache.get(name)
        if spec is None:
            spec = TABLE.get(name.lower())
            if spec is None:
                return None
            if len(self._cache) < 4096:
                self._cache[name] = spec
        return spec

    def _stat(self, spec: CommandSpec) -> CommandStats:
        st = self.stats.get(spec.name)
        if st is None:
            st = self.stats[spec.name] = CommandStats()
        return st

    def count_error(self, message: str) -> None:
        code = message.split(" ", 1)[0]
        self.errors[code] = self.errors.get(code, 0) + 1
        self.total_errors += 1

    def reject(self, session: Session, spec: CommandSpec | None, message: str) -> ReplyError:
        """A command refused before running (unknown, arity, auth, …); inside MULTI it also
        dooms the transaction."""
        if spec is not None:
            self._stat(spec).rejected += 1
        if session.multi is not None:
            session.multi_error = True
        self.count_error(message)
        return ReplyError(message)

    def execute(self, session: Session, argv: list[bytes], role: str, from_master: bool = False) -> Any:
        """Run argv for session; returns the reply value or a Block."""
        self.total_commands += 1
        spec = self.resolve(argv)
        if spec is None:
            return self.reject(session, None, unknown_command_text(argv))
        if spec.subcommands:
            if len(argv) < 2:
                return self.reject(session, spec, f"ERR wrong number of arguments for '{spec.name}' command")
            sub = spec.subcommands.get(argv[1].decode("utf-8", "replace").lower())
            if sub is None:
                if spec.handler is None:
                    return self.reject(
                        session,
                        spec,
                        "ERR unknown subcommand '%s'. Try %s HELP."
                        % (_printable(argv[1])[:128], spec.name.upper()),
                    )
            else:
                spec = sub
        if not spec.arity_ok(len(argv)):
            return self.reject(session, spec, f"ERR wrong number of arguments for '{spec.name}' command")
        flags = spec.flags
        if not session.authenticated and "no_auth" not in flags:
            return self.reject(session, spec, "NOAUTH Authentication required.")
        if session.multi is not None and argv[0].lower() not in _MULTI_IMMEDIATE:
            if "no_multi" in flags:
                return self.reject(session, spec, "ERR Command not allowed inside a transaction")
            session.multi.append(argv)
            return QUEUED
        if role == "slave" and not from_master and "write" in flags:
            return self.reject(session, spec, "READONLY You can't write against a read only replica.")
        return self.call(session, spec, argv)

    def call(self, session: Session, spec: CommandSpec, argv: list[bytes]) -> Any:
        st = self.stats.get(spec.name)
        if st is None:
            st = self._stat(spec)
        session.last_command = spec.name
        handler = spec.handler
        assert handler is not None
        start = time.perf_counter_ns()
        try:
            reply = handler(session, argv)
        except CommandError as exc:
            st.failed += 1
            self.count_error(exc.message)
            reply = ReplyError(exc.message)
        except (TypeError, AttributeError, UnicodeError):
            if not all(type(a) is bytes for a in argv):
                # An element that was not a bulk string reached the handler.
                raise ProtocolViolation("Protocol error: expected '$', got something else") from None
            raise
        st.calls += 1
        st.usec += (time.perf_counter_ns() - start) // 1000
        if type(reply) is ReplyError:
            st.failed += 1
            self.count_error(reply.message)
        return reply


class ProtocolViolation(Exception):
    """The request itself broke the protocol: reply with the error and close."""


def _printable(arg: bytes) -> str:
    return arg.decode("utf-8", "replace")


def unknown_command_text(argv: list[bytes]) -> str:
    # server.c: args are quoted one by one until 128 characters are used.
    args = ""
    for arg in argv[1:]:
        if len(args) >= 128:
            break
        args += "'%s' " % _printable(arg)[: 128 - len(args)]
    return "ERR unknown command '%s', with args beginning with: %s" % (_printable(argv[0])[:128], args)


def is_block(reply: Any) -> bool:
    return type(reply) is Block
