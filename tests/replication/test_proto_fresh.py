"""The checked-in replication/pb/ code is what `python -m replication.pb.generate` (make proto)
produces from proto/replication.proto today: editing the .proto without regenerating fails."""

from __future__ import annotations

from pathlib import Path

from replication.pb import generate


def test_generated_code_matches_the_proto(tmp_path: Path) -> None:
    fresh = {path.name: path.read_text() for path in generate.generate(tmp_path)}
    checked_in = {name: (generate.PB_DIR / name).read_text() for name in generate.GENERATED}
    stale = [name for name in generate.GENERATED if fresh[name] != checked_in[name]]
    assert not stale, f"replication/pb is stale ({', '.join(stale)}): run `make proto`"


def test_generated_modules_import_each_other_relatively() -> None:
    source = (generate.PB_DIR / "replication_pb2_grpc.py").read_text()
    assert "from . import replication_pb2 as" in source
    assert "\nimport replication_pb2" not in source
