"""Locates the attnfuse-run binary for the numerics suite.

ctest sets ATTNFUSE_RUN to the built tool. Run by hand with e.g.
    ATTNFUSE_RUN=build/bin/attnfuse-run python3 -m pytest -q integration_test
"""

import os
import shutil

import pytest


def _find_tool():
    path = os.environ.get("ATTNFUSE_RUN")
    if path:
        return path
    return shutil.which("attnfuse-run")


# Every case runs through both CPU lowerings: the fused kernels (attn-fuse
# and their tiled loops, the default) and the reference lowering of each
# primitive.
LOWERINGS = {"fused": [], "reference": ["--reference"]}


@pytest.fixture(scope="session", params=sorted(LOWERINGS))
def attnfuse_run(request):
    """The attnfuse-run command line (a list) for one lowering."""
    path = _find_tool()
    if not path or not os.access(path, os.X_OK):
        pytest.fail("attnfuse-run not found: set ATTNFUSE_RUN to the built "
                    "binary (e.g. build/bin/attnfuse-run) or put it on PATH")
    return [path] + LOWERINGS[request.param]
