#!/usr/bin/env bash
# `pip install ./python-bindings` into a fresh virtual environment, then the
# example of docs/python.md with the installed package. Offline: the build uses the
# scikit-build-core and nanobind that scripts/setup.sh installed into the
# project's environment (--no-build-isolation; the new venv sees that
# environment's site packages through a .pth file, since
# --system-site-packages would only reach the base interpreter's).
#   python-bindings/tests/pip_install_check.sh VENV_DIR
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${1:?usage: pip_install_check.sh VENV_DIR}"
PYTHON="${PYTHON:-python3}"
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
parent_site="$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
child_site="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
echo "$parent_site" > "$child_site/attnfuse-parent-env.pth"
start=$(date +%s)
"$VENV/bin/python" -m pip install -q --no-build-isolation --no-deps \
  --force-reinstall "$ROOT/python-bindings"
echo "pip install ./python-bindings: $(( $(date +%s) - start )) s"
cd "$VENV"  # import the installed package, not the checkout's sources
"$VENV/bin/python" -c "import attnfuse, os; print('attnfuse from', os.path.dirname(attnfuse.__file__))"
"$VENV/bin/python" "$ROOT/examples/python/zaya_layer.py"
"$VENV/bin/attnfuse-import" --help >/dev/null
