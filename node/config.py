"""Node configuration: every directive, its type, default and whether CONFIG SET may change
it; parsing of redis.conf syntax and of redis-server style command-line flags.

Shared by the command layer (CONFIG GET/SET, stream node sizes) and the server shell, so it
lives beside both rather than inside either.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from node.config_rewrite import RewriteState, format_memory, overwrite_file, read_old, sdscatrepr
from node.text import memory_to_bytes, split_config_line


class ConfigError(Exception):
    """A bad directive or value; the text is what Redis would print (without the ERR).

    At startup `where` ("the configuration file, at line 3") and `line` (the offending
    directive) complete the report the way redis-server prints a fatal config error."""

    def __init__(self, message: str, where: str = "", line: str = "") -> None:
        super().__init__(message)
        self.where = where
        self.line = line


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
    # Redis's PROTECTED_CONFIG: refused by CONFIG SET with its own text (enable-protected-configs
    # is "no" by default, and Rill has no such switch).
    protected: bool = False
    clamp: tuple[int, int] | None = None  # accepted values outside this are stored clamped


# The C limits Redis's numeric directives are declared with (config.c).
_INT_MAX: Final = (1 << 31) - 1
_LLONG_MAX: Final = (1 << 63) - 1
_ULLONG_MAX: Final = (1 << 64) - 1

_DIRECTIVES: Final[tuple[Directive, ...]] = (
    Directive("port", "6379", "int", mutable=False, minimum=0, maximum=65535),
    Directive("bind", "127.0.0.1", "string", mutable=False),
    Directive("requirepass", "", "string"),
    Directive("masterauth", "", "string"),
    # The ACL user a replica authenticates as to its primary (with masterauth), as in Redis.
    Directive("masteruser", "", "string"),
    # ACL (node/commands/acl_users.py): the ACL file (ACL LOAD/SAVE; excludes `user` lines),
    # the ACL LOG's length, the channels a new user starts with.
    Directive("aclfile", "", "string", mutable=False),
    Directive("acllog-max-len", "128", "int", minimum=0, maximum=_LLONG_MAX),
    Directive("acl-pubsub-default", "resetchannels", "enum", choices=("allchannels", "resetchannels")),
    Directive("dir", ".", "string", mutable=False, protected=True),
    Directive("databases", "16", "int", mutable=False, minimum=1, maximum=_INT_MAX),
    Directive("maxclients", "10000", "int", minimum=1, maximum=(1 << 32) - 1),
    Directive("loglevel", "notice", "enum", choices=("debug", "verbose", "notice", "warning", "nothing")),
    Directive("logfile", "", "string", mutable=False),
    Directive("pidfile", "", "string", mutable=False),
    Directive("daemonize", "no", "bool", mutable=False),
    Directive("protected-mode", "no", "bool"),
    Directive("timeout", "0", "int", minimum=0, maximum=_INT_MAX),
    Directive("tcp-keepalive", "300", "int", minimum=0, maximum=_INT_MAX),
    Directive("tcp-backlog", "511", "int", mutable=False, minimum=0, maximum=_INT_MAX),
    # Redis accepts any int and clamps it to 1..500 (CONFIG_MIN_HZ, CONFIG_MAX_HZ).
    Directive("hz", "10", "int", minimum=0, maximum=_INT_MAX, clamp=(1, 500)),
    # How much work the active expiry cycle may do per tick (node/commands/expiry.py).
    Directive("active-expire-effort", "1", "int", minimum=1, maximum=10),
    Directive("proto-max-bulk-len", "536870912", "memory", minimum=1024 * 1024, maximum=_LLONG_MAX),
    Directive("client-query-buffer-limit", "1073741824", "memory", minimum=1024 * 1024, maximum=_LLONG_MAX),
    Directive(
        "client-output-buffer-limit",
        "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
        "special",
    ),
    Directive("stream-node-max-entries", "100", "int", minimum=0, maximum=_LLONG_MAX),
    Directive("stream-node-max-bytes", "4096", "memory", minimum=0, maximum=_LLONG_MAX),
    # Redis 8.6: the IDMP-DURATION (seconds) and IDMP-MAXSIZE a new stream starts with.
    Directive("stream-idmp-duration", "100", "int", minimum=1, maximum=86400),
    Directive("stream-idmp-maxsize", "100", "int", minimum=1, maximum=10000),
    Directive("save", "", "special"),
    Directive("appendonly", "no", "bool"),
    Directive("appendfilename", "appendonly.aof", "string", mutable=False),
    Directive("appenddirname", "appendonlydir", "string", mutable=False),
    Directive("appendfsync", "everysec", "enum", choices=("everysec", "always", "no")),
    Directive("dbfilename", "dump.rdb", "string", mutable=False, protected=True),
    Directive("auto-aof-rewrite-percentage", "100", "int", minimum=0, maximum=_INT_MAX),
    Directive("auto-aof-rewrite-min-size", "67108864", "memory", minimum=0, maximum=_LLONG_MAX),
    Directive("aof-load-truncated", "yes", "bool"),
    # RDB (node/rdb/): rdbcompression and rdbchecksum as Redis's (LZF for strings over 20
    # bytes; a CRC-64 at the end of RDB files written here). Rill's own: rdb-version, the RDB
    # version of DUMP payloads (11 as Redis 7.2 writes them, 10 as Redis 7.0 does, which is
    # what a 7.0 RESTOREs; RDB files and full syncs to Redis replicas are always 10:
    # docs/migration.md); rdb-skip-unsupported, an RDB file's keys of types Rill lacks are
    # skipped at load instead of refused.
    Directive("rdbcompression", "yes", "bool"),
    Directive("rdbchecksum", "yes", "bool", mutable=False),
    Directive("rdb-version", "11", "int", minimum=10, maximum=11),
    Directive("rdb-skip-unsupported", "no", "bool"),
    Directive("maxmemory", "0", "memory", minimum=0, maximum=_ULLONG_MAX),
    # Redis's policies are known names; only noeviction is implemented (the others refused).
    Directive(
        "maxmemory-policy", "noeviction", "enum",
        choices=("volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl", "allkeys-lru",
                 "allkeys-lfu", "allkeys-random", "noeviction"),
    ),
    Directive("slowlog-log-slower-than", "10000", "int", minimum=-1, maximum=_LLONG_MAX),
    Directive("slowlog-max-len", "128", "int", minimum=0, maximum=_LLONG_MAX),
    Directive("latency-tracking", "yes", "bool"),
    Directive("lua-time-limit", "5000", "int", minimum=0, maximum=_LLONG_MAX, aliases=("busy-reply-threshold",)),
    Directive("notify-keyspace-events", "", "special"),
    Directive("replica-read-only", "yes", "bool", aliases=("slave-read-only",)),
    Directive("replicaof", "", "special", mutable=False, aliases=("slaveof",)),
    # What a replica tells Sentinel (INFO's slave_priority, replica_announced) and its primary
    # (the address INFO's slaveN line and ROLE show for it), as in Redis.
    Directive("replica-priority", "100", "int", minimum=0, maximum=_INT_MAX, aliases=("slave-priority",)),
    Directive("replica-announced", "yes", "bool"),
    Directive("replica-announce-ip", "", "string", aliases=("slave-announce-ip",)),
    Directive("replica-announce-port", "0", "int", minimum=0, maximum=65535, aliases=("slave-announce-port",)),
    Directive("repl-port", "0", "int", mutable=False, minimum=0, maximum=65535),
    Directive("repl-backlog-size", "16777216", "memory", minimum=16 * 1024, maximum=_LLONG_MAX),
    Directive("repl-timeout", "60", "int", minimum=1, maximum=_INT_MAX),
    Directive("repl-ping-replica-period", "10", "int", minimum=1, maximum=_INT_MAX),
    Directive("min-replicas-to-write", "0", "int", minimum=0, maximum=_INT_MAX, aliases=("min-slaves-to-write",)),
    Directive("min-replicas-max-lag", "10", "int", minimum=0, maximum=_INT_MAX, aliases=("min-slaves-max-lag",)),
    # Milliseconds between two flushes of the effect log into the replication backlog under
    # a steady write load; 0 = each event-loop turn (an idle link and WAIT flush at once).
    # Larger: fewer, larger batches for less CPU, up to that much more replica lag.
    Directive("repl-batch-interval", "0", "int", minimum=0, maximum=1000),
    # The same spacing while the primary's event loop is saturated (node/replication/loop_load.py:
    # it wanted a CPU for 90 % of 100 ms, until a window under 70 %): each batch costs the
    # primary a fixed share of CPU, so when the CPU limits the write rate, fewer batches
    # leave more of it to the clients. 0 = off.
    Directive("repl-busy-batch-interval", "20", "int", minimum=0, maximum=1000),
    # Microseconds: while other processes want its CPU, a replica applies each batch in
    # slices of whole units taking about this much CPU time each and yields the CPU and the
    # event loop between them (replication/replica.py): processes sharing its core, and its
    # clients, wait one slice, not a whole batch. 0 = no slicing.
    Directive("repl-apply-slice-time", "0", "int", minimum=0, maximum=1_000_000),
    # TLS for the replication gRPC link (Rill's counterpart of tls-replication; the RESP port
    # has no TLS): the node's certificate, served as a primary and presented as a replica;
    # the CA that signs its peers' certificates; whether replicas must present one.
    Directive("repl-tls", "no", "bool", mutable=False),
    Directive("repl-tls-cert-file", "", "string", mutable=False),
    Directive("repl-tls-key-file", "", "string", mutable=False),
    Directive("repl-tls-ca-cert-file", "", "string", mutable=False),
    Directive("repl-tls-auth-clients", "no", "bool", mutable=False),
    # Fenced mode (docs/safety.md, *Fenced mode*): epochs on the replication link, FENCE, a
    # primary's lease from a majority of a replica set of `fenced-replica-set-size` nodes
    # (itself included) lasting `fenced-lease-milliseconds` (the sentinels' setting of the
    # same name must be equal). Fixed at startup: the majority arithmetic must not change
    # under a running failover.
    Directive("fenced-mode", "no", "bool", mutable=False),
    Directive("fenced-replica-set-size", "0", "int", mutable=False, minimum=0, maximum=1000),
    Directive("fenced-lease-milliseconds", "1000", "int", mutable=False, minimum=10, maximum=3_600_000),
    # Client TLS (node/server/tls.py), with Redis's names and defaults: a TLS port beside
    # `port` (or alone with `port 0`); certificates, keys and CAs are read again whenever one
    # of them is set (CONFIG SET of the same path reloads it). tls-replication: replicas reach
    # their primary (RESP and the gRPC link) over TLS, sentinels reach the nodes so.
    Directive("tls-port", "0", "int", mutable=False, minimum=0, maximum=65535),
    Directive("tls-cert-file", "", "string"),
    Directive("tls-key-file", "", "string"),
    Directive("tls-key-file-pass", "", "string"),
    Directive("tls-client-cert-file", "", "string"),
    Directive("tls-client-key-file", "", "string"),
    Directive("tls-client-key-file-pass", "", "string"),
    Directive("tls-dh-params-file", "", "string"),
    Directive("tls-ca-cert-file", "", "string"),
    Directive("tls-ca-cert-dir", "", "string"),
    Directive("tls-auth-clients", "yes", "enum", choices=("no", "yes", "optional")),
    Directive("tls-protocols", "", "string"),
    Directive("tls-ciphers", "", "string"),
    Directive("tls-ciphersuites", "", "string"),
    Directive("tls-prefer-server-ciphers", "no", "bool"),
    Directive("tls-session-caching", "yes", "bool"),
    Directive("tls-session-cache-size", "20480", "int", minimum=0, maximum=_INT_MAX),
    Directive("tls-session-cache-timeout", "300", "int", minimum=0, maximum=_INT_MAX),
    Directive("tls-replication", "no", "bool"),
    Directive("tls-cluster", "no", "bool"),
    # Rill's Prometheus metrics over HTTP on the bind addresses (node/app/metrics.py); 0 = off.
    Directive("metrics-port", "0", "int", mutable=False, minimum=0, maximum=65535),
)

DIRECTIVES: Final[dict[str, Directive]] = {d.name: d for d in _DIRECTIVES}
ALIASES: Final[dict[str, str]] = {a: d.name for d in _DIRECTIVES for a in d.aliases}


def canonical_name(name: str) -> str | None:
    name = name.lower()
    if name in DIRECTIVES:
        return name
    return ALIASES.get(name)


def _rewrite_option(name: str) -> str | None:
    """The option a line of the old file rewrites under: a directive, or `user`."""
    return "user" if name == "user" else canonical_name(name)


def _normalize(d: Directive, raw: str, current: str | None = None) -> str:
    """Validate a value and return its canonical text (as CONFIG GET shows it). `current`
    is the value it replaces, for directives that update only what they name."""
    if d.kind in ("int", "memory"):
        if d.kind == "memory":
            # memtoull: "" is 0, a sign is refused, and strtoull saturates on overflow.
            value = 0 if raw == "" else memory_to_bytes(raw)
            if value is None or value < 0:
                raise ConfigError("argument must be a memory value")
            value = min(value, _ULLONG_MAX)
        else:
            value = _parse_int(raw)
        if value is None:
            raise ConfigError("argument couldn't be parsed into an integer")
        if (d.minimum is not None and value < d.minimum) or (d.maximum is not None and value > d.maximum):
            raise ConfigError(f"argument must be between {d.minimum} and {d.maximum} inclusive")
        if d.clamp is not None:
            value = min(max(value, d.clamp[0]), d.clamp[1])
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
        if d.name == "maxmemory-policy" and low != "noeviction":
            # Redis's policy names are known, but Rill evicts nothing (docs/compatibility.md).
            raise ConfigError(f"'{low}' is not supported: Rill only implements noeviction")
        return low
    if d.name == "client-output-buffer-limit":
        return _normalize_obl(raw, current or d.default)
    if d.name == "save":
        return _normalize_save(raw)
    if d.name == "notify-keyspace-events":
        return _normalize_events(raw)
    return raw


def _parse_int(raw: str) -> int | None:
    """string2ll: an optional '-', digits without leading zeros, within int64."""
    body = raw[1:] if raw.startswith("-") else raw
    if not body.isascii() or not body.isdigit() or (len(body) > 1 and body[0] == "0"):
        return None
    value = int(raw)
    return value if -(1 << 63) <= value < (1 << 63) else None


def _normalize_obl(raw: str, before: str) -> str:
    """Classes not named keep their limits, as in Redis (an empty value changes nothing)."""
    words = raw.split()
    if len(words) % 4:
        raise ConfigError("Wrong number of arguments in buffer limit configuration.")
    current = dict(_parse_obl(before))
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


# notify.c: the class letters, in the order keyspaceEventsFlagsToString writes them; "A" is
# every type/event class (not K, E, m or n).
_EVENT_CLASSES: Final = "g$lshzxetdn"
_EVENT_ALL: Final = "g$lshzxetd"


def _normalize_events(raw: str) -> str:
    letters = set(raw)
    if letters - set(_EVENT_CLASSES + "AKEm"):
        raise ConfigError("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")
    if "A" in letters:
        letters |= set(_EVENT_ALL)
    if set(_EVENT_ALL) <= letters:
        out = "A"  # "n" is not shown once every class is on
    else:
        out = "".join(c for c in _EVENT_CLASSES if c in letters)
    return out + "".join(c for c in "KEm" if c in letters)


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
        # Directives whose new values must be applied before CONFIG SET succeeds (TLS
        # material): name -> a function returning Redis's error text, or None when applied.
        self._appliers: dict[str, Callable[[], str | None]] = {}
        # `user` lines (words after `user`, where, the line), for the ACL to load at start-up.
        self.user_lines: list[tuple[list[str], str, str]] = []
        # The ACL's `user` lines for CONFIG REWRITE (set by the server once its users exist).
        self.user_config_lines: Callable[[], list[str]] | None = None
        # Vetoes of CONFIG SET values: (name, canonical value) -> why not, or None.
        self._validators: list[Callable[[str, str], str | None]] = []
        self._refresh_cache()

    # Typed values read on hot paths, refreshed on every change.
    def _refresh_cache(self) -> None:
        v = self._values
        self.stream_node_max_entries = int(v["stream-node-max-entries"])
        self.stream_node_max_bytes = int(v["stream-node-max-bytes"])
        self.stream_idmp_duration = int(v["stream-idmp-duration"])
        self.stream_idmp_maxsize = int(v["stream-idmp-maxsize"])
        self.proto_max_bulk_len = int(v["proto-max-bulk-len"])
        self.query_buffer_limit = int(v["client-query-buffer-limit"])
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
            raise ConfigError("can't set immutable config")
        value = _normalize(d, raw, self._values[canon])
        self._values[canon] = value
        self._refresh_cache()
        if not startup:
            for listener in self._listeners:
                listener(canon, value)

    def set_many(self, pairs: list[tuple[str, str]]) -> None:
        """CONFIG SET with several pairs: all or nothing. As Redis 7's configSetCommand, the
        names are checked first, in order, and the first problem is reported (an unknown
        name, an immutable or protected directive, a duplicate: named as given); then each
        value (named in lower case, the name Redis looked it up by, an alias included). The
        error text is Redis's without its "ERR " code."""
        seen: set[str] = set()
        staged: list[tuple[str, Directive, str]] = []
        for name, raw in pairs:
            canon = canonical_name(name)
            if canon is None:
                raise ConfigError(f"Unknown option or number of arguments for CONFIG SET - '{name}'")
            d = DIRECTIVES[canon]
            reason = ""
            if not d.mutable:
                reason = "can't set protected config" if d.protected else "can't set immutable config"
            elif canon in seen:
                reason = "duplicate parameter"
            if reason:
                raise ConfigError(f"CONFIG SET failed (possibly related to argument '{name}') - {reason}")
            seen.add(canon)
            staged.append((name.lower(), d, raw))
        values: list[tuple[str, str]] = []
        for given, d, raw in staged:
            try:
                value = _normalize(d, raw, self._values[d.name])
                for validator in self._validators:
                    refusal = validator(d.name, value)
                    if refusal is not None:
                        raise ConfigError(refusal)
                values.append((d.name, value))
            except ConfigError as exc:
                raise ConfigError(f"CONFIG SET failed (possibly related to argument '{given}') - {exc}") from None
        old = {canon: self._values[canon] for canon, _ in values}
        for canon, value in values:
            self._values[canon] = value
        self._refresh_cache()
        applied: list[Callable[[], str | None]] = []
        for canon, _ in values:
            apply = self._appliers.get(canon)
            if apply is None or apply in applied:
                continue
            applied.append(apply)
            error = apply()
            if error is not None:
                # restoreBackupConfig: the old values, applied again.
                self._values.update(old)
                self._refresh_cache()
                for again in applied:
                    again()
                raise ConfigError(f"CONFIG SET failed (possibly related to argument '{canon}') - {error}")
        for canon, value in values:
            for listener in self._listeners:
                listener(canon, value)

    def on_change(self, listener: Callable[[str, str], None]) -> None:
        self._listeners.append(listener)

    def on_apply(self, names: tuple[str, ...], apply: Callable[[], str | None]) -> None:
        """`apply` runs when CONFIG SET changes one of `names` (once per CONFIG SET); an error
        text it returns makes the CONFIG SET fail with every value restored."""
        for name in names:
            self._appliers[name] = apply
    def add_validator(self, validator: Callable[[str, str], str | None]) -> None:
        """A rule CONFIG SET values must pass: it returns why a (name, value) is refused."""
        self._validators.append(validator)

    def load_file(self, path: str) -> None:
        """Apply a redis.conf-style file: `directive arg ...` per line, '#' comments."""
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                words = split_config_line(line)
                where = f"the configuration file {path}, at line {lineno}"
                if words is None:
                    raise ConfigError("Unbalanced quotes in configuration line", where, line.strip())
                if not words:
                    continue
                if words[0].lower() == "user" and len(words) >= 2:
                    self.user_lines.append((words[1:], where, line.strip()))
                    continue
                try:
                    self.apply_directive(words[0], words[1:])
                except ConfigError as exc:
                    raise ConfigError(str(exc), where, line.strip()) from None
        # Absolute: the node moves into its data directory after reading the configuration.
        self.config_file = os.path.abspath(path)

    def apply_directive(self, name: str, args: list[str]) -> None:
        if name.lower() == "user" and args and args != [""]:
            self.user_lines.append((args, "the command line", " ".join(["user", *args])))
            return
        canon = canonical_name(name)
        if canon is None:
            raise ConfigError("Bad directive or wrong number of arguments")
        if canon == "save" and args == [""]:
            args = []
        if DIRECTIVES[canon].kind != "special" and canon != "bind" and len(args) != 1:
            raise ConfigError("Bad directive or wrong number of arguments")
        self.set(canon, " ".join(args), startup=True)

    def rewrite(self) -> None:
        """CONFIG REWRITE, as Redis's rewriteConfig (node/config_rewrite.py): the file the node
        was started with keeps its comments and layout; each directive goes back on its line
        with its current value, or is appended when it differs from its default; lines of
        directives now at their default (or unset) go."""
        if self.config_file is None:
            raise ConfigError("The server is running without a config file")
        state = RewriteState(read_old(self.config_file), _rewrite_option)
        for d in _DIRECTIVES:
            self._rewrite_directive(state, d)
        # rewriteConfigUserOption: with an ACL file the users live there and `user` lines go.
        if not self._values["aclfile"] and self.user_config_lines is not None:
            for line in self.user_config_lines():
                state.rewrite_line("user", line, True)
        state.mark("user")
        state.remove_orphaned()
        overwrite_file(self.config_file, state.content())

    def _rewrite_directive(self, state: RewriteState, d: Directive) -> None:
        """The line(s) of one directive, with the force rule of its type in config.c."""
        name, value = d.name, self._values[d.name]
        default = _normalize(d, d.default) if d.kind != "special" or d.default else d.default
        if d.kind in ("int", "bool", "enum"):
            state.rewrite_line(name, f"{name} {value}", value != default)
        elif d.kind == "memory":
            state.rewrite_line(name, f"{name} {format_memory(int(value))}", value != default)
        elif name == "dir":
            state.rewrite_line(name, f"dir {sdscatrepr(value)}", True)  # always, absolute
        elif name == "bind":
            if value == default:
                state.mark(name)
            else:
                state.rewrite_line(name, "bind " + (value or '""'), True)
        elif name == "replicaof":
            if value:
                state.rewrite_line(name, f"replicaof {value}", True)
            else:
                state.mark(name)  # a primary's file loses its replicaof lines
        elif name == "save":
            words = value.split()
            for i in range(0, len(words), 2):
                state.rewrite_line(name, f"save {words[i]} {words[i + 1]}", True)
            if not words:
                state.rewrite_line(name, 'save ""', True)  # so that no default applies
        elif name == "notify-keyspace-events":
            state.rewrite_line(name, f"{name} {sdscatrepr(value)}", value != "")
        elif name == "client-output-buffer-limit":
            defaults = dict(_parse_obl(d.default))
            for cls, limits in _parse_obl(value):
                hard, soft, seconds = limits
                shown = "replica" if cls == "slave" else cls
                state.rewrite_line(
                    name, f"{name} {shown} {format_memory(hard)} {format_memory(soft)} {seconds}",
                    limits != defaults[cls],
                )
        elif name in _UNSET_WHEN_EMPTY and value == "":
            state.mark(name)
        else:
            # A string: always written once set, unless it is its (non-empty) default.
            state.rewrite_line(name, f"{name} {sdscatrepr(value)}", value != default or name in _UNSET_WHEN_EMPTY)


# Redis's EMPTY_STRING_IS_NULL strings: "" means unset, and an unset one has no line.
_UNSET_WHEN_EMPTY: Final = frozenset({
    "requirepass", "masterauth", "masteruser", "pidfile", "replica-announce-ip", "aclfile",
    "tls-cert-file", "tls-key-file", "tls-key-file-pass", "tls-client-cert-file", "tls-client-key-file",
    "tls-client-key-file-pass", "tls-dh-params-file", "tls-ca-cert-file", "tls-ca-cert-dir", "tls-protocols",
    "tls-ciphers", "tls-ciphersuites",
})
