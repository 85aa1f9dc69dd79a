"""Policy decisions recorded from the apiserver (placeholder until the corpus lands)."""

from __future__ import annotations

from typing import Any


def record(api: Any) -> list[dict[str, Any]]:
    """Nothing yet."""
    return []
