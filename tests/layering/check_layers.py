#!/usr/bin/env python3
"""tests/layering/check_layers.py SOURCE_DIR: every #include of the product's code points
down the floors docs/architecture.md's table gives, never up and never sideways.

The table (between the markers "<!-- floors -->" and "<!-- /floors -->") has a row per
floor, highest first: "| N | `room`, `room` | ... |". A room is a folder ("cli/launch/") or
a file without its extension ("cli/app"); a source file belongs to the longest room its path
starts with. A file may include its own room's headers and those of rooms on lower floors.
Unit tests (*_test.cc) and fuzz targets are left out: they may reach what they test from
anywhere. Exits 1 naming every include that breaks the table, and a file in no room.
"""
import os
import re
import sys

CHECKED = ("cli", "runtime", "slurm", "collectives", "templates", "python/src")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def read_floors(doc_path):
    text = open(doc_path, encoding="utf-8").read()
    start, end = text.find("<!-- floors -->"), text.find("<!-- /floors -->")
    if start < 0 or end < start:
        sys.exit(f"check_layers: {doc_path} has no <!-- floors --> table")
    floors = {}
    for line in text[start:end].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not cells[0].isdigit():
            continue
        for room in re.findall(r"`([^`]+)`", cells[1]):
            if room in floors:
                sys.exit(f"check_layers: {room} is on two floors of the table")
            floors[room] = int(cells[0])
    if not floors:
        sys.exit(f"check_layers: the table in {doc_path} names no room")
    return floors


def room_of(path, floors):
    """The longest room `path` (relative, with its extension) starts with, or None."""
    stem = os.path.splitext(path)[0]
    best = None
    for room in floors:
        matches = stem == room if not room.endswith("/") else stem.startswith(room)
        if matches and (best is None or len(room) > len(best)):
            best = room
    return best


def included_path(header):
    """The repository path an #include names: the public headers are included as hvd/..."""
    if header.startswith("hvd/"):
        return "runtime/include/" + header
    return header


def main():
    source = sys.argv[1] if len(sys.argv) > 1 else "."
    floors = read_floors(os.path.join(source, "docs", "architecture.md"))
    problems = []
    checked = 0
    for top in CHECKED:
        for directory, _, names in os.walk(os.path.join(source, top)):
            rel_dir = os.path.relpath(directory, source)
            if "/fuzz" in "/" + rel_dir:
                continue
            for name in sorted(names):
                if not name.endswith((".cc", ".h", ".c", ".cu")) or name.endswith("_test.cc"):
                    continue
                path = os.path.join(rel_dir, name)
                room = room_of(path, floors)
                if room is None:
                    problems.append(f"{path}: in no room of docs/architecture.md's table")
                    continue
                for number, line in enumerate(open(os.path.join(source, path), encoding="utf-8", errors="replace"), 1):
                    match = INCLUDE.match(line)
                    if not match:
                        continue
                    target = included_path(match.group(1))
                    if not target.startswith(tuple(t + "/" for t in CHECKED + ("runtime/include",))):
                        continue  # a third-party header, or one generated into the build tree
                    target_room = room_of(target, floors)
                    checked += 1
                    if target_room is None:
                        problems.append(f"{path}:{number}: includes {match.group(1)}, in no room of the table")
                    elif target_room == room:
                        continue
                    elif floors[target_room] == floors[room]:
                        problems.append(f"{path}:{number}: includes {match.group(1)} sideways ({room} and "
                                        f"{target_room} share floor {floors[room]})")
                    elif floors[target_room] > floors[room]:
                        problems.append(f"{path}:{number}: includes {match.group(1)} upward ({room} is on floor "
                                        f"{floors[room]}, {target_room} on floor {floors[target_room]})")
    for problem in problems:
        print(problem)
    if problems:
        print(f"check_layers: {len(problems)} include(s) against docs/architecture.md's floors")
        return 1
    print(f"check_layers: {checked} includes point down the floors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
