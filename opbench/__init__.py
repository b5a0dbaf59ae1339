"""opbench: which deep-learning operators are slower than in the reference framework,
by how much, with what confidence, and did the last commit make it worse."""
from __future__ import annotations

__version__ = "0.1.0"
