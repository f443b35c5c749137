"""The `berth` command."""
