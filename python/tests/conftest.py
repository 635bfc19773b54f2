"""Shared fixtures: the repository's shipped skills and a fresh memory database per test."""

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHIPPED_SKILLS = REPO / "skills"


@pytest.fixture
def skills_dir() -> Path:
    return SHIPPED_SKILLS


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "memory.db")
