"""Reading a source file as Python would, and cutting the text of a node out of it."""
from __future__ import annotations

import ast
import io
import re
import tokenize

# The `call` column shows the call as written; a 60-line nn.Sequential(...) would drown the
# table, so the text is cut here (the full extent is still in line/end_line).
CALL_TEXT_MAX_CHARS = 160

# Python's tokenizer ends lines at \r\n, \r or \n (not at the other characters that
# str.splitlines() treats as breaks), so split the same way to keep AST line numbers valid.
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_SPACE_AFTER_OPEN = re.compile(r"([(\[{])\s+")
_SPACE_BEFORE_CLOSE = re.compile(r"\s+([)\]}])")


def decode_source(data: bytes) -> str:
    """Decode like the interpreter: BOM, then a PEP 263 coding cookie, else UTF-8."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text = data.decode(encoding)
    return text[1:] if text.startswith("\ufeff") else text


class SourceText:
    """The lines of one file, for cutting node text by AST positions.

    AST column offsets count UTF-8 bytes, not characters; lines that are pure ASCII (nearly
    all) are sliced directly, the others through their encoded form.
    """

    def __init__(self, text: str):
        self.lines = _LINE_BREAK.split(text)

    def _slice(self, index: int, start: int, end: int | None) -> str:
        line = self.lines[index] if index < len(self.lines) else ""
        if line.isascii():
            return line[start:end]
        return line.encode("utf-8")[start:end].decode("utf-8", errors="replace")

    def column(self, node: ast.AST) -> int:
        """1-based character column of the node's first character."""
        line = self.lines[node.lineno - 1] if node.lineno - 1 < len(self.lines) else ""
        if line.isascii():
            return node.col_offset + 1
        return len(line.encode("utf-8")[:node.col_offset].decode("utf-8", errors="replace")) + 1

    def segment(self, node: ast.AST) -> str:
        """The node's text on one line: inner line breaks and indentation collapsed."""
        first, last = node.lineno - 1, node.end_lineno - 1
        if first == last:
            text = self._slice(first, node.col_offset, node.end_col_offset).strip()
        else:
            parts = [self._slice(first, node.col_offset, None)]
            size = len(parts[0])
            for index in range(first + 1, last + 1):
                if size > CALL_TEXT_MAX_CHARS:
                    break
                end = node.end_col_offset if index == last else None
                parts.append(self._slice(index, 0, end))
                size += len(parts[-1])
            if any("#" in part for part in parts):
                parts = _without_comments(parts)
            text = " ".join(stripped for p in parts if (stripped := p.strip()))
            text = _SPACE_BEFORE_CLOSE.sub(r"\1", _SPACE_AFTER_OPEN.sub(r"\1", text))
        if len(text) > CALL_TEXT_MAX_CHARS:
            text = text[:CALL_TEXT_MAX_CHARS - 1] + "…"
        return text


def _without_comments(parts: list[str]) -> list[str]:
    """Drop `# ...` comments from the lines of a multi-line call (a '#' inside a string stays).
    The lines may be cut short (see CALL_TEXT_MAX_CHARS), so tokenizing can fail; then the
    lines are returned unchanged."""
    cuts: dict[int, int] = {}
    try:
        tokens = tokenize.generate_tokens(io.StringIO("\n".join(parts)).readline)
        for token in tokens:
            if token.type == tokenize.COMMENT:
                cuts[token.start[0] - 1] = token.start[1]
    except (tokenize.TokenError, SyntaxError):
        pass
    return [part[:cuts[i]] if i in cuts else part for i, part in enumerate(parts)]
