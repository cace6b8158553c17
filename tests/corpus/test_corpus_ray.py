"""Ray Data reader against a real local Ray: the same tables as the in-process scan."""

from __future__ import annotations

import shutil

import pytest

from corpus_builders import build_corpus
from pi_lab.corpus import TABLE_NAMES, Corpus

ray = pytest.importorskip("ray")
pytest.importorskip("ray.data")

pytestmark = pytest.mark.slow
from shared_fixtures import FIXTURES_DIR  # noqa: E402  (the one place that finds them)


@pytest.fixture(scope="module")
def local_ray():
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False
        yield ray
    finally:
        ray.shutdown()


def canonical(table):
    return sorted(repr(sorted(row.items())) for row in table.to_pylist())


def collect(ds, name):
    import pyarrow as pa

    parts = [t for t in ray.get(ds.to_arrow_refs()) if t.num_rows]
    return pa.concat_tables(parts) if parts else None


def test_ray_tables_equal_in_process_tables(local_ray, tmp_path):
    from pi_lab.corpus.ray import read_sessions

    folder = tmp_path / "s"
    build_corpus(folder)  # forks and a clone: the copy bookkeeping runs on the driver
    # the real fixtures when they are beside the clone (this test runs without them too)
    for source in FIXTURES_DIR.glob("*.jsonl") if FIXTURES_DIR.is_dir() else ():
        shutil.copyfile(source, folder / source.name)
    (folder / "broken.jsonl").write_text("nonsense\n", encoding="utf-8")
    datasets = read_sessions(folder, files_per_task=3)
    expected = Corpus.scan(folder, cache=False, workers=1)
    assert sorted(datasets) == sorted(TABLE_NAMES)
    for name in TABLE_NAMES:
        got = collect(datasets[name], name)
        want = getattr(expected, name)
        assert got is not None and got.schema == want.schema, name
        assert canonical(got) == canonical(want), name
    assert [p for p, _ in datasets.errors] == [p for p, _ in expected.errors]
    copied = collect(datasets["entries"], "entries").to_pylist()
    assert {(r["session_id"], r["entry_id"]): r["copied_from"] for r in copied if r["copied"]}[("C", "a5")] == "F"
