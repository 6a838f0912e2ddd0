"""The example's stand-in for the web: serves site/ on 127.0.0.1 (port 8765, or the first argument)."""

import functools
import sys
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

port = int(sys.argv[1]) if len(sys.argv) > 1 else 8765
handler = functools.partial(SimpleHTTPRequestHandler, directory=str(Path(__file__).parent / "site"))
server = ThreadingHTTPServer(("127.0.0.1", port), handler)
print(f"serving {Path(__file__).parent / 'site'} on http://127.0.0.1:{port}/", flush=True)
server.serve_forever()
