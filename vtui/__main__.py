"""`python -m vtui`: the command line."""

import sys

from vtui.cli import main

sys.exit(main())
