"""Generation with AttnFuse layers: a transformers `Cache` whose layers hold
the state of AttnFuse's decode functions, and the cached call of the layer
modules of attnfuse.torch.

`AttnFuseCache(num_layers, max_cache_len)` (or `.for_model(model,
max_cache_len)`) is passed as `past_key_values` to a model whose attention
layers are `attnfuse.torch.CCAAttention` / `QKVAttention` modules
(transformers' `generate()` included). The first call of a layer allocates its state for the
batch (`[B, capacity, Hk, d]` key and value caches, one for the K=V modes
`kv` and `qkv`; CCA's conv state `[B, P, C]` and value-shift state
`[B, 1, Lk/2]`); the layer's `prefill` function (prompts, chunks) or `step`
function (one token per sequence) of attnfuse.cca_decode /
attnfuse.qkv_decode then updates it in place. Prompts of different lengths
come padded on the left (transformers' `padding_side="left"`): each sequence
keeps its own count of real tokens, so a padded sequence is computed exactly
as alone, and the positions of its tokens count its real tokens only.

The decode functions are compiled once per layer configuration, dtype and
capacity (and kept). By default they run on the CPU (the JIT); a cache made
with `target="sm_90a"` runs them as sm_90a device programs instead (bf16 or
f16 layers; the projection-sharing layers, whose prefill and step have
kernels for every op), through the CUDA driver or the emulator that
`ATTNFUSE_CUDA_DRIVER` names; the cache tensors stay host tensors, copied
through device memory on every call. The cached call runs outside autograd
(generation); it is not a torch custom op, so it does not trace under
torch.compile.
"""

import contextlib
import threading

import torch
from transformers.cache_utils import Cache, CacheLayerMixin

from . import _api

__all__ = ["AttnFuseCache", "AttnFuseCacheLayer", "AttnFusePagedCache"]


TARGETS = ("cpu", "sm_90a")


def _check_target(target):
    if target not in TARGETS:
        raise ValueError(f"target must be one of {', '.join(TARGETS)}, got "
                         f"{target!r}")


def _check_positive(**values):
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got "
                             f"{value!r}")


class AttnFuseCacheLayer(CacheLayerMixin):
    """The state of one AttnFuse layer in an AttnFuseCache.

    `states`: the tensors the layer's decode functions update, in the order
    of their arguments (`state_names`), allocated on the layer's first call;
    `lengths`: the real tokens each sequence holds ([B] int32: the positions
    of its next tokens); `seen_tokens`: the tokens of the padded batch
    processed so far (transformers' sequence length, padding included).
    `owner`: the configuration of the layer that allocated the state; another
    layer is refused. max_cache_len: the tokens each sequence can hold.

    The methods of transformers' cache-layer interface (lazy_initialization,
    update, crop, offload, prefetch) are what a transformers attention
    layer calls: they raise, since such a layer would read or write the
    state in another layout.
    """

    is_compileable = False
    is_croppable = False
    supports_early_init = False
    is_sliding = False

    def __init__(self, max_cache_len):
        super().__init__()
        self.max_cache_len = max_cache_len
        self.states = None
        self.state_names = None
        self.lengths = None
        self.seen_tokens = 0
        self.owner = None

    def __repr__(self):
        if self.states is None:
            return f"AttnFuseCacheLayer(capacity={self.max_cache_len}, empty)"
        return (f"AttnFuseCacheLayer(capacity={self.max_cache_len}, "
                f"batch={self.batch_size}, tokens={self.lengths.tolist()})")

    @property
    def batch_size(self):
        """The number of sequences held, -1 before the first call."""
        return -1 if self.lengths is None else self.lengths.shape[0]

    def allocate(self, owner, names, shapes, dtype, device, batch):
        """Zero states of the given shapes (None: the batch) for `owner`.

        owner: the layer configuration that will use them; names: the
        states' argument names; shapes: their shapes; dtype, device: of the
        tensors; batch: the number of sequences."""
        self.owner = owner
        self.state_names = list(names)
        self.states = [torch.zeros([batch if d is None else d for d in shape],
                                   dtype=dtype, device=device)
                       for shape in shapes]
        self.lengths = torch.zeros(batch, dtype=torch.int32, device=device)
        self.seen_tokens = 0
        self.is_initialized = True

    # transformers' layer interface. The attention modules call their own
    # functions; `update` is what a transformers attention layer calls.
    def lazy_initialization(self, key_states, value_states):
        """Refused (TypeError): key_states and value_states come from a
        transformers attention layer, which cannot use this cache."""
        raise TypeError(self._not_an_attnfuse_layer())

    def update(self, key_states, value_states, *args, **kwargs):
        """Refused (TypeError): key_states and value_states come from a
        transformers attention layer, which cannot use this cache."""
        raise TypeError(self._not_an_attnfuse_layer())

    def _not_an_attnfuse_layer(self):
        return ("past_key_values: an AttnFuseCache holds the state of "
                "attnfuse.torch attention layers (CCAAttention, "
                "QKVAttention); a transformers attention layer updated it "
                "(use its own DynamicCache for a model that is not swapped)")

    def get_mask_sizes(self, query_length):
        """(key length, offset) of transformers' attention masks for
        query_length new tokens: every token seen so far plus the new
        ones."""
        return self.seen_tokens + query_length, 0

    def get_seq_length(self):
        """The tokens of the padded batch processed so far."""
        return self.seen_tokens

    def get_max_length(self):
        """The capacity: the tokens each sequence can hold."""
        return self.max_cache_len

    def reset(self):
        """Empties the state (zeros, no tokens), keeping its tensors."""
        if self.states is not None:
            for state in self.states:
                state.zero_()
            self.lengths.zero_()
        self.seen_tokens = 0

    def _select(self, select):
        if self.states is not None:
            self.states = [select(s) for s in self.states]
            self.lengths = select(self.lengths)

    def reorder_cache(self, beam_idx):
        """Reorders the sequences as beam_idx (a tensor of indices) says."""
        self._select(lambda t: t.index_select(0, beam_idx.to(t.device)))

    def batch_repeat_interleave(self, repeats):
        """Repeats each sequence `repeats` times, one copy after the other
        (torch.repeat_interleave over the batch)."""
        self._select(lambda t: t.repeat_interleave(repeats, dim=0))

    def batch_select_indices(self, indices):
        """Keeps only the sequences at `indices`."""
        self._select(lambda t: t[indices].contiguous())

    def crop(self, tokens_to_remove):
        """Refused (NotImplementedError): tokens_to_remove cannot be taken
        back, since CCA's states cannot be rolled back."""
        raise NotImplementedError(
            "AttnFuseCache cannot be cropped: CCA's conv and value-shift "
            "states cannot be rolled back (assisted and speculative decoding "
            "need a croppable cache)")

    def offload(self):
        """Refused (NotImplementedError)."""
        raise NotImplementedError("AttnFuseCache does not offload layers")

    def prefetch(self):
        """Refused (NotImplementedError)."""
        raise NotImplementedError("AttnFuseCache does not offload layers")


class AttnFuseCache(Cache):
    """A transformers Cache for models whose attention layers are
    attnfuse.torch modules: one AttnFuseCacheLayer per model layer, each
    holding up to `max_cache_len` tokens per sequence (the prompt and every
    generated token: generate's max_length). Pass it as `past_key_values`
    (generate(..., past_key_values=AttnFuseCache.for_model(model, 64))).
    A full cache, a batch, dtype or device other than the state's, or a
    transformers attention layer using it raise errors that name it, and
    leave the cache as it was.

    num_layers: the model's layers; max_cache_len: the tokens each sequence
    can hold; target: where the layers' decode functions run, "cpu" (the
    JIT) or "sm_90a" (device programs: bf16 or f16 projection-sharing
    layers). update, get_conv_state, update_conv_state and their
    recurrent-state aliases are what transformers' own layers call: they
    raise TypeError."""

    def __init__(self, num_layers, max_cache_len, target="cpu"):
        _check_positive(num_layers=num_layers, max_cache_len=max_cache_len)
        _check_target(target)
        super().__init__(layers=[AttnFuseCacheLayer(max_cache_len)
                                 for _ in range(num_layers)])
        self.max_cache_len = max_cache_len
        self.target = target

    @classmethod
    def for_model(cls, model, max_cache_len, target="cpu"):
        """A cache for every layer of a transformers model (its text
        config's num_hidden_layers), holding max_cache_len tokens per
        sequence, its decode functions run on `target` ("cpu" or
        "sm_90a")."""
        config = model.config.get_text_config(decoder=True)
        return cls(config.num_hidden_layers, max_cache_len, target=target)

    # What transformers' own attention and recurrent layers call: refused,
    # since they would read or write state in another layout.
    def update(self, key_states, value_states, layer_idx, *args, **kwargs):
        """Refused (TypeError): key_states and value_states of layer
        layer_idx come from a transformers attention layer."""
        raise TypeError(self.layer(layer_idx)._not_an_attnfuse_layer())

    def get_conv_state(self, layer_idx, state_idx=0):
        """Refused (TypeError): a transformers layer asking for state
        state_idx of layer layer_idx."""
        raise TypeError(self.layer(layer_idx)._not_an_attnfuse_layer())

    get_recurrent_state = get_conv_state

    def update_conv_state(self, states, layer_idx, *args, **kwargs):
        """Refused (TypeError): a transformers layer writing states into
        layer layer_idx."""
        raise TypeError(self.layer(layer_idx)._not_an_attnfuse_layer())

    update_recurrent_state = update_conv_state

    def layer(self, layer_idx):
        """The AttnFuseCacheLayer of model layer `layer_idx` (ValueError
        for an index out of range)."""
        if isinstance(layer_idx, bool) or not isinstance(layer_idx, int) \
                or not 0 <= layer_idx < len(self.layers):
            raise ValueError(f"past_key_values: layer index {layer_idx!r} is "
                             f"not one of this cache's {len(self.layers)} "
                             f"layers")
        return self.layers[layer_idx]


class AttnFusePagedCache(AttnFuseCache):
    """An AttnFuseCache whose key/value caches are pools of `num_pages`
    pages of `page_size` tokens per layer (`[num_pages, page_size, Hk, d]`,
    docs/semantics.md, Cache layouts), shared by the sequences of the batch
    through a block table: a sequence takes a page from the free list when
    its tokens reach one (the same pages in every layer), so sequences of
    very different lengths share the memory instead of each reserving its
    longest length. `free_pages` counts what is left; `release(sequence)`
    returns a sequence's pages (its state is then empty); a call that needs
    more pages than are free is refused before anything is written.
    CCA's conv and value-shift states stay per sequence. num_layers: the
    model's layers; page_size, num_pages: the pool of each layer; target:
    "cpu" or "sm_90a", as for AttnFuseCache."""

    def __init__(self, num_layers, page_size, num_pages, target="cpu"):
        _check_positive(page_size=page_size, num_pages=num_pages)
        super().__init__(num_layers, page_size * num_pages, target=target)
        self.page_size, self.num_pages = page_size, num_pages
        self._free = list(range(num_pages - 1, -1, -1))
        self._pages = None  # per sequence: its page ids, in token order
        self._rows = None  # sequences(): (the input rows' sequences, count)

    @contextlib.contextmanager
    def sequences(self, indices, num_sequences):
        """Inside the block, the AttnFuse layers' inputs hold the cache's
        sequences `indices` (row i is sequence indices[i]) of its
        `num_sequences`, not all of them: a server prefills new requests
        and decodes the running ones in calls over their own rows, so no
        row is computed for a sequence the call does not continue. The
        other sequences' pages, states and counts are left as they are."""
        _check_positive(num_sequences=num_sequences)
        indices = [int(i) for i in indices]
        if not indices or len(set(indices)) != len(indices) or not all(
                0 <= i < num_sequences for i in indices):
            raise ValueError(f"sequences: {indices} must be distinct indices "
                             f"in [0, {num_sequences})")
        if self._pages is not None and len(self._pages) != num_sequences:
            raise ValueError(f"sequences: the cache holds {len(self._pages)} "
                             f"sequences, not {num_sequences}")
        previous, self._rows = self._rows, (indices, num_sequences)
        try:
            yield self
        finally:
            self._rows = previous

    @classmethod
    def for_model(cls, model, page_size, num_pages, target="cpu"):
        """A paged cache for every layer of a transformers model (its text
        config's num_hidden_layers): num_pages pages of page_size tokens
        per layer, its decode functions run on `target` ("cpu" or
        "sm_90a")."""
        config = model.config.get_text_config(decoder=True)
        return cls(config.num_hidden_layers, page_size, num_pages,
                   target=target)

    @property
    def free_pages(self):
        """The number of pages no sequence holds."""
        return len(self._free)

    def _reserve(self, tokens, what):
        """Pages for `tokens` [B] (the tokens each sequence will hold after
        the call); -> the block table [B, pages] (int32, unused entries 0).
        Nothing is taken when the pages do not suffice."""
        tokens = [int(t) for t in tokens]
        if self._pages is None:
            self._pages = [[] for _ in tokens]
        needed = [max(0, -(-t // self.page_size) - len(pages))
                  for t, pages in zip(tokens, self._pages)]
        if sum(needed) > len(self._free):
            raise ValueError(
                f"{what}: the paged cache has {len(self._free)} free pages of "
                f"{self.page_size} tokens; this call needs {sum(needed)} more "
                f"(per sequence: {needed}); release finished sequences or "
                f"make it with more num_pages")
        for pages, count in zip(self._pages, needed):
            pages.extend(self._free.pop() for _ in range(count))
        width = max(1, max(len(pages) for pages in self._pages))
        return torch.tensor([pages + [0] * (width - len(pages))
                             for pages in self._pages], dtype=torch.int32)

    def release(self, sequence):
        """Frees the pages of sequence `sequence` and empties its state in
        every layer (a finished request), so another sequence can take its
        place in the batch."""
        if self._pages is None or not 0 <= sequence < len(self._pages):
            raise ValueError(f"sequence must be one of the cache's "
                             f"{0 if self._pages is None else len(self._pages)}"
                             f" sequences, got {sequence!r}")
        self._free.extend(reversed(self._pages[sequence]))
        self._pages[sequence] = []
        for layer in self.layers:
            if layer.states is not None:
                layer.lengths[sequence] = 0
                for name, state in zip(layer.state_names, layer.states):
                    if not name.endswith("_cache"):  # per-sequence states
                        state[sequence].zero_()

    def reset(self):
        """Empties every sequence and returns every page to the pool."""
        super().reset()
        self._free = list(range(self.num_pages - 1, -1, -1))
        self._pages = None

    def _refuse(self, what):
        raise NotImplementedError(f"AttnFusePagedCache cannot {what}: its "
                                  f"sequences share one page pool")

    def reorder_cache(self, beam_idx):
        """Refused (NotImplementedError): beam_idx would reorder sequences
        that share one page pool (beam search)."""
        self._refuse("reorder sequences (beam search)")

    def batch_repeat_interleave(self, repeats):
        """Refused (NotImplementedError): repeats would copy sequences that
        share one page pool."""
        self._refuse("repeat sequences")

    def batch_select_indices(self, indices):
        """Refused (NotImplementedError): indices would drop sequences that
        share one page pool."""
        self._refuse("select sequences")


# ---------------------------------------------------------------------------
# The cached call of a layer module
# ---------------------------------------------------------------------------

_functions = {}
_functions_lock = threading.Lock()


class _DecodeFunctions:
    """A layer's compiled prefill and step functions and where their state
    arguments sit."""

    def __init__(self, kind, config, layout, target):
        build = _api.cca_decode if kind == "cca" else _api.qkv_decode
        module = build(**dict(config), **dict(layout))
        if target == "sm_90a":
            # One device program per function; PTX, which the driver (or
            # the emulator) loads, so that no ptxas is needed.
            program = _api.compile(module, target="sm_90a",
                                   elem_type=dict(config)["dtype"],
                                   cubin=False)
            self.prefill = program.function("prefill")
            self.step = program.function("step")
        else:
            # Torch's threads run between the calls (wait_policy, see
            # compile).
            self.prefill = _api.compile(module, entry="prefill",
                                        wait_policy="passive")
            self.step = _api.compile(module, entry="step",
                                     wait_policy="passive")
        names = module.argument_names("prefill")
        specs, _ = module.signature("prefill")
        self.state_indices = [i for i, n in enumerate(names)
                              if n.endswith(("_cache", "_state"))]
        self.state_names = [names[i] for i in self.state_indices]
        self.state_shapes = [specs[i][1] for i in self.state_indices]


def _decode_functions(kind, config, layout, target="cpu"):
    key = (kind, config, layout, target)
    with _functions_lock:
        functions = _functions.get(key)
        if functions is None:
            if target == "sm_90a":
                dtype = dict(config)["dtype"]
                if dtype not in ("bf16", "f16"):
                    raise ValueError(
                        f"past_key_values: the cache's target sm_90a runs "
                        f"bf16 or f16 layers; this layer is {dtype}")
                try:
                    functions = _DecodeFunctions(kind, config, layout, target)
                except _api.MLIRError as error:
                    raise ValueError(
                        f"past_key_values: the cache's target sm_90a cannot "
                        f"run this {kind} layer's decode functions: "
                        f"{error}") from error
            else:
                functions = _DecodeFunctions(kind, config, layout, target)
            _functions[key] = functions
        return functions


def _real_tokens(padding_mask, batch, seq, device):
    """[B] int32 real tokens of the chunk; a mask must pad on the left."""
    if padding_mask is None:
        return torch.full((batch,), seq, dtype=torch.int32, device=device)
    real = padding_mask != 0
    if bool((real[:, :-1] & ~real[:, 1:]).any()):
        raise ValueError(
            "attention_mask: with a cache, padding must be on the left "
            "(transformers' padding_side='left'): a real token is followed "
            "by a padded one")
    return real.sum(dim=1, dtype=torch.int32)


def cached_call(kind, config, owner, cache, layer_idx, x, weights,
                padding_mask=None):
    """The layer's output for x [B, S, E] continuing the sequences held in
    `cache` (an AttnFuseCache) at `layer_idx`, whose state it updates.
    config: the decode builder's configuration (sorted items); owner: the
    layer's identity for the state; padding_mask: None or [B, S] (nonzero
    for a real token, zeros on the left only). Returns (y, the tokens each
    sequence held before the call [B], its real tokens in x [B])."""
    if not isinstance(cache, AttnFuseCache):
        raise TypeError(
            f"past_key_values must be an attnfuse.generation.AttnFuseCache "
            f"for attnfuse.torch layers, got {type(cache).__name__} (pass "
            f"past_key_values=AttnFuseCache.for_model(model, max_length), "
            f"or use_cache=False)")
    layer = cache.layer(layer_idx)
    if x.device.type != "cpu":
        where = ("the CPU JIT" if cache.target == "cpu" else
                 "sm_90a device programs over host tensors")
        raise ValueError(
            f"past_key_values: a layer with an AttnFuseCache runs on CPU "
            f"tensors (the decode functions on {where}); the input is on "
            f"{x.device}")
    batch, seq, _ = x.shape
    real = _real_tokens(padding_mask, batch, seq, x.device)
    paged = isinstance(cache, AttnFusePagedCache)
    # The cache's sequences of x's rows (AttnFusePagedCache.sequences), or
    # all of them.
    rows, total = (cache._rows if paged and cache._rows is not None
                   else (None, batch))
    if rows is not None and len(rows) != batch:
        raise ValueError(f"past_key_values: the input has {batch} rows, the "
                         f"cache's sequences() names {len(rows)}")
    index = None if rows is None else torch.tensor(rows, device=x.device)
    layout = ((("num_pages", cache.num_pages), ("page_size", cache.page_size))
              if paged else (("capacity", layer.max_cache_len),))
    functions = _decode_functions(kind, config, layout, cache.target)
    if layer.states is None:
        layer.allocate(owner, functions.state_names, functions.state_shapes,
                       x.dtype, x.device, total)
    _check_layer_state(layer, owner, x, layer_idx, total)
    lengths = layer.lengths if index is None else layer.lengths[index]
    after = layer.lengths.long().clone()
    if index is None:
        after += real.long()
    else:
        after[index] += real.long()
    table = ()
    if paged:
        table = cache._reserve(after, "past_key_values").to(x.device)
        table = (table if index is None else table[index].contiguous(),)
    else:
        full = after > layer.max_cache_len
        if bool(full.any()):
            b = int(full.nonzero()[0, 0])
            raise ValueError(
                f"past_key_values: layer {layer_idx}'s cache holds "
                f"{layer.max_cache_len} tokens per sequence; sequence {b} has "
                f"{int(layer.lengths[b])} and this call adds {int(real[b])} "
                f"(make the cache with a larger max_cache_len)")
    weights = [w.detach() for w in weights]
    positions = lengths.clone()
    # The page pools serve every sequence; the per-sequence states of the
    # call's rows.
    pooled = [paged and name.endswith("_cache") for name in layer.state_names]
    states = [state if index is None or pool else state[index].contiguous()
              for state, pool in zip(layer.states, pooled)]
    with torch.no_grad():
        if padding_mask is None and seq == 1:
            results = functions.step(x.contiguous(), *weights, *states,
                                     positions, *table)
            y = results[0]
        else:
            # Left-padded rows to right-padded ones: the real tokens of each
            # sequence first, where the decode functions expect them.
            offset = (seq - real.long())[:, None]
            t = torch.arange(seq, device=x.device)[None, :]
            source = (t + offset).clamp(max=seq - 1)
            packed = x.gather(1, source[..., None].expand(-1, -1, x.shape[2]))
            packed = packed * (t < real[:, None]).to(x.dtype)[..., None]
            results = functions.prefill(packed.contiguous(), *weights,
                                        *states, positions, real, *table)
            back = t - offset
            y = results[0].gather(1, back.clamp(min=0)[..., None].expand(
                -1, -1, x.shape[2]))
            y = y * (back >= 0).to(y.dtype)[..., None]
    # The caches were written in place (results[i] is that tensor); the
    # small states come back as new tensors.
    if index is None:
        layer.states = list(results[1:])
        layer.lengths += real
    else:
        for state, result, pool in zip(layer.states, results[1:], pooled):
            if not pool:
                state[index] = result
        layer.lengths[index] += real
    layer.seen_tokens += seq
    return y, positions, real


def _check_layer_state(layer, owner, x, layer_idx, sequences):
    what = f"past_key_values: layer {layer_idx}'s state"
    if layer.owner != owner:
        raise ValueError(f"{what} was allocated by another layer "
                         f"configuration (a cache serves one model)")
    state = layer.states[0]
    if state.dtype != x.dtype:
        raise ValueError(f"{what} is {state.dtype}, the layer's input "
                         f"{x.dtype}")
    if state.device != x.device:
        raise ValueError(f"{what} is on {state.device}, the layer's input on "
                         f"{x.device}")
    if layer.batch_size != sequences:
        raise ValueError(f"{what} holds {layer.batch_size} sequences, the "
                         f"input has {sequences}")
