"""`python -m tests.index_writer CORPUS NAME`: build index NAME as `hopgraph index CORPUS --name NAME` does
(the real index_corpus, settings from HOPGRAPH_*), stopping once in the middle of embedding.

There it prints "mid-embed" on stdout and waits for a line on stdin before it goes on: some chunks are in
the build's Chroma collection, others not yet, and it holds the index's lock. tests/test_one_writer.py
starts a second writer at exactly that moment, or kills this one there, with no sleep to guess at.
"""

from __future__ import annotations

import sys

from hopgraph import Settings, index_corpus


def main() -> None:
    corpus, name = sys.argv[1:3]
    paused = False

    def progress(stage: str, done: int, total: int) -> None:
        nonlocal paused
        if stage == "embed" and 0 < done < total and not paused:
            paused = True
            print("mid-embed", flush=True)
            sys.stdin.readline()

    print(index_corpus(corpus, name, Settings(), progress=progress).status, flush=True)


if __name__ == "__main__":
    main()
