"""The widget's build does only the work of its first paint (issue 11)."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_a_widget_outside_a_kernel_does_not_import_the_kernel():
    """guard_kernel_parent has nothing to guard where ipykernel was never imported; importing
    it to find that out cost ~0.2 s of every build in a script or a benchmark."""
    code = textwrap.dedent("""
        import sys
        from pi_lab.session import SessionManager
        from pi_lab.widget import SessionWidget
        from pi_lab.widget.live import guard_kernel_parent
        sm = SessionManager.in_memory()
        sm.append_message({"role": "user", "content": "hi", "timestamp": 1})
        w = SessionWidget(sm, follow=False)
        assert w.row_count == 1
        assert guard_kernel_parent() is False
        print("ipykernel" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
