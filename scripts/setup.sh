#!/usr/bin/env bash
# Installs everything the build and the tests need on a fresh Debian 12 machine.
# Idempotent: packages already present are left alone.
#
# System packages come from Debian (apt-get): LLVM/MLIR/clang 22, the OpenMP
# runtime libomp 22 (the parallel CPU loops call it), CMake, Ninja, ccache, Python 3 with its venv module and development files.
# Python packages go into a virtual environment, never into the system
# interpreter (Debian's python3 refuses that, PEP 668): $ATTNFUSE_VENV, by
# default .venv/ in the checkout, created on first use and reused after.
# scripts/build.sh configures CMake with that environment's interpreter, so the
# Python package, the numerics suite and the pytest tests all use it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/venv.sh"

LLVM_VERSION=22
APT_PACKAGES=(
  "llvm-${LLVM_VERSION}-dev" "libmlir-${LLVM_VERSION}-dev" "mlir-${LLVM_VERSION}-tools"
  "llvm-${LLVM_VERSION}-tools" "clang-${LLVM_VERSION}" "libclang-rt-${LLVM_VERSION}-dev"
  "libomp-${LLVM_VERSION}-dev"
  cmake ninja-build ccache python3 python3-dev python3-venv
)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if [ ! -x "$ATTNFUSE_PYTHON" ]; then
  echo "setup: creating the virtual environment $ATTNFUSE_VENV" >&2
  python3 -m venv "$ATTNFUSE_VENV"
fi

# Python packages used by the test suite, the example generator and the
# attnfuse Python package (nanobind for its extension, scikit-build-core for
# `pip install ./python-bindings`), as pip-name:import-name. torch,
# transformers (5.23: the first with the `zaya` model) and safetensors run
# the checks against Hugging Face's own ZAYA attention
# (python-bindings/tests/test_hf_numerics.py, examples/python/
# zaya_from_hf.py); PyPI's torch is the CUDA build, which imports without a
# GPU (about 5.6 GB with its nvidia-* wheels; the whole list takes about
# 5.5 minutes into a fresh environment on the CI machine).
PY_PACKAGES=(numpy:numpy pytest:pytest hypothesis:hypothesis nanobind:nanobind
             scikit-build-core:scikit_build_core safetensors:safetensors
             torch:torch transformers==5.23.0:transformers.models.zaya)
to_install=()
for entry in "${PY_PACKAGES[@]}"; do
  "$ATTNFUSE_PYTHON" -c "import ${entry#*:}" 2>/dev/null || to_install+=("${entry%%:*}")
done
# nvdisasm (5 MB, no Python module): the ptxas matrix's SASS checks (no local
# memory, HGMMA in every wgmma kernel) and the table's SASS register counts.
"$ATTNFUSE_PYTHON" - 2>/dev/null <<'EOF' || to_install+=(nvidia-cuda-nvdisasm==13.5.37)
import glob, os, nvidia
assert any(glob.glob(os.path.join(p, "*", "bin", "nvdisasm")) for p in nvidia.__path__)
EOF
if [ ${#to_install[@]} -gt 0 ]; then
  echo "setup: pip install ${to_install[*]} into $ATTNFUSE_VENV" >&2
  "$ATTNFUSE_PYTHON" -m pip install -q --disable-pip-version-check "${to_install[@]}"
fi
