"""The lab's command line: `rill chaos run|soak|check|report|scenarios|targets|matrix` (also
`python -m chaos ...`). `run` and `soak` also drive a user's own deployment: `--target compose`
(a compose project of deploy/compose.yaml) or `--target deployment --deployment FILE`.

The lab's extra (toxiproxy-python, matplotlib: `make chaos-deps`) is checked before anything
else, so a machine without it gets one line saying what to run, not a traceback. A user's own
settings (N, down-after, lease, fsync, ...) come from `--options FILE` and the flags, over the
scenario's."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from typing import Any

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
EXTRA_MODULES = ("redis", "toxiproxy", "matplotlib", "mfusepy")


def missing_extra() -> str | None:
    """The first of the lab's Python dependencies that cannot be imported (None: all can)."""
    for module in EXTRA_MODULES:
        try:
            __import__(module)
        except ImportError:
            return module
    return None


def _settings_flags(parser: argparse.ArgumentParser) -> None:
    from chaos.targets import OPTIONS

    group = parser.add_argument_group("cluster settings (over the scenario's)")
    group.add_argument("--options", metavar="FILE", help="a file of `name value` lines (# comments) or a JSON "
                       f"object; names: {', '.join(sorted(OPTIONS))}")
    group.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="one setting (repeatable)")
    group.add_argument("--nodes", type=int, help=OPTIONS["nodes"])
    group.add_argument("--down-after-ms", type=int, help=OPTIONS["down_after_ms"])
    group.add_argument("--lease-ms", type=int, help=OPTIONS["lease_ms"])
    group.add_argument("--appendfsync", help=OPTIONS["appendfsync"])


def _overrides(args: argparse.Namespace) -> dict[str, object]:
    """The user's settings: the options file, then --set, then the named flags."""
    out: dict[str, object] = {}
    if args.options:
        with open(args.options, encoding="utf-8") as f:
            text = f.read()
        if text.lstrip().startswith("{"):
            out.update(json.loads(text))
        else:
            for number, line in enumerate(text.splitlines(), 1):
                line = line.split("#", 1)[0].strip()
                if not line:
                    continue
                name, _, value = line.replace("=", " ", 1).partition(" ")
                if not value.strip():
                    raise ValueError(f"{args.options}:{number}: expected `name value`")
                out[name.strip()] = value.strip()
    for item in args.set:
        name, eq, value = item.partition("=")
        if not eq:
            raise ValueError(f"--set {item!r}: expected NAME=VALUE")
        out[name.strip()] = value.strip()
    for name in ("nodes", "down_after_ms", "lease_ms", "appendfsync"):
        if getattr(args, name) is not None:
            out[name] = getattr(args, name)
    return out


def _deployment_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("your own deployment (--target compose or deployment)")
    group.add_argument("--compose-project", metavar="NAME",
                       help="the compose project (default $COMPOSE_PROJECT_NAME, else rill)")
    group.add_argument("--deployment", metavar="FILE", help="a JSON file describing the deployment (docs/chaos.md)")
    group.add_argument("--password-env", metavar="VAR", default="RILL_PASSWORD",
                       help="the environment variable holding the nodes' password (default RILL_PASSWORD)")


def _where(args: argparse.Namespace) -> dict[str, str]:
    """Where a deployment target is, as `runner.run` and a soak's rerun command take it."""
    out = {"compose_project": args.compose_project, "file": args.deployment, "password_env": args.password_env}
    return {k: v for k, v in out.items() if v and not (k == "password_env" and v == "RILL_PASSWORD")}


def _parser() -> argparse.ArgumentParser:
    from chaos.scenarios import SCENARIOS
    from chaos.targets import DEPLOYMENT_TARGETS, TARGETS

    targets = sorted([*TARGETS, *DEPLOYMENT_TARGETS])

    parser = argparse.ArgumentParser(prog="rill chaos", description="The chaos lab: faults, histories, checkers.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run one scenario against one target")
    run.add_argument("--target", required=True, choices=targets)
    run.add_argument("--scenario", required=True, choices=sorted(SCENARIOS))
    run.add_argument("--seed", type=int, default=1)
    run.add_argument("--duration", type=float, default=24.0, help="seconds of workload (at least 20)")
    run.add_argument("--out", default=None, help="output directory (default chaos/results/<time>-<target>-<scenario>)")
    _settings_flags(run)
    _deployment_flags(run)
    soak = sub.add_parser("soak", help="one scenario (default: the composed nemesis) over many seeds, summarized")
    soak.add_argument("--target", required=True, choices=targets)
    soak.add_argument("--scenario", default="random", choices=sorted(SCENARIOS))
    soak.add_argument("--seeds", type=int, required=True, help="how many seeds")
    soak.add_argument("--first-seed", type=int, default=1)
    soak.add_argument("--duration", type=float, default=24.0, help="seconds of workload per run (at least 20)")
    soak.add_argument("--out", default=None, help="default chaos/results/soak-<time>-<target>-<scenario>")
    soak.add_argument("--keep", action="store_true", help="keep the history and logs of passing runs too")
    _settings_flags(soak)
    _deployment_flags(soak)
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
    _settings_flags(matrix)
    return parser


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds the runner's cleanup


def main(argv: list[str] | None = None) -> int:
    missing = missing_extra()
    if missing is not None:
        print(f"rill chaos: the chaos lab's extra is not installed (no module {missing!r}): run `make chaos-deps` "
              "(it installs the `chaos` extra, redis-sentinel and the pinned toxiproxy server)", file=sys.stderr)
        return 2
    from chaos.checker import check
    from chaos.compose import availability as compose_availability
    from chaos.deployment import DeploymentError
    from chaos.history import HistoryError, read_history
    from chaos.runner import RunError, run
    from chaos.scenarios import SCENARIOS
    from chaos.targets import DEPLOYMENT_TARGETS, TARGETS, availability
    from chaos.topology import LabError

    args = _parser().parse_args(argv)
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    try:
        if args.command == "scenarios":
            for scenario in SCENARIOS.values():
                print(f"{scenario.name:40} {scenario.description}")
            return 0
        if args.command == "targets":
            for target in TARGETS.values():
                reason = availability(target)
                print(f"{target.name:22} {target.title:36} {'available' if not reason else 'not available: ' + reason}")
            for name, title in DEPLOYMENT_TARGETS.items():
                reason = compose_availability() if name == "compose" else None
                status = "runs against what you brought up" if not reason else f"not available: {reason}"
                print(f"{name:22} {title:36} {status}")
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
            result = run(args.target, args.scenario, args.seed, args.duration, out, _line_progress(),
                         _overrides(args), _where(args))
            print(file=sys.stderr)
            print(json.dumps(_summary(result), indent=1))
            for skipped in result.get("not_applied", []):
                print(f"not applied here: {skipped['name']}: {skipped['why']}", file=sys.stderr)
            print(f"history and result in {out}", file=sys.stderr)
            return 0 if result.get("status") in ("done", "not available") else 1
        if args.command == "soak":
            from chaos.soak import run_soak

            out = args.out or os.path.join(RESULTS, f"soak-{stamp}-{args.target}-{args.scenario}")
            seeds = list(range(args.first_seed, args.first_seed + args.seeds))
            summary = run_soak(args.target, args.scenario, seeds, args.duration, out, _overrides(args), args.keep,
                               _where(args))
            print(json.dumps({k: v for k, v in summary.items() if k not in ("rows", "per_seed")}, indent=1))
            print(f"summary and report in {out}", file=sys.stderr)
            return 0 if summary["harness_errors"] == 0 else 1
        if args.command == "matrix":
            from chaos.matrix import run_matrix

            out = args.out or os.path.join(RESULTS, stamp)
            return run_matrix(args.targets.split(","), args.scenarios.split(","), args.seed, args.duration, out,
                              _overrides(args))
    except (DeploymentError, HistoryError, LabError, RunError, OSError, ValueError) as exc:
        print(f"rill chaos: {exc}", file=sys.stderr)
        return 1
    return 2


def _summary(result: dict[str, Any]) -> dict[str, Any]:
    keys = ("target", "scenario", "seed", "status", "reason", "safe", "unsafe_because", "valid", "anomalies",
            "writes", "faults", "faults_applied", "not_applied", "unavailability", "timings", "overrides",
            "deployment")
    return {k: result[k] for k in keys if k in result}


def _line_progress() -> Any:
    from chaos.matrix import Bar

    return Bar(1).show
