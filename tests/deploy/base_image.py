"""The base image the deploy tests build Rill's image from, made from Debian packages: this
machine cannot pull from Docker Hub, so `python:3.11-slim-bookworm` (deploy/Dockerfile's
default BASE) is replaced by `debootstrap --variant=minbase bookworm` with python3 and
`docker import`.

Cached twice: the engine keeps the imported image under a tag named after the recipe's
digest (reused when present), and the root filesystem is kept as a tarball in the user's
cache directory (~/.cache/rill/), since a private engine (engine.py) forgets its images when
it stops; importing the tarball takes seconds, debootstrap about a minute.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import subprocess
import tempfile

from tests.deploy.engine import Engine, EngineError

SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
PACKAGES = ("python3", "python3-venv", "ca-certificates")
# APT sources as in Debian's official images: updates and security fixes, not just the release.
_SOURCES = f"""Types: deb
URIs: {MIRROR}
Suites: {SUITE} {SUITE}-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: {SUITE}-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""
# Certificate authorities this host added to its trust store (Debian keeps them here): an
# egress proxy that intercepts TLS, as on this CI machine, is then trusted inside the builds
# as on the host. pip uses its own CA bundle unless PIP_CERT names the system one.
_LOCAL_CAS = "/usr/local/share/ca-certificates"
_IMAGE_CHANGES = ("ENV LANG=C.UTF-8", "ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt", 'CMD ["python3"]')
_RECIPE_VERSION = "1"


def _local_cas() -> list[str]:
    return sorted(glob.glob(os.path.join(_LOCAL_CAS, "**", "*.crt"), recursive=True))


def recipe_digest() -> str:
    """Changes whenever what the image would contain changes."""
    h = hashlib.sha256()
    for part in (_RECIPE_VERSION, SUITE, MIRROR, *PACKAGES, _SOURCES, *_IMAGE_CHANGES):
        h.update(part.encode() + b"\0")
    for path in _local_cas():
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:12]


def cache_dir() -> str:
    return os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "rill")


def _build_rootfs_tarball(path: str) -> None:
    if shutil.which("debootstrap") is None:
        raise EngineError("debootstrap is not installed: `make deploy-deps` installs it")
    with tempfile.TemporaryDirectory(prefix="rill-rootfs-") as work:
        root = os.path.join(work, "rootfs")
        done = subprocess.run(["debootstrap", "--variant=minbase", f"--include={','.join(PACKAGES)}", SUITE,
                               root, MIRROR], capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            raise EngineError(f"debootstrap failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        cas = _local_cas()
        for ca in cas:
            shutil.copy(ca, os.path.join(root, "usr/local/share/ca-certificates", os.path.basename(ca)))
        if cas:
            subprocess.run(["chroot", root, "update-ca-certificates"], check=True, capture_output=True)
        os.unlink(os.path.join(root, "etc/apt/sources.list"))
        with open(os.path.join(root, "etc/apt/sources.list.d/debian.sources"), "w", encoding="ascii") as f:
            f.write(_SOURCES)
        # What an image should not carry: downloaded packages, package lists, the host's
        # resolver (the engine provides one per container).
        for pattern in ("var/cache/apt/archives/*.deb", "var/cache/apt/*.bin", "var/lib/apt/lists/*"):
            for leftover in glob.glob(os.path.join(root, pattern)):
                if os.path.isfile(leftover):
                    os.unlink(leftover)
        open(os.path.join(root, "etc/resolv.conf"), "w").close()
        partial = path + ".part"
        subprocess.run(["tar", "-C", root, "--numeric-owner", "-cf", partial, "."], check=True, capture_output=True)
        os.replace(partial, path)


def ensure_base_image(engine: Engine) -> str:
    """The tag of the local base image in `engine`, imported (and first built) when absent."""
    digest = recipe_digest()
    tag = f"rill-test-base:{SUITE}-{digest}"
    if engine.docker("image", "inspect", tag, check=False).returncode == 0:
        return tag
    os.makedirs(cache_dir(), exist_ok=True)
    tarball = os.path.join(cache_dir(), f"base-{SUITE}-{digest}.tar")
    if not os.path.exists(tarball):
        for stale in glob.glob(os.path.join(cache_dir(), f"base-{SUITE}-*.tar")):
            os.unlink(stale)  # an older recipe's
        _build_rootfs_tarball(tarball)
    changes = [arg for change in _IMAGE_CHANGES for arg in ("--change", change)]
    engine.docker("import", *changes, tarball, tag, timeout=600)
    return tag
