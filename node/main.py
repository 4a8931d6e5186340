"""The `rill` command line: `rill node [config-file] [--directive value ...]` starts a node,
`rill sentinel sentinel.conf [--directive value ...]` (or `rill node sentinel.conf --sentinel`,
as redis-server takes it) a sentinel; `rill rdb export|check` handles RDB files and `rill
cutover` moves a primary's role from Redis to Rill (docs/migration.md)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys

from node import REDIS_VERSION, __version__
from node.config import DIRECTIVES, Config, ConfigError, canonical_name

_LOG_LEVELS = {
    "debug": logging.DEBUG,
    "verbose": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "nothing": logging.CRITICAL + 10,
}


def parse_node_args(argv: list[str]) -> Config:
    """redis-server style: an optional config file first, then `--directive value...` pairs
    (a directive takes every following word up to the next `--`). Then, as Redis does when it
    applies `dir`, the process moves into the data directory."""
    config = Config()
    args = list(argv)
    if args and not args[0].startswith("--"):
        path = args.pop(0)
        try:
            config.load_file(path)
        except OSError as exc:
            raise ConfigError(f"Fatal error, can't open config file '{path}': {exc.strerror}") from None
    i = 0
    while i < len(args):
        word = args[i]
        values: list[str] = []
        i += 1
        while i < len(args) and not args[i].startswith("--"):
            values.append(args[i])
            i += 1
        name = word[2:] if word.startswith("--") else word
        try:
            if not word.startswith("--") or not name or canonical_name(name) is None:
                raise ConfigError("Bad directive or wrong number of arguments")
            config.apply_directive(name, values if values else [""])
        except ConfigError as exc:
            shown = " ".join([name, *(f'"{v}"' for v in values)])
            raise ConfigError(str(exc), f"the command line, at {word}", shown) from None
    data_dir = config.get("dir")
    try:
        os.chdir(data_dir)
    except OSError as exc:
        raise ConfigError(
            f"Can't chdir to '{data_dir}': {exc.strerror}", "the configuration", f'dir "{data_dir}"'
        ) from None
    # CONFIG GET dir shows the absolute path, as Redis (which reports getcwd()) does.
    config.set("dir", os.getcwd(), startup=True)
    return config


def fatal_config_report(exc: ConfigError) -> str:
    """The report redis-server prints before exiting on a bad configuration."""
    lines = [f"*** FATAL CONFIG FILE ERROR (Rill {__version__}) ***"]
    if exc.where:
        lines.append(f"Reading {exc.where}")
    if exc.line:
        lines.append(f">>> '{exc.line}'")
    lines.append(str(exc))
    return "\n".join(lines)


def setup_logging(config: Config) -> None:
    level = _LOG_LEVELS[config.get("loglevel")]
    logfile = config.get("logfile")
    handler: logging.Handler = logging.FileHandler(logfile) if logfile else logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("%(process)d:M %(asctime)s.%(msecs)03d %(message)s", "%d %b %Y %H:%M:%S"))
    for name in ("rill", "replication"):  # the node's log, and the log shipper's it embeds
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(level)
        logger.propagate = False
    # The event loop's and gRPC's own reports (a transport error, an exception in a callback)
    # belong in the same log, not on stderr.
    for name in ("asyncio", "grpc"):
        other = logging.getLogger(name)
        other.handlers[:] = [handler]
        other.setLevel(logging.WARNING)
        other.propagate = False


def run_node(argv: list[str]) -> int:
    try:
        config = parse_node_args(argv)
    except ConfigError as exc:
        print(fatal_config_report(exc), file=sys.stderr)
        return 1
    try:
        setup_logging(config)
    except OSError as exc:
        print(f"Can't open the log file: {exc.strerror}", file=sys.stderr)
        return 1
    if not config.get_int("port") and not config.get_int("tls-port"):
        logging.getLogger("rill").error("Configured to not listen anywhere, exiting.")
        print("Configured to not listen anywhere, exiting.", file=sys.stderr)
        return 1
    try:
        import uvloop

        uvloop.install()
    except ImportError:  # the stdlib loop works, only slower
        logging.getLogger("rill").warning("uvloop not available, using the asyncio event loop")
    # BGSAVE and AOF rewrites fork the node (node/persistence/background.py). gRPC's fork
    # support would restart its threads in the child, polling the parent's descriptors; the
    # child never uses gRPC, so its fork handlers stay off (set before gRPC is imported).
    os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
    # gRPC's C core writes INFO lines to stderr (a GOAWAY when a primary stops, ...); the
    # link reports its own events in the node's log. Also read when gRPC is imported.
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
    from node.app.rill_node import RillNode
    from node.persistence.loading import PersistenceError

    try:
        node = RillNode(config)
    except ConfigError as exc:  # a `user` line, or the ACL file
        print(fatal_config_report(exc), file=sys.stderr)
        logging.getLogger("rill").error("%s", exc)
        return 1
    except OSError as exc:  # settings that cannot work together (fenced mode without the AOF)
        logging.getLogger("rill").error("Could not start: %s", exc)
        print(f"Could not start: {exc}", file=sys.stderr)
        return 1
    try:
        asyncio.run(node.serve())
    except OSError as exc:
        logging.getLogger("rill").error("Could not start: %s", exc)
        print(f"Could not start: {exc}", file=sys.stderr)
        return 1
    except PersistenceError as exc:
        # The data on disk cannot be loaded: refuse to start rather than serve without it.
        logging.getLogger("rill").error("%s", exc)
        print(exc, file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="rill", description="Rill: a Redis-Streams-compatible stream store.")
    parser.add_argument("--version", action="version", version=f"rill {__version__} (redis {REDIS_VERSION} compatible)")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser(
        "node",
        help="start a node",
        description="Start a node. Flags follow redis-server: rill node [redis.conf] [--port 6379] [--requirepass x] ...",
        add_help=False,
    )
    sub.add_parser(
        "sentinel",
        help="start a sentinel (Redis Sentinel compatible failover monitor)",
        description="rill sentinel sentinel.conf [--port 26379] [--sentinel monitor ...] ...",
        add_help=False,
    )
    sub.add_parser(
        "cluster",
        help="start a local cluster: one primary and two replicas on loopback (Ctrl-C stops them)",
        add_help=False,
    )
    sub.add_parser("chaos", help="the chaos lab: fault scenarios and their checked histories", add_help=False)
    sub.add_parser("cutover", help="move the primary role from a redis-server to its Rill replica (or back) "
                   "without losing an acknowledged write", add_help=False)
    sub.add_parser("rdb", help="RDB files: `rdb export FILE` writes a running node's data as one redis-server loads, "
                   "`rdb check FILE` reads one", add_help=False)
    check = sub.add_parser("check-aof", help="check (and repair) an AOF manifest, AOF file or snapshot")
    check.add_argument("--fix", action="store_true", help="cut a truncated or damaged AOF at its last complete command")
    check.add_argument("file", help="appendonly.aof.manifest, an incr .aof file or a snapshot")
    if not argv:
        parser.print_help()
        return 2
    if argv[0] == "sentinel" or (argv[0] == "node" and "--sentinel" in argv[1:]):
        if argv[1:2] in (["-h"], ["--help"]):
            print("usage: rill sentinel sentinel.conf [--directive value ...]\n\n"
                  "Reads Redis's sentinel.conf syntax and rewrites the file as its state changes.")
            return 0
        from node.sentinel.shell import run as run_sentinel

        return run_sentinel(argv[1:])
    if argv[0] == "node":
        if argv[1:2] in (["-h"], ["--help"]):
            print("usage: rill node [config-file] [--directive value ...]\n\ndirectives:")
            for name in sorted(DIRECTIVES):
                print(f"  --{name} (default: {DIRECTIVES[name].default!r})")
            return 0
        return run_node(argv[1:])
    if argv[0] == "cluster":
        from node.cluster import main as run_cluster

        return run_cluster(argv[1:])
    if argv[0] == "cutover":
        from node.cutover import main as run_cutover

        return run_cutover(argv[1:])
    if argv[0] == "rdb":
        from node.persistence.rdb_cli import main as run_rdb

        return run_rdb(argv[1:])
    if argv[0] == "chaos":
        from chaos.cli import main as run_chaos  # imported only here: the node never loads the lab

        return run_chaos(argv[1:])
    args = parser.parse_args(argv)
    if args.command == "check-aof":
        from node.persistence.check import check_aof

        return check_aof(args.file, args.fix, sys.stdout)
    return 2


if __name__ == "__main__":
    sys.exit(main())
