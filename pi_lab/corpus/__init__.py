"""Many sessions as data (pi, Claude Code and Codex): Arrow tables, SQL on DuckDB, Parquet, and
Ray Data for clusters.

    from pi_lab.corpus import Corpus
    c = Corpus.scan(["runs/"], workers=None, cache=True, progress=True)
    c.sessions; c.entries; c.messages; c.model_calls; c.tool_calls; c.compactions; c.branch_summaries
    c.sql("select model, sum(cost) from model_calls group by 1")   # a pyarrow.Table
    c.usage(by="day")                                   # or "session", "model", "project", "agent"
    c.to_parquet("out/"); c.errors                                # [(path, reason), ...]

Counting rules (the totals of ``usage()`` and of the ``sessions`` table):

* Every assistant message is one model call, on every branch: an abandoned branch, a retried
  failure or an overflowed request was a real request and was paid for. Usage and cost are
  summed over all of them.
* A fork or clone (a session whose header names a ``parentSession`` that is also in the
  corpus) starts with copies of its parent's entries. An entry of the child with the same id
  and the same timestamp as an entry of the parent is a copy: it keeps its rows in every
  table with ``copied = true`` and ``copied_from`` = the session that wrote it first (chains
  of forks are followed), and it is left out of the totals, so each call counts once.
* Nothing else is merged: two calls that look alike (same model, same tokens, same time)
  are two calls. A parent that is not in the corpus makes nothing a copy.
* Each file is recognised by its content; ``agent`` (``"pi"``, ``"claude-code"``, ``"codex"``)
  is a column of every table. Claude Code and Codex files are read through their adapters
  (:mod:`pi_lab.formats`): a streamed Claude Code response is one call, a session's sub-agent
  files (``<session>/subagents/agent-*.jsonl``) are read with it and never listed as sessions,
  a resumed Claude Code session's copied history (same uuid and timestamp as an earlier
  session's entry) is ``copied``, and a Codex fork's copied prefix is marked by the adapter
  (``copied_from`` = its ``parent_session_id``). A Claude Code call's ``total_tokens`` is its
  four counters (the adapter's ``totalTokens`` is the context the request carried). The
  daily totals equal ``ccusage claude|codex daily`` on the sessions the agents write
  (``tests/corpus/test_corpus_agents_ccusage.py`` names the hand-made lines where they differ).
* ``usage(by="day")`` uses the call's entry timestamp in UTC. Summarisation calls
  (``compaction.usage``, ``branch_summary.usage``) are in the ``compactions`` table, not in
  ``usage()``, which counts conversation calls only.

What the model saw at each call (``model_calls``) is pi_lab's projection at the call's parent,
kept incrementally in one walk of each tree: ``context_messages`` and ``context_tokens_est``
equal ``estimate_context_tokens(build_session_context(entries, parentId).messages)``.

Reading never writes a session file: old formats are migrated in memory, a half-written last
line (a live session) is left out until it is complete, and a file that holds no session is
reported in ``errors`` with the reason. An unexpected exception in pi_lab's own code while
reading one file loses only that file: its reason starts with ``internal error`` and asks to
be reported, and a warning with the traceback is logged (logger ``pi_lab.corpus``). Read
files are cached by path, size, mtime and inode (Arrow IPC files under
``$XDG_CACHE_HOME/pi_lab/corpus`` by default, in a private folder verified by checksums: see
``pi_lab.corpus.cache``), so an unchanged folder is read again in a
fraction of a second and a grown file is re-read alone; ``pi-lab usage`` also keeps each
report it printed beside the cached tables it came from, and prints it again, without
loading the tables, while no file changed.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # type checkers see the public names; at run time each loads when first asked for
    from pi_lab.corpus.corpus import Corpus, default_cache_dir, default_session_paths, list_session_files
    from pi_lab.corpus.extract import extract_file
    from pi_lab.corpus.schema import TABLE_NAMES

# Importing the package (which ``pi-lab usage`` does for its usage-only reader, a submodule)
# loads none of these: the scan pulls in the cache, the spill, pathlib, shutil and tempfile,
# and the extractor the engine, none of which a usage read without the cache needs.
_LAZY = {
    "Corpus": "pi_lab.corpus.corpus",
    "default_cache_dir": "pi_lab.corpus.corpus",
    "default_session_paths": "pi_lab.corpus.corpus",
    "list_session_files": "pi_lab.corpus.corpus",
    "TABLE_NAMES": "pi_lab.corpus.schema",
    "extract_file": "pi_lab.corpus.extract",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module), name)
    globals()[name] = value  # (asked once: later lookups find it without this call)
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = ["Corpus", "TABLE_NAMES", "extract_file", "default_cache_dir", "default_session_paths", "list_session_files"]
