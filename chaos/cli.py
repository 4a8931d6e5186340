"""The lab's command line: `rill chaos run|check|report|scenarios|targets|matrix` (also
`python -m chaos ...`)."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time

from chaos.checker import check
from chaos.history import HistoryError, read_history
from chaos.runner import Progress, run
from chaos.scenarios import SCENARIOS
from chaos.targets import TARGETS, availability
from chaos.topology import LabError

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rill chaos", description="The chaos lab: faults, histories, checkers.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run one scenario against one target")
    run.add_argument("--target", required=True, choices=sorted(TARGETS))
    run.add_argument("--scenario", required=True, choices=sorted(SCENARIOS))
    run.add_argument("--seed", type=int, default=1)
    run.add_argument("--duration", type=float, default=24.0, help="seconds of workload (at least 20)")
    run.add_argument("--out", default=None, help="output directory (default chaos/results/<time>-<target>-<scenario>)")
    chk = sub.add_parser("check", help="check a recorded history again")
    chk.add_argument("history")
    report = sub.add_parser("report", help="write the report of a matrix directory again (from its runs' results)")
    report.add_argument("dir")
    sub.add_parser("scenarios", help="list the scenarios")
    sub.add_parser("targets", help="list the targets and whether they can run here")
    matrix = sub.add_parser("matrix", help="every scenario against every target, with a report")
    matrix.add_argument("--targets", default=",".join(TARGETS), help="comma-separated (default: all)")
    matrix.add_argument("--scenarios", default=",".join(SCENARIOS), help="comma-separated (default: all)")
    matrix.add_argument("--seed", type=int, default=1)
    matrix.add_argument("--duration", type=float, default=24.0)
    matrix.add_argument("--out", default=None, help="default chaos/results/<time>")
    return parser


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds the runner's cleanup


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    try:
        if args.command == "scenarios":
            for scenario in SCENARIOS.values():
                print(f"{scenario.name:32} {scenario.description}")
            return 0
        if args.command == "targets":
            for target in TARGETS.values():
                reason = availability(target)
                print(f"{target.name:22} {target.title:36} {'available' if not reason else 'not available: ' + reason}")
            return 0
        if args.command == "check":
            result = check(read_history(args.history))
            print(json.dumps(result, indent=1))
            return 0 if result["valid"] else 1
        if args.command == "report":
            from chaos.report import load_results, write_report

            print(write_report(load_results(args.dir), args.dir))
            return 0
        if args.command == "run":
            out = args.out or os.path.join(RESULTS, f"{stamp}-{args.target}-{args.scenario}")
            result = run(args.target, args.scenario, args.seed, args.duration, out, _line_progress())
            print(file=sys.stderr)
            print(json.dumps(_summary(result), indent=1))
            print(f"history and result in {out}", file=sys.stderr)
            return 0 if result.get("status") in ("done", "not available") else 1
        if args.command == "matrix":
            from chaos.matrix import run_matrix

            out = args.out or os.path.join(RESULTS, stamp)
            return run_matrix(args.targets.split(","), args.scenarios.split(","), args.seed, args.duration, out)
    except (HistoryError, LabError, OSError) as exc:
        print(f"rill chaos: {exc}", file=sys.stderr)
        return 1
    return 2


def _summary(result: dict[str, object]) -> dict[str, object]:
    keys = ("target", "scenario", "seed", "status", "reason", "valid", "anomalies", "writes", "faults",
            "unavailability", "timings")
    return {k: result[k] for k in keys if k in result}


def _line_progress() -> Progress:
    from chaos.matrix import Bar

    return Bar(1).show
