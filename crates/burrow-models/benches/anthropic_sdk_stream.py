"""The official `anthropic` Python SDK reading a streamed answer from burrow's bench server, for benches/anthropic_stream.rs.

Usage: python3 anthropic_sdk_stream.py URL ANSWERS
Prints one JSON line per mode: {"mode", "answers", "deltas", "cpu_s", "wall_s"}. CPU is
this process's (time.process_time): the server runs in the Rust bench process.
"""

import json
import sys
import time

import anthropic


def main() -> None:
    url, answers = sys.argv[1], int(sys.argv[2])
    client = anthropic.Anthropic(base_url=url, api_key="sk-bench", max_retries=0)
    params = dict(
        model="claude-bench",
        max_tokens=1024,
        messages=[{"role": "user", "content": "Hi"}],
    )

    def raw() -> int:
        # What `stream=True` gives: one typed event per SSE event.
        deltas = 0
        with client.messages.create(stream=True, **params) as stream:
            for event in stream:
                if event.type == "content_block_delta":
                    deltas += 1
        return deltas

    def accumulated() -> int:
        # The helper most applications use: events plus the message so far.
        deltas = 0
        with client.messages.stream(**params) as stream:
            for event in stream:
                if event.type == "content_block_delta":
                    deltas += 1
            stream.get_final_message()
        return deltas

    for mode, once in (("raw events", raw), ("MessageStream", accumulated)):
        once()  # warm up: connection code, pydantic models
        deltas = 0
        cpu, wall = time.process_time(), time.perf_counter()
        for _ in range(answers):
            deltas += once()
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        print(json.dumps({"mode": mode, "answers": answers, "deltas": deltas, "cpu_s": cpu, "wall_s": wall}))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
