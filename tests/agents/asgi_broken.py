"""A module that cannot be imported: the executor must say so, not raise."""

raise RuntimeError("this agent module is broken at import time")
