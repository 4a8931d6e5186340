"""The compose `pipeline` profile's job: the example pipeline (`python -m pipeline.example`,
docs/pipeline.md) against the compose cluster — producers write to `primary`, the streaming job
reads `replica-1` and `replica-2` — with the nodes' password from RILL_PASSWORD, quoted into
the URLs. Arguments are the example's (`--seconds`, `--rate`, `--out`)."""

from __future__ import annotations

import os
import sys
from urllib.parse import quote

from pipeline.example.__main__ import main


def _url(host: str) -> str:
    password = os.environ.get("RILL_PASSWORD", "")
    auth = f":{quote(password, safe='')}@" if password else ""
    return f"redis://{auth}{host}:6379/0"


if __name__ == "__main__":
    sys.exit(main(["--url", _url("primary"), "--replica-url", _url("replica-1"), "--replica-url", _url("replica-2"),
                   *sys.argv[1:]]))
