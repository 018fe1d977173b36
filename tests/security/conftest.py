"""Fixtures of the attack suites: a seeded two-tenant workspace per filesystem mode."""

from .attacker import arena, sandbox_dir

__all__ = ["arena", "sandbox_dir"]
