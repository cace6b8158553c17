"""The page's parts are gzip written 7 bits per character (html.pack7): valid UTF-8, nothing an
HTML parser changes inside a <script> element, about 8/7 of the compressed size (base85: 5/4)."""

from __future__ import annotations

import gzip
import os

from pi_lab.export.html import SEVEN_BIT_MARK, pack, pack7, unpack


def test_pack7_round_trips_and_writes_nothing_the_parser_changes():
    for n in [0, 1, 6, 7, 8, 13, 14, 15, 255, 4096, 65537]:
        data = os.urandom(n)
        text = pack7(data)
        assert text.startswith(SEVEN_BIT_MARK)
        assert unpack(text) == data
        body = text[1:]
        assert not set(body) & {"<", "\r", "\0"}
        assert all(ord(c) < 0x80 or c in "\u0100\u0101\u0102" for c in body)
        assert text.encode("utf-8").decode("utf-8") == text
    every = bytes(range(256)) * 64
    assert unpack(pack7(every)) == every


def test_pack7_is_denser_than_base85():
    data = os.urandom(200_000)
    compressed = len(gzip.compress(data, 9, mtime=0))
    seven = len(pack7(data).encode("utf-8"))
    assert seven <= compressed * 8 / 7 * 1.03 + 16
    assert seven < len(pack(data).encode("utf-8")) * 0.95
