"""``python -m onetool_code``."""

import sys

from onetool_code.cli import main

sys.exit(main())
