"""The corpus's fast field readers agree with the engine's slow ones on any input."""

from __future__ import annotations

import random

from pi_lab.corpus.fields import _ms
from pi_lab.session.ids import parse_iso_ms


def test_timestamp_fast_path_equals_parse_iso_ms_on_mutated_timestamps():
    rng = random.Random(12)
    cases = [
        "2026-03-02T09:00:00.000Z", "2026-03-02T23:59:59.999Z", "2024-02-29T12:34:56.789Z", "1969-12-31T23:59:59.999Z",
        "2026-03-02T24:00:00.000Z",  # the next midnight, valid only with zero seconds
        "2026-03-02T24:00:05.000Z", "2026-03-02T09:60:00.000Z", "2026-03-02T09:00:60.000Z", "2026-02-30T09:00:00.000Z",
        "2026-03-02T09:00:0\u0663.000Z",  # an Arabic-Indic digit: str.isdigit says yes, JavaScript says no
        "2026-03-02T09:00:00.0\u00b20Z", "2026-03-02 09:00:00.000Z", "+02026-03-02T09:00:00Z",
    ]
    for _ in range(20_000):
        chars = list("2026-03-02T09:41:07.250Z")
        for _ in range(rng.randint(1, 3)):
            chars[rng.randrange(len(chars))] = rng.choice("0123456789aZ:T.- \u0663")
        cases.append("".join(chars))
    for case in cases:
        expected = parse_iso_ms(case)
        expected = None if expected != expected else int(expected)
        assert _ms(case) == expected, case
        assert _ms(case) == expected, case  # again, from the per-minute cache
