import sys

from vtui.cli import main

sys.exit(main())
