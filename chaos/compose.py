"""`rill chaos run --target compose`: the deployment description (`chaos.deployment`) of a
running docker compose project of deploy/compose.yaml, found with the docker CLI (which
follows DOCKER_HOST like any docker command).

- Nodes are the project's containers running `rill node`, sentinels those running `rill
  sentinel`, in the order of their service names; the lab reaches each at the port it publishes
  (6379, 26379), found again after each restart (`docker port`: an engine-chosen port changes).
- A node's announced address is its `replica-announce-ip` (CONFIG GET): with
  deploy/compose.chaos.yaml over compose.yaml that is `toxi-<service>`, the chaos profile's
  toxiproxy in front of it, and the whole cluster reaches it through that proxy
  (`through_proxy`); without it, the proxies carry only the clients' links.
- The proxies on `toxi-<service>`: `<service>` and `<service>-replication` (the cluster's),
  `<service>-c1` and `<service>-c2` (the lab's two client groups, reached at their published
  ports).
- Process faults are `docker kill --signal KILL`, `docker start`, `docker pause` (the cgroup
  freezer: SIGSTOP for every process of the container) and `docker unpause`. A container killed
  by `docker kill` stays down (the restart policy leaves a container stopped by hand alone).

The nodes' password is read from the environment variable `password_env` (RILL_PASSWORD, as in
deploy/.env), never from the containers.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import Any

import redis

from chaos.deployment import DeploymentError, toxiproxy_listens
from chaos.steps import client_names

NODE_PORT, SENTINEL_PORT, TOXIPROXY_API_PORT = 6379, 26379, 8474
CONTROL = {"kill": "docker kill --signal KILL {container}", "start": "docker start {container}",
           "pause": "docker pause {container}", "resume": "docker unpause {container}",
           "locate": "docker port {container} {container_port}/tcp"}


def default_project() -> str:
    return os.environ.get("COMPOSE_PROJECT_NAME") or "rill"


def availability() -> str | None:
    return None if shutil.which("docker") else "the docker CLI is not installed"


def _docker(*args: str) -> str:
    try:
        done = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise DeploymentError(f"docker {args[0]}: {exc}") from None
    if done.returncode != 0:
        raise DeploymentError(f"docker {' '.join(args[:2])}: {done.stderr.strip()[-500:]}")
    return done.stdout


def _published(container: dict[str, Any], port: int) -> str:
    """Where the host reaches a container's port (its first IPv4 binding)."""
    service = container["Config"]["Labels"].get("com.docker.compose.service")
    for binding in (container["NetworkSettings"]["Ports"] or {}).get(f"{port}/tcp") or []:
        host = binding.get("HostIp") or "0.0.0.0"
        if ":" not in host:
            return f"{'127.0.0.1' if host == '0.0.0.0' else host}:{binding['HostPort']}"
    raise DeploymentError(f"{service} does not publish its port {port}: the lab reaches it through a published port")


def _announced_host(address: str, password_env: str, service: str) -> str:
    host, _, port = address.rpartition(":")
    client = redis.Redis(host, int(port), password=os.environ.get(password_env) or None, socket_timeout=5,
                         socket_connect_timeout=5, decode_responses=True)
    try:
        announced = client.config_get("replica-announce-ip").get("replica-announce-ip")
    except redis.AuthenticationError:
        raise DeploymentError(f"{service} refuses the password: set {password_env} to the deployment's "
                              "password (RILL_PASSWORD in deploy/.env)") from None
    except (redis.RedisError, OSError) as exc:
        raise DeploymentError(f"{service} at {address} does not answer ({exc})") from None
    finally:
        client.close()
    return str(announced or service)


def describe(project: str, password_env: str = "RILL_PASSWORD") -> dict[str, Any]:
    """The deployment description of compose project `project` (which must be running)."""
    ids = _docker("ps", "--all", "--quiet", "--filter", f"label=com.docker.compose.project={project}").split()
    if not ids:
        raise DeploymentError(f"no containers of compose project {project!r}: bring it up first (docs/deploy.md), "
                              "or name it with --compose-project")
    containers = {c["Config"]["Labels"].get("com.docker.compose.service", c["Name"]): c
                  for c in json.loads(_docker("inspect", *ids))}
    nodes: list[dict[str, Any]] = []
    sentinels: list[dict[str, Any]] = []
    for service, container in sorted(containers.items()):
        command = " ".join([*(container["Config"].get("Entrypoint") or []), *(container["Config"].get("Cmd") or [])])
        kind = "node" if "rill node" in command else "sentinel" if "rill sentinel" in command else None
        if kind is None:
            continue
        state = container["State"]
        if not state.get("Running") or state.get("Paused"):
            raise DeploymentError(f"{service} is {state.get('Status')}: start the whole project before a run")
        port = NODE_PORT if kind == "node" else SENTINEL_PORT
        entry: dict[str, Any] = {"name": service, "address": _published(container, port),
                                 "container": container["Id"][:12], "container_port": str(port)}
        if kind == "sentinel":
            entry["announced"] = f"{container['Config'].get('Hostname') or service}:{port}"
            sentinels.append(entry)
            continue
        announced = _announced_host(entry["address"], password_env, service)
        entry["announced"] = f"{announced}:{port}"
        proxy = containers.get(f"toxi-{service}")
        if proxy is not None and proxy["State"].get("Running"):
            api = _published(proxy, TOXIPROXY_API_PORT)
            host, _, api_port = api.rpartition(":")
            listens = toxiproxy_listens((host, int(api_port)))
            entry["toxiproxy"] = api
            entry["through_proxy"] = announced == f"toxi-{service}"
            entry["clients"] = {group: _published(proxy, int(listens[f"{service}-{group}"].rpartition(":")[2]))
                                for group in client_names() if f"{service}-{group}" in listens}
        nodes.append(entry)
    return {"service": "rill", "password_env": password_env, "control": CONTROL, "nodes": nodes,
            "sentinels": sentinels}
