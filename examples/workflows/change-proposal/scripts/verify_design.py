"""Check that proposal.md has a design section; exit 1 (with the reason) when it has none."""

import pathlib
import sys

proposal = pathlib.Path("proposal.md")
if not proposal.is_file() or "## Design" not in proposal.read_text(encoding="utf-8"):
    sys.stdout.write("proposal.md has no '## Design' section\n")
    sys.exit(1)
sys.stdout.write("design present\n")
