"""DUMP payloads written by real Redis servers (data/: redis-server 7.0.15, RDB 10, and
7.2.4, RDB 11; make_fixtures.py): the codec reads each one back into the engine's stream or
string and writes it out again byte for byte, and Rill building the same key with the same
commands (in-process, scenarios.py) DUMPs the same bytes, up to the clock readings the two
servers took (compare.py)."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from node.app.rill_node import RillNode
from node.commands.context import Session
from node.commands.reply import ReplyError
from node.config import Config
from node.engine.stream_value import StreamValue
from node.rdb.dump import create_payload, load_payload, verify_payload
from tests.unit.rdb.compare import assert_same_payload
from tests.unit.rdb.make_fixtures import DEFAULTS
from tests.unit.rdb.scenarios import Scenario, scenarios

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = {"7.0.15": 10, "7.2.4": 11}
SCENARIOS = {s.name: s for s in scenarios()}


def _fixture(version: str) -> dict[str, Any]:
    with open(os.path.join(HERE, "data", f"payloads-{version}.json")) as f:
        data: dict[str, Any] = json.load(f)
    return data


CASES = [(version, name) for version in FIXTURES for name in sorted(_fixture(version)["scenarios"])]


@pytest.mark.parametrize(("version", "name"), CASES)
def test_a_redis_payload_is_read_and_written_back_byte_for_byte(version: str, name: str) -> None:
    payload = bytes.fromhex(_fixture(version)["scenarios"][name]["payload"])
    rdb_version = verify_payload(payload)
    assert rdb_version == FIXTURES[version]
    value = load_payload(payload)
    if isinstance(value, StreamValue):
        value._check()
    assert create_payload(value, rdb_version, compress=True) == payload


def _build(scenario: Scenario, now_ms: int) -> RillNode:
    clock = [now_ms]
    node = RillNode(Config(), clock=lambda: clock[0])
    session = Session(node, 1)
    for name, value in DEFAULTS + scenario.config:
        node.server.execute(session, [b"CONFIG", b"SET", name.encode(), value.encode()])
    for command in scenario.commands:
        reply = node.server.execute(session, [a.encode() for a in command])
        assert type(reply) is not ReplyError, (command, reply)
        clock[0] += 1
    return node


@pytest.mark.parametrize(("version", "name"), CASES)
def test_rill_dumps_what_redis_dumps_for_the_same_commands(version: str, name: str) -> None:
    fixture = _fixture(version)
    scenario = SCENARIOS[name]
    node = _build(scenario, fixture["generated_ms"])
    session = Session(node, 2)
    node.server.execute(session, [b"CONFIG", b"SET", b"rdb-version", str(FIXTURES[version]).encode()])
    got = node.server.execute(session, [b"DUMP", scenario.key.encode()])
    assert isinstance(got, bytes)
    expected = bytes.fromhex(fixture["scenarios"][name]["payload"])
    assert_same_payload(got, expected, fixture["generated_ms"] - 1000, fixture["finished_ms"] + 1000)
