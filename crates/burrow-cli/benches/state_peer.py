"""The Python side of the `state_peer` bench: pydantic-ai-backend's StateBackend in one process.

Runs the workload `state_peer.rs` feeds to `burrow --backend state:DOC --json batch`
(N writes of 50-line files, N reads, N edits, a glob and a grep) on the peer's
StateBackend, saves the document once at the end (a host persisting its state),
and prints one JSON answer per operation in the shape the bench compares:
write -> path, read -> lines, edit -> occurrences, glob -> paths, grep -> [path, line].

Usage: python3 state_peer.py N DOCUMENT.json
"""

from __future__ import annotations

import json
import re
import sys

from pydantic_ai_backends import StateBackend
from pydantic_ai_backends._editing import replace_in_content


def path_of(i: int) -> str:
    return f"/src/d{i % 100:02}/f{i:05}.txt"


def content_of(i: int) -> str:
    return "".join(f"line {j} of file {i}: some text to make it a line\n" for j in range(50))


def main() -> int:
    n = int(sys.argv[1])
    out = []
    state = StateBackend()
    for i in range(n):
        path = path_of(i)
        state.write_bytes(path, content_of(i).encode())
        out.append(path)
    for i in range(n):
        text = state.read_bytes(path_of(i)).decode()
        out.append(text.splitlines()[0:2000])
    for i in range(n):
        path = path_of(i)
        text = state.read_bytes(path).decode()
        done = replace_in_content(text, f"line 7 of file {i}:", f"LINE 7 of file {i}:", False)
        assert not isinstance(done, str), done
        state.write_bytes(path, done.content.encode())
        out.append(done.occurrences)
    glob = re.compile(r".*\.txt")
    out.append(sorted(p for p in state.files if p.startswith("/src/") and glob.fullmatch(p[5:])))
    grep = re.compile("LINE 7 of")
    matches = []
    for path in sorted(state.files):
        text = state.read_bytes(path).decode()
        for number, line in enumerate(text.splitlines(), 1):
            if grep.search(line):
                matches.append([path, number])
    out.append(matches)
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(state.files, f)
    sys.stdout.write("".join(json.dumps(answer) + "\n" for answer in out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
