"""Starting a sentinel: the command line as redis-server reads it, the checks redis-sentinel
makes before it runs, the default port, and the id picked and persisted at once."""

from __future__ import annotations

import os
import re

import pytest

from node.sentinel.startup import StartupError, ensure_id, load, split_args
from node.sentinel.timings import DEFAULT_PORT


def test_directives_take_the_words_up_to_the_next_option() -> None:
    assert split_args(["s.conf", "--port", "26380", "--sentinel", "--sentinel", "monitor", "m", "1.2.3.4", "6379", "2"]) == (
        "s.conf", [["port", "26380"], ["sentinel"], ["sentinel", "monitor", "m", "1.2.3.4", "6379", "2"]])
    assert split_args(["--port", "1"]) == (None, [["port", "1"]])
    with pytest.raises(StartupError, match="Invalid argument 'x'"):
        split_args(["s.conf", "x"])


def test_without_a_file_it_refuses_to_start() -> None:
    with pytest.raises(StartupError, match="Sentinel needs config file on disk to save state. Exiting..."):
        load(["--port", "26380"])


def test_a_missing_file_and_a_bad_directive_are_fatal(tmp_path: object) -> None:
    d = str(tmp_path)
    with pytest.raises(StartupError, match="can't open config file"):
        load([os.path.join(d, "nope.conf")])
    path = os.path.join(d, "s.conf")
    with open(path, "w") as f:
        f.write("sentinel monitor m 127.0.0.1 6379 2\nsentinel bogus 1\n")
    with pytest.raises(StartupError) as exc:
        load([path])
    assert "FATAL CONFIG FILE ERROR" in str(exc.value) and "at line 2" in str(exc.value)


def test_command_line_directives_apply_after_the_file_and_dir_is_entered(tmp_path: object,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir("/")
    d = os.path.realpath(str(tmp_path))
    path = os.path.join(d, "s.conf")
    with open(path, "w") as f:
        f.write("port 1111\n")
    loaded = load([path, "--port", "2222", "--dir", d, "--sentinel", "monitor", "m", "127.0.0.1", "6379", "2"])
    assert loaded.options.port == 2222 and os.getcwd() == d
    assert loaded.sentinel.masters["m"].quorum == 2
    assert loaded.config_path == path


def test_the_default_port_is_26379_and_an_id_is_picked_and_saved(tmp_path: object,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(str(tmp_path))
    with open("s.conf", "w") as f:
        f.write("sentinel monitor m 127.0.0.1 6379 2\n")
    loaded = load(["s.conf"])
    assert loaded.options.port == DEFAULT_PORT == 26379
    assert loaded.sentinel.myid == ""
    ensure_id(loaded)
    myid = loaded.sentinel.myid
    assert re.fullmatch(r"[0-9a-f]{40}", myid)
    with open("s.conf") as f:
        assert f"sentinel myid {myid}" in f.read()
    again = load(["s.conf"])
    ensure_id(again)
    assert again.sentinel.myid == myid
