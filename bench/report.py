"""Benchmark results as a printed table and as JSON: `latest.json` (small, stable key order and
rounded numbers so it diffs well in git) and `history.jsonl`, one line per run."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from bench.throughput import Measurement, Row

_COLUMNS = ("test", "pipeline", "redis rps", "rill rps", "rill/redis",
            "redis CPU µs/req", "rill CPU µs/req", "CPU rill/redis")


def _ratio(a: float, b: float) -> float | None:
    return a / b if b > 0 else None


def row_dict(row: Row) -> dict[str, Any]:
    def side(m: Measurement | None) -> dict[str, Any] | None:
        if m is None:
            return None
        return {"rps": round(m.rps, 1), "cpu_s": round(m.cpu_s, 3),
                "cpu_us_per_req": round(m.cpu_us_per_req, 3)}

    out: dict[str, Any] = {"test": row.test, "command": row.label, "pipeline": row.pipeline,
                           "requests": row.requests, "redis": side(row.redis), "rill": side(row.rill)}
    if row.skipped is not None:
        out["skipped"] = row.skipped
    elif row.redis is not None and row.rill is not None:
        rps_ratio = _ratio(row.rill.rps, row.redis.rps)
        cpu_ratio = _ratio(row.rill.cpu_us_per_req, row.redis.cpu_us_per_req)
        out["rps_ratio"] = None if rps_ratio is None else round(rps_ratio, 3)
        out["cpu_ratio"] = None if cpu_ratio is None else round(cpu_ratio, 2)
    return out


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def table(rows: Sequence[Row]) -> str:
    lines = [_COLUMNS]
    for row in rows:
        if row.skipped is not None or row.redis is None or row.rill is None:
            lines.append((row.test, str(row.pipeline), "skipped", "", "", "", "", ""))
            continue
        r, x = row.redis, row.rill
        lines.append((
            row.test, str(row.pipeline),
            _fmt(r.rps, ",.0f"), _fmt(x.rps, ",.0f"), _fmt(_ratio(x.rps, r.rps), ".2f"),
            _fmt(r.cpu_us_per_req, ".2f"), _fmt(x.cpu_us_per_req, ".2f"),
            _fmt(_ratio(x.cpu_us_per_req, r.cpu_us_per_req), ".1f"),
        ))
    widths = [max(len(line[i]) for line in lines) for i in range(len(_COLUMNS))]
    text = []
    for k, line in enumerate(lines):
        cells = [line[0].ljust(widths[0])] + [cell.rjust(w) for cell, w in zip(line[1:], widths[1:])]
        text.append("  ".join(cells).rstrip())
        if k == 0:
            text.append("  ".join("-" * w for w in widths))
    skipped = [f"  {row.test} -P {row.pipeline}: {row.skipped}" for row in rows if row.skipped]
    if skipped:
        text.append("")
        text.append("Skipped rows (the server replied an error):")
        text.extend(skipped)
    return "\n".join(text)


def write_json(document: dict[str, Any], out_dir: str, stamp: str) -> list[str]:
    """Write `latest.json` atomically and append the run, stamped, as one line of
    `history.jsonl` (the suite's runs, oldest first); return their paths. This is the only
    way a suite records a run: a suite's directory holds these two files and nothing else."""
    os.makedirs(out_dir, exist_ok=True)
    if "rows" in document:
        head = {k: v for k, v in document.items() if k != "rows"}
        # One row per line: a new run's diff shows which rows moved.
        rows = ",\n".join("  " + json.dumps(row, ensure_ascii=False) for row in document["rows"])
        text = json.dumps(head, indent=1, ensure_ascii=False)[:-2] + ',\n "rows": [\n' + rows + "\n ]\n}\n"
    else:
        text = json.dumps(document, indent=1, ensure_ascii=False) + "\n"
    latest = os.path.join(out_dir, "latest.json")
    tmp = latest + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, latest)
    history = os.path.join(out_dir, "history.jsonl")
    with open(history, "a", encoding="utf-8") as f:
        f.write(json.dumps({"stamp": stamp, **document}, ensure_ascii=False) + "\n")
    return [history, latest]
