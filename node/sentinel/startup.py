"""Starting a sentinel as redis-sentinel starts (server.c main in sentinel mode,
sentinelCheckConfigFile, sentinelIsRunning): the configuration file is required and must be
writable (the sentinel keeps its state in it); `--directive value …` words on the command
line are read as extra lines after the file; the process moves into `dir`; a sentinel
without an id picks a random one and rewrites its file before doing anything else.
"""

from __future__ import annotations

import logging
import os
import random
import secrets
import sys
from dataclasses import dataclass

from node.sentinel import config as sentinel_config
from node.sentinel.clock import SYSTEM_CLOCK
from node.sentinel.policy import Sentinel
from node.sentinel.runner import REDIS_LOG_LEVELS
from node.sentinel.timings import RUN_ID_SIZE


class StartupError(Exception):
    """The sentinel cannot start; the text is what redis-sentinel prints before exiting 1."""


@dataclass
class Loaded:
    sentinel: Sentinel
    options: sentinel_config.ServerOptions
    config_path: str  # absolute: the process changes directory afterwards


def split_args(argv: list[str]) -> tuple[str | None, list[list[str]]]:
    """The configuration file (the first word unless it is an option) and the command-line
    directives: `--name` takes the words up to the next `--` (`--sentinel` alone is the
    switch to sentinel mode, which the file parser takes as a bare `sentinel` line)."""
    args = list(argv)
    path = args.pop(0) if args and not args[0].startswith("--") else None
    overrides: list[list[str]] = []
    for word in args:
        if word.startswith("--") and len(word) > 2:
            overrides.append([word[2:]])
        elif overrides:
            overrides[-1].append(word)
        else:
            raise StartupError(f"Invalid argument '{word}'")
    return path, overrides


def load(argv: list[str], *, now: int | None = None) -> Loaded:
    """Read and check the configuration; raises StartupError with redis-sentinel's text."""
    path, overrides = split_args(argv)
    if path is None:
        raise StartupError("Sentinel needs config file on disk to save state. Exiting...")
    config_path = os.path.abspath(path)
    try:
        with open(config_path, encoding="utf-8", errors="surrogateescape") as f:
            text = f.read()
    except OSError as exc:
        raise StartupError(f"Fatal error, can't open config file '{config_path}': {exc.strerror}") from None
    try:
        sentinel, options = sentinel_config.load(
            text, now=SYSTEM_CLOCK.monotonic_ms() if now is None else now, rng=random.Random(), overrides=overrides
        )
    except sentinel_config.ConfigError as exc:
        raise StartupError(exc.report()) from None
    if not os.access(config_path, os.W_OK):
        error = os.strerror(13)
        raise StartupError(f"Sentinel config file {config_path} is not writable: {error}. Exiting...")
    if options.dir is not None:
        try:
            os.chdir(options.dir)
        except OSError as exc:
            raise StartupError(f"Can't chdir to '{options.dir}': {exc.strerror}") from None
    return Loaded(sentinel, options, config_path)


def ensure_id(loaded: Loaded) -> None:
    """sentinelIsRunning: a sentinel without an id picks one and persists it at once, so
    it keeps it across restarts."""
    if loaded.sentinel.myid:
        return
    loaded.sentinel.configure(None, "myid", secrets.token_hex(RUN_ID_SIZE // 2))
    try:
        sentinel_config.flush(loaded.config_path, loaded.sentinel, loaded.options)
    except OSError as exc:
        raise StartupError(f"Sentinel was not able to save its id to {loaded.config_path}: {exc.strerror}") from None


class _RedisFormatter(logging.Formatter):
    """redis-server's log line: `pid:X 02 Jan 2025 10:00:00.000 # text`, with Redis's mark
    for the level (. debug, - verbose, * notice, # warning) and X for a sentinel."""

    MARKS = {logging.DEBUG: ".", 15: "-", logging.INFO: "*", logging.WARNING: "#"}

    def format(self, record: logging.LogRecord) -> str:
        mark = self.MARKS.get(record.levelno, "#")
        stamp = self.formatTime(record, "%d %b %Y %H:%M:%S") + ".%03d" % record.msecs
        return f"{record.process}:X {stamp} {mark} {record.getMessage()}"


def setup_logging(options: sentinel_config.ServerOptions) -> None:
    logging.addLevelName(15, "VERBOSE")
    handler: logging.Handler = (
        logging.FileHandler(options.logfile) if options.logfile else logging.StreamHandler(sys.stdout)
    )
    handler.setFormatter(_RedisFormatter())
    logger = logging.getLogger("rill")
    logger.handlers[:] = [handler]
    logger.setLevel(REDIS_LOG_LEVELS[options.loglevel])
    logger.propagate = False
    other = logging.getLogger("asyncio")
    other.handlers[:] = [handler]
    other.setLevel(logging.WARNING)
    other.propagate = False
