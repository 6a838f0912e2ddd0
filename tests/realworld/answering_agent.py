"""A coding agent for the tests that only answers: it sends its task to the model through the
gateway (OpenAI chat completions) once, prints what the model said or asked for, and changes
nothing. Its task is in the file named as its argument (or on stdin)."""

import json
import os
import pathlib
import sys
import urllib.request


def main():
    task = pathlib.Path(sys.argv[1]).read_text() if sys.argv[1:] else sys.stdin.read()
    body = {"model": "any", "messages": [{"role": "user", "content": task}]}
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"] + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={
            "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
            "Content-Type": "application/json",
        },
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        message = json.load(answer)["choices"][0]["message"]
    calls = [call["function"]["name"] for call in message.get("tool_calls") or []]
    print(message.get("content") or f"the model asked for {', '.join(calls)}; I only answer")
    return 0


if __name__ == "__main__":
    sys.exit(main())
