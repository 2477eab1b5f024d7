"""Generation through AttnFuse's decode functions: transformers' generate()
of a tiny random ZayaForCausalLM with every ZayaAttention swapped for
attnfuse.torch.CCAAttention and an attnfuse.generation.AttnFuseCache gives
the tokens of the unmodified model (its own cache), greedy and sampled, for
one prompt and for left-padded prompts of different lengths, with the logits
of every step within 1e-4; and the cache's errors."""

import copy

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
if not hasattr(transformers, "ZayaConfig"):
    pytest.skip("this transformers has no ZAYA model (5.23 and later do)",
                allow_module_level=True)

import attnfuse.torch as at  # noqa: E402
from attnfuse.generation import AttnFuseCache, AttnFusePagedCache  # noqa: E402,E501

LOGITS_TOLERANCE = 1e-4  # f32, relative to the step's largest logit
NEW_TOKENS = 12


@pytest.fixture(scope="module")
def models():
    """(transformers' model, the same with CCAAttention layers): a global
    and a sliding-window layer, random temperatures and conv biases."""
    config = transformers.ZayaConfig(
        hidden_size=48, num_attention_heads=4, num_key_value_heads=2,
        head_dim=8, num_hidden_layers=2,
        layer_types=["hybrid", "hybrid_sliding"], sliding_window=4,
        num_experts=2, moe_intermediate_size=16, router_hidden_size=8,
        vocab_size=32, pad_token_id=0, eos_token_id=None,
        bos_token_id=None)
    torch.manual_seed(0)
    reference = transformers.ZayaForCausalLM(config).eval()
    with torch.no_grad():
        for block in reference.model.layers:
            block.self_attn.qk_norm.temp.uniform_(0.25, 3.0)
            for conv in (block.self_attn.qkv_proj.conv_qk_depthwise,
                         block.self_attn.qkv_proj.conv_qk_grouped):
                conv.bias.normal_(0.0, 0.2)
    swapped = at.swap_zaya_attention(reference)
    assert all(isinstance(block.self_attn, at.CCAAttention)
               for block in swapped.model.layers)
    assert not isinstance(reference.model.layers[0].self_attn,
                          at.CCAAttention)
    return reference, swapped


def relative_error(got, expected):
    return ((got.double() - expected.double()).abs().max()
            / expected.double().abs().max()).item()


def generate(model, ids, mask=None, cache=None, seed=None, **kwargs):
    if seed is not None:
        torch.manual_seed(seed)
    with torch.no_grad():
        out = model.generate(
            ids, attention_mask=mask, max_new_tokens=NEW_TOKENS,
            min_new_tokens=NEW_TOKENS, past_key_values=cache,
            return_dict_in_generate=True, output_logits=True,
            pad_token_id=0, **kwargs)
    return out.sequences, torch.stack(out.logits, dim=1)


def prompts(lengths, seed=1):
    """Left-padded prompts (ids, mask) of the given lengths."""
    generator = torch.Generator().manual_seed(seed)
    width = max(lengths)
    ids = torch.zeros(len(lengths), width, dtype=torch.long)
    mask = torch.zeros(len(lengths), width, dtype=torch.long)
    for row, length in enumerate(lengths):
        ids[row, width - length:] = torch.randint(1, 32, (length,),
                                                  generator=generator)
        mask[row, width - length:] = 1
    return ids, mask


def assert_same_generation(ours, theirs):
    (our_tokens, our_logits), (their_tokens, their_logits) = ours, theirs
    assert torch.equal(our_tokens, their_tokens), (our_tokens, their_tokens)
    errors = [relative_error(our_logits[:, step], their_logits[:, step])
              for step in range(their_logits.shape[1])]
    assert max(errors) <= LOGITS_TOLERANCE, errors


@pytest.mark.parametrize("length", [1, 9])
def test_greedy_tokens_and_logits_equal_transformers(models, length):
    reference, swapped = models
    ids, _ = prompts([length])
    cache = AttnFuseCache.for_model(swapped, length + NEW_TOKENS)
    ours = generate(swapped, ids, cache=cache, do_sample=False)
    assert_same_generation(ours, generate(reference, ids, do_sample=False))
    # Every layer holds the prompt and the tokens generated before the last.
    assert [layer.lengths.tolist() for layer in cache.layers] == \
        [[length + NEW_TOKENS - 1]] * 2
    assert cache.get_seq_length() == length + NEW_TOKENS - 1


def test_sampled_tokens_equal_transformers_with_the_same_seed(models):
    reference, swapped = models
    ids, _ = prompts([6, 6], seed=2)
    sampling = dict(do_sample=True, temperature=1.5, top_k=0, top_p=1.0)
    ours = generate(swapped, ids, cache=AttnFuseCache.for_model(swapped, 32),
                    seed=7, **sampling)
    theirs = generate(reference, ids, seed=7, **sampling)
    assert_same_generation(ours, theirs)
    # The samples are not greedy: the seed decides them.
    greedy, _ = generate(reference, ids, do_sample=False)
    assert not torch.equal(theirs[0], greedy)


def test_left_padded_prompts_of_different_lengths(models):
    """Each sequence keeps its own positions: a padded batch generates what
    transformers generates for it, and each row what it generates alone."""
    reference, swapped = models
    lengths = [7, 3, 10, 1]
    ids, mask = prompts(lengths, seed=3)
    cache = AttnFuseCache.for_model(swapped, 10 + NEW_TOKENS)
    ours = generate(swapped, ids, mask, cache=cache, do_sample=False)
    assert_same_generation(ours, generate(reference, ids, mask,
                                          do_sample=False))
    assert cache.layers[0].lengths.tolist() == [
        n + NEW_TOKENS - 1 for n in lengths]
    for row, length in enumerate(lengths):
        alone, _ = generate(swapped, ids[row:row + 1, 10 - length:],
                            cache=AttnFuseCache.for_model(swapped, 32),
                            do_sample=False)
        assert torch.equal(alone[0, length:], ours[0][row, 10:])


def test_a_paged_cache_generates_the_same_tokens(models):
    """Left-padded prompts of different lengths over a pool of pages: each
    sequence takes the pages its tokens reach, and the tokens and logits
    are those of transformers."""
    reference, swapped = models
    lengths = [7, 3, 10, 1]
    ids, mask = prompts(lengths, seed=3)
    cache = AttnFusePagedCache.for_model(swapped, page_size=4, num_pages=32)
    ours = generate(swapped, ids, mask, cache=cache, do_sample=False)
    assert_same_generation(ours, generate(reference, ids, mask,
                                          do_sample=False))
    held = [n + NEW_TOKENS - 1 for n in lengths]
    assert cache.layers[1].lengths.tolist() == held
    used = sum(-(-n // 4) for n in held)  # whole pages per sequence
    assert cache.free_pages == 32 - used
    # A finished sequence gives its pages back; its state is empty.
    cache.release(2)
    assert cache.free_pages == 32 - used + -(-held[2] // 4)
    assert cache.layers[0].lengths.tolist()[2] == 0


def test_a_paged_cache_without_free_pages_refuses_the_call(models):
    _reference, swapped = models
    ids, mask = prompts([7, 3], seed=3)
    cache = AttnFusePagedCache.for_model(swapped, page_size=4, num_pages=3)
    token = torch.ones(2, 1, dtype=torch.long)
    with torch.no_grad():
        # 7 and 3 tokens: 2 + 1 pages, the whole pool.
        swapped(ids, attention_mask=mask, past_key_values=cache,
                position_ids=(mask.cumsum(-1) - 1).clamp(min=0),
                use_cache=True)
        assert cache.free_pages == 0
        # The 8th and the 4th tokens still fit in the sequences' pages.
        swapped(token, past_key_values=cache,
                position_ids=torch.tensor([[7], [3]]), use_cache=True)
        before = [s.clone() for s in cache.layers[0].states]
        with pytest.raises(ValueError, match=r"has 0 free pages of 4 tokens; "
                           r"this call needs 2 more \(per sequence: \[1, 1\]"):
            swapped(token, past_key_values=cache,
                    position_ids=torch.tensor([[8], [4]]), use_cache=True)
    assert cache.layers[0].lengths.tolist() == [8, 4]
    assert all(torch.equal(a, b) for a, b in
               zip(before, cache.layers[0].states))
    with pytest.raises(NotImplementedError, match="share one page pool"):
        cache.reorder_cache(torch.tensor([1, 0]))


def test_a_full_cache_is_refused_and_left_as_it_was(models):
    _reference, swapped = models
    ids, _ = prompts([5])
    cache = AttnFuseCache.for_model(swapped, 8)
    with pytest.raises(ValueError, match=r"layer 0's cache holds 8 tokens "
                       r"per sequence; sequence 0 has 8 and this call adds 1"):
        generate(swapped, ids, cache=cache, do_sample=False)
    assert [layer.lengths.tolist() for layer in cache.layers] == [[8], [8]]
    too_long, _ = prompts([9])
    with pytest.raises(ValueError, match="sequence 0 has 0 and this call "
                       "adds 9"):
        generate(swapped, too_long, cache=AttnFuseCache.for_model(swapped, 8),
                 do_sample=False)


def test_wrong_caches_and_inputs_are_refused(models):
    reference, swapped = models
    ids, mask = prompts([4, 2])
    with torch.no_grad():
        with pytest.raises(TypeError, match="past_key_values must be an "
                           "attnfuse.generation.AttnFuseCache.*DynamicCache"):
            swapped(ids, use_cache=True)
        # The unmodified model's attention cannot write AttnFuse state.
        with pytest.raises(TypeError, match="a transformers attention layer "
                           "updated it"):
            reference(ids, past_key_values=AttnFuseCache.for_model(
                reference, 16), use_cache=True)
        cache = AttnFuseCache.for_model(swapped, 16)
        # As generate() numbers left-padded tokens: real ones from 0.
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        swapped(ids, attention_mask=mask, position_ids=positions,
                past_key_values=cache, use_cache=True)
        before = [s.clone() for s in cache.layers[0].states]
        with pytest.raises(ValueError, match="holds 2 sequences, the input "
                           "has 1"):
            swapped(ids[:1, -1:], past_key_values=cache, use_cache=True)
        with pytest.raises(ValueError, match=r"layer 0's state is "
                           r"torch.float32, the layer's input torch.bfloat16"):
            copy.deepcopy(swapped).to(torch.bfloat16)(
                ids[:, -1:], past_key_values=cache, use_cache=True)
        right = torch.tensor([[1, 1, 0], [1, 1, 1]])
        with pytest.raises(ValueError, match="padding must be on the left"):
            swapped(ids[:, :3], attention_mask=right, past_key_values=cache,
                    use_cache=True)
        assert all(torch.equal(a, b) for a, b in
                   zip(before, cache.layers[0].states))
        assert cache.layers[0].lengths.tolist() == [4, 2]
    with pytest.raises(NotImplementedError, match="cannot be cropped"):
        cache.crop(1)
    with pytest.raises(ValueError, match="max_cache_len must be a positive "
                       "integer, got 0"):
        AttnFuseCache(2, 0)
    with pytest.raises(TypeError, match="a transformers ZAYA model"):
        at.swap_zaya_attention(torch.nn.Linear(2, 2))
    module = at.CCAAttention(16, 2)
    with pytest.raises(ValueError, match="has no layer_idx"):
        module(torch.zeros(1, 2, 16), past_key_values=AttnFuseCache(1, 4))


# ---------------------------------------------------------------------------
# A GPT-style model with K=V + GQA against plain PyTorch with a plain cache
# ---------------------------------------------------------------------------

E, H, HK, D, VOCAB, THETA = 32, 4, 2, 8, 40, 1e4


def plain_rope(t, positions):
    """NeoX RoPE of t [S, heads, D] at `positions` [S]."""
    inv = 1.0 / THETA ** (torch.arange(0, D, 2, dtype=torch.float64) / D)
    angles = positions.double()[:, None] * inv
    cos = torch.cat([angles.cos()] * 2, -1)[:, None].to(t.dtype)
    sin = torch.cat([angles.sin()] * 2, -1)[:, None].to(t.dtype)
    half = torch.cat([-t[..., D // 2:], t[..., :D // 2]], -1)
    return t * cos + half * sin


class PlainKVAttention(torch.nn.Module):
    """K=V GQA attention of one sequence with a plain KV cache: the list of
    its un-rotated shared key/value rows."""

    def __init__(self):
        super().__init__()
        self.q_proj = torch.nn.Linear(E, H * D, bias=False)
        self.k_proj = torch.nn.Linear(E, HK * D, bias=False)
        self.o_proj = torch.nn.Linear(H * D, E, bias=False)

    def forward(self, x, cache):
        s = x.shape[1]
        start = sum(t.shape[0] for t in cache)
        positions = torch.arange(start, start + s)
        q = plain_rope(self.q_proj(x[0]).view(s, H, D), positions)
        cache.append(self.k_proj(x[0]).view(s, HK, D))
        kv = torch.cat(cache)                       # [T, Hk, D], un-rotated
        k = plain_rope(kv, torch.arange(kv.shape[0]))
        k = k.repeat_interleave(H // HK, dim=1)
        v = kv.repeat_interleave(H // HK, dim=1)
        scores = torch.einsum("shd,thd->hst", q, k) / D ** 0.5
        allowed = torch.arange(kv.shape[0])[None, :] <= positions[:, None]
        o = torch.einsum("hst,thd->shd", scores.masked_fill(
            ~allowed, float("-inf")).softmax(-1), v)
        return self.o_proj(o.reshape(1, s, H * D))


class TinyGPT(torch.nn.Module):
    def __init__(self, attentions):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, E)
        self.norms = torch.nn.ModuleList(torch.nn.LayerNorm(E)
                                         for _ in attentions)
        self.attentions = torch.nn.ModuleList(attentions)
        self.mlps = torch.nn.ModuleList(
            torch.nn.Sequential(torch.nn.Linear(E, 2 * E), torch.nn.GELU(),
                                torch.nn.Linear(2 * E, E))
            for _ in attentions)
        self.head = torch.nn.Linear(E, VOCAB, bias=False)

    def forward(self, ids, cache, **kwargs):
        h = self.embed(ids)
        for i, (norm, attention, mlp) in enumerate(
                zip(self.norms, self.attentions, self.mlps)):
            if isinstance(attention, PlainKVAttention):
                h = h + attention(norm(h), cache[i])
            else:
                h = h + attention(norm(h), past_key_values=cache, **kwargs)
            h = h + mlp(h)
        return self.head(h)


def gpt_models(layers=2):
    torch.manual_seed(5)
    plain = TinyGPT([PlainKVAttention() for _ in range(layers)]).eval()
    ours = TinyGPT([at.QKVAttention(E, H, HK, sharing="kv", rope_theta=THETA,
                                    layer_idx=i) for i in range(layers)])
    ours.load_state_dict(plain.state_dict())
    return plain, ours.eval()


def greedy(model, ids, cache, steps, **kwargs):
    """(tokens [B, steps], logits [B, steps, V]) of greedy decoding."""
    tokens, logits = [], []
    with torch.no_grad():
        out = model(ids, cache, **kwargs)[:, -1]
        for _ in range(steps):
            logits.append(out)
            tokens.append(out.argmax(-1))
            out = model(tokens[-1][:, None], cache)[:, -1]
    return torch.stack(tokens, 1), torch.stack(logits, 1)


def test_gpt_kv_gqa_decoding_equals_plain_pytorch_with_a_kv_cache():
    plain, ours = gpt_models()
    lengths = [5, 9, 1]
    ids, mask = prompts(lengths, seed=4)
    cache = AttnFuseCache(2, 9 + NEW_TOKENS)
    tokens, logits = greedy(ours, ids, cache, NEW_TOKENS, attention_mask=mask)
    # K=V: one cache tensor per layer, [B, capacity, Hk, D].
    assert cache.layers[0].state_names == ["l0_kv_cache"]
    assert list(cache.layers[0].states[0].shape) == [3, 9 + NEW_TOKENS, HK, D]
    for row, length in enumerate(lengths):
        expected_tokens, expected_logits = greedy(
            plain, ids[row:row + 1, 9 - length:], [[], []], NEW_TOKENS)
        assert torch.equal(tokens[row], expected_tokens[0])
        assert relative_error(logits[row], expected_logits[0]) <= \
            LOGITS_TOLERANCE


def test_qkv_attention_cache_errors():
    _plain, ours = gpt_models(layers=1)
    attention = ours.attentions[0]
    x = torch.randn(1, 3, E)
    with pytest.raises(ValueError, match="without past_key_values every "
                       "token of x is real"):
        attention(x, attention_mask=torch.ones(1, 3))
    with pytest.raises(ValueError, match="take no logit bias"):
        attention(x, logit_bias=torch.zeros(3, 3),
                  past_key_values=AttnFuseCache(1, 8))
    with pytest.raises(ValueError, match=r"attention_mask must be a "
                       r"\[batch, seq\] = \[1, 3\] padding mask"):
        attention(x, past_key_values=AttnFuseCache(1, 8),
                  attention_mask=torch.ones(1, 4))
    with pytest.raises(ValueError, match="layer index 1 is not one of this "
                       "cache's 1 layers"):
        at.QKVAttention(E, H, HK, sharing="kv", layer_idx=1)(
            x, past_key_values=AttnFuseCache(1, 8))


def test_calls_over_some_sequences_of_a_paged_cache():
    # A server prefills new sequences and decodes running ones in calls of
    # their own rows (AttnFusePagedCache.sequences): the same logits and
    # cache as one call over every sequence.
    _plain, ours = gpt_models()
    ids, mask = prompts([5, 9, 3], seed=6)
    whole = AttnFusePagedCache(2, page_size=4, num_pages=16)
    parts = AttnFusePagedCache(2, page_size=4, num_pages=16)
    with torch.no_grad():
        expected = ours(ids, whole, attention_mask=mask)[:, -1]
        got = {}
        for rows in ([2, 0], [1]):
            sub_ids, sub_mask = ids[rows], mask[rows]
            width = int(sub_mask.sum(1).max())  # no all-padding columns
            with parts.sequences(rows, 3):
                out = ours(sub_ids[:, -width:], parts,
                           attention_mask=sub_mask[:, -width:])[:, -1]
            got.update(zip(rows, out))
        for row in range(3):
            assert relative_error(got[row], expected[row]) <= \
                LOGITS_TOLERANCE
        # One decode step of sequences 1 and 2 only; sequence 0 waits.
        token = expected.argmax(-1)[:, None]
        step = ours(token, whole)[:, -1]
        with parts.sequences([1, 2], 3):
            sub = ours(token[[1, 2]], parts)[:, -1]
    for i, row in enumerate([1, 2]):
        assert relative_error(sub[i], step[row]) <= LOGITS_TOLERANCE
    for whole_layer, parts_layer in zip(whole.layers, parts.layers):
        assert parts_layer.lengths.tolist() == [5, 10, 4]
        assert whole_layer.lengths.tolist() == [6, 10, 4]
    assert parts.free_pages == 16 - (2 + 3 + 1)
    with pytest.raises(ValueError, match="must be distinct indices"):
        with parts.sequences([1, 1], 3):
            pass
    with pytest.raises(ValueError, match="holds 3 sequences, not 4"):
        with parts.sequences([0], 4):
            pass
    with pytest.raises(ValueError, match="the input has 1 rows, the cache's "
                       "sequences\\(\\) names 2"):
        with torch.no_grad(), parts.sequences([0, 1], 3):
            ours(token[:1], parts)
