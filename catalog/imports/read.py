"""Reading uploaded catalog files: name and size, delimiter, whole-file record checks, row stream.

The bytes (binary, encoding, control characters) are checked in catalog.imports.decode.
Everything streams: the file is read in chunks and rows are yielded one at a time, so a file of
any size is checked and imported in constant memory.
"""

import csv
import io
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import BinaryIO

from catalog.imports.decode import SNIFF_BYTES, detect_encoding
from catalog.imports.errors import BadFile, FileOverLimit

ALLOWED_SUFFIXES = {".csv", ".tsv", ".txt"}
DELIMITERS = (",", ";", "\t")
DELIMITER_NAMES = {",": "comma", ";": "semicolon", "\t": "tab"}
ENCODING_NAMES = {
    "utf-8": "UTF-8",
    "utf-8-sig": "UTF-8 with BOM",
    "latin-1": "Latin-1",
    "cp1252": "Windows-1252",
}
MEGABYTE = 1024 * 1024
# The most one field may hold. The csv module refuses a longer field; we say where it is.
FIELD_LIMIT = 16 * MEGABYTE
csv.field_size_limit(FIELD_LIMIT)

# Where rows are read from: a local file (the upload being checked, on the web host), or a function
# opening the stored upload as a binary stream (ImportJob.open_file: PostgreSQL, on any host).
Source = Path | Callable[[], BinaryIO]


def _open_text(source: Source, encoding: str):
    if isinstance(source, Path):
        return open(source, encoding=encoding, newline="")
    return io.TextIOWrapper(source(), encoding=encoding, newline="")


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


def _megabytes(size: int) -> str:
    return f"{size / MEGABYTE:.1f} MB"


def _bytes(count: int) -> str:
    return "1 byte" if count == 1 else f"{count:,} bytes"


def check_size(size: int, limit: int) -> None:
    if size == 0:
        raise BadFile("The file is empty.")
    if size > limit:
        # Exact bytes beside the rounded sizes: 200.04 MB must never read as "200.0 MB, the limit 200 MB".
        raise FileOverLimit(
            f"The file is {_megabytes(size)} ({_bytes(size)}): {_bytes(size - limit)} over the limit of "
            f"{_megabytes(limit)} ({_bytes(limit)}). "
            "Split it into smaller files and upload them one after another."
        )


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


def _records(path: Source, encoding: str, delimiter: str) -> Iterator[tuple[int, int, int, list[str]]]:
    """Yield (row, first line, last line, cells) for every record; the header is row 1.

    A row is one CSV record; it spans several lines when a quoted field holds line breaks.
    """
    header: list[str] = []
    with _open_text(path, encoding) as f:
        reader = csv.reader(f, delimiter=delimiter)
        row, last_line = 0, 0
        while True:
            try:
                cells = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                raise _unreadable(path, encoding, delimiter, header, row + 1, last_line + 1, exc) from None
            row += 1
            if row == 1:
                header = cells
            yield row, last_line + 1, reader.line_num, cells
            last_line = reader.line_num


def _unreadable(path, encoding, delimiter, header, row, line, exc: csv.Error) -> BadFile:
    if "field limit" not in str(exc):
        return BadFile(f"Row {row} (from line {line}) cannot be read as CSV: {exc}.")
    index = _long_field_index(path, encoding, delimiter, line)
    where = f"the field in {_column_label(header, index)}" if index is not None else "a field"
    return BadFile(
        f"Row {row} (from line {line}): {where} is longer than {FIELD_LIMIT // MEGABYTE} MiB "
        f"({FIELD_LIMIT:,} characters), the most one field may hold. Shorten it and upload the file again."
    )


def _column_label(header: list[str], index: int) -> str:
    """The column by its header name, or by its number when the header names none there."""
    name = header[index].strip() if index < len(header) else ""
    return f"column {name!r}" if name else f"column {index + 1}"


def _long_field_index(path, encoding: str, delimiter: str, first_line: int) -> int | None:
    """Which field of the record starting at `first_line` is longer than FIELD_LIMIT.

    The csv module only says that some field is. This walks the record's quotes, delimiters and
    line breaks as the reader does, jumping between them with a regex (a 17 MiB field takes
    milliseconds). Only a refused file comes here.
    """
    stops = re.compile(f'["{re.escape(delimiter)}\r\n]')
    index, length, quoted = 0, 0, False
    with _open_text(path, encoding) as f:
        for line in islice(f, first_line - 1, None):
            start = 0
            for stop in stops.finditer(line):
                length += stop.start() - start
                start = stop.end()
                char = stop.group()
                if char == '"':
                    quoted = not quoted
                elif quoted:
                    length += 1
                elif char == delimiter:
                    if length > FIELD_LIMIT:
                        return index
                    index, length = index + 1, 0
                else:  # an unquoted line break ends the record
                    return index if length > FIELD_LIMIT else None
            length += len(line) - start
            if length > FIELD_LIMIT:
                return index
    return None


def _line_breaks(text: str) -> int:
    return text.count("\n") + text.count("\r") - text.count("\r\n")


def _unclosed_quote(row: int, first_line: int, last_line: int, cells: list[str], header: list[str]):
    """A quote left open swallows the lines after it, up to the next quote or the end of the file."""
    index = next((i for i, cell in enumerate(cells) if _line_breaks(cell)), 0)
    opened = first_line + sum(_line_breaks(cell) for cell in cells[:index])
    column = _column_label(header, index) if row > 1 else f"header column {index + 1}"
    swallowed = (
        f"line {last_line} was" if last_line == opened + 1 else f"lines {opened + 1} to {last_line} were"
    )
    shape = (
        f"the row has {len(cells)} fields; the header has {len(header)}"
        if row > 1
        else "no product rows are left"
    )
    return BadFile(
        f"Row {row} (line {opened}): a quote opens the field in {column} and is not closed on that "
        f"line, so {swallowed} swallowed into that one field ({shape}). "
        "Close the quote (or remove it) and upload the file again."
    )


def inspect_file(path: Path, name: str) -> FileFormat:
    """Check the whole file once: encoding, delimiter, header, every record readable, some rows.

    A record that spans lines (a quoted field with line breaks) yet has the wrong number of fields
    is a quote left open: refused here, not reported as one short row that hides the lines it ate.
    """
    check_name(name)
    encoding = detect_encoding(path)
    delimiter = detect_delimiter(_sample_lines(path, encoding))
    header: list[str] = []
    header_lines = (1, 1)
    has_rows = False
    for row, first_line, last_line, cells in _records(path, encoding, delimiter):
        if row == 1:
            if not any(cell.strip() for cell in cells):
                raise BadFile(
                    f"Line {first_line} is blank: the header row (sku, title, ...) must be the file's first "
                    "line. Remove the blank lines above it and upload the file again."
                )
            header, header_lines = cells, (first_line, last_line)
            continue
        if last_line > first_line and len(cells) != len(header):
            raise _unclosed_quote(row, first_line, last_line, cells, header)
        has_rows = has_rows or any(cell.strip() for cell in cells)
    if not has_rows and header_lines[1] > header_lines[0]:
        raise _unclosed_quote(1, *header_lines, header, header)
    if not has_rows:
        raise BadFile("The file has a header row but no product rows.")
    # A second UTF-8 marker (a file saved twice "with BOM") survives utf-8-sig as part of the first name.
    header[0] = header[0].lstrip("\ufeff")
    header = [cell.strip() or f"Column {index + 1}" for index, cell in enumerate(header)]
    return FileFormat(encoding=encoding, delimiter=delimiter, header=header)


def read_rows(path: Source, file_format: FileFormat) -> Iterator[tuple[int, list[str]]]:
    """Yield (row number, cells) for every data row; the header is row 1, blank lines are skipped."""
    for row, _, _, cells in _records(path, file_format.encoding, file_format.delimiter):
        if row > 1 and cells and any(cell.strip() for cell in cells):
            yield row, cells


def count_rows(path: Source, file_format: FileFormat) -> int:
    return sum(1 for _ in read_rows(path, file_format))
