"""``python -m mockbroker``: the command line (see ``mockbroker.cli``)."""

import sys

from mockbroker.cli import main

sys.exit(main())
