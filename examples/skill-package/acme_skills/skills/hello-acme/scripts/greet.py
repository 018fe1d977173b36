#!/usr/bin/env python3
"""Print an ACME greeting for the name given on the command line."""

import sys

name = " ".join(sys.argv[1:]) or "world"
print(f"Hello, {name}, from ACME!")
