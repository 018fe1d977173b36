"""Abstract async filesystems: local, local with shell, remote key-value store, sandbox, composite."""

__all__: list[str] = []
