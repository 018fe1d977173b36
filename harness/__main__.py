"""``python -m harness`` runs the same CLI as the ``harness`` console script."""

from harness.cli import main

raise SystemExit(main())
