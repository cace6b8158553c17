from pi_lab.llm.catalog import context_window_for


def test_known_families_and_prefix_precedence():
    assert context_window_for("claude-sonnet-4-5") == 200_000
    assert context_window_for("anthropic/claude-opus-4-5") == 200_000
    assert context_window_for("gpt-4.1-mini") == 1_047_576
    assert context_window_for("gpt-4o-2024-08-06") == 128_000
    assert context_window_for("gpt-5.1-codex") == 400_000


def test_unknown_models_have_no_window():
    assert context_window_for("K2.6-code-preview") is None
    assert context_window_for("") is None and context_window_for(None) is None
