#!/usr/bin/env python3
"""Print the row count and distinct values per column of a CSV file (stdin when no file)."""

import csv
import sys

stream = open(sys.argv[1], newline="") if len(sys.argv) > 1 else sys.stdin
rows = list(csv.DictReader(stream))
print(f"rows: {len(rows)}")
for column in rows[0].keys() if rows else []:
    print(f"{column}: {len({row[column] for row in rows})} distinct")
