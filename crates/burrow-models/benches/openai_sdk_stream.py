"""The official `openai` Python SDK reading a streamed chat completion from burrow's bench server, for benches/openai_stream.rs.

Usage: python3 openai_sdk_stream.py URL ANSWERS
Prints one JSON line per mode: {"mode", "answers", "deltas", "cpu_s", "wall_s"}. CPU is
this process's (time.process_time): the server runs in the Rust bench process.
"""

import json
import sys
import time

import openai


def main() -> None:
    url, answers = sys.argv[1], int(sys.argv[2])
    client = openai.OpenAI(base_url=url, api_key="sk-bench", max_retries=0)
    params = dict(
        model="gpt-bench",
        messages=[{"role": "user", "content": "Hi"}],
        stream_options={"include_usage": True},
    )

    def raw() -> int:
        # What `stream=True` gives: one typed chunk per SSE event.
        deltas = 0
        for chunk in client.chat.completions.create(stream=True, **params):
            if chunk.choices and chunk.choices[0].delta.content:
                deltas += 1
        return deltas

    def accumulated() -> int:
        # The helper that also accumulates the completion (`.stream()`).
        deltas = 0
        with client.chat.completions.stream(**params) as stream:
            for event in stream:
                if event.type == "content.delta":
                    deltas += 1
            stream.get_final_completion()
        return deltas

    for mode, once in (("raw chunks", raw), ("ChatCompletionStream", accumulated)):
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
