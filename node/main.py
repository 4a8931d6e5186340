"""The `rill` command line: `rill node [config-file] [--directive value ...]` starts a node."""

from __future__ import annotations

import argparse
import asyncio
import logging
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
    (a directive takes every following word up to the next `--`)."""
    config = Config()
    args = list(argv)
    if args and not args[0].startswith("--"):
        config.load_file(args.pop(0))
    i = 0
    while i < len(args):
        word = args[i]
        if not word.startswith("--") or len(word) == 2:
            raise ConfigError(f"Bad directive or wrong number of arguments ('{word}')")
        name = word[2:]
        values: list[str] = []
        i += 1
        while i < len(args) and not args[i].startswith("--"):
            values.append(args[i])
            i += 1
        if canonical_name(name) is None:
            raise ConfigError(f"Bad directive or wrong number of arguments ('{name}')")
        config.apply_directive(name, values if values else [""])
    return config


def setup_logging(config: Config) -> None:
    level = _LOG_LEVELS[config.get("loglevel")]
    logfile = config.get("logfile")
    handler: logging.Handler = logging.FileHandler(logfile) if logfile else logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("%(process)d:M %(asctime)s.%(msecs)03d %(message)s", "%d %b %Y %H:%M:%S"))
    root = logging.getLogger("rill")
    root.handlers[:] = [handler]
    root.setLevel(level)


def run_node(argv: list[str]) -> int:
    try:
        config = parse_node_args(argv)
    except (ConfigError, OSError) as exc:
        print(f"*** FATAL CONFIG FILE ERROR (Rill {__version__}) ***\n{exc}", file=sys.stderr)
        return 1
    setup_logging(config)
    try:
        import uvloop

        uvloop.install()
    except ImportError:  # the stdlib loop works, only slower
        logging.getLogger("rill").warning("uvloop not available, using the asyncio event loop")
    from node.server.server import Server

    server = Server(config)
    try:
        asyncio.run(server.serve())
    except OSError as exc:
        logging.getLogger("rill").error("Could not start: %s", exc)
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
    if not argv:
        parser.print_help()
        return 2
    if argv[0] == "node":
        if argv[1:2] in (["-h"], ["--help"]):
            print("usage: rill node [config-file] [--directive value ...]\n\ndirectives:")
            for name in sorted(DIRECTIVES):
                print(f"  --{name} (default: {DIRECTIVES[name].default!r})")
            return 0
        return run_node(argv[1:])
    parser.parse_args(argv)
    return 2


if __name__ == "__main__":
    sys.exit(main())
