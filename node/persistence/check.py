"""`rill check-aof [--fix] FILE`: inspect (and repair) an AOF manifest, an incr AOF file or a
snapshot, as redis-check-aof does for Redis. A manifest that is missing while AOF files are
beside it is rebuilt from them by --fix (node.persistence.manifest_rebuild).

An incr file that ends in the middle of a command (or of a MULTI) is truncated at its last
complete unit by --fix; one damaged in the middle is cut at the damage, which drops every
command after it, so --fix says how many bytes go. In a manifest only the last incr file can
be cut (cutting an earlier one would drop the files after it too). A snapshot has checksums
and cannot be repaired, only reported.
"""

from __future__ import annotations

import os
from typing import TextIO

from node.persistence.aof_reader import AofReadResult, read_aof
from node.persistence.manifest import MANIFEST_SUFFIX, ManifestError, load_manifest, write_manifest
from node.persistence.manifest_rebuild import rebuild_manifest
from node.persistence.snapshot import MAGIC, verify_snapshot


def check_aof(path: str, fix: bool, out: TextIO) -> int:
    """Exit status: 0 when the file is valid (or was fixed), 1 otherwise."""
    try:
        if path.endswith(MANIFEST_SUFFIX):
            if not os.path.exists(path):
                return _rebuild_manifest(path, fix, out)
            return _check_manifest(path, fix, out)
        with open(path, "rb") as f:
            head = f.read(len(MAGIC))
        if head == MAGIC:
            return _check_snapshot(path, out)
        return _check_incr(path, fix, out, last=True)
    except OSError as exc:
        out.write(f"Cannot open {path}: {exc.strerror}\n")
        return 1


def _check_manifest(path: str, fix: bool, out: TextIO) -> int:
    try:
        manifest = load_manifest(path)
    except ManifestError as exc:
        out.write(f"{exc}\nThe manifest itself is damaged: it cannot be fixed automatically.\n")
        return 1
    dirpath = os.path.dirname(os.path.abspath(path))
    out.write(f"Start checking Multi Part AOF {os.path.basename(path)}\n")
    status = 0
    if manifest.base is not None:
        status = _check_snapshot(os.path.join(dirpath, manifest.base.name), out)
    for i, incr in enumerate(manifest.incrs):
        if status:
            break
        status = _check_incr(os.path.join(dirpath, incr.name), fix, out, last=i == len(manifest.incrs) - 1)
    out.write("All AOF files and manifest are valid\n" if status == 0 else "")
    return status


def _rebuild_manifest(path: str, fix: bool, out: TextIO) -> int:
    dirpath = os.path.dirname(os.path.abspath(path))
    filename = os.path.basename(path)[: -len(MANIFEST_SUFFIX)]
    try:
        manifest = rebuild_manifest(dirpath, filename)
    except ManifestError as exc:
        out.write(f"The manifest {path} does not exist. {exc}\n")
        return 1
    out.write(f"The manifest {path} does not exist; the AOF files beside it make this one:\n")
    out.write(manifest.format().decode())
    if not fix:
        out.write("Use the --fix option to write it.\n")
        return 1
    write_manifest(dirpath, filename, manifest)
    out.write(f"Manifest {os.path.basename(path)} rebuilt from the AOF files\n")
    return _check_manifest(path, False, out)


def _check_snapshot(path: str, out: TextIO) -> int:
    good, error = verify_snapshot(path)
    name = os.path.basename(path)
    if error is None:
        out.write(f"Snapshot {name} is valid ({good} bytes, every section checksum matches)\n")
        return 0
    out.write(f"{error}\nSnapshot {name} is not valid and cannot be repaired: restore it from a backup.\n")
    return 1


def _check_incr(path: str, fix: bool, out: TextIO, last: bool) -> int:
    name = os.path.basename(path)
    result = read_aof(path)
    _report(path, result, out)
    if result.ok:
        out.write(f"AOF {name} is valid\n")
        return 0
    if result.status == "corrupt":
        out.write(f"AOF {name} format error at offset {result.error_offset}: {result.error}\n")
    elif result.open_multi:
        out.write(f"AOF {name} ends inside a MULTI/EXEC transaction\n")
    if not fix:
        out.write(f"AOF {name} is not valid. Use the --fix option to try fixing it.\n")
        return 1
    if not last:
        out.write(f"AOF {name} is not the last file of the manifest: cutting it would drop the files after it. "
                  "Restore a backup instead.\n")
        return 1
    out.write(f"This will shrink the AOF {name} from {result.size} bytes, with {result.size - result.valid_up_to} "
              f"bytes, to {result.valid_up_to} bytes\n")
    os.truncate(path, result.valid_up_to)
    out.write(f"Successfully truncated AOF {name}\n")
    return 0


def _report(path: str, result: AofReadResult, out: TextIO) -> None:
    with open(path, "rb") as f:
        lines = f.read(result.valid_up_to).count(b"\n")
    out.write(
        f"AOF analyzed: filename={os.path.basename(path)}, size={result.size}, ok_up_to={result.valid_up_to}, "
        f"ok_up_to_line={lines}, diff={result.size - result.valid_up_to}\n"
    )
