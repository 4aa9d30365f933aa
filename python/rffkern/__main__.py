"""``python -m rffkern``: the command line of :mod:`rffkern.cli`."""
import sys

from rffkern.cli import main

if __name__ == "__main__":
    sys.exit(main())
