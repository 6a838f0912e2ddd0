"""Verification: gates, JUnit reading, the independent critic and one round's checks."""

from harness.verify.critic import Critic, Verdict
from harness.verify.gates import CommandGate, GateReport, PredicateGate
from harness.verify.pytest_gate import PytestGate

__all__ = ["CommandGate", "Critic", "GateReport", "PredicateGate", "PytestGate", "Verdict"]
