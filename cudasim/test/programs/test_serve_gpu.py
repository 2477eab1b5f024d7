"""Generation through the sm_90a device programs on the emulator: caches made with
target="sm_90a" run the attnfuse.torch layers' prefill and step as device programs
(attn.qkv_decode over a paged pool: cache writes and gathers, RoPE, attention over the
cache, the split-KV decode kernels) instead of the CPU JIT. attnfuse.serve's
continuous-batching loop over a tiny bf16 model with projection-sharing layers must
generate the same greedy tokens as the same loop on the CPU path, which the generation
tests check against transformers and plain PyTorch."""
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import attnfuse.torch as at  # noqa: E402
from attnfuse import serve  # noqa: E402
from attnfuse.generation import AttnFuseCache, AttnFusePagedCache  # noqa: E402

VOCAB, WIDTH, HEAD_DIM = 48, 128, 64


class TinyModel(torch.nn.Module):
    """Embedding, `layers` pre-norm blocks of QKVAttention with a residual, final norm and
    LM head; `forward` is attnfuse.serve's forward()."""

    def __init__(self, sharing, heads, kv_heads, layers=2, seed=0, head_dim=HEAD_DIM):
        super().__init__()
        torch.manual_seed(seed)
        self.embed = torch.nn.Embedding(VOCAB, WIDTH)
        self.norms = torch.nn.ModuleList(torch.nn.LayerNorm(WIDTH) for _ in range(layers))
        self.attention = torch.nn.ModuleList(
            at.QKVAttention(WIDTH, heads, kv_heads, head_dim=head_dim, sharing=sharing,
                            rope_theta=1e4, layer_idx=i) for i in range(layers))
        self.head = torch.nn.Linear(WIDTH, VOCAB, bias=False)
        self.to(torch.bfloat16).eval()

    def forward(self, input_ids, attention_mask, position_ids, cache):
        mask = None if bool(attention_mask.all()) else attention_mask
        h = self.embed(input_ids)
        for norm, attention in zip(self.norms, self.attention):
            h = h + attention(norm(h), past_key_values=cache, attention_mask=mask)
        return self.head(h).float()


def requests():
    generator = torch.Generator().manual_seed(7)
    shapes = [(5, 4, 0), (9, 3, 0), (2, 5, 1), (7, 2, 2), (3, 4, 3)]
    return [serve.Request(torch.randint(1, VOCAB, (n,), generator=generator).tolist(),
                          new, arrival) for n, new, arrival in shapes]


@pytest.mark.parametrize("sharing, heads, kv_heads, head_dim", [
    ("none", 2, 2, 64),   # separate K and V
    ("none", 4, 2, 64),   # GQA
    ("kv", 2, 1, 64),     # K=V + MQA: one cached tensor of one head
    ("qk", 2, 2, 64),
    ("qkv", 2, 2, 64),
    ("kv", 4, 2, 96),     # Phi-3's head dim
    ("none", 2, 1, 256),  # Gemma's
])
def test_server_on_the_emulator_generates_the_cpu_tokens(sharing, heads, kv_heads, head_dim):
    model = TinyModel(sharing, heads, kv_heads, head_dim=head_dim)
    tokens = {}
    for target in ("cpu", "sm_90a"):
        batch = requests()
        # 2 slots and 6 pages of 4 tokens: requests wait for slots and pages.
        cache = AttnFusePagedCache(2, page_size=4, num_pages=6, target=target)
        server = serve.Server(model, cache, slots=2)
        with torch.no_grad():
            server.run(batch)
        assert cache.free_pages == 6
        tokens[target] = [r.tokens for r in batch]
    assert all(len(t) == r.max_new_tokens for t, r in zip(tokens["cpu"], requests()))
    assert tokens["sm_90a"] == tokens["cpu"]


def test_contiguous_cache_on_the_emulator_matches_the_cpu_logits():
    """A prompt of two padded sequences, then two steps, through AttnFuseCache: the logits of
    the device programs and of the CPU JIT agree to bf16 accuracy at every call."""
    model = TinyModel("kv", 2, 1, seed=1)
    caches = {t: AttnFuseCache(2, 16, target=t) for t in ("cpu", "sm_90a")}
    generator = torch.Generator().manual_seed(3)
    ids = torch.randint(1, VOCAB, (2, 6), generator=generator)
    mask = torch.ones(2, 6, dtype=torch.long)
    mask[1, :2] = 0  # left padding
    calls = [(ids, mask)] + [(torch.randint(1, VOCAB, (2, 1), generator=generator),
                              torch.ones(2, 1, dtype=torch.long)) for _ in range(2)]
    for step_ids, step_mask in calls:
        with torch.no_grad():
            cpu = model(step_ids, step_mask, None, caches["cpu"])
            gpu = model(step_ids, step_mask, None, caches["sm_90a"])
        real = step_mask.bool()
        error = (gpu - cpu)[real].abs().max() / cpu[real].abs().max()
        assert error <= 2.0 ** -5, f"max |gpu - cpu| / max |cpu| = {error:.3g}"
    for layer in range(2):
        for got, ref in zip(caches["sm_90a"].layer(layer).states,
                            caches["cpu"].layer(layer).states):
            assert got.dtype == torch.bfloat16
            scale = ref.float().abs().max()
            assert (got.float() - ref.float()).abs().max() <= 2.0 ** -5 * scale


def test_unsupported_layers_and_types_are_refused_by_name():
    with pytest.raises(ValueError, match="target must be one of cpu, sm_90a"):
        AttnFuseCache(1, 8, target="sm_80")
    x = torch.randn(1, 3, WIDTH)
    layer = at.QKVAttention(WIDTH, 2, 1, head_dim=HEAD_DIM, sharing="kv", layer_idx=0)
    with pytest.raises(ValueError, match="target sm_90a runs bf16 or f16 layers; "
                       "this layer is f32"):
        layer(x, past_key_values=AttnFuseCache(1, 8, target="sm_90a"))
    # CCA's prefill has primitives without sm_90a kernels: the compiler's reason.
    cca = at.CCAAttention(WIDTH, 2, 1, head_dim=HEAD_DIM, layer_idx=0).to(torch.bfloat16)
    with pytest.raises(ValueError, match="(?s)target sm_90a cannot run this cca layer's "
                       "decode functions: .*has no sm_90a kernel"):
        cca(x.to(torch.bfloat16), past_key_values=AttnFuseCache(1, 8, target="sm_90a"))
