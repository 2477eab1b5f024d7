"""A continuous-batching generation loop over an AttnFusePagedCache.

`Server(forward, cache, slots)` keeps up to `slots` sequences in flight:
requests (a prompt of token ids and a number of new tokens) wait in a queue,
are admitted into a free slot when the page pool can hold their prompt and
every token they will generate, are prefilled in the step they are admitted
in, and give their pages back when they finish, so that a waiting request
takes the slot at the next step. Sequences never wait for each other to
finish (no static batch). A step is one model call over the admitted
requests' prompts (padded on the left to the longest) and one over a token
of each running sequence, each over its own rows only
(AttnFusePagedCache.sequences): a new prompt does not make every running
sequence compute a prompt's width of padding.

`forward(input_ids [B, T], attention_mask [B, T], position_ids [B, T],
cache) -> logits [B, T, V]` runs the model: `zaya_forward(model)` adapts a
transformers ZayaForCausalLM whose attention layers are
attnfuse.torch.CCAAttention; any model whose layers take an AttnFuseCache
works through its own callable. Greedy decoding, or sampling with a
torch.Generator.

    python3 -m attnfuse.serve --help
"""

import argparse
import collections
import json
import sys
import time

import torch

from .generation import AttnFusePagedCache

__all__ = ["Request", "Server", "zaya_forward", "main"]


class Request:
    """A prompt (token ids) to continue by `max_new_tokens` tokens;
    `tokens` collects what was generated, `arrival`, `first_token` and
    `finished` the server steps (and seconds) at which it arrived, got its
    first token and finished.

    prompt: the token ids (at least one); max_new_tokens: how many tokens to
    generate (a positive integer); arrival_step: the server step from which
    it may be admitted (0: at once)."""

    def __init__(self, prompt, max_new_tokens, arrival_step=0):
        prompt = [int(t) for t in prompt]
        if not prompt:
            raise ValueError("prompt: a request needs at least one token")
        if isinstance(max_new_tokens, bool) or not isinstance(
                max_new_tokens, int) or max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be a positive integer, "
                             f"got {max_new_tokens!r}")
        self.prompt, self.max_new_tokens = prompt, max_new_tokens
        self.arrival_step = arrival_step
        self.tokens = []
        self.slot = None
        self.times = {}

    @property
    def done(self):
        """Whether every new token has been generated."""
        return len(self.tokens) >= self.max_new_tokens

    def __repr__(self):
        return (f"Request(prompt {len(self.prompt)} tokens, "
                f"{len(self.tokens)}/{self.max_new_tokens} generated)")


def zaya_forward(model):
    """forward() of a transformers ZayaForCausalLM with AttnFuse layers: the
    2-D padding mask goes to the layers as ZAYA's "conv" mask (also for one
    token per row, where transformers would drop it), and the causal masks,
    which the AttnFuse layers do not read, are not built.

    model: the ZayaForCausalLM whose attention layers are
    attnfuse.torch.CCAAttention. Returns forward(input_ids, attention_mask,
    position_ids, cache) -> logits, as Server takes it."""
    layer_types = set(model.config.layer_types)

    def forward(input_ids, attention_mask, position_ids, cache):
        masks = dict.fromkeys(layer_types)
        # No padding (every row decodes one token): the layers' step.
        masks["conv"] = None if bool(attention_mask.all()) else attention_mask
        return model(input_ids=input_ids, attention_mask=masks,
                     position_ids=position_ids, past_key_values=cache,
                     use_cache=True).logits
    return forward


class Server:
    """Continuous batching of Requests over `slots` rows of one
    AttnFusePagedCache (see the module's documentation). step() admits and
    runs one model call; run() steps until every submitted request is
    done. `stats` counts steps, tokens and the largest number of sequences
    in flight.

    forward: forward(input_ids [B, T], attention_mask [B, T], position_ids
    [B, T], cache) -> logits [B, T, V], the model (zaya_forward(model));
    cache: the AttnFusePagedCache the layers use; slots: the most sequences
    in flight; pad_token_id: the token that pads prompts on the left;
    temperature: None for greedy decoding, else sampling at that
    temperature with `generator` (a torch.Generator, or None for torch's
    default)."""

    def __init__(self, forward, cache, slots, pad_token_id=0,
                 generator=None, temperature=None):
        if not isinstance(cache, AttnFusePagedCache):
            raise TypeError(f"cache must be an AttnFusePagedCache, got "
                            f"{type(cache).__name__}")
        if isinstance(slots, bool) or not isinstance(slots, int) or slots < 1:
            raise ValueError(f"slots must be a positive integer, got "
                             f"{slots!r}")
        self.forward, self.cache, self.slots = forward, cache, slots
        self.pad_token_id = pad_token_id
        self.generator, self.temperature = generator, temperature
        self.waiting = collections.deque()
        self.running = [None] * slots
        self.finished = []
        self._reserved = [0] * slots  # pages each slot's request may need
        self.step_count = 0
        self.stats = dict(steps=0, prefill_tokens=0, decode_tokens=0,
                          max_in_flight=0)

    def _pages(self, request):
        """The pages a request holds at its end: its prompt and every
        generated token but the last (which is never fed back)."""
        tokens = len(request.prompt) + request.max_new_tokens - 1
        return -(-tokens // self.cache.page_size)

    def submit(self, request):
        """Queues a request; one that could never fit in the pool is
        refused at once."""
        need = self._pages(request)
        if need > self.cache.num_pages:
            raise ValueError(
                f"request: {len(request.prompt)} prompt and "
                f"{request.max_new_tokens} new tokens need {need} pages of "
                f"{self.cache.page_size} tokens; the pool has "
                f"{self.cache.num_pages}")
        request.times["submitted"] = time.perf_counter()
        self.waiting.append(request)

    def _admit(self):
        """Requests into free slots, in arrival order, while the pages not
        yet promised to running requests hold their whole length."""
        admitted = []
        promised = sum(self._reserved)
        while self.waiting and None in self.running:
            request = self.waiting[0]
            if request.arrival_step > self.step_count:
                break
            need = self._pages(request)
            if promised + need > self.cache.num_pages:
                break
            self.waiting.popleft()
            slot = self.running.index(None)
            request.slot = slot
            self.running[slot] = request
            self._reserved[slot] = need
            promised += need
            admitted.append(request)
        return admitted

    def step(self):
        """One step: a model call over the new requests' prompts and one
        over a token of every running sequence. Returns the requests that
        finished."""
        admitted = self._admit()
        prefill = [r.slot for r in admitted]
        decode = [slot for slot, r in enumerate(self.running)
                  if r is not None and r not in admitted]
        self.step_count += 1
        if not prefill and not decode:
            return []
        logits = {}
        for slots in (prefill, decode):
            if slots:
                logits.update(zip(slots, self._call(slots)))
        order = sorted(logits)
        next_tokens = dict(zip(order, self._choose(
            torch.stack([logits[slot] for slot in order]))))
        done = []
        now = time.perf_counter()
        for slot, request in enumerate(self.running):
            if request is None:
                continue
            if request in admitted:
                self.stats["prefill_tokens"] += len(request.prompt)
                request.times["first_token"] = now
            else:
                self.stats["decode_tokens"] += 1
            request.tokens.append(int(next_tokens[slot]))
            if request.done:
                request.times["finished"] = now
                self.cache.release(slot)
                self.running[slot] = None
                self._reserved[slot] = 0
                self.finished.append(request)
                done.append(request)
        in_flight = sum(r is not None for r in self.running) + len(done)
        self.stats["steps"] += 1
        self.stats["max_in_flight"] = max(self.stats["max_in_flight"],
                                          in_flight)
        return done

    def _call(self, slots):
        """The last logits [len(slots), V] of one model call over the new
        tokens of the sequences in `slots` (a prompt, or the last token),
        padded on the left."""
        rows = [self.running[slot].prompt if not self.running[slot].tokens
                else self.running[slot].tokens[-1:] for slot in slots]
        width = max(len(row) for row in rows)
        ids = torch.full((len(rows), width), self.pad_token_id,
                         dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        positions = torch.zeros((len(rows), width), dtype=torch.long)
        for i, (slot, row) in enumerate(zip(slots, rows)):
            start = self._held(slot)
            ids[i, width - len(row):] = torch.tensor(row)
            mask[i, width - len(row):] = 1
            positions[i, width - len(row):] = torch.arange(
                start, start + len(row))
        with torch.no_grad(), self.cache.sequences(slots, self.slots):
            return self.forward(ids, mask, positions, self.cache)[:, -1]

    def _held(self, slot):
        layer = self.cache.layers[0]
        return 0 if layer.lengths is None else int(layer.lengths[slot])

    def _choose(self, logits):
        if self.temperature is None:
            return logits.argmax(-1)
        probabilities = torch.softmax(logits.double() / self.temperature, -1)
        return torch.multinomial(probabilities, 1,
                                 generator=self.generator)[:, 0]

    def run(self, requests=()):
        """Submits `requests`, then steps until nothing waits or runs;
        returns the finished requests in the order they finished."""
        for request in requests:
            self.submit(request)
        while self.waiting or any(r is not None for r in self.running):
            self.step()
        return self.finished


# ---------------------------------------------------------------------------
# Command line: a random model, synthetic requests, a report
# ---------------------------------------------------------------------------


def _tiny_zaya(width, layers, heads, kv_heads, head_dim, vocab, seed):
    """(config, transformers' random ZAYA, the same with AttnFuse layers)."""
    import transformers
    from . import torch as at
    config = transformers.ZayaConfig(
        hidden_size=width, num_attention_heads=heads,
        num_key_value_heads=kv_heads, head_dim=head_dim,
        num_hidden_layers=layers,
        layer_types=(["hybrid", "hybrid_sliding"] * layers)[:layers],
        sliding_window=64, num_experts=2, moe_intermediate_size=2 * width,
        router_hidden_size=32, vocab_size=vocab, pad_token_id=0,
        eos_token_id=None, bos_token_id=None)
    torch.manual_seed(seed)
    reference = transformers.ZayaForCausalLM(config).eval()
    return config, reference, at.swap_zaya_attention(reference)


def main(argv=None):
    """`python3 -m attnfuse.serve`: serves synthetic requests over a random
    ZAYA model and prints a report (see --help). argv: the arguments
    (default sys.argv[1:]). Returns the exit status: 1 when --check finds
    a request whose tokens differ from transformers' generate()."""
    parser = argparse.ArgumentParser(
        prog="python3 -m attnfuse.serve",
        description="Continuous batching of synthetic requests over a random "
                    "ZAYA-shaped model with AttnFuse attention and a paged "
                    "cache; prints throughput, latency and the cache use.")
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--kv-heads", type=int, default=2)
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument("--vocab", type=int, default=512)
    parser.add_argument("--requests", type=int, default=16)
    parser.add_argument("--prompt", default="8,48",
                        help="prompt lengths: min,max (uniform)")
    parser.add_argument("--new-tokens", default="4,24",
                        help="generated tokens per request: min,max")
    parser.add_argument("--arrivals-per-step", type=float, default=0.5,
                        help="mean new requests per step (Poisson)")
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--page-size", type=int, default=16)
    parser.add_argument("--cache-mib", type=float, default=None,
                        help="KV cache budget (default: pages for 'slots' "
                             "requests of the longest length)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--check", action="store_true",
                        help="also generate each request alone with "
                             "transformers and compare the tokens")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    config, reference, swapped = _tiny_zaya(
        args.width, args.layers, args.heads, args.kv_heads, args.head_dim,
        args.vocab, args.seed)
    low, high = (int(v) for v in args.prompt.split(","))
    new_low, new_high = (int(v) for v in args.new_tokens.split(","))
    generator = torch.Generator().manual_seed(args.seed)
    requests, step = [], 0.0
    for _ in range(args.requests):
        step += float(torch.empty(1).exponential_(
            args.arrivals_per_step, generator=generator))
        length = int(torch.randint(low, high + 1, (1,), generator=generator))
        new = int(torch.randint(new_low, new_high + 1, (1,),
                                generator=generator))
        prompt = torch.randint(1, args.vocab, (length,),
                               generator=generator).tolist()
        requests.append(Request(prompt, new, arrival_step=int(step)))
    # K and V caches of every layer: 2 tensors of [page, Hk, d] per page.
    page_bytes = 2 * args.page_size * args.kv_heads * args.head_dim * 4 \
        * args.layers
    if args.cache_mib is None:
        pages = args.slots * -(-(high + new_high) // args.page_size)
    else:
        pages = int(args.cache_mib * 2 ** 20 // page_bytes)
    cache = AttnFusePagedCache(args.layers, args.page_size, pages)
    server = Server(zaya_forward(swapped), cache, args.slots)
    start = time.perf_counter()
    finished = server.run(requests)
    seconds = time.perf_counter() - start
    generated = sum(len(r.tokens) for r in finished)
    latency = sorted(r.times["finished"] - r.times["submitted"]
                     for r in finished)
    report = dict(
        requests=len(finished), generated_tokens=generated,
        seconds=seconds, tokens_per_s=generated / seconds,
        steps=server.stats["steps"],
        max_in_flight=server.stats["max_in_flight"], pages=pages,
        page_size=args.page_size, cache_mib=pages * page_bytes / 2 ** 20,
        median_request_s=latency[len(latency) // 2])
    if args.check:
        mismatches = 0
        for request in finished:
            with torch.no_grad():
                out = reference.generate(
                    torch.tensor([request.prompt]),
                    max_new_tokens=request.max_new_tokens,
                    min_new_tokens=request.max_new_tokens, do_sample=False,
                    pad_token_id=0)
            mismatches += out[0, len(request.prompt):].tolist() \
                != request.tokens
        report["token_mismatches"] = mismatches
    if args.json:
        print(json.dumps(report))
    else:
        for key, value in report.items():
            print(f"{key}: {value:.3f}" if isinstance(value, float)
                  else f"{key}: {value}")
    return 1 if report.get("token_mismatches") else 0


if __name__ == "__main__":
    sys.exit(main())
