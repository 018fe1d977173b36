#!/usr/bin/env python3
"""Print a greeting for the name given on the command line."""

import sys

name = " ".join(sys.argv[1:]) or "world"
print(f"Hello, {name}! The hello-world skill ran.")
