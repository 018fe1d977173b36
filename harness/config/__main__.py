"""``python -m harness.config``: print the JSON Schema of ``harness.yaml``."""

from __future__ import annotations

import json

from harness.config.schema import json_schema

print(json.dumps(json_schema(), indent=2, ensure_ascii=False))
