"""The shared test kit: skills, filesystems, git remotes, I/O recording, polling and the clock.

Import the pieces from their modules (``from tests.support.skills import make_skill``); the
area modules (``pipeline``, ``reliability``, ``repositories``, ``fs_cases``, ``model_wire``)
hold what only one suite uses.
"""
