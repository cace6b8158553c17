"""Issue 11 in a real JupyterLab: each row's token estimate comes with its text.

The kernel estimates a row's entry when the row's text is asked for; the browser draws the
estimate it gets with the text. Every estimate shown equals the eager one (pi's estimate of
the entry's messages), before and after scrolling, and the kernel has estimated only about
the rows that were shown.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_widget import (  # noqa: E402
    NO_ELLIPSIS,
    choose_filter,
    copy_session,
    kernel,
    kernel_json,
    run_notebook,
    widget_cell,
    write_notebook,
)

ALL_TEXTS = ("() => { const rows = [...document.querySelectorAll('.pi-lab .pi-row')];"
             " return rows.length > 0 && rows.every(e => e.dataset.id"
             " && e.querySelector('.pi-row-text').textContent !== '…'); }")

# pi's estimate of an entry's messages, made again without the view's fact table.
EAGER = (
    "from pi_lab.compaction import estimate_tokens as _est\n"
    "from pi_lab.session.projection import entry_to_messages as _msgs\n"
    "def _eager(entry_id):\n"
    "    return int(sum(_est(m) for m in _msgs(dict(w.session_manager.get_entry(entry_id)))))\n"
)


def shown_tokens(page) -> dict[str, str]:
    """Row id -> the estimate the row shows (its title: the exact count), for the rows in the DOM."""
    return page.eval_on_selector_all(
        ".pi-lab .pi-row",
        "els => Object.fromEntries(els.map(e => [e.dataset.id, e.querySelector('.pi-row-tokens')?.title ?? null]))")


def expected_title(count: int) -> str:
    return f"{count} tokens (estimate)" if count else ""


def check_against_kernel(page) -> int:
    shown = shown_tokens(page)
    assert shown and all(title is not None for title in shown.values())
    eager = kernel_json(page, "{i: _eager(i) for i in " + repr(sorted(shown)) + "}")
    assert shown == {i: expected_title(eager[i]) for i in shown}
    return sum(1 for title in shown.values() if title)


def known_count(page) -> list[int]:
    return kernel_json(page, "[sum(1 for r in range(len(w.view.rows.rows)) if w.view.rows.columns.tokens.known(r)),"
                             " len(w.view.rows.rows)]")


def test_row_estimates_arrive_with_the_texts_and_equal_the_eager_ones(page, lab_server, open_lab, fixtures_dir,
                                                                       screenshot_dir):
    session = copy_session(lab_server, fixtures_dir / "large-session.jsonl")
    name = write_notebook(lab_server, "lazy_tokens.ipynb", [widget_cell(session, "follow=False")])
    run_notebook(page, open_lab, name)
    page.wait_for_function(NO_ELLIPSIS)
    kernel(page, EAGER)
    known, total = known_count(page)
    assert total > 300, total
    # The first text requests asked for a few hundred rows at most, not for every row.
    assert known < total, (known, total)
    with_tokens = check_against_kernel(page)
    assert with_tokens  # the estimates are drawn, not left blank
    # Scroll to the other end: the new rows come with their estimates.
    page.locator(".pi-lab .pi-rows").focus()
    first_ids = set(shown_tokens(page))
    page.keyboard.press("Home" if kernel_json(page, "w.view.rows.anchor_row") > total // 2 else "End")
    page.wait_for_function(
        "(ids) => { const rows = [...document.querySelectorAll('.pi-lab .pi-row')];"
        " return rows.length && rows.every(e => !ids.includes(e.dataset.id)); }", arg=sorted(first_ids))
    page.wait_for_function(NO_ELLIPSIS)
    assert check_against_kernel(page)
    # A filter change keeps the estimates made (no blank estimate where a text is shown).
    choose_filter(page, "all")
    # Then every drawn row has its id and text (a row drawn before its text has no id yet).
    page.wait_for_function(ALL_TEXTS)
    check_against_kernel(page)
    page.screenshot(path=str(screenshot_dir / "widget-lazy-tokens.png"))
