"""Writes data/payloads-<version>.json: every scenario of scenarios.py run against a live
redis-server and the DUMP of its key. Not part of the suite (it needs the server it
records); run it again when a scenario changes:

    python -m tests.unit.rdb.make_fixtures --port 6379        # a redis-server 7.0.x or 7.2.x

The 7.2.4 fixtures were written by a redis-server built from the 7.2.4 tag's sources
(`make MALLOC=libc BUILD_TLS=no`), the 7.0.15 ones by Debian's package.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import redis

from tests.unit.rdb.scenarios import scenarios

DEFAULTS = [("stream-node-max-entries", "100"), ("stream-node-max-bytes", "4096"), ("rdbcompression", "yes")]
HERE = os.path.dirname(os.path.abspath(__file__))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    r = redis.Redis(port=args.port)
    version = r.info("server")["redis_version"]
    started = int(time.time() * 1000)
    out: dict[str, object] = {"redis_version": version, "generated_ms": started, "scenarios": {}}
    recorded: dict[str, object] = {}
    for scenario in scenarios():
        if scenario.only_72 and not version.startswith("7.2"):
            continue
        r.flushall()
        for name, value in DEFAULTS + scenario.config:
            r.config_set(name, value)
        for command in scenario.commands:
            r.execute_command(*command)
        payload = r.dump(scenario.key)
        assert payload is not None
        recorded[scenario.name] = {"payload": payload.hex()}
    out["scenarios"] = recorded
    out["finished_ms"] = int(time.time() * 1000)
    path = os.path.join(HERE, "data", f"payloads-{version}.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {path}: {len(recorded)} payloads")


if __name__ == "__main__":
    main()
