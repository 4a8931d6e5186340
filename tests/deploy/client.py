"""Runs inside a container on the compose project's network (client.Dockerfile): redis-py
clients that reach the nodes by their service names, as an application beside them would.
The password is RILL_PASSWORD. Two modes, each printing one JSON object:

`python client.py --primary primary --replicas replica-1,replica-2 --stream s --count 10`
adds COUNT entries on the primary, WAITs for every replica, reads the stream on each replica.

`python client.py --sentinels sentinel-1,sentinel-2,sentinel-3 --service rill --stream s
--after 20 --seconds 300` writes through redis-py's Sentinel client (`master_for`), one XADD at
a time, retrying what fails as an application does, until it has written AFTER entries to a
second master (the sentinels failed the first over) or SECONDS passed: which masters it
wrote to, in order, the IDs each acknowledged, and how many attempts failed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import redis
import redis.sentinel


def replicated(args: argparse.Namespace, password: str) -> dict[str, object]:
    replicas = args.replicas.split(",")

    def connect(host: str) -> redis.Redis:
        return redis.Redis(host=host, port=6379, password=password, socket_timeout=10, decode_responses=True)

    primary = connect(args.primary)
    added = [primary.xadd(args.stream, {"n": str(i), "from": "client-container"}) for i in range(args.count)]
    acked = primary.wait(len(replicas), 10_000)
    seen = {name: [entry_id for entry_id, _ in connect(name).xrange(args.stream)] for name in replicas}
    return {"added": added, "acked": acked, "seen": seen, "role": primary.execute_command("ROLE")[0]}


def through_sentinels(args: argparse.Namespace, password: str) -> dict[str, object]:
    sentinel = redis.sentinel.Sentinel([(host, 26379) for host in args.sentinels.split(",")], socket_timeout=2)
    master = sentinel.master_for(args.service, password=password, socket_timeout=2, decode_responses=True)
    masters: list[str] = []
    written: dict[str, list[str]] = {}
    failures = 0
    deadline = time.monotonic() + args.seconds
    n = 0
    while time.monotonic() < deadline and (len(masters) < 2 or len(written[masters[-1]]) < args.after):
        try:
            entry_id = master.xadd(args.stream, {"n": str(n)})
        except (redis.ConnectionError, redis.TimeoutError, redis.ReadOnlyError):
            failures += 1
            time.sleep(0.2)
            continue
        n += 1
        host, port = master.connection_pool.master_address
        where = f"{host}:{port}"
        if not masters or masters[-1] != where:
            masters.append(where)
            written[where] = []
        written[where].append(entry_id)
        time.sleep(0.02)
    return {"masters": masters, "written": written, "failures": failures}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--primary")
    parser.add_argument("--replicas", help="comma-separated service names")
    parser.add_argument("--sentinels", help="comma-separated service names")
    parser.add_argument("--service", default="rill", help="the master's name at the sentinels")
    parser.add_argument("--stream", required=True)
    parser.add_argument("--count", type=int, default=10)
    parser.add_argument("--after", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=300.0)
    args = parser.parse_args()
    password = os.environ["RILL_PASSWORD"]
    result = through_sentinels(args, password) if args.sentinels else replicated(args, password)
    print(json.dumps(result))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
