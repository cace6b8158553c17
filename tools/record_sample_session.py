"""Records pi_lab/data/sessions/tiny-auth.jsonl, the session the tour shows when pi's fixtures are absent.

    python tools/record_sample_session.py            # rewrite the packaged file
    python tools/record_sample_session.py --check    # exit 1 when a fresh recording differs
    python tools/record_sample_session.py --out x.jsonl

What happens is real, only the model is scripted: a tiny Python project is created in a temporary
folder; pi_lab's AgentSession drives the offline model (pi_lab.llm.OfflineModel), whose scripted
replies call real tools (pi_lab.agent.demo_tools' ``ls`` and ``read``, and the ``edit`` and
``write`` tools below, which take pi 1.6.0's arguments) on those files; every message, the branch
summary and both compactions are appended by SessionManager exactly as pi writes its sessions. The
summaries are the offline model's extractive checkpoints of the conversation.

The recording is byte-for-byte reproducible: the session id, the entry ids (a seeded generator) and
every timestamp (one fake clock, 3 s per reading) are injected. AgentSession stamps user messages
and tool results with the wall clock and times tool calls (``durationMs``) on the monotonic clock,
and takes no clock argument, so while recording its ``now_ms`` is replaced with the same fake clock
and tool durations read 0 ms. The header's ``cwd`` is a fixed name
(``/home/user/tiny-auth``) instead of the temporary folder, for the same reason.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pi_lab.agent.loop  # noqa: E402
import pi_lab.agent.session  # noqa: E402
from pi_lab.agent import AgentSession, ToolError, demo_tools, tool  # noqa: E402
from pi_lab.compaction import CompactionSettings  # noqa: E402
from pi_lab.data import TINY_AUTH  # noqa: E402
from pi_lab.llm import OfflineModel, ToolCallReply  # noqa: E402
from pi_lab.session import SessionManager  # noqa: E402
from pi_lab.session.ids import epoch_ms  # noqa: E402

SESSION_ID = "019ca9a4-3f00-7a21-9c3e-5b0d2e7f41a6"
RECORDED_CWD = "/home/user/tiny-auth"
START = datetime(2026, 3, 2, 14, 0, 0, tzinfo=timezone.utc)

PROJECT = {
    "README.md": """# tiny-auth

A minimal login service used to try out session handling.

* `auth.py`: password check and session tokens
* `store.py`: the user table (salted SHA-256 hashes)
* `test_auth.py`: pytest tests

Run the tests with `python -m pytest -q`.
""",
    "store.py": '''"""The user table. Passwords are stored as salted SHA-256 hashes."""

USERS = {
    "ada": {
        "salt": "9f2c",
        "hash": "5c0e1d7a8b5f3f0c2f9d7e1a4b6c8d0e2f4a6b8c0d2e4f6a8b0c2d4e6f8a0b2c",
    },
    "linus": {
        "salt": "41aa",
        "hash": "0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c",
    },
}
''',
    "auth.py": '''"""Login and sessions for the tiny-auth service."""

import hashlib
import secrets

from store import USERS

SESSIONS: dict[str, str] = {}


def hash_password(password: str, salt: str) -> str:
    return hashlib.sha256((salt + password).encode()).hexdigest()


def login(username: str, password: str) -> str | None:
    """Return a session token for valid credentials, else None."""
    user = USERS.get(username)
    if user is None or hash_password(password, user["salt"]) != user["hash"]:
        return None
    token = secrets.token_hex(16)
    SESSIONS[token] = username
    return token


def current_user(token: str) -> str | None:
    return SESSIONS.get(token)
''',
    "test_auth.py": '''import auth


def test_unknown_user_is_refused():
    assert auth.login("nobody", "secret") is None


def test_wrong_password_is_refused():
    assert auth.login("ada", "wrong") is None
''',
}


class Clock:
    """One fake clock for the session manager, the model and the agent: 3 s per reading."""

    def __init__(self, start: datetime):
        self.now = start

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=3)
        return self.now

    def ms(self) -> int:
        return epoch_ms(self())


def uuid_factory(seed: int = 20260302):
    """UUID-shaped strings from a seeded generator (entry ids are their first 8 characters)."""
    rng = random.Random(seed)

    def next_uuid() -> str:
        h = f"{rng.getrandbits(128):032x}"
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"

    return next_uuid


def project_tools(root: Path):
    """``edit`` and ``write`` with the arguments pi 1.6.0's tools take, confined to ``root``."""

    def inside(path: str) -> Path:
        target = (root / path).resolve()
        if root.resolve() not in target.parents:
            raise ToolError(f"{path} is outside the project")
        return target

    @tool
    def edit(path: str, edits: list[dict]) -> str:
        """Edit a file by exact text replacement; every oldText must occur exactly once.

        path: file path relative to the project
        edits: replacements, each {"oldText": ..., "newText": ...}
        """
        target = inside(path)
        text = target.read_text(encoding="utf-8")
        for change in edits:
            count = text.count(change["oldText"])
            if count != 1:
                raise ToolError(f"oldText occurs {count} times in {path}; it must occur exactly once")
            text = text.replace(change["oldText"], change["newText"])
        target.write_text(text, encoding="utf-8")
        return f"Edited {path}: {len(edits)} replacement(s) applied."

    @tool
    def write(path: str, content: str) -> str:
        """Write a whole file (created or replaced).

        path: file path relative to the project
        content: the new file content
        """
        inside(path).write_text(content, encoding="utf-8")
        return f"Wrote {len(content.encode('utf-8'))} bytes to {path}."

    return [edit, write]


def change(old: str, new: str) -> dict[str, str]:
    return {"oldText": old, "newText": new}


JWT_EDIT = [
    change("import hashlib\nimport secrets\n", "import base64\nimport hashlib\nimport hmac\nimport json\nimport time\n"),
    change('SESSIONS: dict[str, str] = {}\n', 'SECRET = b"change-me"\nTOKEN_SECONDS = 3600\n'),
    change('''    token = secrets.token_hex(16)
    SESSIONS[token] = username
    return token


def current_user(token: str) -> str | None:
    return SESSIONS.get(token)
''', '''    claims = {"sub": username, "exp": int(time.time()) + TOKEN_SECONDS}
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode()
    signature = hmac.new(SECRET, body.encode(), hashlib.sha256).hexdigest()
    return f"{body}.{signature}"


def current_user(token: str) -> str | None:
    body, _, signature = token.partition(".")
    expected = hmac.new(SECRET, body.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(signature, expected):
        return None
    claims = json.loads(base64.urlsafe_b64decode(body))
    return claims["sub"] if claims["exp"] > time.time() else None
'''),
]

COOKIE_EDIT = [
    change('    """Return a session token for valid credentials, else None."""\n',
           '    """Return a session id for valid credentials, else None (send it with session_cookie())."""\n'),
    change('''def current_user(token: str) -> str | None:
    return SESSIONS.get(token)
''', '''def session_cookie(token: str) -> str:
    """The Set-Cookie header for a session id: never readable by scripts, sent only over HTTPS."""
    return f"session={token}; HttpOnly; Secure; SameSite=Lax; Path=/"


def logout(token: str) -> None:
    SESSIONS.pop(token, None)


def current_user(token: str) -> str | None:
    return SESSIONS.get(token)
'''),
]

TESTS_EDIT = [
    change('''def test_wrong_password_is_refused():
    assert auth.login("ada", "wrong") is None
''', '''def test_wrong_password_is_refused():
    assert auth.login("ada", "wrong") is None


def test_cookie_is_http_only_and_secure():
    cookie = auth.session_cookie("abc")
    assert cookie.startswith("session=abc;")
    assert "HttpOnly" in cookie and "Secure" in cookie and "SameSite=Lax" in cookie


def test_logout_forgets_the_session():
    auth.SESSIONS["t1"] = "ada"
    auth.logout("t1")
    assert auth.current_user("t1") is None
'''),
]

EXPIRY_EDIT = [
    change("import hashlib\nimport secrets\n", "import hashlib\nimport secrets\nimport time\n"),
    change("SESSIONS: dict[str, str] = {}\n",
           "SESSION_SECONDS = 8 * 3600\nSESSIONS: dict[str, tuple[str, float]] = {}\n"),
    change("    SESSIONS[token] = username\n", "    SESSIONS[token] = (username, time.time() + SESSION_SECONDS)\n"),
    change('''def current_user(token: str) -> str | None:
    return SESSIONS.get(token)
''', '''def current_user(token: str) -> str | None:
    """The user of a live session; unknown and expired ids give None (expired ones are dropped)."""
    entry = SESSIONS.get(token)
    if entry is None:
        return None
    username, expires_at = entry
    if expires_at <= time.time():
        del SESSIONS[token]
        return None
    return username
'''),
]

EXPIRY_TESTS_EDIT = [
    change('''    auth.SESSIONS["t1"] = "ada"
''', '''    auth.SESSIONS["t1"] = ("ada", float("inf"))
'''),
    change('''    assert auth.current_user("t1") is None
''', '''    assert auth.current_user("t1") is None


def test_unknown_session_id_gives_no_user():
    assert auth.current_user("never-issued") is None


def test_expired_session_is_dropped():
    auth.SESSIONS["old"] = ("ada", 0.0)
    assert auth.current_user("old") is None
    assert "old" not in auth.SESSIONS
'''),
]

README_EDIT = [
    change("* `auth.py`: password check and session tokens\n",
           "* `auth.py`: password check, server-side sessions (8 h) sent as an HttpOnly, Secure,\n"
           "  SameSite=Lax cookie, logout\n"),
    change("Run the tests with `python -m pytest -q`.\n",
           "Run the tests with `python -m pytest -q`.\n\n"
           "Sessions live in memory (`auth.SESSIONS`): a restart logs everyone out.\n"),
]


async def _drive(agent: AgentSession, model: OfflineModel, project: Path) -> None:
    sm = agent.session_manager

    async def turn(text: str, *replies) -> None:
        model.push(*replies)
        await agent.prompt(text)

    await turn("Check the auth implementation",
               ToolCallReply("ls", {}, text="Let me look at the project first."),
               ToolCallReply("read", {"path": "auth.py"}),
               ToolCallReply("read", {"path": "store.py"}),
               "Login is in auth.py: login() looks the user up in store.USERS, compares a salted SHA-256 "
               "hash and returns a random 32-character token that is kept in the in-memory SESSIONS dict. "
               "current_user() maps a token back to its user. Tokens never expire and there is no logout.")

    await turn("Switch it to JWT",
               ToolCallReply("edit", {"path": "auth.py", "edits": JWT_EDIT},
                             text="I'll replace the server-side tokens with signed JWT-style tokens."),
               "Done: login() now returns a signed token (base64 claims with sub and exp, HMAC-SHA256 "
               "signature) valid for an hour, and current_user() verifies the signature and the expiry. "
               "SESSIONS is gone. The secret is a placeholder in auth.py and must come from the environment "
               "before this ships.")

    # Going back: pi's /tree on "Switch it to JWT" with a summary of the abandoned branch. The
    # user also reverted the JWT edit in the project (git checkout), as the next prompt says.
    jwt_request = [e for e in sm.get_branch() if e["type"] == "message" and e["message"]["role"] == "user"][-1]
    await agent.navigate_tree(jwt_request["id"], summarize=True)
    (project / "auth.py").write_text(PROJECT["auth.py"], encoding="utf-8")

    await turn("I reverted the JWT change (git checkout auth.py). Use an HttpOnly session cookie instead, "
               "and add a logout.",
               ToolCallReply("read", {"path": "auth.py"}),
               ToolCallReply("edit", {"path": "auth.py", "edits": COOKIE_EDIT}),
               "auth.py keeps server-side sessions: login() still returns the session id, the new "
               "session_cookie() builds the Set-Cookie header (HttpOnly, Secure, SameSite=Lax, Path=/) and "
               "logout() drops the session. Nothing readable by scripts leaves the server.")
    cookie_request = [e for e in sm.get_branch() if e["type"] == "message" and e["message"]["role"] == "user"][-1]
    sm.append_label_change(cookie_request["id"], "cookie route")

    await turn("Add tests for the cookie and the logout",
               ToolCallReply("read", {"path": "test_auth.py"}),
               ToolCallReply("edit", {"path": "test_auth.py", "edits": TESTS_EDIT}),
               "test_auth.py now checks that the cookie is HttpOnly, Secure and SameSite=Lax, and that "
               "logout() forgets the session. The two existing login tests are unchanged.")

    await turn("Check the edge cases: unknown and expired session ids",
               ToolCallReply("read", {"path": "auth.py"}),
               ToolCallReply("edit", {"path": "auth.py", "edits": EXPIRY_EDIT},
                             text="Sessions have no expiry yet, so an expired id cannot exist. I'll add one."),
               ToolCallReply("edit", {"path": "test_auth.py", "edits": EXPIRY_TESTS_EDIT}),
               "Sessions now expire after 8 hours: SESSIONS stores (user, expires_at), current_user() "
               "returns None for unknown ids and drops expired ones. Two tests cover both cases and the "
               "logout test stores a session that never expires.")

    await turn("Update the README",
               ToolCallReply("read", {"path": "README.md"}),
               ToolCallReply("edit", {"path": "README.md", "edits": README_EDIT}),
               "README.md describes the cookie sessions, their 8-hour lifetime and logout, and says that "
               "sessions live in memory, so a restart logs everyone out.")

    await turn("Read auth.py once more and list what is still missing before this can ship",
               ToolCallReply("read", {"path": "auth.py"}),
               ToolCallReply("read", {"path": "test_auth.py"}),
               "Still missing: (1) sessions are in memory, so a restart or a second worker loses them; "
               "(2) no rate limit on login(); (3) the salted SHA-256 should become a slow hash such as "
               "scrypt; (4) no test for a successful login, because store.py holds placeholder hashes.")

    await turn("Switch the password hash to scrypt",
               ToolCallReply("edit", {"path": "auth.py", "edits": [change(
                   "    return hashlib.sha256((salt + password).encode()).hexdigest()\n",
                   "    return hashlib.scrypt(password.encode(), salt=salt.encode(), n=2**14, r=8, p=1).hex()\n")]}),
               "hash_password() now uses scrypt (n=2**14, r=8, p=1). The hashes in store.py were made with "
               "SHA-256, so every user must reset their password once; say if I should add a migration.")

    await turn("No migration needed. Summarise the state of the project in two sentences.",
               "tiny-auth logs users in with a scrypt-checked password and keeps an 8-hour server-side "
               "session sent as an HttpOnly, Secure, SameSite=Lax cookie, with logout and tests for the "
               "cookie, logout, unknown and expired sessions. Left for later: persistent sessions and a "
               "login rate limit.")
    agent.set_session_name("tiny-auth: JWT tried, session cookie kept")


def record(out: Path | None = None) -> bytes:
    """Run the recording in fresh temporary folders; returns the session file's bytes."""
    clock = Clock(START)
    with tempfile.TemporaryDirectory(prefix="pi-lab-record-") as tmp:
        project = Path(tmp) / "tiny-auth"
        project.mkdir()
        for name, text in PROJECT.items():
            (project / name).write_text(text, encoding="utf-8")
        sm = SessionManager.create(RECORDED_CWD, Path(tmp) / "sessions", id=SESSION_ID,
                                   clock=clock, uuid_factory=uuid_factory())
        model = OfflineModel(context_window=TINY_AUTH.context_window, clock=clock.ms)
        settings = CompactionSettings(reserve_tokens=TINY_AUTH.reserve_tokens,
                                      keep_recent_tokens=TINY_AUTH.keep_recent_tokens)
        agent = AgentSession(sm, client=model, settings=settings,
                             tools=demo_tools(project) + project_tools(project))
        # The loop also times each tool call (durationMs) on the monotonic clock; these tools take
        # well under a millisecond, so the recording says 0 instead of whatever the machine's load
        # made it. Only the loop module's view of `time` is replaced, not asyncio's.
        loop_time = SimpleNamespace(time=lambda: clock.ms() / 1000, monotonic=lambda: 0.0)
        with mock.patch.object(pi_lab.agent.session, "now_ms", clock.ms), \
                mock.patch.object(pi_lab.agent.loop, "now_ms", clock.ms), \
                mock.patch.object(pi_lab.agent.loop, "time", loop_time):
            asyncio.run(_drive(agent, model, project))
        _check(sm)
        data = Path(sm.session_file).read_bytes()
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
    return data


def _check(sm: SessionManager) -> None:
    """The recording must show what the tour says it shows."""
    entries = sm.entries
    kinds = [e["type"] for e in entries]
    results = [e["message"] for e in entries if e["type"] == "message" and e["message"]["role"] == "toolResult"]
    problems = []
    if kinds.count("compaction") < 2:
        problems.append(f"{kinds.count('compaction')} compactions (want 2 or more)")
    if kinds.count("branch_summary") != 1:
        problems.append(f"{kinds.count('branch_summary')} branch summaries (want 1)")
    if any(r.get("isError") for r in results):
        problems.append("a tool call failed: " + next(str(r["content"]) for r in results if r.get("isError")))
    last = sm.get_branch()[-1]
    while last["type"] != "message":
        last = sm.get_entry(last["parentId"])
    if last["message"]["role"] != "assistant" or not last["message"].get("usage"):
        problems.append("the branch must end with an answer (known context usage after the last compaction)")
    if problems:
        raise SystemExit("recording is not what the tour describes: " + "; ".join(problems))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=TINY_AUTH.path)
    parser.add_argument("--check", action="store_true", help="compare with --out instead of writing it")
    args = parser.parse_args()
    if args.check:
        fresh = record()
        same = args.out.exists() and args.out.read_bytes() == fresh
        print(f"{args.out}: {'up to date' if same else 'DIFFERS from a fresh recording'}")
        return 0 if same else 1
    data = record(args.out)
    print(f"wrote {args.out} ({len(data)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
