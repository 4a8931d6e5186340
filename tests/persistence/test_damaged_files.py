"""Damaged files at start-up: a truncated AOF tail is cut off with a warning and the node
starts with everything before it; a corrupted byte, a damaged snapshot or a bad manifest
make the node refuse to start with a message naming the file and the offset (or line);
`rill check-aof` reports and `--fix` repairs what can be repaired."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import redis

from tests.conftest import ROOT
from tests.persistence.conftest import Nodes, aof_dir, digest, incr_files, wait_child_done, wait_for


def _fill(client: redis.Redis, n: int = 50) -> None:
    client.xgroup_create("s", "g", "0", mkstream=True)
    for i in range(n):
        client.xadd("s", {"n": i}, id=f"{i + 1}-0")
    client.xreadgroup("g", "alice", {"s": ">"}, count=5)
    client.set("k", "v")


def _check_aof(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "node.main", "check-aof", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=30)


def _prepared(nodes: Nodes) -> tuple[str, bytes]:
    """A stopped node's AOF dir holding _fill's writes; returns the incr path and digest."""
    node = nodes.start("--appendonly", "yes")
    client = node.client()
    _fill(client)
    before = digest(client)
    node.stop()
    return incr_files(nodes.dir)[-1], before


def test_truncated_tail_is_cut_off_with_a_warning_and_the_node_starts(nodes: Nodes) -> None:
    node = nodes.start("--appendonly", "yes")
    client = node.client()
    _fill(client)
    before = digest(client)
    client.xadd("s", {"last": "x" * 100}, id="1000-0")
    node.kill()
    path = incr_files(nodes.dir)[-1]
    size = os.path.getsize(path)
    os.truncate(path, size - 40)  # a crash in the middle of the last write
    node = nodes.start("--appendonly", "yes")
    client = node.client()
    assert digest(client) == before  # everything but the cut command
    assert "Truncating the AOF appendonly.aof.1.incr.aof at offset" in node.log
    assert "loaded anyway because aof-load-truncated is enabled" in node.log
    client.xadd("s", {"after": 1}, id="1001-0")  # the file continues cleanly after the cut
    after = digest(client)
    node.kill()
    node = nodes.start("--appendonly", "yes")
    assert digest(node.client()) == after


def test_truncated_tail_refuses_to_start_when_aof_load_truncated_is_no(nodes: Nodes) -> None:
    path, _ = _prepared(nodes)
    size = os.path.getsize(path)
    os.truncate(path, size - 3)
    code, text = nodes.start_failure("--appendonly", "yes", "--aof-load-truncated", "no")
    assert code == 1
    assert "Unexpected end of file reading the append only file appendonly.aof.1.incr.aof at offset" in text
    assert "rill check-aof --fix" in text
    assert os.path.getsize(path) == size - 3  # nothing was cut without permission


def test_transaction_cut_in_the_middle_is_reverted_whole(nodes: Nodes) -> None:
    node = nodes.start("--appendonly", "yes")
    client = node.client()
    _fill(client)
    before = digest(client)
    pipe = client.pipeline(transaction=True)
    pipe.xadd("s", {"tx": 1}, id="2000-0")
    pipe.set("k", "changed-in-tx")
    pipe.execute()
    node.kill()
    path = incr_files(nodes.dir)[-1]
    data = Path(path).read_bytes()
    cut = data.rindex(b"EXEC")  # the EXEC (and its header) go: MULTI is left open
    os.truncate(path, cut - 8)
    node = nodes.start("--appendonly", "yes")
    client = node.client()
    assert "Revert incomplete MULTI/EXEC transaction in AOF file appendonly.aof.1.incr.aof" in node.log
    assert client.get("k") == b"v"
    assert digest(client) == before


def test_corrupted_byte_refuses_to_start_naming_file_and_offset_and_check_aof_fixes(nodes: Nodes) -> None:
    path, _ = _prepared(nodes)
    data = bytearray(Path(path).read_bytes())
    # Damage the array header of a command in the middle of the file.
    offset = data.index(b"*", len(data) // 2)
    data[offset] = ord("?")
    Path(path).write_bytes(bytes(data))
    code, text = nodes.start_failure("--appendonly", "yes")
    assert code == 1
    assert f"Bad file format reading the append only file appendonly.aof.1.incr.aof at offset {offset}" in text

    manifest = os.path.join(aof_dir(nodes.dir), "appendonly.aof.manifest")
    report = _check_aof(manifest)
    assert report.returncode == 1
    assert f"ok_up_to={offset}" in report.stdout and "Use the --fix option" in report.stdout
    fixed = _check_aof("--fix", manifest)
    assert fixed.returncode == 0, fixed.stdout
    assert "Successfully truncated AOF appendonly.aof.1.incr.aof" in fixed.stdout
    assert os.path.getsize(path) == offset
    assert _check_aof(manifest).returncode == 0
    node = nodes.start("--appendonly", "yes")
    assert node.client().exists("s") == 1  # the commands before the damage are back


def test_check_aof_on_a_valid_incr_file_and_on_a_truncated_one(nodes: Nodes) -> None:
    path, _ = _prepared(nodes)
    ok = _check_aof(path)
    assert ok.returncode == 0 and "AOF appendonly.aof.1.incr.aof is valid" in ok.stdout
    size = os.path.getsize(path)
    os.truncate(path, size - 5)
    bad = _check_aof(path)
    assert bad.returncode == 1 and f"size={size - 5}" in bad.stdout
    assert _check_aof("--fix", path).returncode == 0
    assert _check_aof(path).returncode == 0


def test_damaged_base_snapshot_refuses_to_start_with_its_offset(nodes: Nodes) -> None:
    node = nodes.start("--appendonly", "yes")
    client = node.client()
    _fill(client, 300)
    client.execute_command("BGREWRITEAOF")
    from tests.persistence.conftest import wait_child_done
    wait_child_done(client)
    node.stop()
    base = os.path.join(aof_dir(nodes.dir), "appendonly.aof.2.base.rill")
    data = bytearray(Path(base).read_bytes())
    data[len(data) // 2] ^= 0x40
    Path(base).write_bytes(bytes(data))
    code, text = nodes.start_failure("--appendonly", "yes")
    assert code == 1
    assert "Bad snapshot file appendonly.aof.2.base.rill at offset" in text and "checksum mismatch" in text
    report = _check_aof(base)
    assert report.returncode == 1 and "cannot be repaired" in report.stdout


def test_damaged_snapshot_file_refuses_to_start(nodes: Nodes) -> None:
    node = nodes.start()
    client = node.client()
    _fill(client)
    client.save()
    node.stop()
    path = os.path.join(nodes.dir, "dump.rdb")
    os.truncate(path, os.path.getsize(path) - 10)
    code, text = nodes.start_failure()
    assert code == 1
    assert "Bad snapshot file dump.rdb at offset" in text


def test_bad_manifest_refuses_to_start_naming_the_line(nodes: Nodes) -> None:
    _prepared(nodes)
    manifest = os.path.join(aof_dir(nodes.dir), "appendonly.aof.manifest")
    with open(manifest, "a") as f:
        f.write("file appendonly.aof.9.incr.aof seq x type i\n")
    code, text = nodes.start_failure("--appendonly", "yes")
    assert code == 1
    assert "Bad AOF manifest appendonly.aof.manifest at line 3" in text
    assert "Invalid AOF manifest file format" in text


def test_manifest_naming_a_missing_file_refuses_to_start(nodes: Nodes) -> None:
    path, _ = _prepared(nodes)
    os.unlink(path)
    code, text = nodes.start_failure("--appendonly", "yes")
    assert code == 1
    assert "The AOF file appendonly.aof.1.incr.aof named by the manifest appendonly.aof.manifest doesn't exist" in text


def test_a_lost_manifest_refuses_to_start_and_check_aof_rebuilds_it(nodes: Nodes) -> None:
    # A base (after BGREWRITEAOF), an incr after it with a PUBLISH's offset annotation, and
    # writes after that: the rebuilt manifest must chain the files at the right offsets.
    node = nodes.start("--appendonly", "yes")
    client = node.client()
    _fill(client)
    client.bgrewriteaof()
    wait_child_done(client)
    wait_for(lambda: len(incr_files(nodes.dir)) == 1 and "base" in str(os.listdir(aof_dir(nodes.dir))),
             what="the rewrite's files")
    client.xadd("s", {"after": "rewrite"}, id="500-0")
    client.publish("ch", "m")
    client.set("k2", "v2")
    before = digest(client)
    offset = client.info("replication")["master_repl_offset"]
    node.stop()
    manifest = os.path.join(aof_dir(nodes.dir), "appendonly.aof.manifest")
    os.unlink(manifest)
    code, text = nodes.start_failure("--appendonly", "yes")
    assert code == 1
    assert re.search(r"holds AOF files \(appendonly\.aof\.\d+\.base\.rill, appendonly\.aof\.\d+\.incr\.aof\) but no "
                     r"manifest appendonly\.aof\.manifest", text), text
    assert "refusing to start with an empty data set" in text
    result = _check_aof(manifest)
    assert result.returncode == 1 and "Use the --fix option to write it." in result.stdout
    result = _check_aof("--fix", manifest)
    assert result.returncode == 0, result.stdout
    assert "Manifest appendonly.aof.manifest rebuilt from the AOF files" in result.stdout
    node = nodes.start("--appendonly", "yes")
    client = node.client()
    assert digest(client) == before
    assert client.info("replication")["master_repl_offset"] == offset


def test_check_aof_does_not_rebuild_a_manifest_from_several_bases(nodes: Nodes) -> None:
    _prepared(nodes)
    directory = aof_dir(nodes.dir)
    os.unlink(os.path.join(directory, "appendonly.aof.manifest"))
    for seq in (1, 2):
        Path(directory, f"appendonly.aof.{seq}.base.rill").write_bytes(b"")
    result = _check_aof("--fix", os.path.join(directory, "appendonly.aof.manifest"))
    assert result.returncode == 1
    assert "Several base files of appendonly.aof" in result.stdout
    assert not os.path.exists(os.path.join(directory, "appendonly.aof.manifest"))
