"""Print the one-line log of the commits since the latest tag (or all commits without one)."""

import subprocess
import sys

tag = subprocess.run(["git", "describe", "--tags", "--abbrev=0"], capture_output=True, text=True)
since = [f"{tag.stdout.strip()}..HEAD"] if tag.returncode == 0 else []
log = subprocess.run(["git", "log", "--oneline", *since], capture_output=True, text=True)
sys.stdout.write(log.stdout)
sys.exit(log.returncode)
