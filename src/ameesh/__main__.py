"""``python -m ameesh``: the command line (what a harness's turn runs when ``ameesh`` is not on its PATH)."""

from ameesh.cli import main

main()
