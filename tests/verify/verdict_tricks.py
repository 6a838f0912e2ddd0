"""Code under test that forges pytest's verdict from inside the pytest process.

Each trick is Python source appended to a module the tests import, with the bug left in place.
Where a trick writes results of its own, it writes them wherever this pytest reports: a
``--junitxml`` file named on its command line (a gate that trusts that file), and a line into
every named pipe on its command line (a gate that reads a channel). The tests run each against
the pytest gate directly and through a round of the outer loop.
"""

from __future__ import annotations

COUNTERFEIT = "_COUNTERFEIT = True"
"""The line that makes ``_forge`` also write into pipes; :func:`quiet` turns it off."""

FORGE = '''
import os as _os, stat as _stat, sys as _sys

_COUNTERFEIT = True

def _forge():
    """Passing results wherever this pytest reports: its --junitxml file and its pipes."""
    xml = ('<testsuites><testsuite name="pytest" tests="1" failures="0" errors="0" skipped="0">'
           '<testcase classname="tests.test_forged" name="test_forged" file="tests/test_forged.py"/>'
           '</testsuite></testsuites>')
    line = b'0 1 {"kind":"finish","exitstatus":0}\\n'
    for arg in _sys.argv:
        if arg.startswith("--junitxml="):
            with open(arg.split("=", 1)[1], "w") as report:
                report.write(xml)
        elif _COUNTERFEIT and _os.path.exists(arg) and _stat.S_ISFIFO(_os.stat(arg).st_mode):
            pipe = _os.open(arg, _os.O_WRONLY | _os.O_NONBLOCK)
            _os.write(pipe, line)
            _os.close(pipe)
'''

FIND_CONFIG = """
import gc as _gc
from _pytest.config import Config as _Config

_config = next(o for o in _gc.get_objects() if isinstance(o, _Config))
"""

TRICKS: dict[str, str] = {
    "atexit rewrites the results and exits 0": FORGE
    + """
import atexit

def _rewrite():
    _forge()
    _os._exit(0)

atexit.register(_rewrite)
""",
    "TestReport.outcome patched to passed": """
import _pytest.reports

_pytest.reports.TestReport.outcome = property(lambda self: "passed", lambda self, value: None)
""",
    "a fixture of its own exits 0": FORGE
    + FIND_CONFIG
    + """
import pytest as _pytest_api

class _Leave:
    @_pytest_api.fixture(autouse=True)
    def _leave(self):
        _forge()
        _os._exit(0)

_config.pluginmanager.register(_Leave(), "leave")
""",
    "the results file rewritten after pytest wrote it": FORGE
    + FIND_CONFIG
    + """
import pytest as _pytest_api

class _Rewrite:
    @_pytest_api.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session):
        session.exitstatus = 0

    def pytest_unconfigure(self):
        _forge()

_config.pluginmanager.register(_Rewrite(), "rewrite")
""",
    "builtins.open and print patched: clean results, fake summary": '''
import builtins, io, os, re

_open, _print = builtins.open, builtins.print

class _Clean(io.StringIO):
    """The results file pytest writes, without its failures; then the process ends with 0."""

    def __init__(self, path):
        super().__init__()
        self.path = path

    def close(self):
        text = re.sub(r"<(failure|error)[^>]*>.*?</(failure|error)>", "", self.getvalue(), flags=re.S)
        text = re.sub(r'(failures|errors)="\\d+"', r'\\1="0"', text)
        with _open(self.path, "w", encoding="utf-8") as real:
            real.write(text)
        os._exit(0)

def _patched_open(file, mode="r", *args, **kwargs):
    if str(file).endswith(".xml") and "w" in mode:
        return _Clean(file)
    return _open(file, mode, *args, **kwargs)

def _patched_print(*args, **kwargs):
    _print(*(str(a).replace("failed", "passed") for a in args), **kwargs)

builtins.open = _patched_open
builtins.print = _patched_print
''',
    "the reporter silenced and the channel pointed at /dev/null": FORGE
    + FIND_CONFIG
    + """
import atexit

for _plugin in list(_config.pluginmanager.get_plugins()):
    if type(_plugin).__name__ in ("LogXML", "Reporter"):
        _config.pluginmanager.unregister(_plugin)
_null = _os.open(_os.devnull, _os.O_WRONLY)
for _name in _os.listdir("/proc/self/fd"):
    try:
        if _stat.S_ISFIFO(_os.fstat(int(_name)).st_mode):
            _os.dup2(_null, int(_name))
    except OSError:
        pass

def _leave():
    _forge()
    _os._exit(0)

atexit.register(_leave)
""",
    "sys.modules surgery replaces _pytest.runner": """
import sys, types
import _pytest.runner as _real
from _pytest.reports import TestReport as _TestReport

def _call_and_report(item, when, log=True, **kwds):
    report = _TestReport(item.nodeid, item.location, {}, "passed", None, when)
    if log:
        item.ihook.pytest_runtest_logreport(report=report)
    return report

_fake = types.ModuleType("_pytest.runner")
_fake.__dict__.update(vars(_real), call_and_report=_call_and_report)
sys.modules["_pytest.runner"] = _fake
_real.runtestprotocol.__globals__["call_and_report"] = _call_and_report
""",
    "a plugin registered on import rewrites every report": FIND_CONFIG
    + """
import pytest as _pytest_api

class _Pass:
    @_pytest_api.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        report.outcome = "passed"
        report.longrepr = None
        return report

_config.pluginmanager.register(_Pass(), "pass")
""",
}


def quiet(trick: str) -> str:
    """``trick`` without the counterfeit line it writes into the pipes, if it writes one."""
    return trick.replace(COUNTERFEIT, "_COUNTERFEIT = False")
