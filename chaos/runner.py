"""One run: a scenario against a target, from set-up to verdict, bounded in time and always
cleaned up (processes, proxies, namespaces), whatever goes wrong. On a user's deployment
(`--target compose` or `deployment`) there is nothing to set up or stop: the run checks that the
cluster is settled, writes its own stream, and at the end undoes every fault it applied
(toxics removed, paused processes continued, killed ones started) and deletes its stream.

The phases, in order: the lab's namespaces and toxiproxies; the cluster (n1 primary, the other
nodes its replicas, three sentinels), the stream and its consumer group; the monitor, the two
client groups' worker processes and the nemesis, for `duration` seconds; every fault healed and
every process running again; wait (bounded) until the sentinels agree on a primary that every
node follows in sync; the consumers drain the group; each node's whole stream read; the
histories merged and checked.

Output in `out`: history.jsonl (every event), result.json (the checker's verdict plus the run's
parameters and phase times), logs/ (each process's log).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import redis

from chaos.checker import check
from chaos.cluster import Cluster, LabCluster
from chaos.compose import availability as compose_availability
from chaos.compose import default_project as default_compose_project
from chaos.compose import describe as describe_compose
from chaos.deployment import Deployment, DeploymentError, load_description
from chaos.faults import Links
from chaos.history import Recorder, merge_files
from chaos.monitor import Monitor
from chaos.nemesis import Nemesis
from chaos.scenarios import SCENARIOS
from chaos.steps import CLIENT_GROUPS, SENTINELS
from chaos.targets import (
    DEPLOYMENT_TARGETS,
    SENTINEL_PORT,
    TARGETS,
    Settings,
    Target,
    availability,
    node_ports,
    settings_with,
)
from chaos.topology import LabError, build_lab
from chaos.workload import DEFAULT_GROUP

KEY = "chaos"
SETTLE_TIMEOUT = 45.0  # after the faults: until one primary, every replica in sync
DRAIN_TIMEOUT = 20.0

Progress = Callable[[str, float], None]  # (phase, fraction of the run done)


class RunError(Exception):
    """The harness broke (not the cluster: anomalies are results, not errors)."""


@dataclass
class Stage:
    """What a run drives: the lab's own cluster in its namespaces, or a user's deployment."""

    cluster: Cluster
    links: Links
    key: str  # the stream the workload writes
    set_up: Callable[[], None]
    tear_down: Callable[[], None]
    worker_argv: Callable[[str, list[str]], list[str]]  # (client group, argv): the command line that runs it
    worker_spec: Callable[[str], dict[str, Any]]  # what a group's spec adds: where it reaches the cluster
    # A user's deployment: every fault is undone before the run leaves it (the lab's own
    # cluster is simply stopped).
    undo_faults: bool = False
    info: dict[str, Any] = field(default_factory=dict)  # what the result records of it
    timings: dict[str, float] = field(default_factory=dict)  # how long its set-up's phases took


def run(target_name: str, scenario_name: str, seed: int, duration: float, out: str,
        progress: Progress | None = None, overrides: dict[str, object] | None = None,
        deployment: dict[str, str] | None = None) -> dict[str, Any]:
    """Runs one scenario; returns (and writes to out/result.json) the result. `overrides`
    are a user's settings (`targets.OPTIONS`) over the scenario's; `deployment` says where a
    deployment target is (`compose_project`, `file`, `password_env`)."""
    attached = target_name in DEPLOYMENT_TARGETS
    if target_name not in TARGETS and not attached:
        raise RunError(f"unknown target {target_name!r} (targets: {', '.join([*TARGETS, *DEPLOYMENT_TARGETS])})")
    if scenario_name not in SCENARIOS:
        raise RunError(f"unknown scenario {scenario_name!r} (`rill chaos scenarios` lists them)")
    if duration < 20:
        raise RunError("duration must be at least 20 s (the faults start 4-6 s in and need time to heal)")
    scenario = SCENARIOS[scenario_name]
    if attached and overrides:
        raise RunError("cluster settings (--options, --set, --nodes, ...) configure the lab's own clusters; "
                       "a deployment runs with its own")
    try:
        settings = settings_with(scenario.settings, overrides or {})
    except ValueError as exc:
        raise RunError(str(exc)) from None
    os.makedirs(out, exist_ok=True)
    title = DEPLOYMENT_TARGETS[target_name] if attached else TARGETS[target_name].title
    base = {"target": target_name, "target_title": title, "scenario": scenario.name,
            "description": scenario.description, "seed": seed, "duration": duration,
            "overrides": dict(overrides or {}), "settings": settings.__dict__}
    reason = compose_availability() if target_name == "compose" else \
        None if attached else availability(TARGETS[target_name])
    if reason:
        result = {**base, "status": "not available", "reason": reason}
        _write_json(os.path.join(out, "result.json"), result)
        return result
    report = progress or (lambda phase, done: None)
    steps = scenario.plan(random.Random(seed), duration)
    workdir = tempfile.mkdtemp(prefix="rillchaos-")
    try:
        stage = _deployment_stage(target_name, deployment or {}, seed) if attached else \
            _lab_stage(TARGETS[target_name], settings, workdir, seed)
    except DeploymentError as exc:
        shutil.rmtree(workdir, ignore_errors=True)
        raise RunError(str(exc)) from None
    if attached:
        # The scenario's own settings (fsync, min-replicas, a lease, the disk nemesis) are the
        # lab's to set: on a deployment they are not applied.
        base["settings"] = {"deployment": "its own"}
        base["deployment"] = stage.info
    cluster, links = stage.cluster, stage.links
    workers: list[subprocess.Popen[bytes]] = []
    timings: dict[str, float] = {}
    started = time.monotonic()
    monitor: Monitor | None = None
    nemesis: Nemesis | None = None
    rec: Recorder | None = None
    primary: str | None = None
    try:
        report("setting up", 0.0)
        stage.set_up()
        if not attached:
            base.update(stage.info)  # what the lab's set-up found (with --tls: its plaintext check)
        first = _create_group(cluster, stage.key)
        timings["setup_s"] = round(time.monotonic() - started, 2)
        timings.update(stage.timings)
        t0 = time.monotonic()
        steal_before = _cpu_ticks()
        rec = Recorder(os.path.join(workdir, "lab.jsonl"), t0)
        majority = len(cluster.nodes) // 2  # replicas beyond the primary that make a majority of nodes
        producers, consumers, readers = _roles(len(cluster.nodes), majority)
        rec.record({"type": "meta", "f": "run", **base, "nodes": list(cluster.nodes),
                    "sentinels": list(cluster.sentinels), "first_primary": first, "majority_wait": majority,
                    "consumers": [c for group in consumers.values() for c in group],
                    "steps": [s.__dict__ for s in steps], "time": 0.0})
        if attached:
            for name, value in _scenario_settings(settings).items():
                rec.record({"type": "nemesis", "f": "not-applied", "name": f"setting {name}={value}",
                            "fault": "setting", "why": "a deployment runs with its own settings"})
        monitor = Monitor(cluster, rec)
        monitor.start()
        drain_flag = os.path.join(workdir, "drain")
        deadline = duration + SETTLE_TIMEOUT + DRAIN_TIMEOUT
        for group in sorted(producers):
            workers.append(_start_worker(stage, workdir, group, t0, duration, drain_flag, deadline,
                                         producers[group], consumers[group], readers[group]))
        nemesis = Nemesis(cluster, links, rec, steps, monitor)
        nemesis.start()
        while (now := rec.now()) < duration:
            report("running", now / duration)
            _check_workers(workers)
            time.sleep(0.25)
        timings["steal"] = _steal_share(steal_before, _cpu_ticks())
        mark = time.monotonic()
        nemesis.join(10.0)
        nemesis.abort()
        nemesis.join(10.0)
        if nemesis.errors:
            raise RunError("the nemesis failed: " + "; ".join(nemesis.errors))
        if nemesis.running():
            raise RunError("the nemesis did not finish healing its faults in time")
        timings["nemesis_end_s"] = round(time.monotonic() - mark, 2)
        report("healing", 1.0)
        settle_start = time.monotonic()
        primary = _heal_and_settle(cluster, links, rec)
        timings["settle_s"] = round(time.monotonic() - settle_start, 2)
        report("draining", 1.0)
        mark = time.monotonic()
        open(drain_flag, "w").close()
        for worker in workers:
            _wait_worker(worker, max(1.0, deadline - rec.now()) + 5.0)
        timings["drain_s"] = round(time.monotonic() - mark, 2)
        report("final reads", 1.0)
        mark = time.monotonic()
        _final_reads(cluster, rec, stage.key)
        timings["final_reads_s"] = round(time.monotonic() - mark, 2)
    finally:
        mark = time.monotonic()
        if nemesis is not None:
            nemesis.abort()
            if stage.undo_faults:
                nemesis.join(30.0)  # each step heals what it did
        if monitor is not None:
            monitor.stop()
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
        stage.tear_down()
        if rec is not None:
            rec.close()
        _keep_logs(workdir, out)
        histories = [os.path.join(workdir, name) for name in sorted(os.listdir(workdir)) if name.endswith(".jsonl")]
        events = merge_files(histories, os.path.join(out, "history.jsonl"))
        shutil.rmtree(workdir, ignore_errors=True)
        timings["teardown_s"] = round(time.monotonic() - mark, 2)
    mark = time.monotonic()
    verdict = check(events)
    timings["check_s"] = round(time.monotonic() - mark, 2)
    timings["total_s"] = round(time.monotonic() - started, 2)
    result = {**base, "status": "done", "settled_primary": primary, "timings": timings, **verdict}
    _write_json(os.path.join(out, "result.json"), result)
    return result


def _lab_stage(target: Target, settings: Settings, workdir: str, seed: int) -> Stage:
    """The lab's own cluster: namespaces and toxiproxies, then the target's nodes and sentinels."""
    lab = build_lab(settings.nodes, SENTINELS, CLIENT_GROUPS, node_ports(target), SENTINEL_PORT, workdir, seed)
    cluster = LabCluster(lab, target, settings)
    info: dict[str, Any] = {}

    def set_up() -> None:
        mark = time.monotonic()
        lab.create()  # also moves this process into the lab's hub namespace
        stage.timings["lab_s"] = round(time.monotonic() - mark, 2)
        cluster.start(timings=stage.timings)
        if cluster.tls is not None:
            info["tls"] = {"plaintext_refused": cluster.plaintext_refused}

    def tear_down() -> None:
        cluster.stop_all()
        lab.destroy()

    def spec(group: str) -> dict[str, Any]:
        return {"sentinels": [list(p.member.address) for p in cluster.sentinels.values()],
                "nodes": {name: list(p.member.address) for name, p in cluster.nodes.items()},
                "tls": cluster.tls.__dict__ if cluster.tls is not None else None}

    def worker_argv(group: str, argv: list[str]) -> list[str]:
        return lab.exec_argv(lab.members[group], argv)

    stage = Stage(cluster, Links(lab), KEY, set_up, tear_down, worker_argv, spec, info=info)
    return stage


def _deployment_stage(target_name: str, where: dict[str, str], seed: int) -> Stage:
    """A user's deployment, described by a file or found in a compose project. Its stream is
    the run's own (`rill-chaos-<time>-<seed>`), deleted at the end."""
    password_env = where.get("password_env") or "RILL_PASSWORD"
    if target_name == "compose":
        project = where.get("compose_project") or default_compose_project()
        deployment = Deployment(describe_compose(project, password_env), f"compose project {project}")
    else:
        if not where.get("file"):
            raise DeploymentError("--target deployment needs --deployment FILE (docs/chaos.md, *Your own deployment*)")
        deployment = Deployment(load_description(where["file"]), where["file"])
    links = Links(deployment)
    key = f"rill-chaos-{time.strftime('%Y%m%d-%H%M%S')}-{seed}"

    def set_up() -> None:
        leftover = deployment.faults_present()
        if leftover:
            raise RunError(f"the deployment's proxies carry faults already: {', '.join(leftover)} (remove them first)")
        deadline = time.monotonic() + SETTLE_TIMEOUT
        while deployment.settled() is None:
            if time.monotonic() > deadline:
                raise RunError(f"the deployment is not settled (the sentinels agree on a primary every node follows "
                               f"in sync): not within {SETTLE_TIMEOUT:.0f} s; sentinels name "
                               f"{deployment.sentinel_primary()}")
            time.sleep(0.5)

    def tear_down() -> None:
        problems = []
        try:
            links.heal_all()
        except Exception as exc:  # the processes must be restored all the same
            problems.append(f"healing the proxies: {type(exc).__name__}: {exc}")
        problems += deployment.restore()
        primary = deployment.sentinel_primary()
        if primary is not None:
            with contextlib.suppress(redis.RedisError, OSError):
                client = deployment.nodes[primary].admin(timeout=5.0)
                client.delete(key)
                client.close()
        if problems:
            raise RunError("the deployment may still carry faults: " + "; ".join(problems))

    def spec(group: str) -> dict[str, Any]:
        return {"sentinels": deployment.sentinel_addresses(),
                "nodes": {name: [m.announced_ip, m.ports[0]] for name, m in deployment.members.items()
                          if m.kind == "node"},
                "routes": deployment.routes_for(group), "service": deployment.service,
                "password_env": deployment.password_env,
                "sentinel_password_env": str(deployment.description.get("sentinel_password_env") or "")}

    return Stage(deployment, links, key, set_up, tear_down, lambda group, argv: argv, spec, undo_faults=True,
                 info=deployment.summary())


def _scenario_settings(settings: Settings) -> dict[str, object]:
    """The settings a scenario sets beyond the lab's defaults."""
    default = Settings().__dict__
    return {k: v for k, v in settings.__dict__.items() if v != default[k]}


def _heal_and_settle(cluster: Cluster, links: Links, rec: Recorder) -> str | None:
    """Ends every fault (toxics off, paused processes continued, dead ones restarted), then
    waits, bounded, until the sentinels agree on a primary that every node follows in sync.
    Returns that primary (None if the cluster did not settle in time: recorded, and the
    final reads go ahead; divergent nodes then show in the result)."""
    links.heal_all()
    for proc in cluster.processes():
        if proc.paused:
            proc.resume()
        if not proc.alive():
            proc.start()
    rec.record({"type": "meta", "f": "healed"})
    deadline = time.monotonic() + SETTLE_TIMEOUT
    primary = cluster.settled()
    while primary is None and time.monotonic() < deadline:
        time.sleep(0.25)
        primary = cluster.settled()
    rec.record({"type": "meta", "f": "settled" if primary else "not-settled", "primary": primary})
    return primary


def _roles(nodes: int, majority: int) -> tuple[dict[str, list[dict[str, Any]]], dict[str, list[str]],
                                               dict[str, list[dict[str, str]]]]:
    """Per client group: three producers (no WAIT, WAIT 1, WAIT majority), one consumer, and
    readers tailing the nodes (split between the groups)."""
    producers: dict[str, list[dict[str, Any]]] = {}
    consumers: dict[str, list[str]] = {}
    readers: dict[str, list[dict[str, str]]] = {}
    for g in range(1, CLIENT_GROUPS + 1):
        group = f"c{g}"
        producers[group] = [{"process": f"{group}-{mode}", "mode": mode, "wait": wait}
                            for mode, wait in (("nowait", 0), ("wait1", 1), ("waitmaj", majority))]
        consumers[group] = [f"{group}-consumer"]
        readers[group] = [{"process": f"{group}-reader-n{k}", "node": f"n{k}"}
                          for k in range(1, nodes + 1) if k % CLIENT_GROUPS == g % CLIENT_GROUPS]
    return producers, consumers, readers


def _create_group(cluster: Cluster, key: str) -> str:
    """The stream and its consumer group, on the primary (the lab's: n1), replicated before
    the run starts. Returns the primary."""
    primary = cluster.sentinel_primary() or next(iter(cluster.nodes))
    client = cluster.nodes[primary].admin(timeout=5.0)
    try:
        client.xgroup_create(key, DEFAULT_GROUP, id="$", mkstream=True)
        client.execute_command("WAIT", len(cluster.nodes) - 1, 5000)
    finally:
        client.close()
    return primary


def _start_worker(stage: Stage, workdir: str, group: str, t0: float, duration: float,
                  drain_flag: str, deadline: float, producers: list[dict[str, Any]], consumers: list[str],
                  readers: list[dict[str, str]]) -> subprocess.Popen[bytes]:
    spec = {
        "group": group, "out": os.path.join(workdir, f"{group}.jsonl"), "t0": t0, "stop_at": duration,
        "drain_flag": drain_flag, "deadline": deadline, **stage.worker_spec(group),
        "producers": producers, "consumers": consumers, "readers": readers, "key": stage.key,
        "majority_wait": len(stage.cluster.nodes) // 2,
    }
    path = os.path.join(workdir, f"{group}-spec.json")
    _write_json(path, spec)
    log = open(os.path.join(workdir, f"{group}-worker.log"), "wb")  # noqa: SIM115
    proc = subprocess.Popen(stage.worker_argv(group, [sys.executable, "-m", "chaos.workload", path]),
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                            cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    log.close()
    return proc


def _check_workers(workers: list[subprocess.Popen[bytes]]) -> None:
    for worker in workers:
        if worker.poll() not in (None, 0):
            raise RunError(f"a workload process exited with code {worker.returncode} (see logs/)")


def _wait_worker(worker: subprocess.Popen[bytes], timeout: float) -> None:
    try:
        worker.wait(timeout)
    except subprocess.TimeoutExpired:
        worker.kill()
        worker.wait()
        raise RunError("a workload process did not finish its drain in time") from None
    if worker.returncode != 0:
        raise RunError(f"a workload process exited with code {worker.returncode} (see logs/)")


def _final_reads(cluster: Cluster, rec: Recorder, key: str) -> None:
    """Each node's role and whole stream, read at its real address (None if it cannot be read)."""
    for name, proc in cluster.nodes.items():
        event: dict[str, Any] = {"type": "final", "node": name, "role": None, "entries": None}
        client = proc.admin(timeout=10.0)
        try:
            event["role"] = str(client.execute_command("ROLE")[0])
            event["entries"] = [[i, (f or {}).get("v")] for i, f in client.xrange(key, "-", "+") or []]
            event["groups"] = [{k: str(v) for k, v in g.items()} for g in client.xinfo_groups(key)]
            # the whole PEL: (id, consumer, times delivered); idle times differ between nodes
            event["pending"] = [[str(p["message_id"]), str(p["consumer"]), int(p["times_delivered"])]
                                for p in client.xpending_range(key, DEFAULT_GROUP, "-", "+", 100000)]
        except (redis.RedisError, OSError) as exc:
            event["error"] = str(exc)
        finally:
            client.close()
        rec.record(event)


def _cpu_ticks() -> tuple[int, int]:
    """(steal, total) CPU ticks of the machine from /proc/stat."""
    with open("/proc/stat", encoding="ascii") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return (fields[7] if len(fields) > 7 else 0), sum(fields)


def _steal_share(before: tuple[int, int], after: tuple[int, int]) -> float:
    """The share of the machine's CPU time the hypervisor gave to other guests during the
    workload: context for a run whose sentinels entered TILT."""
    total = after[1] - before[1]
    return round((after[0] - before[0]) / total, 4) if total > 0 else 0.0


def _keep_logs(workdir: str, out: str) -> None:
    logs = os.path.join(out, "logs")
    os.makedirs(logs, exist_ok=True)
    for root, _dirs, files in os.walk(workdir):
        for name in files:
            if name.endswith((".log", ".conf")):
                rel = os.path.relpath(os.path.join(root, name), workdir).replace(os.sep, "-")
                shutil.copyfile(os.path.join(root, name), os.path.join(logs, rel))


def _write_json(path: str, data: Any) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, sort_keys=False, default=str)
        f.write("\n")


__all__ = ["RunError", "run", "LabError"]
