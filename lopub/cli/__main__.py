"""``python -m lopub.cli``: the same as the ``lopub`` command (and ``python -m lopub``)."""
import sys

from lopub.cli import main

sys.exit(main())
