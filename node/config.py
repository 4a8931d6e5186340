"""Node configuration: every directive, its type, default and whether CONFIG SET may change
it; parsing of redis.conf syntax and of redis-server style command-line flags.

Shared by the command layer (CONFIG GET/SET, stream node sizes) and the server shell, so it
lives beside both rather than inside either.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Callable, Final

from node.text import memory_to_bytes, split_config_line


class ConfigError(Exception):
    """A bad directive or value; the text is what Redis would print (without the ERR)."""


@dataclass(frozen=True, slots=True)
class Directive:
    name: str
    default: str
    kind: str  # "int", "memory", "bool", "enum", "string", "special"
    mutable: bool = True
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()


_DIRECTIVES: Final[tuple[Directive, ...]] = (
    Directive("port", "6379", "int", mutable=False, minimum=0, maximum=65535),
    Directive("bind", "127.0.0.1", "string", mutable=False),
    Directive("requirepass", "", "string"),
    Directive("masterauth", "", "string"),
    Directive("dir", ".", "string", mutable=False),
    Directive("databases", "16", "int", mutable=False, minimum=1, maximum=1 << 20),
    Directive("maxclients", "10000", "int", minimum=1, maximum=1 << 30),
    Directive("loglevel", "notice", "enum", choices=("debug", "verbose", "notice", "warning", "nothing")),
    Directive("logfile", "", "string", mutable=False),
    Directive("pidfile", "", "string", mutable=False),
    Directive("daemonize", "no", "bool", mutable=False),
    Directive("protected-mode", "no", "bool"),
    Directive("timeout", "0", "int", minimum=0, maximum=1 << 31),
    Directive("tcp-keepalive", "300", "int", minimum=0, maximum=1 << 31),
    Directive("tcp-backlog", "511", "int", mutable=False, minimum=0, maximum=1 << 31),
    Directive("hz", "10", "int", minimum=1, maximum=500),
    Directive("proto-max-bulk-len", "536870912", "memory", minimum=1024 * 1024, maximum=1 << 62),
    Directive("client-query-buffer-limit", "1073741824", "memory", minimum=1024 * 1024, maximum=1 << 62),
    Directive(
        "client-output-buffer-limit",
        "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
        "special",
    ),
    Directive("stream-node-max-entries", "100", "int", minimum=0, maximum=(1 << 63) - 1),
    Directive("stream-node-max-bytes", "4096", "memory", minimum=0, maximum=(1 << 63) - 1),
    Directive("save", "", "special"),
    Directive("appendonly", "no", "bool"),
    Directive("appendfilename", "appendonly.aof", "string", mutable=False),
    Directive("appenddirname", "appendonlydir", "string", mutable=False),
    Directive("appendfsync", "everysec", "enum", choices=("always", "everysec", "no")),
    Directive("dbfilename", "dump.rdb", "string"),
    Directive("auto-aof-rewrite-percentage", "100", "int", minimum=0, maximum=1 << 31),
    Directive("auto-aof-rewrite-min-size", "67108864", "memory", minimum=0, maximum=1 << 62),
    Directive("aof-load-truncated", "yes", "bool"),
    Directive("maxmemory", "0", "memory", minimum=0, maximum=1 << 62),
    Directive("maxmemory-policy", "noeviction", "enum", choices=("noeviction",)),
    Directive("slowlog-log-slower-than", "10000", "int", minimum=-1, maximum=1 << 62),
    Directive("slowlog-max-len", "128", "int", minimum=0, maximum=1 << 62),
    Directive("latency-tracking", "yes", "bool"),
    Directive("lua-time-limit", "5000", "int", minimum=0, maximum=1 << 62, aliases=("busy-reply-threshold",)),
    Directive("notify-keyspace-events", "", "string"),
    Directive("replica-read-only", "yes", "bool", aliases=("slave-read-only",)),
    Directive("replicaof", "", "special", mutable=False, aliases=("slaveof",)),
    Directive("repl-port", "0", "int", mutable=False, minimum=0, maximum=65535),
    Directive("repl-backlog-size", "16777216", "memory", minimum=16 * 1024, maximum=1 << 62),
    Directive("repl-timeout", "60", "int", minimum=1, maximum=1 << 31),
    Directive("repl-ping-replica-period", "10", "int", minimum=1, maximum=1 << 31),
    Directive("min-replicas-to-write", "0", "int", minimum=0, maximum=1 << 31, aliases=("min-slaves-to-write",)),
    Directive("min-replicas-max-lag", "10", "int", minimum=0, maximum=1 << 31, aliases=("min-slaves-max-lag",)),
)

DIRECTIVES: Final[dict[str, Directive]] = {d.name: d for d in _DIRECTIVES}
ALIASES: Final[dict[str, str]] = {a: d.name for d in _DIRECTIVES for a in d.aliases}


def canonical_name(name: str) -> str | None:
    name = name.lower()
    if name in DIRECTIVES:
        return name
    return ALIASES.get(name)


def _normalize(d: Directive, raw: str) -> str:
    """Validate a value and return its canonical text (as CONFIG GET shows it)."""
    if d.kind in ("int", "memory"):
        value = memory_to_bytes(raw) if d.kind == "memory" else _parse_int(raw)
        if value is None:
            raise ConfigError(f"argument couldn't be parsed into an integer")
        if (d.minimum is not None and value < d.minimum) or (d.maximum is not None and value > d.maximum):
            raise ConfigError(f"argument must be between {d.minimum} and {d.maximum} inclusive")
        return str(value)
    if d.kind == "bool":
        low = raw.lower()
        if low not in ("yes", "no"):
            raise ConfigError("argument must be 'yes' or 'no'")
        return low
    if d.kind == "enum":
        low = raw.lower()
        if low not in d.choices:
            raise ConfigError(f"argument(s) must be one of the following: {', '.join(d.choices)}")
        return low
    if d.name == "client-output-buffer-limit":
        return _normalize_obl(raw)
    if d.name == "save":
        return _normalize_save(raw)
    return raw


def _parse_int(raw: str) -> int | None:
    text = raw.strip()
    if not text or not text.lstrip("-").isdigit():
        return None
    return int(text)


def _normalize_obl(raw: str) -> str:
    words = raw.split()
    if not words or len(words) % 4:
        raise ConfigError("Wrong number of arguments in buffer limit configuration.")
    current = dict(_parse_obl(DIRECTIVES["client-output-buffer-limit"].default))
    for i in range(0, len(words), 4):
        cls = words[i].lower()
        cls = {"replica": "slave", "master": "normal"}.get(cls, cls)
        if cls not in ("normal", "slave", "pubsub"):
            raise ConfigError("Invalid client class specified in buffer limit configuration.")
        hard, soft = memory_to_bytes(words[i + 1]), memory_to_bytes(words[i + 2])
        secs = _parse_int(words[i + 3])
        if hard is None or soft is None or secs is None or hard < 0 or soft < 0 or secs < 0:
            raise ConfigError("Error in hard, soft or soft_seconds setting in buffer limit configuration.")
        current[cls] = (hard, soft, secs)
    return " ".join(f"{c} {h} {s} {t}" for c, (h, s, t) in current.items())


def _parse_obl(text: str) -> list[tuple[str, tuple[int, int, int]]]:
    words = text.split()
    return [(words[i], (int(words[i + 1]), int(words[i + 2]), int(words[i + 3]))) for i in range(0, len(words), 4)]


def _normalize_save(raw: str) -> str:
    words = raw.split()
    if len(words) % 2:
        raise ConfigError("Invalid save parameters")
    for w in words:
        if not w.isdigit():
            raise ConfigError("Invalid save parameters")
    return " ".join(words)


class Config:
    """Current values as canonical strings, typed accessors for the hot ones, and change
    listeners (the server applies some settings when they change)."""

    def __init__(self) -> None:
        self._values: dict[str, str] = {d.name: _normalize(d, d.default) if d.kind != "special" or d.default else d.default for d in _DIRECTIVES}
        self.config_file: str | None = None
        self._listeners: list[Callable[[str, str], None]] = []
        self._refresh_cache()

    # Typed values read on hot paths, refreshed on every change.
    def _refresh_cache(self) -> None:
        v = self._values
        self.stream_node_max_entries = int(v["stream-node-max-entries"])
        self.stream_node_max_bytes = int(v["stream-node-max-bytes"])
        self.proto_max_bulk_len = int(v["proto-max-bulk-len"])
        self.requirepass = v["requirepass"]
        self.databases = int(v["databases"])
        self.output_limits = dict(_parse_obl(v["client-output-buffer-limit"]))

    def get(self, name: str) -> str:
        return self._values[canonical_name(name) or name]

    def get_int(self, name: str) -> int:
        return int(self.get(name))

    def set(self, name: str, raw: str, *, startup: bool = False) -> None:
        canon = canonical_name(name)
        if canon is None:
            raise ConfigError(f"Unknown option or number of arguments for CONFIG SET - '{name}'")
        d = DIRECTIVES[canon]
        if not startup and not d.mutable:
            raise ConfigError(f"can't set immutable config")
        value = _normalize(d, raw)
        self._values[canon] = value
        self._refresh_cache()
        if not startup:
            for listener in self._listeners:
                listener(canon, value)

    def set_many(self, pairs: list[tuple[str, str]]) -> None:
        """CONFIG SET with several pairs: all or nothing, as Redis 7 does."""
        seen: set[str] = set()
        staged: list[tuple[str, str]] = []
        for name, raw in pairs:
            canon = canonical_name(name)
            if canon is None:
                raise ConfigError(f"Unknown option or number of arguments for CONFIG SET - '{name}'")
            if canon in seen:
                raise ConfigError(f"duplicate parameter - '{name}'")
            seen.add(canon)
            d = DIRECTIVES[canon]
            if not d.mutable:
                raise ConfigError(f"can't set immutable config - '{name}'")
            try:
                staged.append((canon, _normalize(d, raw)))
            except ConfigError as exc:
                raise ConfigError(f"{exc} - '{name}'") from None
        for canon, value in staged:
            self._values[canon] = value
        self._refresh_cache()
        for canon, value in staged:
            for listener in self._listeners:
                listener(canon, value)

    def on_change(self, listener: Callable[[str, str], None]) -> None:
        self._listeners.append(listener)

    def matching(self, pattern: str) -> list[tuple[str, str]]:
        """(name, value) pairs whose name or alias matches the glob, for CONFIG GET."""
        pattern = pattern.lower()
        out: list[tuple[str, str]] = []
        for d in _DIRECTIVES:
            for name in (d.name, *d.aliases):
                if fnmatch.fnmatchcase(name, pattern):
                    out.append((name, self._values[d.name]))
        return out

    def items(self) -> list[tuple[str, str]]:
        return [(d.name, self._values[d.name]) for d in _DIRECTIVES]

    def load_file(self, path: str) -> None:
        """Apply a redis.conf-style file: `directive arg ...` per line, '#' comments."""
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                words = split_config_line(line)
                if words is None:
                    raise ConfigError(f"{path}:{lineno}: unbalanced quotes in configuration line")
                if not words:
                    continue
                try:
                    self.apply_directive(words[0], words[1:])
                except ConfigError as exc:
                    raise ConfigError(f"{path}:{lineno}: '{line.strip()}': {exc}") from None
        self.config_file = path

    def apply_directive(self, name: str, args: list[str]) -> None:
        canon = canonical_name(name)
        if canon is None:
            raise ConfigError(f"Bad directive or wrong number of arguments ('{name}')")
        if canon == "save" and args == [""]:
            args = []
        if DIRECTIVES[canon].kind != "special" and canon != "bind" and len(args) != 1:
            raise ConfigError(f"Bad directive or wrong number of arguments ('{name}')")
        self.set(canon, " ".join(args), startup=True)

    def rewrite(self) -> None:
        """CONFIG REWRITE: write every non-default directive to the config file."""
        if self.config_file is None:
            raise ConfigError("The server is running without a config file")
        lines = ["# Written by Rill CONFIG REWRITE"]
        for d in _DIRECTIVES:
            value = self._values[d.name]
            default = _normalize(d, d.default) if d.kind != "special" or d.default else d.default
            if value != default:
                lines.append(f"{d.name} {_quote(value) if d.kind not in ('special',) else value}")
        with open(self.config_file, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")


def _quote(value: str) -> str:
    if value == "" or any(c in value for c in " \"'\t"):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return value
