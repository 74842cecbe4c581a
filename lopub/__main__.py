import sys

from lopub.cli import main

sys.exit(main())
