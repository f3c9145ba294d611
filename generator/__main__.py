"""`python -m generator` runs the `digest` command line."""

from .cli import main

main()
