"""The migration suite runs end to end: `python -m bench.migration --quick` fills a
redis-server, syncs a redis-server and a Rill node from it over Redis's replication protocol,
stops each while the source takes more writes, checks the data after each phase (the suite
fails if the target's differs from the source's), loads the source's RDB file in both, writes
the JSON and stops everything. No timing is asserted: the numbers have to be there, positive."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT


def test_quick_migration_measures_both_targets(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "bench.migration", "--quick", "--out", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"bench failed:\n{done.stdout}\n{done.stderr}"
    with open(tmp_path / "latest.json", encoding="utf-8") as f:
        doc = json.load(f)
    metrics = {row["metric"]: row for row in doc["rows"]}
    for metric in ("full_sync_s", "rdb_load_s", "catchup_s", "catchup_entries_per_s"):
        assert metrics[metric]["redis"] > 0 and metrics[metric]["rill"] > 0, metric
    assert doc["file_load_s"]["redis"] > 0 and doc["file_load_s"]["rill"] > 0
    assert doc["file_load_s"]["rdb_bytes"] > 0
