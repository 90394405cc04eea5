"""The bytes of an uploaded catalog file: not binary, one text encoding, no control characters.

One streaming pass over the whole file (1 MiB chunks, constant memory) finds the encoding and
refuses what CSV text never holds, saying at which line and byte offset it is.
"""

import codecs
import re
from dataclasses import dataclass
from pathlib import Path

from catalog.imports.errors import BadFile

SNIFF_BYTES = 64 * 1024
READ_CHUNK = 1024 * 1024
# Latin-1 puts C1 control characters at 0x80-0x9f; real Latin-1 text never has them, while
# Windows-1252 (what "Latin-1" files from Windows usually are) puts letters and quotes there.
C1_CODES = frozenset(range(0x80, 0xA0))
# C0 controls other than tab, LF, CR never occur in text.
CONTROL_CODES = frozenset({*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20)})
CONTROL_BYTES = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")
# bytes.translate(None, delete) keeps what it does not delete, at C speed (GB/s; a regex scans
# ~90 MB/s): deleting every byte but the controls tells whether a chunk holds one.
ALL_BUT_CONTROLS = bytes(code for code in range(256) if code not in CONTROL_CODES)
ALL_BUT_C1 = bytes(code for code in range(256) if code not in C1_CODES)
BINARY_MIN_CONTROLS = 8
CONTROL_NAMES = (
    "NUL SOH STX ETX EOT ENQ ACK BEL BS HT LF VT FF CR SO SI "
    "DLE DC1 DC2 DC3 DC4 NAK SYN ETB CAN EM SUB ESC FS GS RS US"
).split()
# A UTF-8 sequence of two to four bytes. Latin-1 text practically never holds one (it would read
# as "Ã©"), so one of them in a file that is not UTF-8 means mixed encodings.
UTF8_SEQUENCE = re.compile(rb"[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}")
MAGIC_NUMBERS = {
    b"PK\x03\x04": "an Excel workbook or a ZIP archive",
    b"%PDF": "a PDF document",
    b"\xd0\xcf\x11\xe0": "an old Excel (.xls) or Word file",
    b"\x89PNG": "a PNG image",
    b"\xff\xd8\xff": "a JPEG image",
    b"\x1f\x8b": "a gzip archive",
}
RESAVE_AS_UTF8 = (
    "Open it in your spreadsheet or text editor, save it again as CSV UTF-8 "
    "(Excel: Save As, CSV UTF-8) and upload that."
)


@dataclass(frozen=True)
class Spot:
    """A byte of the file: its offset from the start (0-based) and its line (1-based)."""

    offset: int
    line: int

    def __str__(self) -> str:
        return f"line {self.line} (byte offset {self.offset})"


class _Cursor:
    """Where the chunk in hand starts, to turn an index in it into a Spot."""

    def __init__(self):
        self.offset = 0
        self.lines = 0

    def spot(self, chunk: bytes, index: int) -> Spot:
        return Spot(self.offset + index, self.lines + chunk.count(b"\n", 0, max(index, 0)) + 1)

    def advance(self, chunk: bytes) -> None:
        self.offset += len(chunk)
        self.lines += chunk.count(b"\n")


@dataclass
class _Scan:
    utf8_error: Spot | None = None
    utf8_error_byte: int = 0
    utf8_sample: Spot | None = None
    utf8_sample_text: str = ""
    has_c1: bool = False


def check_not_binary(head: bytes) -> None:
    for magic, what in MAGIC_NUMBERS.items():
        if head.startswith(magic):
            raise BadFile(f"This file is {what}, not CSV. Export it as CSV (UTF-8) and upload that.")
    if head.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):  # before UTF-16's, which begins it
        raise BadFile("The file is UTF-32 encoded; save it as CSV in UTF-8 (or Latin-1) and upload it again.")
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise BadFile("The file is UTF-16 encoded; save it as CSV in UTF-8 (or Latin-1) and upload it again.")
    if _looks_binary(head):
        raise BadFile("This is a binary file, not CSV text. Export the data as CSV and upload that.")
    if head.lstrip(b"\xef\xbb\xbf \r\n\t").startswith((b"{", b"[")):
        raise BadFile("This file looks like JSON, not CSV. Upload a CSV file with a header row.")


def _looks_binary(head: bytes) -> bool:
    """A NUL, or control characters in more than 1 byte of 100 (and more than a few): binary data.

    A few control characters in a text cell (an escape sequence pasted from a terminal) are not;
    the scan names the first of them with its line and offset."""
    controls = len(head.translate(None, ALL_BUT_CONTROLS))
    return b"\x00" in head or (controls > BINARY_MIN_CONTROLS and controls * 100 > len(head))


def _refuse_control(chunk: bytes, index: int, cursor: _Cursor) -> None:
    code = chunk[index]
    raise BadFile(
        f"The file holds the control character 0x{code:02x} ({CONTROL_NAMES[code]}) at "
        f"{cursor.spot(chunk, index)}; CSV text never holds one (only tabs and line breaks). "
        "Remove it, or export the data as CSV again, and upload the file again."
    )


def _find_utf8_sample(scan: _Scan, window: bytes, tail: int, cursor: _Cursor) -> None:
    """The first valid UTF-8 character in `window` (the chunk after `tail` bytes of the one before)."""
    if window.decode("utf-8", errors="ignore").isascii():
        return  # the quick test: only valid sequences survive decoding with errors ignored
    for sample in UTF8_SEQUENCE.finditer(window):
        try:
            scan.utf8_sample_text = sample.group().decode("utf-8")
        except UnicodeDecodeError:  # an overlong form or a surrogate: not UTF-8 after all
            continue
        scan.utf8_sample = cursor.spot(window[tail:], sample.start() - tail)
        return


def _scan(path: Path) -> _Scan:
    """Every chunk: control characters refused; where UTF-8 fails first; a UTF-8 sample; C1 bytes."""
    scan = _Scan()
    decoder = codecs.getincrementaldecoder("utf-8")()
    cursor = _Cursor()
    tail = b""  # the end of the previous chunk, so a sample split between chunks is still seen
    with open(path, "rb") as f:
        while chunk := f.read(READ_CHUNK):
            if chunk.translate(None, ALL_BUT_CONTROLS):
                _refuse_control(chunk, CONTROL_BYTES.search(chunk).start(), cursor)
            if not chunk.isascii():
                scan.has_c1 = scan.has_c1 or bool(chunk.translate(None, ALL_BUT_C1))
                if scan.utf8_sample is None:
                    _find_utf8_sample(scan, tail + chunk, len(tail), cursor)
            tail = chunk[-3:]
            if scan.utf8_error is None:
                pending = decoder.getstate()[0]
                try:
                    decoder.decode(chunk)
                except UnicodeDecodeError as exc:
                    scan.utf8_error = cursor.spot(chunk, exc.start - len(pending))
                    scan.utf8_error_byte = (pending + chunk)[exc.start]
            cursor.advance(chunk)
    pending = decoder.getstate()[0]
    if scan.utf8_error is None and pending:  # the file ends inside a UTF-8 sequence
        scan.utf8_error = Spot(cursor.offset - len(pending), cursor.lines + 1)
        scan.utf8_error_byte = pending[0]
    return scan


def detect_encoding(path: Path) -> str:
    """UTF-8 (with or without BOM) when the whole file decodes so, else Latin-1 / Windows-1252.

    A file that is partly UTF-8 and partly not (rows pasted together from two exports) is refused:
    reading it as Latin-1 would store "CafÃ©" for every UTF-8 "Café".
    """
    with open(path, "rb") as f:
        head = f.read(SNIFF_BYTES)
    if not head.strip(b"\xef\xbb\xbf \r\n\t"):
        raise BadFile("The file is empty.")
    check_not_binary(head)
    scan = _scan(path)
    has_bom = head.startswith(codecs.BOM_UTF8)
    if scan.utf8_error is None:
        return "utf-8-sig" if has_bom else "utf-8"
    not_utf8 = f"{scan.utf8_error}, 0x{scan.utf8_error_byte:02x}"
    if has_bom:
        raise BadFile(
            f"The file starts with a UTF-8 marker but {not_utf8}, is not UTF-8: it cannot be decoded. "
            + RESAVE_AS_UTF8
        )
    if scan.utf8_sample is not None:
        raise BadFile(
            f"The file mixes text encodings: {scan.utf8_sample} holds UTF-8 text "
            f"({scan.utf8_sample_text!r}) but {not_utf8}, is not UTF-8 (Latin-1 or Windows-1252, "
            "most likely), so some rows would import garbled. " + RESAVE_AS_UTF8
        )
    if not scan.has_c1:
        return "latin-1"
    return _check_cp1252(path)


def _check_cp1252(path: Path) -> str:
    decoder = codecs.getincrementaldecoder("cp1252")()
    cursor = _Cursor()
    with open(path, "rb") as f:
        while chunk := f.read(READ_CHUNK):
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as exc:
                raise BadFile(
                    f"The file cannot be decoded: {cursor.spot(chunk, exc.start)}, 0x{chunk[exc.start]:02x}, "
                    "is neither UTF-8 nor Latin-1 / Windows-1252. " + RESAVE_AS_UTF8
                ) from None
            cursor.advance(chunk)
    return "cp1252"
