"""Runs inside a container on the compose project's network (client.Dockerfile): a redis-py
client that reaches the nodes by their service names, as an application beside them would.

`python client.py --primary primary --replicas replica-1,replica-2 --stream s --count 10`
adds COUNT entries on the primary, WAITs for every replica, reads the stream on each replica
and prints what it saw as one JSON object. The password is RILL_PASSWORD.
"""

from __future__ import annotations

import argparse
import json
import os

import redis


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--primary", required=True)
    parser.add_argument("--replicas", required=True, help="comma-separated service names")
    parser.add_argument("--stream", required=True)
    parser.add_argument("--count", type=int, default=10)
    args = parser.parse_args()
    password = os.environ["RILL_PASSWORD"]
    replicas = args.replicas.split(",")

    def connect(host: str) -> redis.Redis:
        return redis.Redis(host=host, port=6379, password=password, socket_timeout=10, decode_responses=True)

    primary = connect(args.primary)
    added = [primary.xadd(args.stream, {"n": str(i), "from": "client-container"}) for i in range(args.count)]
    acked = primary.wait(len(replicas), 10_000)
    seen = {name: [entry_id for entry_id, _ in connect(name).xrange(args.stream)] for name in replicas}
    print(json.dumps({"added": added, "acked": acked, "seen": seen,
                      "role": primary.execute_command("ROLE")[0]}))


if __name__ == "__main__":
    main()
