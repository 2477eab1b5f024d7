"""Where the training tests find the attnfuse package: installed, or the
build tree's python_packages (next to the numerics suite's attnfuse-run, or
under build/)."""

import os
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def package_dir():
    """The directory holding the attnfuse package; None when it is neither
    installed nor built."""
    try:
        import attnfuse
        return os.path.dirname(os.path.dirname(os.path.abspath(
            attnfuse.__file__)))
    except ImportError:
        pass
    candidates = []
    tool = os.environ.get("ATTNFUSE_RUN")
    if tool:
        candidates.append(os.path.join(
            os.path.dirname(os.path.dirname(os.path.abspath(tool))),
            "python_packages"))
    candidates.append(os.path.join(ROOT, "build", "python_packages"))
    for path in candidates:
        if os.path.isdir(os.path.join(path, "attnfuse")):
            return path
    return None


def require_package_dir():
    """package_dir(), on sys.path; fails the test when there is none."""
    path = package_dir()
    if path is None:
        pytest.fail("the attnfuse package is not built (set PYTHONPATH to "
                    "the build's python_packages/)", pytrace=False)
    if path not in sys.path:
        sys.path.insert(0, path)
    return path


def import_attnfuse():
    """The attnfuse package (failing the test when it is not built)."""
    require_package_dir()
    import attnfuse
    return attnfuse
