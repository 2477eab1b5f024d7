# Sourced by the scripts: where the project's Python virtual environment is.
#   ATTNFUSE_VENV    the environment (default: .venv/ in the checkout)
#   ATTNFUSE_PYTHON  its interpreter
ATTNFUSE_VENV="${ATTNFUSE_VENV:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.venv}"
ATTNFUSE_PYTHON="$ATTNFUSE_VENV/bin/python"
export ATTNFUSE_VENV ATTNFUSE_PYTHON
