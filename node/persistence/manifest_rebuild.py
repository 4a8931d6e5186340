"""A lost AOF manifest: finding the AOF files it named, and writing a new one from them.

Without its manifest an AOF directory looks empty to a loader that only follows manifests
(redis-server starts with no data then, and the next rewrite deletes the files). Rill refuses
to start instead (node.persistence.loading), and `rill check-aof --fix <manifest>` rebuilds
the manifest from the files: the base (a snapshot, whose metadata holds the log offset it
ends at) and the incr files after it, in sequence order, each starting where the one before
it ends. The replication identities an incr file may have recorded are not in the files:
the rebuilt manifest takes the base's (replicas then resynchronize in full). History files
(a base and the incr files it replaced, kept until a rewrite deletes them) cannot be told
from current ones by their names: several bases are refused, and check-aof lists the files
it used so that an operator can check them.
"""

from __future__ import annotations

import os

from node.persistence.aof_reader import read_aof
from node.persistence.manifest import INCR, AofFile, Manifest, ManifestError, aof_files_on_disk
from node.persistence.snapshot import SnapshotError, read_meta


def rebuild_manifest(dirpath: str, filename: str) -> Manifest:
    """A manifest naming the AOF files found in `dirpath`; ManifestError when they do not
    make one history (several bases: which incr files follow which cannot be told)."""
    bases, incrs = aof_files_on_disk(dirpath, filename)
    if not bases and not incrs:
        raise ManifestError(f"No AOF file of {filename} in {dirpath}: nothing to rebuild a manifest from")
    if len(bases) > 1:
        raise ManifestError(
            f"Several base files of {filename} in {dirpath} ({', '.join(f.name for f in bases)}): which incr "
            "files follow which cannot be told; move the older ones away and try again"
        )
    base = bases[0] if bases else None
    offset = 0
    if base is not None:
        try:
            offset = read_meta(os.path.join(dirpath, base.name)).offset
        except (SnapshotError, OSError) as exc:
            raise ManifestError(f"The base file {base.name} cannot be read: {exc}") from None
    chained: list[AofFile] = []
    for incr in incrs:
        chained.append(AofFile(incr.name, incr.seq, INCR, offset))
        # Where the next file starts: the log offset this one ends at (its offset
        # annotations are not log bytes).
        offset = read_aof(os.path.join(dirpath, incr.name)).log_end(offset)
    return Manifest(
        base, tuple(chained), (), base.seq if base is not None else 0, chained[-1].seq if chained else 0
    )
