"""Fixtures of the attack suites: a seeded two-tenant workspace per filesystem mode."""

from .attacker import arena

__all__ = ["arena"]
