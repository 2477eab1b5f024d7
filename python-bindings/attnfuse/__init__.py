"""AttnFuse from Python: build attn IR from layer configs, price it, compile
it for the CPU (run with numpy arrays) or for sm_90a (PTX, cubins, manifest;
launch with torch tensors through the runtime), differentiate it
(attnfuse.grad: a vector-Jacobian product function to compile like any other).

    import attnfuse
    m = attnfuse.cca(embed_dim=256, num_heads=4, num_kv_heads=2, head_dim=32,
                     rope_theta=1e4, rope_fraction=0.5)
    print(attnfuse.cost(m, seq_len=4096, dtype="bf16"))
    f = attnfuse.compile(m, target="cpu")

The builders' text (attnfuse.builders), the importer's text and the GPU
launcher (attnfuse.runtime) are pure Python; everything else needs the
compiled extension attnfuse._attnfuse. attnfuse.torch (torch custom ops and
nn.Modules) is imported on first use, so `import attnfuse` needs no torch.
"""

from . import builders
from ._api import (CpuFunction, MLIRError, Module, cca, cca_decode, compile,
                   cost, grad, parse, qkv_attention, qkv_decode)
from .bf16 import from_bf16, to_bf16
from .importer import from_hf_config, hf_config_text
from .runtime import (AttnFuseRuntimeError, NoDriverError, SM90aArtifacts,
                      SM90aFunction)
from .weights import hf_weight_names, load_hf_weights

__all__ = [
    "AttnFuseRuntimeError", "CpuFunction", "MLIRError", "Module",
    "NoDriverError", "SM90aArtifacts", "SM90aFunction", "builders", "cca", "cca_decode",
    "compile", "cost", "from_bf16", "from_hf_config", "hf_config_text",
    "grad", "hf_weight_names", "load_hf_weights", "parse", "qkv_attention",
    "qkv_decode", "to_bf16",
]


def __getattr__(name):
    # attnfuse.torch imports torch: only when asked for.
    if name == "torch":
        import importlib
        return importlib.import_module(".torch", __name__)
    raise AttributeError(f"module 'attnfuse' has no attribute {name!r}")
