"""`rill cutover`: moves the primary role from a redis-server to the Rill node replicating from
it (or back, from a Rill primary to a redis-server replica of it) without losing an
acknowledged write, while clients keep writing. It speaks RESP only (redis-py), so either
side may be Redis or Rill; docs/migration.md describes the procedure and the commands it runs:

1. check that the target replicates from the source, link up;
2. `CLIENT PAUSE <pause-ms> WRITE` on the source: its clients' writes wait (reads go on);
3. wait until the target's slave_repl_offset reaches the source's master_repl_offset
   (nothing the source acknowledged is missing on the target);
4. promote the target: `SENTINEL FAILOVER <name>` when sentinels manage the source (they
   promote it and tell the clients), else `REPLICAOF NO ONE` on it;
5. check the source's offset did not move (a pause that ran out would let writes in: the
   tool says so and exits 1), then `REPLICAOF <target>` on the source, so that the writes
   still waiting there are refused (-READONLY: never acknowledged, the clients retry on the
   new primary) and the source keeps a copy of the data;
6. `CLIENT UNPAUSE` on the source.

Any failure before step 4 unpauses the source and changes nothing else.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import TypeVar

import redis

T = TypeVar("T")


class CutoverError(Exception):
    pass


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected host:port, got {text!r}")
    return host, int(port)


def _info(client: redis.Redis) -> dict[str, str]:
    """INFO replication's fields as text (redis-py parses them into numbers and dicts)."""
    return {name: str(value) for name, value in client.info("replication").items()}


def _wait(check: Callable[[], T | None], timeout: float, what: str) -> T:
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise CutoverError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.02)


def cutover(source: tuple[str, int], target: tuple[str, int], password: str, sentinel: tuple[str, int] | None,
            name: str, pause_ms: int, timeout: float, say: Callable[[str], None]) -> None:
    kwargs: dict[str, object] = {"password": password or None, "socket_timeout": timeout, "protocol": 2}
    src = redis.Redis(host=source[0], port=source[1], **kwargs)  # type: ignore[arg-type]
    dst = redis.Redis(host=target[0], port=target[1], **kwargs)  # type: ignore[arg-type]
    fields = _info(dst)
    if fields.get("role") != "slave" or int(fields.get("master_port", "0")) != source[1]:
        raise CutoverError(f"{target[0]}:{target[1]} does not replicate from {source[0]}:{source[1]}")
    if fields.get("master_link_status") != "up":
        raise CutoverError(f"{target[0]}:{target[1]}'s link to the source is down")
    started = time.monotonic()
    src.execute_command("CLIENT", "PAUSE", pause_ms, "WRITE")
    say(f"source paused for writes (up to {pause_ms} ms)")
    promoted = False
    try:
        offset = int(_info(src)["master_repl_offset"])
        _wait(lambda: int(_info(dst)["slave_repl_offset"]) >= offset, timeout,
              f"the target to reach the source's offset {offset}")
        say(f"target caught up at offset {offset} ({(time.monotonic() - started) * 1000:.0f} ms after the pause)")
        if sentinel is not None:
            with redis.Redis(host=sentinel[0], port=sentinel[1], socket_timeout=timeout, decode_responses=True) as s:
                s.execute_command("SENTINEL", "FAILOVER", name)
                promoted = True
                _wait(lambda: _info(dst).get("role") == "master", timeout, "the sentinels to promote the target")
                _wait(lambda: [str(x) for x in s.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", name)]
                      == [target[0], str(target[1])], timeout, "the sentinels to name the target as the primary")
        else:
            dst.execute_command("REPLICAOF", "NO", "ONE")
            promoted = True
        say(f"target promoted ({(time.monotonic() - started) * 1000:.0f} ms after the pause)")
        after = int(_info(src)["master_repl_offset"])
        if after != offset:
            raise CutoverError(
                f"the source's offset moved from {offset} to {after} during the cut-over: the pause ran out and "
                "writes reached it after the target caught up; they are not on the target (use a longer --pause-ms)"
            )
        src.execute_command("REPLICAOF", target[0], target[1])
        say("source now replicates from the target")
    finally:
        src.execute_command("CLIENT", "UNPAUSE")
        if not promoted:
            say("source unpaused, nothing changed")
    say(f"cut-over done in {(time.monotonic() - started) * 1000:.0f} ms")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="rill cutover", description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--source", type=_address, required=True, help="host:port of the current primary")
    parser.add_argument("--target", type=_address, required=True, help="host:port of its replica to promote")
    parser.add_argument("--sentinel", type=_address, help="host:port of a sentinel that monitors the source")
    parser.add_argument("--name", default="mymaster", help="the sentinels' name for it (default: mymaster)")
    parser.add_argument("--password", default=os.environ.get("RILL_PASSWORD", ""))
    parser.add_argument("--pause-ms", type=int, default=30_000, help="CLIENT PAUSE timeout on the source")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds to wait for each step")
    args = parser.parse_args(argv)
    try:
        cutover(args.source, args.target, args.password, args.sentinel, args.name, args.pause_ms, args.timeout,
                lambda line: print(line, flush=True))
    except (CutoverError, redis.RedisError, OSError) as exc:
        print(f"rill cutover: {exc}", file=sys.stderr)
        return 1
    return 0
