"""`python -m extraction <command>`: the engine's command line, declared in extraction/engine/cli.py."""

import sys

from extraction.engine.cli import main

if __name__ == "__main__":
    sys.exit(main())
