"""Where the contract is: the WIT files shipped in this package, and its world."""

from pathlib import Path

WIT = Path(__file__).parent / "wit"
"""The contract (``kubewasm:reconciler``), a copy of the repository's ``wit/``."""
WORLD = "plugin"
