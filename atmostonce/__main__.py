"""`python -m atmostonce` runs the command line."""

import sys

from atmostonce.cli import main

sys.exit(main())
