"""Print the diff of the working tree against HEAD (the change under review)."""

import subprocess
import sys

result = subprocess.run(["git", "diff", "HEAD"], capture_output=True, text=True)
sys.stdout.write(result.stdout)
sys.exit(result.returncode)
