"""The server-level directives of a sentinel's file (`port`, `bind`, `requirepass`, `user`,
TLS, …, not `sentinel …`): which ones Redis 7.2 knows, applying one with redis-server's
checks and messages (`ConfigError`), the `ServerOptions` they make, the settings of the
sentinel's server core they give, and the ACL users they describe. node/sentinel/config.py
reads the file with them and rewrites it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from node import SENTINEL_REDIS_VERSION
from node.commands.acl_users import AclUsers
from node.config import Config as NodeConfig
from node.config import ConfigError as NodeConfigError
from node.sentinel.command_table import command_table
from node.sentinel.ctext import atoi
from node.sentinel.timings import DEFAULT_PORT

REDIS_VERSION: Final = SENTINEL_REDIS_VERSION

# The directive names (and aliases) Redis 7.2 knows (config.c static_configs): accepted in a
# sentinel's file even when a sentinel has no use for them.
_REDIS_DIRECTIVE_NAMES: Final = """acl-pubsub-default aclfile acllog-max-len active-defrag-cycle-max active-defrag-cycle-min
    active-defrag-ignore-bytes active-defrag-max-scan-fields active-defrag-threshold-lower
    active-defrag-threshold-upper active-expire-effort activedefrag activerehashing
    aof-load-truncated aof-rewrite-incremental-fsync aof-timestamp-enabled aof-use-rdb-preamble
    aof_rewrite_cpulist appenddirname appendfilename appendfsync appendonly
    auto-aof-rewrite-min-size auto-aof-rewrite-percentage bgsave_cpulist bind bind-source-addr
    bio_cpulist busy-reply-threshold client-output-buffer-limit client-query-buffer-limit
    cluster-allow-pubsubshard-when-down cluster-allow-reads-when-down
    cluster-allow-replica-migration cluster-announce-bus-port cluster-announce-hostname
    cluster-announce-human-nodename cluster-announce-ip cluster-announce-port
    cluster-announce-tls-port cluster-config-file cluster-enabled cluster-link-sendbuf-limit
    cluster-migration-barrier cluster-node-timeout cluster-port cluster-preferred-endpoint-type
    cluster-replica-no-failover cluster-replica-validity-factor cluster-require-full-coverage
    cluster-slave-no-failover cluster-slave-validity-factor crash-log-enabled
    crash-memcheck-enabled daemonize databases dbfilename disable-thp dir
    dynamic-hz enable-debug-command enable-module-command enable-protected-configs
    hash-max-listpack-entries hash-max-listpack-value hash-max-ziplist-entries
    hash-max-ziplist-value hide-user-data-from-log hz ignore-warnings io-threads
    io-threads-do-reads jemalloc-bg-thread latency-monitor-threshold latency-tracking
    latency-tracking-info-percentiles lazyfree-lazy-eviction lazyfree-lazy-expire
    lazyfree-lazy-server-del lazyfree-lazy-user-del lazyfree-lazy-user-flush lfu-decay-time
    lfu-log-factor list-compress-depth list-max-listpack-size list-max-ziplist-size
    locale-collate logfile loglevel lua-time-limit master-auth-pass masterauth masteruser
    max-new-connections-per-cycle max-new-tls-connections-per-cycle maxclients maxmemory
    maxmemory-clients maxmemory-eviction-tenacity maxmemory-policy maxmemory-samples
    min-replicas-max-lag min-replicas-to-write min-slaves-max-lag min-slaves-to-write
    no-appendfsync-on-rewrite notify-keyspace-events oom-score-adj oom-score-adj-values
    pidfile port proc-title-template propagation-error-behavior protected-mode
    proto-max-bulk-len rdb-del-sync-files rdb-key-save-delay rdbchecksum rdbcompression
    repl-backlog-size repl-backlog-ttl repl-diskless-load repl-diskless-sync
    repl-diskless-sync-delay repl-diskless-sync-max-replicas repl-disable-tcp-nodelay
    repl-ping-replica-period repl-ping-slave-period repl-timeout replica-announce-ip
    replica-announce-port replica-announced replica-ignore-disk-write-errors
    replica-ignore-maxmemory replica-lazy-flush replica-priority replica-read-only
    replica-serve-stale-data replicaof requirepass save sanitize-dump-payload
    set-max-intset-entries set-max-listpack-entries set-max-listpack-value
    set-proc-title shutdown-on-sigint shutdown-on-sigterm shutdown-timeout
    slave-announce-ip slave-announce-port slave-ignore-maxmemory slave-lazy-flush
    slave-priority slave-read-only slave-serve-stale-data slaveof slowlog-log-slower-than
    slowlog-max-len socket-mark-id stop-writes-on-bgsave-error stream-node-max-bytes
    stream-node-max-entries supervised syslog-enabled syslog-facility syslog-ident
    tcp-backlog tcp-keepalive timeout tls-auth-clients tls-ca-cert-dir tls-ca-cert-file
    tls-cert-file tls-ciphers tls-ciphersuites tls-client-cert-file tls-client-key-file
    tls-client-key-file-pass tls-cluster tls-dh-params-file tls-key-file tls-key-file-pass
    tls-port tls-prefer-server-ciphers tls-protocols tls-replication tls-session-cache-size
    tls-session-cache-timeout tls-session-caching unixsocket unixsocketperm
    zset-max-listpack-entries zset-max-listpack-value zset-max-ziplist-entries
    zset-max-ziplist-value"""
REDIS_DIRECTIVES: Final = frozenset(_REDIS_DIRECTIVE_NAMES.split())


_LOGLEVELS: Final = ("debug", "verbose", "notice", "warning", "nothing")
# Server directives a sentinel's server core applies as a node's (node/config.py checks them).
CORE_DIRECTIVES: Final = frozenset({
    "aclfile", "acllog-max-len", "acl-pubsub-default", "tls-port", "tls-cert-file", "tls-key-file",
    "tls-key-file-pass", "tls-client-cert-file", "tls-client-key-file", "tls-client-key-file-pass",
    "tls-dh-params-file", "tls-ca-cert-file", "tls-ca-cert-dir", "tls-auth-clients", "tls-protocols", "tls-ciphers",
    "tls-ciphersuites", "tls-prefer-server-ciphers", "tls-session-caching", "tls-session-cache-size",
    "tls-session-cache-timeout", "tls-replication", "tls-cluster",
})
# Rill's own server directive (Redis has none): the port of the Prometheus metrics.
METRICS_PORT: Final = "metrics-port"
_DEFAULT_PERCENTILES: Final = "50 99 99.9"


class ConfigError(Exception):
    """A fatal configuration error, reported as redis-server reports it."""

    def __init__(self, message: str, lineno: int = 0, line: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.lineno = lineno
        self.line = line

    def report(self) -> str:
        return (
            f"\n*** FATAL CONFIG FILE ERROR (Redis {REDIS_VERSION}) ***\n"
            f"Reading the configuration file, at line {self.lineno}\n"
            f">>> '{self.line}'\n{self.message}\n"
        )


@dataclass(slots=True)
class ServerOptions:
    """The server-level directives of a sentinel's file (not `sentinel …`)."""

    port: int = DEFAULT_PORT
    bind: list[str] | None = None  # None: Redis's default (all interfaces)
    dir: str | None = None  # as configured; the shell changes into it at start-up
    requirepass: str | None = None
    logfile: str = ""
    pidfile: str | None = None
    daemonize: bool = False
    loglevel: str = "notice"
    protected_mode: bool = False  # a sentinel must be reachable: Redis forces it off
    latency_percentiles: str = _DEFAULT_PERCENTILES
    # `user` lines (the words after `user`), in order, for the ACL (node/commands/acl_users.py).
    users: list[list[str]] = field(default_factory=list)
    users_at: list[tuple[int, str]] = field(default_factory=list)  # each one's line number and text
    # Directives the sentinel's server core takes as a node does (TLS, the ACL file, the ACL
    # LOG's length, acl-pubsub-default): name -> its words, checked when read.
    core_directives: dict[str, list[str]] = field(default_factory=dict)
    metrics_port: int = 0  # Rill's own: Prometheus metrics over HTTP (node/sentinel/metrics.py); 0 = off


def yes_no(value: str) -> bool | None:
    low = value.lower()
    return True if low == "yes" else False if low == "no" else None


def _port(args: list[str]) -> int:
    if len(args) != 1:
        raise ConfigError("wrong number of arguments")
    port = atoi(args[0]) if args[0].lstrip("-").isdigit() else None
    if port is None or not 0 <= port <= 65535:
        raise ConfigError("argument must be between 0 and 65535 inclusive" if port is not None
                          else "argument couldn't be parsed into an integer")
    return port


def server_directive(options: ServerOptions, name: str, args: list[str]) -> None:
    """Apply a server directive; raises ConfigError with Redis's message."""
    if name == "user":
        if not args:
            raise ConfigError("Bad directive or wrong number of arguments")
        options.users.append(args)
        return
    if name in CORE_DIRECTIVES:
        try:
            NodeConfig().apply_directive(name, args)
        except NodeConfigError as exc:
            raise ConfigError(str(exc)) from None
        options.core_directives[name] = args
        return
    if name in ("include", "loadmodule", "rename-command"):
        raise ConfigError("Bad directive or wrong number of arguments")
    if name == METRICS_PORT:
        options.metrics_port = _port(args)
        return
    if name not in REDIS_DIRECTIVES:
        raise ConfigError("Bad directive or wrong number of arguments")
    multi_arg = name in ("bind", "save", "latency-tracking-info-percentiles", "client-output-buffer-limit",
                         "oom-score-adj-values", "replicaof", "slaveof", "notify-keyspace-events")
    if not multi_arg and len(args) != 1:
        raise ConfigError("wrong number of arguments")
    value = args[0] if args else ""
    if name == "port":
        options.port = _port(args)
    elif name == "bind":
        if len(args) > 16:
            raise ConfigError("Too many bind addresses specified.")
        options.bind = args if args != [""] else []
    elif name == "dir":
        options.dir = value
    elif name == "requirepass":
        options.requirepass = value or None
    elif name == "logfile":
        options.logfile = value
    elif name == "pidfile":
        options.pidfile = value or None
    elif name in ("daemonize", "protected-mode"):
        flag = yes_no(value)
        if flag is None:
            raise ConfigError("argument must be 'yes' or 'no'")
        if name == "daemonize":
            options.daemonize = flag
        else:
            options.protected_mode = flag
    elif name == "loglevel":
        if value.lower() not in _LOGLEVELS:
            raise ConfigError(f"argument(s) must be one of the following: {', '.join(_LOGLEVELS)}")
        options.loglevel = value.lower()
    elif name == "latency-tracking-info-percentiles":
        if len(args) == 1 and " " in value:
            args = value.split()
        options.latency_percentiles = " ".join(args) if args != [""] else '""'


def check_users(options: ServerOptions) -> None:
    """The `user` lines (and an ACL file) load, as Redis checks them at start-up."""
    try:
        acl_lines(options)
    except NodeConfigError as exc:
        lineno = int(exc.where.rsplit(" ", 1)[-1]) if exc.where.startswith("the configuration file, at line") else 0
        raise ConfigError(str(exc), lineno, exc.line) from None


def announced_port(options: ServerOptions) -> int:
    """The port a sentinel tells its peers in hello messages: its TLS port when its links
    are TLS (sentinelSendHello), else its port."""
    tls_port = options.core_directives.get("tls-port", ["0"])[0]
    tls_links = options.core_directives.get("tls-replication", ["no"])[0].lower() == "yes"
    return int(tls_port) if tls_links and tls_port.isdigit() and int(tls_port) else options.port


def core_config(options: ServerOptions) -> NodeConfig:
    """The settings of the sentinel's server core: where it listens, its password, its ACL
    users and TLS."""
    config = NodeConfig()
    config.set("port", str(options.port), startup=True)
    # No bind line: every IPv4 interface, as Redis's default ("* -::*") for a sentinel,
    # which must be reachable by its peers (Redis also turns protected mode off).
    config.set("bind", " ".join(options.bind) if options.bind else "0.0.0.0", startup=True)
    if options.requirepass:
        config.set("requirepass", options.requirepass, startup=True)
    config.set("loglevel", options.loglevel, startup=True)
    config.set("logfile", options.logfile, startup=True)
    for name, args in options.core_directives.items():
        config.apply_directive(name, args)
    config.user_lines = [(args, f"the configuration file, at line {lineno}", line)
                         for args, (lineno, line) in zip(options.users, options.users_at)]
    return config


def acl_lines(options: ServerOptions) -> list[str]:
    """The ACL users the file and requirepass describe, as `user` lines: what a rewrite writes
    before the sentinel runs (its first start's); a running one writes its users (`flush`)."""
    config = core_config(options)
    acl = AclUsers(command_table(_unbound), config)
    acl.load_config(config)
    return acl.config_lines()


def _unbound(name: str) -> None:
    """A handler for a table only ACL rules read (no command runs)."""
    return None
