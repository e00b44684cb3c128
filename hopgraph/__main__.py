"""`python -m hopgraph` is the `hopgraph` command."""

from hopgraph.cli import main

main()
