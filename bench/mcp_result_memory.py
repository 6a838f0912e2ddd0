"""What a huge MCP result costs the harness's memory: its peak before and after one call.

Starts a tiny stdio server (backend ``none``, so only the harness's own reading is measured)
whose tool answers with about ``--megabytes`` of text, warms the session with a small call, and
prints how far the process's peak resident size (``ru_maxrss``) grew during the big call. Each
size is measured in a fresh process, since a peak never comes down.

    python bench/mcp_result_memory.py [--megabytes 20 5 1]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

SERVER = """
from mcp.server.mcpserver import MCPServer

app = MCPServer("big")

@app.tool()
def answer(megabytes: float) -> str:
    \"\"\"About this many megabytes of text.\"\"\"
    return "x" * int(megabytes * 2**20)

app.run()
"""


def measure(megabytes: float) -> None:
    """In this process: the peak's growth during one call answered with ``megabytes``."""
    from harness.sandbox import Sandbox
    from harness.tools import ToolContext
    from harness.tools.mcp import McpServer, mcp_tools

    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "big.py").write_text(SERVER)
        server = McpServer("big", command=[sys.executable, str(Path(folder) / "big.py")],
                           cwd=Path(folder), call_timeout=300)  # fmt: skip
        ctx = ToolContext(workspace=Path(folder))
        with mcp_tools([server], sandbox=Sandbox("none")) as (answer,):
            answer.run({"megabytes": 0.01}, ctx)
            before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            result = answer.run({"megabytes": megabytes}, ctx)
            after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    outcome = "an error observation" if result.is_error else f"{len(result.output)} chars shown"
    print(f"  {megabytes:6g} MB result: peak grew {(after - before) / 1024:7.1f} MB ({outcome})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, nargs="+", default=[20, 5, 1])
    parser.add_argument("--one", type=float, help=argparse.SUPPRESS)  # a measuring child
    args = parser.parse_args()
    if args.one is not None:
        measure(args.one)
        return
    print("growth of the harness's peak resident memory during one MCP call")
    for size in args.megabytes:
        subprocess.run([sys.executable, __file__, "--one", str(size)], check=True)


if __name__ == "__main__":
    main()
