"""pi_lab against pi 1.6.0, field by field, on real, generated and hand-written session files.

For every input, two copies are opened: one by pi (bench/pi_runner/run.mjs dump --inplace, under
Node) and one by pi_lab (pi_lab_dump.dump). Then each field of the two dumps is compared in its
own test: the file bytes after opening (trailing-newline repair, migration rewrite), header,
entries after migration, leaf, branch ids, tree rows, context entries, projection, context
messages (JSON-equal, key order included), thinking level and model, token estimates and
prepare_compaction results for default settings and for keepRecentTokens 1/100/2000/20000.

v1 files are migrated with fresh random ids on both sides, so for them ids are replaced by the
entry's position before comparing (structure, not id values).

Skips (never fails) when node or the pi package is missing; PI_LAB_DIFFERENTIAL=1 installs the
package into bench/.pi first (npm install, gitignored). Compaction fields skip while
pi_lab.compaction is not importable.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.differential

HERE = Path(__file__).resolve().parent
REPO = Path(__file__).resolve().parents[2]
from shared_fixtures import FIXTURES_DIR as FIXTURES  # noqa: E402  (the one place that finds them)
CASES = HERE / "cases"
RUNNER = REPO / "bench" / "pi_runner" / "run.mjs"
SETUP = REPO / "bench" / "pi_runner" / "setup.sh"
PI_PKG = REPO / "bench" / ".pi" / "node_modules" / "@earendil-works" / "pi-coding-agent"
KEEPS = (1, 100, 2000, 20000)

# Where pi has a bug that loses data or depends on engine internals, pi_lab deliberately differs
# (DESIGN.md; listed in docs/compatibility.md). These comparisons are expected to differ (xfail,
# not strict); each names what pi does.
KNOWN_DIVERGENCES = {
    ("case:duplicate_ids.jsonl", "tree"): (
        "pi's getTree looks nodes up by id, so both entries with a duplicated id share the later "
        "entry's node: the earlier entry vanishes from the tree and the later one is listed twice; "
        "pi_lab keeps one node per entry (docs/compatibility.md, 'Duplicate ids in the tree')"
    ),
    ("case:tree_bad_timestamps.jsonl", "tree"): (
        "siblings with unparsable timestamps: pi's comparator returns NaN, which V8's sort treats as 0 "
        "inside its TimSort, so the order follows V8 internals; pi_lab orders them first "
        "(docs/compatibility.md, 'Unparsable sibling timestamps')"
    ),
}


def _divergence(pair: "Pair", field: str) -> None:
    reason = KNOWN_DIVERGENCES.get((pair.name, field))
    if reason:
        pytest.xfail(f"known divergence from pi: {reason}")


def _load_module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------------------------------------
# Inputs

GENERATED = [  # (seed, entries): small so the tier stays fast, varied so branches/compactions occur
    (1, 60), (2, 200), (3, 500), (11, 400), (29, 450),
]


def _inputs() -> list[str]:
    names = []
    if FIXTURES.is_dir():
        names += [f"fixture:{p.name}" for p in sorted(FIXTURES.glob("*.jsonl"))]
    else:
        names.append("fixture:(missing)")
    names += [f"gen:seed{s}-{n}" for s, n in GENERATED]
    names.append("linear:301")
    names += [f"case:{p.name}" for p in sorted(CASES.glob("*.jsonl"))]
    return names


def _materialise(name: str, target: Path) -> None:
    kind, _, rest = name.partition(":")
    if kind == "fixture":
        if not FIXTURES.is_dir():
            pytest.skip(f"pi session fixtures not found at {FIXTURES}")
        shutil.copyfile(FIXTURES / rest, target)
    elif kind == "case":
        shutil.copyfile(CASES / rest, target)
    elif kind == "gen":
        gen = _load_module("bench_generate", REPO / "bench" / "generate.py")
        seed, n = re.fullmatch(r"seed(\d+)-(\d+)", rest).groups()
        lines, _ = gen.generate(int(n), int(seed))
        target.write_text("\n".join(lines) + "\n", encoding="utf-8", newline="\n")
    elif kind == "linear":
        gen = _load_module("bench_generate", REPO / "bench" / "generate.py")
        target.write_text("\n".join(gen.linear_lines(int(rest), 5)) + "\n", encoding="utf-8", newline="\n")
    else:
        raise ValueError(name)


# ---------------------------------------------------------------------------------------------
# Running both sides (once per input, cached for the session)


def _pi_unavailable() -> str | None:
    if shutil.which("node") is None:
        return "node not found on PATH"
    if not (PI_PKG / "dist" / "core" / "session-manager.js").exists():
        if os.environ.get("PI_LAB_DIFFERENTIAL") != "1":
            return (f"pi package not installed in {PI_PKG} "
                    "(set PI_LAB_DIFFERENTIAL=1 to npm-install it, or run bash bench/pi_runner/setup.sh)")
        if shutil.which("npm") is None:
            return "npm not found on PATH"
        r = subprocess.run(["bash", str(SETUP)], capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            return f"installing pi failed: {(r.stderr or r.stdout).strip()[-400:]}"
    return None


@pytest.fixture(scope="session")
def pi_ready() -> None:
    reason = _pi_unavailable()
    if reason:
        pytest.skip(f"pi unavailable: {reason}")


@pytest.fixture(scope="session")
def lab_dump_module():
    try:
        import pi_lab.session  # noqa: F401
    except Exception as exc:
        pytest.skip(f"pi_lab.session not importable: {exc}")
    return _load_module("pi_lab_dump", HERE / "pi_lab_dump.py")


class Pair:
    """Both dumps of one input, the raw input and both files after opening."""

    def __init__(self, name: str, raw: bytes, pi: dict, lab: dict, pi_bytes: bytes, lab_bytes: bytes):
        self.name, self.raw, self.pi, self.lab = name, raw, pi, lab
        self.pi_bytes, self.lab_bytes = pi_bytes, lab_bytes
        self.migrated_v1 = _is_v1(raw)

    def require_open(self) -> None:
        """Skip field tests when pi itself rejects the file (test_open covers that case)."""
        if "error" in self.pi:
            pytest.skip(f"pi rejects this file: {self.pi['error']}")
        if "error" in self.lab:
            pytest.fail(f"pi_lab failed to open a file pi opens: {self.lab['error']}")

    def norm(self, value: Any, side: str) -> Any:
        """Replace ids by entry positions for migrated v1 files."""
        if not self.migrated_v1:
            return value
        entries = (self.pi if side == "pi" else self.lab).get("entries") or []
        return _replace_ids(value, _v1_id_map(entries))


_cache: dict[str, Pair] = {}


@pytest.fixture
def pair(request, pi_ready, lab_dump_module, tmp_path_factory) -> Pair:
    name = request.param
    if name not in _cache:
        d = tmp_path_factory.mktemp("diff")
        src = d / "input.jsonl"
        _materialise(name, src)
        pi_copy, lab_copy = d / "pi" / "session.jsonl", d / "lab" / "session.jsonl"
        lazy_copy = d / "lazy" / "session.jsonl"
        for c in (pi_copy, lab_copy, lazy_copy):
            c.parent.mkdir()
            shutil.copyfile(src, c)
        r = subprocess.run(["node", str(RUNNER), "dump", str(pi_copy), "--inplace",
                            "--keep", ",".join(map(str, KEEPS))],
                           capture_output=True, text=True, timeout=300, cwd=d)
        assert r.returncode == 0, f"pi runner failed: {r.stderr[-2000:]}"
        pi = json.loads(r.stdout)
        cwd = os.getcwd()
        os.chdir(d)  # pi resolves a missing header cwd against its process cwd; do the same
        from pi_lab.session import bodies

        thresholds = bodies.LAZY_MIN_FILE_BYTES, bodies.LAZY_MIN_LINE_BYTES
        try:
            lab = lab_dump_module.dump(lab_copy, inplace=True, keeps=KEEPS)
            # The same dump with lazy bodies for every file and every message line (issue 11).
            bodies.LAZY_MIN_FILE_BYTES = bodies.LAZY_MIN_LINE_BYTES = 0
            lazy = lab_dump_module.dump(lazy_copy, inplace=True, keeps=KEEPS)
        finally:
            bodies.LAZY_MIN_FILE_BYTES, bodies.LAZY_MIN_LINE_BYTES = thresholds
            os.chdir(cwd)
        _cache[name] = Pair(name, src.read_bytes(), pi, lab, pi_copy.read_bytes(), lab_copy.read_bytes())
        _cache[name].lazy, _cache[name].lazy_bytes = lazy, lazy_copy.read_bytes()
    return _cache[name]


# ---------------------------------------------------------------------------------------------
# Comparison helpers

_INT_KEY = re.compile(r"^(0|[1-9][0-9]*)$")


def js_order(value: Any) -> Any:
    """Key order as a JavaScript object has it (array-index keys first, ascending), integral
    floats as ints, so that two JSON-equal documents serialise identically."""
    if isinstance(value, dict):
        keys = list(value)
        ints = sorted((k for k in keys if _INT_KEY.match(k) and int(k) < 2**32 - 1), key=int)
        rest = [k for k in keys if k not in set(ints)]
        return {k: js_order(value[k]) for k in ints + rest}
    if isinstance(value, list):
        return [js_order(v) for v in value]
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    return value


def first_difference(a: Any, b: Any, path: str = "$") -> str | None:
    """Where two JSON values first differ, including key order; None when identical."""
    stack = [(a, b, path)]
    while stack:
        x, y, p = stack.pop()
        if isinstance(x, dict) and isinstance(y, dict):
            if list(x) != list(y):
                if set(x) != set(y):
                    return f"{p}: keys differ: pi-only {sorted(set(x) - set(y))}, pi_lab-only {sorted(set(y) - set(x))}"
                return f"{p}: key order differs: pi {list(x)} vs pi_lab {list(y)}"
            for k in reversed(list(x)):
                stack.append((x[k], y[k], f"{p}.{k}"))
        elif isinstance(x, list) and isinstance(y, list):
            if len(x) != len(y):
                return f"{p}: length {len(x)} (pi) vs {len(y)} (pi_lab)"
            for i in reversed(range(len(x))):
                stack.append((x[i], y[i], f"{p}[{i}]"))
        elif type(x) is not type(y) and not (isinstance(x, (int, float)) and isinstance(y, (int, float))
                                             and not isinstance(x, bool) and not isinstance(y, bool)):
            return f"{p}: {x!r} (pi) vs {y!r} (pi_lab)"
        elif x != y:
            return f"{p}: {_short(x)} (pi) vs {_short(y)} (pi_lab)"
    return None


def _short(v: Any) -> str:
    s = repr(v)
    return s if len(s) < 200 else s[:200] + "…"


def assert_same(pi_value: Any, lab_value: Any, what: str) -> None:
    diff = first_difference(js_order(pi_value), js_order(lab_value))
    assert diff is None, f"{what}: {diff}"


_ID_FIELDS = ("id", "parentId", "firstKeptEntryId", "targetId", "fromId")


def _v1_id_map(entries: list[Any]) -> dict[str, str]:
    """Fresh v1 ids → entry positions. An array line gets an id in memory that its JSON does
    not show; the next entry's parentId names it, so such an id becomes "#parent-of-#i"."""
    mapping = {e.get("id"): f"#{i}" for i, e in enumerate(entries) if isinstance(e, dict)}
    for i, e in enumerate(entries):
        parent = e.get("parentId") if isinstance(e, dict) else None
        if isinstance(parent, str) and parent not in mapping:
            mapping[parent] = f"#parent-of-#{i}"
    return mapping


def _replace_ids(value: Any, mapping: dict) -> Any:
    """Ids (as values of id-like keys, or bare strings in id lists) → positions."""
    if isinstance(value, dict):
        return {k: (mapping.get(v, v) if k in _ID_FIELDS and isinstance(v, str) else _replace_ids(v, mapping))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_ids(v, mapping) for v in value]
    if isinstance(value, str):
        return mapping.get(value, value)
    return value


def _is_v1(raw: bytes) -> bool:
    for line in raw.decode("utf-8", "replace").split("\n"):
        if not line.strip():
            continue
        try:
            first = json.loads(line)
        except ValueError:
            continue
        if not isinstance(first, dict) or first.get("type") != "session":
            return False
        # pi: `(header.version ?? 1) < 2` with JavaScript's number conversion ("2" is 2, true is 1).
        from pi_lab.session.migration import js_to_number

        version = first.get("version")
        return (1.0 if version is None else js_to_number(version)) < 2
    return False


def _parsed_lines(data: bytes) -> list[Any]:
    out = []
    for line in data.decode("utf-8", "replace").split("\n"):
        if line.strip():
            try:
                out.append(json.loads(line))
            except ValueError:
                out.append(("unparsable", line))
    return out


# ---------------------------------------------------------------------------------------------
# Tests: one per field, parametrised over every input

INPUTS = _inputs()
param = pytest.mark.parametrize("pair", INPUTS, indirect=True)


@param
def test_lazy_bodies_dump_exactly_as_eager(pair: Pair) -> None:
    """Every answer pi_lab gives with lazy bodies is the eager one (which the tests below hold
    to pi's), and the file after opening is the same."""
    lab_file, lazy_file = pair.lab["file"], pair.lazy["file"]
    lazy = json.loads(json.dumps(pair.lazy).replace(json.dumps(lazy_file)[1:-1], json.dumps(lab_file)[1:-1]))
    eager = dict(pair.lab)
    if pair.name.startswith("gen:"):  # branched sessions: their left branches stay in the file
        assert lazy["lazyBodies"] is True
    assert eager.pop("lazyBodies", False) is False
    if not lazy.pop("lazyBodies", False) and pair.lab_bytes != pair.raw and pair.lab_bytes[:1] == b"{":
        # Read eagerly: an older format migrated on open, whose new ids are random on each
        # side (the tests below compare them with pi's through positions).
        first = json.loads(pair.raw.split(b"\n", 1)[0])
        if first.get("version") != 3:
            return
    assert first_difference(js_order(lazy), js_order(eager)) is None
    assert pair.lazy_bytes == pair.lab_bytes


@param
def test_open(pair: Pair) -> None:
    """Both open the file, or both reject it."""
    pi_err, lab_err = pair.pi.get("error"), pair.lab.get("error")
    assert (pi_err is None) == (lab_err is None), f"pi error: {pi_err!r}; pi_lab error: {lab_err!r}"


@param
def test_file_bytes_after_open(pair: Pair) -> None:
    """The file on disk after opening: newline repair and migration rewrites agree."""
    if pair.migrated_v1:
        # Fresh random ids on both sides: compare the rewritten lines by structure.
        pi_lines, lab_lines = _parsed_lines(pair.pi_bytes), _parsed_lines(pair.lab_bytes)
        assert len(pi_lines) == len(lab_lines)
        assert pair.pi_bytes.endswith(b"\n") == pair.lab_bytes.endswith(b"\n")

        def ids(lines):
            return _v1_id_map(lines[1:])

        assert_same(_replace_ids(pi_lines, ids(pi_lines)), _replace_ids(lab_lines, ids(lab_lines)), "rewritten file")
    else:
        if pair.pi_bytes != pair.lab_bytes:
            n = next((i for i, (x, y) in enumerate(zip(pair.pi_bytes, pair.lab_bytes)) if x != y),
                     min(len(pair.pi_bytes), len(pair.lab_bytes)))
            pytest.fail(f"file differs after open at byte {n}: pi {len(pair.pi_bytes)} bytes, pi_lab "
                        f"{len(pair.lab_bytes)} bytes; pi …{pair.pi_bytes[max(0, n - 40):n + 40]!r} "
                        f"pi_lab …{pair.lab_bytes[max(0, n - 40):n + 40]!r}")


@param
def test_header(pair: Pair) -> None:
    pair.require_open()
    assert_same(pair.pi["header"], pair.lab["header"], "header")


@param
def test_entries(pair: Pair) -> None:
    pair.require_open()
    if pair.migrated_v1:
        for e in pair.lab["entries"]:
            if isinstance(e, dict):  # an array line gets an id in memory that JSON does not show
                assert re.fullmatch(r"[0-9a-f]{8}", e["id"]), f"migrated id {e['id']!r} is not 8 hex digits"
    assert_same(pair.norm(pair.pi["entries"], "pi"), pair.norm(pair.lab["entries"], "lab"), "entries")


@param
def test_leaf(pair: Pair) -> None:
    pair.require_open()
    # An undefined leaf (last line without an id) has no key in either dump; null is kept.
    assert ("leafId" in pair.pi) == ("leafId" in pair.lab), "leaf undefined on one side only"
    if "leafId" in pair.pi:
        assert pair.norm(pair.pi["leafId"], "pi") == pair.norm(pair.lab["leafId"], "lab")


@param
def test_branch(pair: Pair) -> None:
    pair.require_open()
    assert_same(pair.norm(pair.pi["branch"], "pi"), pair.norm(pair.lab["branch"], "lab"), "getBranch ids")


@param
def test_session_name(pair: Pair) -> None:
    pair.require_open()
    assert pair.pi["sessionName"] == pair.lab["sessionName"]


@param
def test_tree_rows(pair: Pair) -> None:
    pair.require_open()
    _divergence(pair, "tree")
    assert_same(pair.norm(pair.pi["tree"], "pi"), pair.norm(pair.lab["tree"], "lab"), "tree rows")


@param
def test_context_entries(pair: Pair) -> None:
    pair.require_open()
    assert_same(pair.norm(pair.pi["contextEntries"], "pi"), pair.norm(pair.lab["contextEntries"], "lab"),
                "buildContextEntries ids")


@param
def test_projection(pair: Pair) -> None:
    pair.require_open()
    assert_same(pair.norm(pair.pi["projection"], "pi"), pair.norm(pair.lab["projection"], "lab"),
                "projection (source id, message count)")


@param
def test_context_messages(pair: Pair) -> None:
    pair.require_open()
    pi_ctx, lab_ctx = pair.pi["context"], pair.lab["context"]
    assert "error" not in pi_ctx and "error" not in lab_ctx, (pi_ctx.get("error"), lab_ctx.get("error"))
    assert_same(pair.norm(pi_ctx["messages"], "pi"), pair.norm(lab_ctx["messages"], "lab"), "context messages")


@param
def test_thinking_level_and_model(pair: Pair) -> None:
    pair.require_open()
    pi_ctx, lab_ctx = pair.pi["context"], pair.lab["context"]
    assert pi_ctx.get("thinkingLevel") == lab_ctx.get("thinkingLevel")
    assert_same(pi_ctx.get("model"), lab_ctx.get("model"), "model")


def _skip_pi_crash(pi_value: Any, lab_value: Any) -> None:
    """pi throws a TypeError on some malformed data (e.g. a toolCall block without `arguments`
    makes estimateTokens read `JSON.stringify(undefined).length`). There is nothing to compare
    with when pi crashes and pi_lab returns a result."""
    if isinstance(pi_value, dict) and set(pi_value) == {"error"} and not (
            isinstance(lab_value, dict) and "error" in lab_value):
        pytest.skip(f"pi itself throws here ({pi_value['error']}); pi_lab returns a result")


def _require_compaction(pair: Pair, key: str) -> None:
    pair.require_open()
    if key not in pair.lab:
        try:
            import pi_lab.compaction  # noqa: F401
        except Exception as exc:
            pytest.skip(f"pi_lab.compaction not importable yet: {exc}")
        pytest.fail(f"pi_lab dump has no {key}")


@param
def test_token_estimates(pair: Pair) -> None:
    _require_compaction(pair, "estimate")
    _skip_pi_crash(pair.pi["estimate"], pair.lab["estimate"])
    assert_same(pair.pi["estimate"], pair.lab["estimate"], "estimates")


@pytest.mark.parametrize("keep", ["default", *map(str, KEEPS)])
@param
def test_prepare_compaction(pair: Pair, keep: str) -> None:
    _require_compaction(pair, "prepareCompaction")
    _skip_pi_crash(pair.pi["prepareCompaction"][keep], pair.lab["prepareCompaction"][keep])
    assert_same(pair.norm(pair.pi["prepareCompaction"][keep], "pi"),
                pair.norm(pair.lab["prepareCompaction"][keep], "lab"),
                f"prepareCompaction(keepRecentTokens={keep})")
