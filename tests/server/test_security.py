"""The viewer API refuses what Jupyter refuses, and reads nothing outside its two folders.

Requests without a token are turned away; a browser session (cookie) must send the XSRF token
with a POST; ``..``, absolute paths elsewhere, links leading out and hidden files are refused
with a JSON error that says why; write operations are refused as read-only.
"""

from __future__ import annotations

import json
import os
import urllib.parse
from pathlib import Path

import pytest

from pi_lab.server.handlers import API_ROOT as API

SESSION_LINE = b'{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}\n'


def _url(jp_base_url: str, port: int, *parts: str) -> str:
    """A path on the test server (its client adds the scheme, host and port)."""
    return jp_base_url + "/".join(parts)


async def test_requests_without_token_are_refused(http_server_client, jp_base_url, jp_http_port, root):
    (root / "s.jsonl").write_bytes(SESSION_LINE)
    for method, part, body in [("GET", "sessions", None), ("GET", "session?path=s.jsonl", None),
                               ("POST", "session/state", json.dumps({"path": "s.jsonl"})),
                               ("POST", "open-in-notebook", json.dumps({"path": "s.jsonl"}))]:
        response = await http_server_client.fetch(_url(jp_base_url, jp_http_port, API, part), method=method, body=body,
                                                  raise_error=False, follow_redirects=False)
        assert response.code == 403, (method, part, response.code)
    assert not (root / "s.ipynb").exists()


async def test_wrong_token_is_refused(http_server_client, jp_base_url, jp_http_port):
    response = await http_server_client.fetch(_url(jp_base_url, jp_http_port, API, "sessions"),
                                              headers={"Authorization": "token not-the-token"}, raise_error=False)
    assert response.code == 403


async def _login_cookie(http_server_client, jp_serverapp, jp_base_url, jp_http_port) -> str:
    """Log in with the token as a browser does; return the login cookie ("name=value")."""
    token = jp_serverapp.identity_provider.token
    body = urllib.parse.urlencode({"password": token, "_xsrf": "xsrf-test-token"})
    response = await http_server_client.fetch(
        _url(jp_base_url, jp_http_port, "login"), method="POST", body=body,
        headers={"Cookie": "_xsrf=xsrf-test-token"}, follow_redirects=False, raise_error=False)
    assert response.code == 302, response.code
    cookies = [c.split(";", 1)[0] for c in response.headers.get_list("Set-Cookie")]
    login = [c for c in cookies if c.startswith("username-")]
    assert login, cookies
    return login[0]


async def test_cookie_session_post_needs_the_xsrf_token(http_server_client, jp_serverapp, jp_base_url, jp_http_port, root):
    (root / "s.jsonl").write_bytes(SESSION_LINE)
    cookie = await _login_cookie(http_server_client, jp_serverapp, jp_base_url, jp_http_port)
    url = _url(jp_base_url, jp_http_port, API, "session", "state")
    body = json.dumps({"path": "s.jsonl"})

    refused = await http_server_client.fetch(url, method="POST", body=body, headers={"Cookie": cookie},
                                             raise_error=False)
    assert refused.code == 403
    assert "xsrf" in refused.body.decode().lower()

    accepted = await http_server_client.fetch(
        url, method="POST", body=body, raise_error=False,
        headers={"Cookie": f"{cookie}; _xsrf=xsrf-test-token", "X-XSRFToken": "xsrf-test-token"})
    assert accepted.code == 200, accepted.body
    assert json.loads(accepted.body)["session"]["id"] == "s1"

    # A GET is read-only and allowed with the cookie alone (Jupyter's rule for GET).
    listing = await http_server_client.fetch(_url(jp_base_url, jp_http_port, API, "sessions"),
                                             headers={"Cookie": cookie}, raise_error=False)
    assert listing.code == 200


@pytest.mark.parametrize(("path", "status", "words"), [
    ("../outside.jsonl", 400, "'..'"),
    ("sub/../../outside.jsonl", 400, "'..'"),
    ("sub\\..\\..\\outside.jsonl", 400, "'..'"),
    ("@sessions/../outside.jsonl", 400, "'..'"),
    ("", 400, "required"),
    ("/etc/passwd", 403, "absolute paths"),
    (".hidden/s.jsonl", 403, "hidden"),
    ("link-out.jsonl", 403, "leads outside"),
    ("dir-link/s.jsonl", 403, "leads outside"),
    ("@sessions/link-out.jsonl", 403, "leads outside"),
])
async def test_paths_outside_the_two_folders_are_refused(api, root, sessions_dir, tmp_path, path, status, words):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "s.jsonl").write_bytes(SESSION_LINE)
    (tmp_path / "outside.jsonl").write_bytes(SESSION_LINE)
    (root / ".hidden").mkdir()
    (root / ".hidden" / "s.jsonl").write_bytes(SESSION_LINE)
    os.symlink(outside / "s.jsonl", root / "link-out.jsonl")
    os.symlink(outside, root / "dir-link")
    os.symlink(outside / "s.jsonl", sessions_dir / "link-out.jsonl")

    code, body = await api.post("session", "state", path=path)
    assert code == status, body
    assert words in body["message"]
    assert body["reason"] == "path-refused"


async def test_absolute_paths_inside_the_folders_are_accepted(api, root, sessions_dir):
    (root / "a.jsonl").write_bytes(SESSION_LINE)
    (sessions_dir / "proj").mkdir()
    (sessions_dir / "proj" / "b.jsonl").write_bytes(SESSION_LINE)
    for path, key in [(str(root / "a.jsonl"), "a.jsonl"), (str(sessions_dir / "proj" / "b.jsonl"), "@sessions/proj/b.jsonl")]:
        state = await api.session("state", path)
        assert state["location"]["path"] == key
        assert str(root) not in json.dumps(state)  # the browser gets keys, not the server's absolute paths


async def test_links_that_stay_inside_are_followed(api, root):
    (root / "real.jsonl").write_bytes(SESSION_LINE)
    os.symlink(root / "real.jsonl", root / "alias.jsonl")
    assert (await api.session("state", "alias.jsonl"))["session"]["id"] == "s1"


@pytest.mark.parametrize("op", ["navigate", "compact", "label", "fork", "clone", "cancel"])
async def test_write_operations_are_refused_as_read_only(api, root, op):
    target = root / "s.jsonl"
    target.write_bytes(SESSION_LINE)
    code, body = await api.post("session", op, path="s.jsonl", args={"id": "x"})
    assert code == 403
    assert body["message"] == "read-only viewer — Open in notebook to navigate or compact"
    assert target.read_bytes() == SESSION_LINE


async def test_unknown_operation_and_bad_arguments_are_clear_errors(api, root):
    (root / "s.jsonl").write_bytes(SESSION_LINE)
    code, body = await api.post("session", "frobnicate", path="s.jsonl")
    assert code == 404 and "frobnicate" in body["message"]
    code, body = await api.post("session", "state", path="s.jsonl", view={"filter_mode": "everything"})
    assert code == 400 and "filter mode" in body["message"]
    code, body = await api.post("session", "state", path="s.jsonl", settings={"context_window": "big"})
    assert code == 400 and "context_window" in body["message"]
    code, body = await api.post("session", "entry", path="s.jsonl", args={"id": "nope"})
    assert code == 400 and "nope" in body["message"]
    response = await api.post_raw("session", "state", body="not an object")
    assert response.code == 400


async def test_the_session_file_is_never_written(api, root, copy_fixture):
    # A version-1 file without a final newline: SessionManager.open would migrate and repair it.
    source = copy_fixture("public-whamp-v1-linear.jsonl", root)
    data = source.read_bytes().rstrip(b"\n")
    source.write_bytes(data)
    before = os.stat(source)
    state = await api.session("state", source.name)
    rows = await api.session("rows", source.name, args={"start": 0, "end": 50, "version": state["version"]})
    assert rows["rows"]
    await api.session("poll", source.name, version=state["version"], generation=state["generation"])
    after = os.stat(source)
    assert source.read_bytes() == data
    assert (after.st_mtime_ns, after.st_size) == (before.st_mtime_ns, before.st_size)
    assert sorted(p.name for p in Path(root).iterdir()) == [source.name]
