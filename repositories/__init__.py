"""Skill markets: repositories that deliver raw skill bundles to the harness."""

__all__: list[str] = []
