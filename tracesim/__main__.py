"""``python -m tracesim`` runs the ``tracesim`` command."""

import sys

from tracesim.cli import main

sys.exit(main())
