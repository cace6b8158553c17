"""The worked example of the seed explainer, section 14: tree, branch and context."""

from __future__ import annotations

from helpers import SEED_SECTION_14, roles, texts

from pi_lab.session import SessionManager, get_tree


def open_seed(tmp_path):
    path = tmp_path / "seed.jsonl"
    path.write_text(SEED_SECTION_14, encoding="utf-8")
    return SessionManager.open(path), path


def test_leaf_is_the_last_line(tmp_path):
    sm, _ = open_seed(tmp_path)
    assert sm.leaf_id == "C1"
    assert sm.session_id == "S1"


def test_full_tree_branches_at_a2(tmp_path):
    sm, _ = open_seed(tmp_path)
    roots = sm.get_tree()
    assert [r.entry["id"] for r in roots] == ["U1"]
    node = roots[0]
    walked = []
    while len(node.children) == 1:
        walked.append(node.entry["id"])
        node = node.children[0]
    assert walked == ["U1", "A1", "T1"]
    assert node.entry["id"] == "A2"
    # children sorted by timestamp: the JWT branch (09:01) before the summary (09:02)
    assert [c.entry["id"] for c in node.children] == ["U2", "BS1"]


def test_branch_is_root_to_leaf_only(tmp_path):
    sm, _ = open_seed(tmp_path)
    assert [e["id"] for e in sm.get_branch()] == [
        "U1", "A1", "T1", "A2", "BS1", "U2B", "A4", "U3", "A5", "U4", "A6", "C1",
    ]


def test_context_entries_put_the_checkpoint_first(tmp_path):
    sm, _ = open_seed(tmp_path)
    assert [e["id"] for e in sm.build_context_entries()] == ["C1", "U4", "A6"]


def test_model_sees_summary_then_kept_messages(tmp_path):
    sm, _ = open_seed(tmp_path)
    context = sm.build_session_context()
    assert roles(context.messages) == ["compactionSummary", "user", "assistant"]
    assert texts(context.messages) == [
        "目标是完成认证改造；当前采用 session cookie；测试已补充。",
        "检查边界条件",
        "边界条件已处理",
    ]
    assert context.messages[0]["tokensBefore"] == 115000
    # 2026-07-29T09:05:00Z in epoch milliseconds
    assert context.messages[0]["timestamp"] == 1785315900000
    assert context.thinking_level == "off"
    assert context.model == {}  # assistants without provider/model: pi's {provider: undefined, ...}


def test_jwt_branch_leaf_sees_the_old_path(tmp_path):
    sm, _ = open_seed(tmp_path)
    context = sm.build_session_context("A3")
    assert texts(context.messages)[-2:] == ["改成 JWT", "JWT 方案已完成"]
    assert "branchSummary" not in roles(context.messages)


def test_cookie_branch_sees_the_branch_summary(tmp_path):
    sm, _ = open_seed(tmp_path)
    context = sm.build_session_context("A4")
    assert roles(context.messages) == ["user", "assistant", "toolResult", "assistant", "branchSummary", "user", "assistant"]
    assert context.messages[4]["fromId"] == "A2"


def test_the_file_is_not_modified_by_opening(tmp_path):
    _, path = open_seed(tmp_path)
    assert path.read_text(encoding="utf-8") == SEED_SECTION_14


def test_pure_functions_agree_with_the_manager(tmp_path):
    sm, _ = open_seed(tmp_path)
    assert len(get_tree(sm.entries)) == 1
