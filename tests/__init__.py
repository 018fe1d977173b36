"""The test suite (a package so helpers import as ``tests.support``)."""
