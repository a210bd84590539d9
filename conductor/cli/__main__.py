"""`python -m conductor.cli`: the same as the `conductor` command."""

import sys

from conductor.cli import main

sys.exit(main())
