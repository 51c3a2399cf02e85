"""`python -m memviz` is the `memviz` command."""
import sys

from memviz.cli import main

if __name__ == "__main__":
    sys.exit(main())
