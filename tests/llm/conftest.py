"""Fixtures for the model-layer tests. Other suites can import the server directly:
`from llm.provider_server import ProviderServer, Text, ...` (tests/ is on pytest's pythonpath)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from llm.provider_server import ProviderServer


@pytest.fixture
def provider_server() -> Iterator[ProviderServer]:
    """A fresh loopback server speaking the OpenAI and Anthropic streaming protocols."""
    with ProviderServer() as server:
        yield server


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "differential: compares pi_lab with pi 1.6.0 run under Node (skips without node and bench/.pi)"
    )
