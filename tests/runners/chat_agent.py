"""A small coding agent for the tests: it speaks OpenAI chat completions to the gateway.

It reads its task from the file named as its argument (or stdin), asks the model with one tool,
``write_file``, writes what the model asks for, and prints the model's last answer. With
``--show-env FILE`` it first writes to FILE what it can read of environments: its own and every
process's ``/proc/*/environ``.
"""

import contextlib
import json
import os
import pathlib
import sys
import urllib.error
import urllib.request

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "write_file",
            "description": "Write a file",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                "required": ["path", "content"],
            },
        },
    }
]


def ask(messages):
    body = json.dumps({"model": "any", "messages": messages, "tools": TOOLS}).encode()
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"] + "/chat/completions",
        data=body,
        headers={
            "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
            "Content-Type": "application/json",
        },
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.load(answer)["choices"][0]["message"]


def environments():
    seen = [f"{k}={v}" for k, v in os.environ.items()]
    for path in pathlib.Path("/proc").glob("*/environ"):
        with contextlib.suppress(OSError):
            seen.append(path.read_bytes().decode(errors="replace"))
    return "\n".join(seen)


def main():
    args = sys.argv[1:]
    if args[:1] == ["--show-env"]:
        pathlib.Path(args[1]).write_text(environments())
        args = args[2:]
    task = pathlib.Path(args[0]).read_text() if args else sys.stdin.read()
    messages = [{"role": "user", "content": task}]
    while True:
        try:
            message = ask(messages)
        except urllib.error.HTTPError as error:
            print(f"refused: {error.code} {error.read().decode()}", file=sys.stderr)
            return 1
        messages.append(message)
        if not message.get("tool_calls"):
            print(message["content"])
            return 0
        for call in message["tool_calls"]:
            arguments = json.loads(call["function"]["arguments"])
            pathlib.Path(arguments["path"]).write_text(arguments["content"])
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": "written"})


if __name__ == "__main__":
    sys.exit(main())
