"""Fixtures of the attnfuse package tests.

Run from the build: `ctest -R python/pytest`, or by hand
    PYTHONPATH=build/python_packages ATTNFUSE_OPT=build/bin/attnfuse-opt \\
        python3 -m pytest python-bindings/tests
(an installed package needs no PYTHONPATH).
"""

import os
import shutil
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# The float64 reference of the numerics suite.
sys.path.insert(0, os.path.join(ROOT, "integration_test"))


@pytest.fixture(scope="module")
def attnfuse_opt():
    """attnfuse-opt, for comparisons with the C++ tools."""
    path = os.environ.get("ATTNFUSE_OPT") or shutil.which("attnfuse-opt")
    if not path:
        candidate = os.path.join(ROOT, "build", "bin", "attnfuse-opt")
        path = candidate if os.path.exists(candidate) else None
    if not path:
        pytest.skip("attnfuse-opt not found (set ATTNFUSE_OPT)")
    return path


@pytest.fixture(scope="module")
def root():
    return ROOT
