"""deploy/compose.yaml as a compose project of the tests: its own name, env file (a random
password, every published port chosen by the engine) and images, driven with Debian's
`docker-compose` 1.29 (RILL_TEST_COMPOSE="docker compose" runs it with compose v2), and
removed with everything it created."""

from __future__ import annotations

import json
import os
import secrets
import shlex
import time
from dataclasses import dataclass

import redis

from tests.deploy.engine import Engine, EngineError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COMPOSE_FILE = os.path.join(ROOT, "deploy", "compose.yaml")
# The chaos lab's cluster: every link through the chaos profile's proxies (an override of COMPOSE_FILE).
CHAOS_FILE = os.path.join(ROOT, "deploy", "compose.chaos.yaml")
# The TLS profile: an override of COMPOSE_FILE (deploy/compose.tls.yaml).
TLS_FILE = os.path.join(ROOT, "deploy", "compose.tls.yaml")
NODES = ("primary", "replica-1", "replica-2")
SENTINELS = ("sentinel-1", "sentinel-2", "sentinel-3")
PROFILES = ("chaos", "pipeline")
# Published ports: 0 lets the engine choose free ones (tests never take fixed ports).
_PORT_VARIABLES = ("RILL_PRIMARY_PORT", "RILL_REPLICA_1_PORT", "RILL_REPLICA_2_PORT", "RILL_SENTINEL_1_PORT",
                   "RILL_SENTINEL_2_PORT", "RILL_SENTINEL_3_PORT", "TOXIPROXY_PRIMARY_API_PORT",
                   "TOXIPROXY_REPLICA_1_API_PORT", "TOXIPROXY_REPLICA_2_API_PORT", "TOXIPROXY_PRIMARY_PORT",
                   "TOXIPROXY_REPLICA_1_PORT", "TOXIPROXY_REPLICA_2_PORT", "TOXIPROXY_PRIMARY_C1_PORT",
                   "TOXIPROXY_REPLICA_1_C1_PORT", "TOXIPROXY_REPLICA_2_C1_PORT", "TOXIPROXY_PRIMARY_C2_PORT",
                   "TOXIPROXY_REPLICA_1_C2_PORT", "TOXIPROXY_REPLICA_2_C2_PORT", "RILL_PRIMARY_METRICS_PORT",
                   "RILL_REPLICA_1_METRICS_PORT", "RILL_REPLICA_2_METRICS_PORT", "RILL_SENTINEL_1_METRICS_PORT",
                   "RILL_SENTINEL_2_METRICS_PORT", "RILL_SENTINEL_3_METRICS_PORT")


def compose_command() -> list[str]:
    return shlex.split(os.environ.get("RILL_TEST_COMPOSE", "docker-compose"))


@dataclass
class Project:
    engine: Engine
    name: str
    env_file: str
    password: str
    files: tuple[str, ...] = (COMPOSE_FILE,)  # the compose files, the base one first

    @classmethod
    def create(cls, engine: Engine, workdir: str, base_image: str, overrides: tuple[str, ...] = ()) -> Project:
        """A new project whose images are built from `base_image` and named after it;
        `overrides`: compose files applied over deploy/compose.yaml (the chaos lab's cluster, the TLS profile)."""
        project = cls(engine, f"rilltest{secrets.token_hex(4)}", os.path.join(workdir, "compose.env"),
                      secrets.token_urlsafe(24), (COMPOSE_FILE, *overrides))
        env = {"RILL_PASSWORD": project.password, **dict.fromkeys(_PORT_VARIABLES, "0"),
               "RILL_BASE_IMAGE": base_image, "RILL_IMAGE": project.image("rill"),
               "TOXIPROXY_IMAGE": project.image("toxiproxy"), "RILL_PIPELINE_IMAGE": project.image("pipeline")}
        with open(project.env_file, "w", encoding="utf-8") as f:
            f.writelines(f"{k}={v}\n" for k, v in env.items())
        return project

    def image(self, what: str) -> str:
        """The tag of an image this project builds: `rill`, `toxiproxy` and `pipeline` (its services'),
        `client` (the tests' in-network client, client.Dockerfile)."""
        return f"{self.name}-{what}:test"

    @property
    def network(self) -> str:
        return f"{self.name}_default"

    def compose(self, *args: str, profiles: tuple[str, ...] = (), timeout: float = 300.0) -> str:
        flags = [f for p in profiles for f in ("--profile", p)]
        files = [f for path in self.files for f in ("--file", path)]
        return self.engine.run([*compose_command(), "--project-name", self.name, "--env-file", self.env_file,
                                *files, *flags, *args], timeout=timeout).stdout

    def container(self, service: str) -> str:
        ids = self.compose("ps", "-q", service).split()
        if len(ids) != 1:
            raise EngineError(f"{len(ids)} containers for {service}")
        return ids[0]

    def inspect(self, service: str) -> dict[str, object]:
        return json.loads(self.engine.docker("inspect", self.container(service)).stdout)[0]  # type: ignore[no-any-return]

    def port(self, service: str, container_port: int = 6379) -> int:
        """The 127.0.0.1 port published for the service (a restart may change it)."""
        host, _, port = self.compose("port", service, str(container_port)).strip().rpartition(":")
        if host != "127.0.0.1":
            raise EngineError(f"{service}:{container_port} is published on {host!r}, not 127.0.0.1")
        return int(port)

    def client(self, service: str, **kwargs: object) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port(service), password=self.password,
                           socket_timeout=10, decode_responses=True, **kwargs)  # type: ignore[arg-type]

    def health(self, service: str) -> str:
        state = self.inspect(service)["State"]
        assert isinstance(state, dict)
        return str(state.get("Health", {}).get("Status", state.get("Status")))

    def wait_healthy(self, services: tuple[str, ...], timeout: float = 180.0) -> None:
        deadline = time.monotonic() + timeout
        states: dict[str, str] = {}
        while time.monotonic() < deadline:
            states = {s: self.health(s) for s in services}
            if all(state == "healthy" for state in states.values()):
                return
            time.sleep(1.0)
        logs = self.compose("logs", "--tail", "20", *services)
        raise EngineError(f"not healthy after {timeout:.0f} s: {states}\n{logs}")

    def down(self) -> None:
        """Containers, networks, volumes and the images of its services."""
        self.compose("down", "--volumes", "--rmi", "all", "--remove-orphans", profiles=PROFILES, timeout=300)
