"""The corpus layer sits above session/ and compaction/: it never loads widget, server or agent."""

from __future__ import annotations

import subprocess
import sys


def test_corpus_imports_no_higher_layer(tmp_path):
    code = (
        "import sys\n"
        "import pi_lab.corpus, pi_lab.corpus.cli, pi_lab.corpus.extract, pi_lab.corpus.tables\n"
        "from pi_lab.corpus import Corpus\n"
        f"Corpus.scan({str(tmp_path)!r}, cache=False)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[:2] in (['pi_lab', 'widget'], ['pi_lab', 'server'], ['pi_lab', 'agent']))\n"
        "print(bad)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
