"""Reading uploaded catalog files: whole-file checks, encoding and delimiter detection, row stream.

Everything here streams: the file is read in chunks and rows are yielded one at a time, so a
file of any size is checked and imported in constant memory.
"""

import codecs
import csv
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ALLOWED_SUFFIXES = {".csv", ".tsv", ".txt"}
DELIMITERS = (",", ";", "\t")
DELIMITER_NAMES = {",": "comma", ";": "semicolon", "\t": "tab"}
ENCODING_NAMES = {
    "utf-8": "UTF-8",
    "utf-8-sig": "UTF-8 with BOM",
    "latin-1": "Latin-1",
    "cp1252": "Windows-1252",
}
SNIFF_BYTES = 64 * 1024
READ_CHUNK = 1024 * 1024
# Latin-1 puts C1 control characters at 0x80-0x9f; real Latin-1 text never has them, while
# Windows-1252 (what "Latin-1" files from Windows usually are) puts letters and quotes there.
C1_CONTROLS = re.compile(rb"[\x80-\x9f]")
# C0 controls other than tab, LF, CR never occur in text.
BINARY_BYTES = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")
NUL = b"\x00"
MAGIC_NUMBERS = {
    b"PK\x03\x04": "an Excel workbook or a ZIP archive",
    b"%PDF": "a PDF document",
    b"\xd0\xcf\x11\xe0": "an old Excel (.xls) or Word file",
    b"\x89PNG": "a PNG image",
    b"\xff\xd8\xff": "a JPEG image",
    b"\x1f\x8b": "a gzip archive",
}
csv.field_size_limit(16 * 1024 * 1024)


class BadFile(ValueError):
    """The file as a whole cannot be imported; the message tells the user what to do."""


@dataclass(frozen=True)
class FileFormat:
    encoding: str
    delimiter: str
    header: list[str]

    @property
    def description(self) -> str:
        return (
            f"{ENCODING_NAMES.get(self.encoding, self.encoding)}, {DELIMITER_NAMES[self.delimiter]}-separated"
        )


def check_name(name: str) -> None:
    suffix = Path(name).suffix.lower()
    if suffix not in ALLOWED_SUFFIXES:
        raise BadFile(
            f"{name!r} is not a CSV file (expected .csv, .tsv or .txt). "
            "Export the sheet as CSV (UTF-8) and upload that."
        )


def check_size(size: int, limit: int) -> None:
    if size == 0:
        raise BadFile("The file is empty.")
    if size > limit:
        raise BadFile(
            f"The file is {size / 1024 / 1024:.1f} MB; the limit is {limit / 1024 / 1024:.0f} MB. "
            "Split it into smaller files and upload them one after another."
        )


def _check_not_binary(head: bytes) -> None:
    for magic, what in MAGIC_NUMBERS.items():
        if head.startswith(magic):
            raise BadFile(f"This file is {what}, not CSV. Export it as CSV (UTF-8) and upload that.")
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise BadFile("The file is UTF-16 encoded; save it as CSV in UTF-8 (or Latin-1) and upload it again.")
    if BINARY_BYTES.search(head):
        raise BadFile("This is a binary file, not CSV text. Export the data as CSV and upload that.")
    if head.lstrip(b"\xef\xbb\xbf \r\n\t").startswith((b"{", b"[")):
        raise BadFile("This file looks like JSON, not CSV. Upload a CSV file with a header row.")


def detect_encoding(path: Path) -> str:
    """UTF-8 (with or without BOM) when the whole file decodes so, else Latin-1 / Windows-1252."""
    with open(path, "rb") as f:
        head = f.read(SNIFF_BYTES)
    if not head.strip(b"\xef\xbb\xbf \r\n\t"):
        raise BadFile("The file is empty.")
    _check_not_binary(head)
    has_bom = head.startswith(codecs.BOM_UTF8)
    decoder = codecs.getincrementaldecoder("utf-8")()
    has_c1 = False
    offset = 0
    utf8_error = None
    with open(path, "rb") as f:
        while chunk := f.read(READ_CHUNK):
            nul = chunk.find(NUL)
            if nul >= 0:
                raise BadFile(
                    f"The file holds a NUL byte at byte {offset + nul}: it is binary, not CSV text."
                )
            has_c1 = has_c1 or C1_CONTROLS.search(chunk) is not None
            if utf8_error is None:
                try:
                    decoder.decode(chunk)
                except UnicodeDecodeError as exc:
                    utf8_error = offset + exc.start
            offset += len(chunk)
        if utf8_error is None:
            try:
                decoder.decode(b"", final=True)
            except UnicodeDecodeError:
                utf8_error = offset
    if utf8_error is None:
        return "utf-8-sig" if has_bom else "utf-8"
    if has_bom:
        raise BadFile(
            f"The file starts with a UTF-8 marker but byte {utf8_error} is not UTF-8: "
            "it cannot be decoded. Save it again as UTF-8."
        )
    if not has_c1:
        return "latin-1"
    return _check_cp1252(path)


def _check_cp1252(path: Path) -> str:
    decoder = codecs.getincrementaldecoder("cp1252")()
    offset = 0
    with open(path, "rb") as f:
        while chunk := f.read(READ_CHUNK):
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as exc:
                raise BadFile(
                    f"The file cannot be decoded: byte {offset + exc.start} (0x{chunk[exc.start]:02x}) is "
                    "neither UTF-8 nor Latin-1 / Windows-1252. Save it again as UTF-8."
                ) from None
            offset += len(chunk)
    return "cp1252"


def _sample_lines(path: Path, encoding: str) -> list[str]:
    with open(path, encoding=encoding, newline="") as f:
        text = f.read(SNIFF_BYTES)
        complete = len(text) < SNIFF_BYTES
    lines = text.splitlines(keepends=True)
    if not complete and len(lines) > 1:
        lines = lines[:-1]  # the last line may be cut in the middle
    return lines


def detect_delimiter(lines: list[str]) -> str:
    """The delimiter that splits the header into most columns, rows agreeing with the header."""

    def score(delimiter: str) -> tuple[float, int]:
        rows = [row for row in csv.reader(lines, delimiter=delimiter) if row]
        if not rows or len(rows[0]) < 2:
            return (0.0, 0)
        width = len(rows[0])
        agreeing = sum(1 for row in rows if len(row) == width) / len(rows)
        return (agreeing, width)

    best = max(DELIMITERS, key=score)
    if score(best)[1] < 2:
        raise BadFile(
            "Missing required columns: the header has one column only (no comma, semicolon or tab "
            "separates it). The file needs at least a SKU column and a title column."
        )
    return best


def inspect_file(path: Path, name: str) -> FileFormat:
    check_name(name)
    encoding = detect_encoding(path)
    delimiter = detect_delimiter(_sample_lines(path, encoding))
    with open(path, encoding=encoding, newline="") as f:
        header = next(csv.reader(f, delimiter=delimiter), [])
        has_rows = any(any(cell.strip() for cell in row) for row in csv.reader(f, delimiter=delimiter))
    header = [cell.strip() or f"Column {index + 1}" for index, cell in enumerate(header)]
    if not has_rows:
        raise BadFile("The file has a header row but no product rows.")
    return FileFormat(encoding=encoding, delimiter=delimiter, header=header)


def read_rows(path: Path, file_format: FileFormat) -> Iterator[tuple[int, list[str]]]:
    """Yield (row number, cells) for every data row; the header is row 1, blank lines are skipped."""
    with open(path, encoding=file_format.encoding, newline="") as f:
        reader = csv.reader(f, delimiter=file_format.delimiter)
        next(reader, None)
        for number, cells in enumerate(reader, start=2):
            if cells and any(cell.strip() for cell in cells):
                yield number, cells


def count_rows(path: Path, file_format: FileFormat) -> int:
    return sum(1 for _ in read_rows(path, file_format))


def csv_text(rows: list[list[str]], delimiter: str = ",") -> str:
    buffer = io.StringIO()
    csv.writer(buffer, delimiter=delimiter).writerows(rows)
    return buffer.getvalue()
