"""Publish the approved draft to published/issue-<action id>.md, once per action.

The engine hands the action id in HARNESS_ACTION_ID and the step's reads in HARNESS_STEP_READS
(JSON); the last line of output reports the step's outcome to the workflow.
"""

import json
import os
import pathlib
import sys

action_id = os.environ["HARNESS_ACTION_ID"]
draft = json.loads(os.environ.get("HARNESS_STEP_READS", "{}")).get("draft", "")
target = pathlib.Path("published") / f"issue-{action_id}.md"
if target.exists():
    summary = f"{target} was already published by this action; nothing sent again"
else:
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".tmp")
    partial.write_text(draft)
    os.replace(partial, target)
    summary = f"published {target}"
print(summary, file=sys.stderr)
report = {"status": "succeeded", "summary": summary, "artifacts": {"issue": str(target)}}
print(json.dumps({"workflow_report": report}))
