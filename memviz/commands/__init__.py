"""`memviz` subcommands, one module each (see memviz/cli.py)."""
