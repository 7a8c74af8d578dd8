"""``python -m epslap``: the ``epslap`` command (see :mod:`epslap.cli`)."""
import sys

from .cli import main

sys.exit(main())
