#!/usr/bin/env python3
"""tests/docs/check_history.py ROOT: the manual speaks of the product as it is today.

README.md and docs/*.md must not tell the program's history: sentences opening on what it
did earlier or saying what it did once, work sessions, commit hashes, internal issue numbers.
Git keeps the history. A line an allow-list entry names ("PATH: text it contains",
history_allowed.txt) passes, as does a page named alone (dated measurements).
Prints each offending line with the word and exits 1; prints a count and exits 0 otherwise.
(The patterns spell their words with classes, so this file passes its own kind of check.)
"""

import re
import sys
from pathlib import Path

WORDS = [
    (re.compile(r"\b[B]efore, "), "a sentence telling what the program did"),
    (re.compile(r"(?<!is )(?<!are )(?<!be )(?<!was )(?<!were )\bused[ ]to [a-z]", re.I),
     "a sentence telling what the program did once"),
    (re.compile(r"\b(work|this|next|previous|earlier|later|[a-z]+th) sessions?\b", re.I), "a work session"),
    (re.compile(r"\bcommit [0-9a-f]{7,40}\b"), "a commit hash"),
    (re.compile(r"\bissues? #?\d+\b", re.I), "an issue number"),
]


def allowed_entries(here):
    entries = []
    for line in (here / "history_allowed.txt").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            path, _, text = line.partition(": ")
            entries.append((path, text))
    return entries


def main(root):
    root = Path(root)
    allowed = allowed_entries(Path(__file__).resolve().parent)
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    found, lines = 0, 0
    for page in pages:
        rel = page.relative_to(root).as_posix()
        if (rel, "") in allowed:
            continue  # the whole page
        for number, line in enumerate(page.read_text().splitlines(), 1):
            lines += 1
            for pattern, what in WORDS:
                match = pattern.search(line)
                if match and not any(path == rel and text and text in line for path, text in allowed):
                    print(f"{rel}:{number}: {what} ('{match.group(0)}'): say what the program does and why; "
                          f"git keeps the history")
                    found += 1
    if found:
        return 1
    print(f"check_history: {len(pages)} pages, {lines} lines speak of the product today")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
