"""Regenerates the Python code for proto/replication.proto into replication/pb/.

Run `python -m replication.pb.generate` (or `make proto`) after editing the .proto;
tests/replication/test_proto_fresh.py fails while the checked-in code is stale. protoc emits
top-level imports (`import replication_pb2`); they are rewritten to package-relative ones so
the generated modules import as `replication.pb.*`.
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parents[2]
PROTO_DIR = ROOT / "proto"
PROTO = "replication.proto"
PB_DIR = Path(__file__).resolve().parent

# The files protoc produces for PROTO, relative to the output directory.
GENERATED = ("replication_pb2.py", "replication_pb2.pyi", "replication_pb2_grpc.py", "replication_pb2_grpc.pyi")

_TOP_LEVEL_IMPORT = re.compile(r"^import (replication_pb2)( as \w+)?$", re.MULTILINE)


def _mypy_grpc_plugin() -> str:
    plugin = Path(sys.executable).parent / "protoc-gen-mypy_grpc"
    if not plugin.exists():
        raise RuntimeError(f"{plugin} not found: install the dev extra (mypy-protobuf)")
    return str(plugin)


def generate(out_dir: Path) -> list[Path]:
    """Runs protoc into out_dir and rewrites the imports; returns the generated files."""
    args = [
        "grpc_tools.protoc",
        f"-I{PROTO_DIR}",
        f"--plugin=protoc-gen-mypy_grpc={_mypy_grpc_plugin()}",
        f"--python_out={out_dir}",
        f"--pyi_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        f"--mypy_grpc_out={out_dir}",
        str(PROTO_DIR / PROTO),
    ]
    code = protoc.main(args)
    if code != 0:
        raise RuntimeError(f"protoc failed with exit code {code}")
    paths = [out_dir / name for name in GENERATED]
    for path in paths:
        text = path.read_text()
        path.write_text(_TOP_LEVEL_IMPORT.sub(r"from . import \1\2", text))
    return paths


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for path in generate(Path(tmp)):
            (PB_DIR / path.name).write_text(path.read_text())
            print(f"wrote {PB_DIR / path.name}")


if __name__ == "__main__":
    main()
