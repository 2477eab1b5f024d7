# -*- Python -*-
import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "AttnFuse"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.attnfuse_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%examples", os.path.join(config.attnfuse_src_root, "examples")))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

if config.enable_sanitizers:
    config.available_features.add("sanitizers")
    # Why each setting: the top-level CMakeLists.txt (ATTNFUSE_ASAN_OPTIONS).
    config.environment["ASAN_OPTIONS"] = config.asan_options + ":abort_on_error=0"
    config.environment["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"

tool_dirs = [config.attnfuse_tools_dir, config.llvm_tools_dir]
tools = ["mlir-translate", "opt", "attnfuse-opt", "attnfuse-run", "attnfuse-compile"]
if config.enable_sanitizers:
    tools.append("attnfuse-asan-canary")
# Upstream mlir-opt, for the plugin tests.
config.substitutions.append(("%mlir_opt", os.path.join(config.llvm_tools_dir, "mlir-opt")))
config.substitutions.append(
    ("%attnfuse_plugin", os.path.join(config.attnfuse_obj_root, "lib", "AttnFusePlugin.so")))
llvm_config.add_tool_substitutions(tools, tool_dirs)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

# ptxas (CUDA toolkit) for the sm_90a assembly checks: PATH, $CUDA_HOME/bin
# or /usr/local/cuda/bin, the places attnfuse-compile looks.
import shutil
_ptxas = shutil.which("ptxas")
for _candidate in [os.path.join(os.environ.get("CUDA_HOME", ""), "bin", "ptxas"),
                   "/usr/local/cuda/bin/ptxas"]:
    if not _ptxas and os.path.isfile(_candidate) and os.access(_candidate, os.X_OK):
        _ptxas = _candidate
if _ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", _ptxas))
