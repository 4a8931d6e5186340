"""Records chaos lab runs in bench/results/chaos (latest.json + history.jsonl): a matrix's rows
(its results.json) and soaks' summaries (their summary.json), with the commands that made them.

    python -m bench.chaos_lab --matrix DIR --matrix-command "..." --soak DIR --soak-command "..." ...
"""

from __future__ import annotations

import argparse
import json
import os
import time

from bench.report import write_json

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "chaos")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.chaos_lab")
    parser.add_argument("--matrix", help="a matrix's output directory")
    parser.add_argument("--matrix-command", default="")
    parser.add_argument("--soak", action="append", default=[], help="a soak's output directory (repeatable)")
    parser.add_argument("--soak-command", action="append", default=[], help="the command of each --soak, in order")
    parser.add_argument("--load", default="", help="the machine's load during the runs (context for TILT)")
    args = parser.parse_args(argv)
    document: dict[str, object] = {"command": args.matrix_command, "load": args.load, "rows": []}
    if args.matrix:
        with open(os.path.join(args.matrix, "results.json"), encoding="utf-8") as f:
            document["rows"] = json.load(f)
    soaks = []
    for i, path in enumerate(args.soak):
        with open(os.path.join(path, "summary.json"), encoding="utf-8") as f:
            summary = json.load(f)
        summary.pop("rows", None)
        command = args.soak_command[i] if i < len(args.soak_command) else ""
        soaks.append({"command": command, **summary})
    document["soaks"] = soaks
    for path in write_json(document, OUT, time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
