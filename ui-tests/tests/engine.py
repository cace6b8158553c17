"""What the engine says about a session file, as JSON, for the UI tests' expected values.

``python engine.py OP PATH [JSON]`` prints the answer of ``OP`` for the file at PATH, opened
read-only the way the viewer's server does (migrated in memory, never written):

* ``rows {view}``: ``[[id, text], ...]`` of the layout ``view`` (filter_mode, search);
* ``active``: the ids of the rows on the current branch; ``entries``: how many entries;
* ``context_at {"id"}``: the previews of what the model sees with the leaf at that entry;
* ``off_branch_message``: the id of a message entry that is not on the current branch;
* ``compact_preview``: the compaction preview of the current branch;
* ``leaf``: the leaf id; ``title``: the session's title (name, else first user message);
* ``unknown_rows``: ``{id: type}`` of the rows whose entry type the viewer does not know (it names
  the type on such a row where pi leaves it blank);
* ``move_in_view {"id"}``: where going to entry ``id`` puts the leaf (pi's rule: a user message is
  re-edited, the leaf goes to its parent) and the gauge there (``leaf``, ``estimate_total``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pi_lab.server.listing import session_title, first_user_message
from pi_lab.session.readonly import session_from_bytes
from pi_lab.widget.kinds import KIND, entry_kind
from pi_lab.widget.payload import SessionView, read_request


def main() -> None:
    op, path = sys.argv[1], Path(sys.argv[2])
    args = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
    view_args = {k: v for k, v in args.items() if k in ("filter_mode", "search")}
    view = SessionView.open(session_from_bytes(path.read_bytes(), path.name), **view_args)
    if op == "rows":
        answer = [[r["id"], r["text"]] for r in read_request(view, "rows", {"start": 0, "end": 5000})["rows"]]
    elif op == "active":
        answer = [r.entry_id for r in view.rows.rows if r.on_active_path]
    elif op == "entries":
        answer = view.sm.get_entry_count()
    elif op == "leaf":
        answer = view.sm.leaf_id
    elif op == "off_branch_message":
        answer = next(r.entry_id for r in view.rows.rows if not r.on_active_path and r.entry.get("type") == "message")
    elif op == "context_at":
        answer = [m["preview"] for m in read_request(view, "context_at", {"id": args["id"]})["messages"]]
    elif op == "compact_preview":
        answer = read_request(view, "compact_preview", {})
    elif op == "unknown_rows":
        answer = {r.entry_id: r.entry.get("type") for r in view.rows.rows if entry_kind(r.entry) == KIND["unknown"]}
    elif op == "move_in_view":
        entry = view.sm.get_entry(args["id"])
        is_user = entry.get("type") == "message" and entry["message"].get("role") == "user"
        leaf = entry.get("parentId") if is_user or entry.get("type") == "custom_message" else args["id"]
        answer = {"leaf": leaf, "estimate_total": read_request(view, "gauge", {"leaf_id": leaf})["estimate_total"]}
    elif op == "title":
        answer = session_title(view.sm.session_name, first_user_message(view.sm.get_entries()))
    else:
        raise SystemExit(f"unknown op {op!r}")
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    main()
