"""`python -m extraction <command>`: the command line is extraction/cli.py."""

import sys

from extraction.cli import main

if __name__ == "__main__":
    sys.exit(main())
