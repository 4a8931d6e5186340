"""`python -m chaos ...`: the same commands as `rill chaos ...`."""

import sys

from chaos.cli import main

sys.exit(main())
