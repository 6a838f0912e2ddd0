"""The harness's version: ``harness.__version__``, and what keys results kept across versions."""

VERSION = "0.1.0"
