"""The commands only a sentinel answers — SENTINEL and its subcommands, and the sentinel's
ROLE and PUBLISH — with Redis 7.2's argument parsing, error texts and
reply shapes (sentinel.c sentinelCommand, sentinelSetCommand, sentinelConfig*Command,
sentinelSetDebugConfigParameters, sentinelPublishCommand, sentinelRoleCommand).

Each handler takes the runner and the command's arguments and returns a reply value for the
node's RESP encoder (node.commands.reply), or raises CommandError. The arities in
`SUBCOMMANDS` are those of Redis 7.2's command table (node/sentinel/command_table.py),
checked by the dispatcher before a handler runs. A handler that changes the policy's state executes the policy's actions before
it returns, so a configuration rewrite (a vote, a new master) is on disk before the reply is
written; when that rewrite fails the reply is Redis's error.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from node.commands.args import parse_int, to_int
from node.commands.glob import glob_match
from node.commands.helptext import help_reply
from node.commands.reply import OK, CommandError
from node.commands.table import CommandTable
from node.sentinel import replies
from node.sentinel.command_table import HELP_LINES, SUBCOMMAND_ARITIES
from node.sentinel.command_table import command_table as sentinel_command_table
from node.sentinel.instance import Instance
from node.sentinel.messages import WARNING
from node.sentinel.policy import SentinelError
from node.sentinel.policy.options import TIMING_OPTIONS
from node.sentinel.runner import Runner
from node.sentinel.timings import HELLO_CHANNEL, SIMFAILURE_CRASH_AFTER_ELECTION, SIMFAILURE_CRASH_AFTER_PROMOTION

FLUSH_FAILED: Final = "ERR Failed to save config file. Check server logs."
NO_SUCH_MASTER: Final = "ERR No such master with that name"
SCRIPTS_DENIED: Final = (
    "ERR Reconfiguration of scripts path is denied for security reasons. Check the "
    "deny-scripts-reconfig configuration directive in your Sentinel configuration"
)
LOG_LEVEL_NAMES: Final = ("debug", "verbose", "notice", "warning", "nothing")

Handler = Callable[[Runner, list[bytes]], Any]


def _text(arg: bytes) -> str:
    return arg.decode("utf-8", "surrogateescape")


def _error(exc: SentinelError) -> CommandError:
    """The policy's refusals carry Redis's text; addReplyError adds ERR to those without a
    code of their own."""
    message = exc.message
    code = message.split(" ", 1)[0]
    return CommandError(message if code.isupper() and code.isalpha() else "ERR " + message)


def _master(runner: Runner, name: bytes) -> Instance:
    master = runner.sentinel.masters.get(_text(name))
    if master is None:
        raise CommandError(NO_SUCH_MASTER)
    return master


def _flushed(runner: Runner) -> Any:
    """sentinelFlushConfigAndReply, after executing what the command queued."""
    return OK if runner.execute(runner.sentinel.take_actions()) else CommandError(FLUSH_FAILED)


def _reply_flushed(runner: Runner) -> Any:
    reply = _flushed(runner)
    if isinstance(reply, CommandError):
        raise reply
    return reply


# ---------------------------------------------------------------------------- read-only


def _masters(runner: Runner, argv: list[bytes]) -> Any:
    return replies.masters(runner.sentinel, runner.now())


def _master_cmd(runner: Runner, argv: list[bytes]) -> Any:
    return replies.instance(_master(runner, argv[2]), runner.now())


def _replicas(runner: Runner, argv: list[bytes]) -> Any:
    return replies.replicas(runner.sentinel, _master(runner, argv[2]).name, runner.now())


def _sentinels(runner: Runner, argv: list[bytes]) -> Any:
    return replies.sentinels(runner.sentinel, _master(runner, argv[2]).name, runner.now())


def _myid(runner: Runner, argv: list[bytes]) -> Any:
    return replies.myid(runner.sentinel)


def _get_master_addr(runner: Runner, argv: list[bytes]) -> Any:
    return replies.get_master_addr_by_name(runner.sentinel, _text(argv[2]))


def _ckquorum(runner: Runner, argv: list[bytes]) -> Any:
    return replies.ckquorum(runner.sentinel, _master(runner, argv[2]).name)


def _info_cache(runner: Runner, argv: list[bytes]) -> Any:
    return replies.info_cache(runner.sentinel, [_text(a) for a in argv[2:]], runner.now())


def _pending_scripts(runner: Runner, argv: list[bytes]) -> Any:
    return runner.scripts.pending(runner.now())


# ---------------------------------------------------------------------------- the failover


def _is_master_down_by_addr(runner: Runner, argv: list[bytes]) -> Any:
    """Asked by other sentinels every second; with a run id it also asks for our vote, which
    is on disk before we answer."""
    port = parse_int(argv[3])
    # Redis reads the epoch as a long long and uses it as uint64_t.
    req_epoch = parse_int(argv[4]) % (1 << 64)
    reply = runner.sentinel.is_master_down_by_addr(_text(argv[2]), port, req_epoch, _text(argv[5]), now=runner.now())
    runner.execute(runner.sentinel.take_actions())
    return reply


def _failover(runner: Runner, argv: list[bytes]) -> Any:
    try:
        runner.sentinel.failover(_text(argv[2]), now=runner.now())
    except SentinelError as exc:
        raise _error(exc) from None
    runner.execute(runner.sentinel.take_actions())
    return OK


def _reset(runner: Runner, argv: list[bytes]) -> Any:
    count = runner.sentinel.reset(_text(argv[2]), now=runner.now())
    runner.execute(runner.sentinel.take_actions())
    return count


# ---------------------------------------------------------------------------- configuration


def _monitor(runner: Runner, argv: list[bytes]) -> Any:
    quorum = parse_int(argv[5], "ERR Invalid quorum")
    port = parse_int(argv[4], "ERR Invalid port")
    if quorum <= 0:
        raise CommandError("ERR Quorum must be 1 or greater.")
    host = _text(argv[3])
    if not _resolvable(runner, host):
        raise CommandError("ERR Invalid IP address or hostname specified")
    try:
        runner.sentinel.monitor(_text(argv[2]), host, port, quorum, now=runner.now())
    except SentinelError as exc:
        raise _error(exc) from None
    return _reply_flushed(runner)


def _resolvable(runner: Runner, host: str) -> bool:
    """anetResolve: an IP literal, or with resolve-hostnames any name DNS resolves (a
    blocking lookup, as Redis's)."""
    if not runner.sentinel.resolve_hostnames:
        return runner.sentinel.valid_host(host)
    try:
        return bool(socket.getaddrinfo(host, None, type=socket.SOCK_STREAM))
    except (OSError, UnicodeError):
        return False


def _remove(runner: Runner, argv: list[bytes]) -> Any:
    try:
        runner.sentinel.remove(_text(argv[2]), now=runner.now())
    except SentinelError as exc:
        raise _error(exc) from None
    return _reply_flushed(runner)


def _flushconfig(runner: Runner, argv: list[bytes]) -> Any:
    runner.sentinel.flush_config()
    return _reply_flushed(runner)


def _positive(raw: bytes, *, zero_ok: bool = False) -> int | None:
    value = to_int(raw)
    if value is None or value < 0 or (value == 0 and not zero_ok):
        return None
    return value


def _set(runner: Runner, argv: list[bytes]) -> Any:
    """SENTINEL SET <master> <option> <value> [<option> <value> …]: options are applied
    one by one; a bad one stops there (the ones before it stay, flushed) with its error."""
    s = runner.sentinel
    master = _master(runner, argv[2])
    changes = 0
    j = 3
    error: str | None = None
    while j < len(argv):
        more = len(argv) - 1 - j
        option = _text(argv[j])
        opt = option.lower()
        start = j
        redacted = False
        if opt in ("down-after-milliseconds", "failover-timeout", "parallel-syncs", "quorum") and more > 0:
            j += 1
            value = _positive(argv[j])
            if value is None:
                error = f"ERR Invalid argument '{_text(argv[j])}' for SENTINEL SET '{option}'"
                break
            s.configure(master, opt, value)
        elif opt in ("notification-script", "client-reconfig-script") and more > 0:
            j += 1
            path = _text(argv[j])
            if s.deny_scripts_reconfig:
                error = SCRIPTS_DENIED
                break
            if path and not os.access(path, os.X_OK):
                error = (
                    "ERR Notification script seems non existing or non executable"
                    if opt == "notification-script"
                    else "ERR Client reconfiguration script seems non existing or non executable"
                )
                break
            s.configure(master, opt, path or None)
        elif opt in ("auth-pass", "auth-user") and more > 0:
            j += 1
            s.configure(master, opt, _text(argv[j]) or None)
            redacted = opt == "auth-pass"
        elif opt == "rename-command" and more > 1:
            old, new = _text(argv[j + 1]), _text(argv[j + 2])
            j += 2
            if not old or not new:
                bad = argv[j - 1] if new else argv[j]
                error = f"ERR Invalid argument '{_text(bad)}' for SENTINEL SET '{option}'"
                break
            # Renaming a command to itself undoes its renaming.
            s.configure(master, opt, (old, new if old.lower() != new.lower() else None))
        elif opt == "master-reboot-down-after-period" and more > 0:
            j += 1
            value = _positive(argv[j], zero_ok=True)
            if value is None:
                error = f"ERR Invalid argument '{_text(argv[j])}' for SENTINEL SET '{option}'"
                break
            s.configure(master, opt, value)
        else:
            error = f"ERR Unknown option or number of arguments for SENTINEL SET '{option}'"
            break
        changes += 1
        shown = [_text(a) for a in argv[start : j + 1]]
        if redacted:
            shown[1] = "******"
        s.event(WARNING, "+set", master, " " + " ".join(shown))
        j += 1
    if changes:
        s.flush_config()
    if error is not None:
        runner.execute(s.take_actions())
        raise CommandError(error)
    return _reply_flushed(runner)


_CONFIG_OPTIONS: Final = (
    "announce-ip", "sentinel-user", "sentinel-pass", "resolve-hostnames", "announce-port", "announce-hostnames",
    "loglevel",
)


def _yes_no(raw: bytes) -> bool | None:
    text = raw.lower()
    return True if text == b"yes" else False if text == b"no" else None


def _config(runner: Runner, argv: list[bytes]) -> Any:
    sub = argv[2].lower()
    if sub == b"set" and len(argv) >= 5:
        return _config_set(runner, argv)
    if sub == b"get" and len(argv) >= 4:
        return _config_get(runner, argv)
    raise CommandError(
        "ERR Only SENTINEL CONFIG GET <param> [<param> <param> ...]/ SET <param> <value> "
        "[<param> <value> ...] are supported."
    )


def _config_set(runner: Runner, argv: list[bytes]) -> Any:
    """SENTINEL CONFIG SET: every option is validated before any is applied."""
    seen: set[str] = set()
    pairs: list[tuple[str, bytes]] = []
    i = 3
    while i < len(argv):
        option = _text(argv[i])
        opt = option.lower()
        if opt not in _CONFIG_OPTIONS:
            raise CommandError(f"ERR Invalid argument '{option}' to SENTINEL CONFIG SET")
        if opt in seen:
            raise CommandError(f"ERR Duplicate argument '{option}' to SENTINEL CONFIG SET")
        seen.add(opt)
        if i + 1 == len(argv):
            raise CommandError(f"ERR Missing argument '{option}' value")
        i += 1
        value = argv[i]
        if opt in ("resolve-hostnames", "announce-hostnames"):
            bad = _yes_no(value) is None
        elif opt == "announce-port":
            port = to_int(value)
            bad = port is None or not 0 <= port <= 65535
        elif opt == "loglevel":
            bad = _text(value).lower() not in LOG_LEVEL_NAMES
        else:
            bad = False
        if bad:
            raise CommandError(f"ERR Invalid value '{_text(value)}' to SENTINEL CONFIG SET '{option}'")
        pairs.append((opt, value))
        i += 1
    s = runner.sentinel
    drop = False
    for opt, value in pairs:
        text = _text(value)
        if opt == "loglevel":
            runner.set_loglevel(text.lower())
        elif opt in ("resolve-hostnames", "announce-hostnames"):
            s.configure(None, opt, bool(_yes_no(value)))
        elif opt == "announce-port":
            s.configure(None, opt, int(text))
        else:  # announce-ip, sentinel-user, sentinel-pass
            s.configure(None, opt, text or None)
            drop = drop or opt in ("sentinel-user", "sentinel-pass")
    s.flush_config()
    reply = _flushed(runner)
    if drop:
        s.drop_sentinel_connections()
        runner.execute(s.take_actions())
    if isinstance(reply, CommandError):
        raise reply
    return reply


def _config_get(runner: Runner, argv: list[bytes]) -> Any:
    s = runner.sentinel
    values: dict[str, bytes] = {
        "resolve-hostnames": b"yes" if s.resolve_hostnames else b"no",
        "announce-hostnames": b"yes" if s.announce_hostnames else b"no",
        "announce-ip": (s.announce_ip or "").encode(),
        "announce-port": str(s.announce_port).encode(),
        "sentinel-user": (s.sentinel_auth_user or "").encode(),
        "sentinel-pass": (s.sentinel_auth_pass or "").encode(),
        "loglevel": runner.options.loglevel.encode(),
    }
    out: dict[bytes, bytes] = {}
    for pattern in argv[3:]:
        for name, value in values.items():
            key = name.encode()
            if key not in out and glob_match(pattern, key, nocase=True):
                out[key] = value
    return out


def _debug(runner: Runner, argv: list[bytes]) -> Any:
    """SENTINEL DEBUG: the timing parameters, or set some (each applied as it is read)."""
    if len(argv) == 2:
        return replies.debug(runner.sentinel)
    j = 2
    while j < len(argv):
        option = _text(argv[j])
        name = option.lower()
        if name not in TIMING_OPTIONS or len(argv) - 1 - j <= 0:
            raise CommandError(f"ERR Unknown option or number of arguments for SENTINEL DEBUG '{option}'")
        j += 1
        value = _positive(argv[j])
        if value is None:
            raise CommandError(f"ERR Invalid argument '{_text(argv[j])}' for SENTINEL DEBUG '{option}'")
        runner.sentinel.configure(None, name, value)
        j += 1
    return OK


def _simulate_failure(runner: Runner, argv: list[bytes]) -> Any:
    s = runner.sentinel
    s.configure(None, "simulate-failure", 0)
    for arg in argv[2:]:
        word = arg.lower()
        if word == b"crash-after-election":
            s.configure(None, "simulate-failure", s.simfailure_flags | SIMFAILURE_CRASH_AFTER_ELECTION)
            runner.log_warning(
                "Failure simulation: this Sentinel will crash after being successfully elected as failover leader"
            )
        elif word == b"crash-after-promotion":
            s.configure(None, "simulate-failure", s.simfailure_flags | SIMFAILURE_CRASH_AFTER_PROMOTION)
            runner.log_warning(
                "Failure simulation: this Sentinel will crash after promoting the selected replica to master"
            )
        elif word == b"help":
            return [b"crash-after-election", b"crash-after-promotion"]
        else:
            raise CommandError("ERR Unknown failure simulation specified")
    return OK


def _help(runner: Runner, argv: list[bytes]) -> Any:
    lines = help_reply(argv[0], HELP_LINES)
    lines[-1] = "    Print this help."  # 7.2's wording (7.0 said "Prints")
    return lines




# ---------------------------------------------------------------------------- beside SENTINEL


def role(runner: Runner, argv: list[bytes]) -> Any:
    return replies.role(runner.sentinel)


def publish(runner: Runner, argv: list[bytes]) -> Any:
    """A sentinel's PUBLISH only takes hello messages, which other sentinels send directly
    (sentinelPublishCommand)."""
    if argv[1] != HELLO_CHANNEL.encode():
        raise CommandError("ERR Only HELLO messages are accepted by Sentinel instances.")
    runner.sentinel.receive_hello(_text(argv[2]), now=runner.now())
    runner.execute(runner.sentinel.take_actions())
    return 1


_HANDLERS: Final[dict[str, Handler]] = {
    "ckquorum": _ckquorum,
    "config": _config,
    "debug": _debug,
    "failover": _failover,
    "flushconfig": _flushconfig,
    "get-master-addr-by-name": _get_master_addr,
    "help": _help,
    "info-cache": _info_cache,
    "is-master-down-by-addr": _is_master_down_by_addr,
    "master": _master_cmd,
    "masters": _masters,
    "monitor": _monitor,
    "myid": _myid,
    "pending-scripts": _pending_scripts,
    "remove": _remove,
    "replicas": _replicas,
    "reset": _reset,
    "sentinels": _sentinels,
    "set": _set,
    "simulate-failure": _simulate_failure,
    "slaves": _replicas,
}


@dataclass(frozen=True, slots=True)
class Subcommand:
    name: str
    arity: int  # Redis's: counts SENTINEL and the subcommand; negative = at least
    handler: Handler


SUBCOMMANDS: Final = {name: Subcommand(name, arity, _HANDLERS[name]) for name, arity in SUBCOMMAND_ARITIES.items()}


def command_table(bind: Callable[[Handler], Any]) -> CommandTable:
    """A sentinel's command table (node/sentinel/command_table.py) with these handlers; `bind`
    turns a handler into the table's (session, argv) form (the shell binds them to its
    runner)."""
    beside = {"role": role, "publish": publish}

    def handler(name: str) -> Any:
        return bind(SUBCOMMANDS[name.removeprefix("sentinel|")].handler if name.startswith("sentinel|") else beside[name])

    return sentinel_command_table(handler)
