"""Writes data/redis-<version>.rdb: redis_rdb_data.build() on a live redis-server, then its
SAVE, and data/redis-<version>.dumps.json: the server's DUMP of every key then (what Rill
must DUMP once it loaded the file). Not part of the suite; the 7.2.4 files came from a server
built from the 7.2.4 tag:

    python -m tests.persistence.make_rdb_fixture --port 6379 --dir /where/its/dump.rdb/is
"""

from __future__ import annotations

import argparse
import json
import os
import shutil

import redis

from tests.persistence.redis_rdb_data import build

HERE = os.path.dirname(os.path.abspath(__file__))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--dir", required=True, help="the server's dir (its dump.rdb is copied)")
    args = parser.parse_args()
    r = redis.Redis(port=args.port)
    build(r)
    r.save()
    version = r.info("server")["redis_version"]
    target = os.path.join(HERE, "data", f"redis-{version}.rdb")
    shutil.copyfile(os.path.join(args.dir, r.config_get("dbfilename")["dbfilename"]), target)
    dumps = {}
    for db in (0, 3):
        with redis.Redis(port=args.port, db=db) as client:
            dumps.update({f"{db}:{key.decode()}": client.dump(key).hex() for key in sorted(client.keys("*"))})
    with open(target[: -len(".rdb")] + ".dumps.json", "w") as f:
        json.dump(dumps, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {target} and its DUMPs")


if __name__ == "__main__":
    main()
