#!/usr/bin/env python3
"""Serving under a fixed KV-cache budget on the CPU: attnfuse.serve's
continuous batching over an AttnFusePagedCache vs transformers' generate().

Five attention forms at equal width (E 512, 2 layers, f32, vocabulary 512):

  none      MHA, 16 heads of 32, separate K and V          (Llama skeleton)
  kv        K=V sharing, 16 KV heads                        (Llama skeleton)
  kv-gqa4   K=V sharing, 4 KV heads (groups of 4)           (Llama skeleton)
  kv-mqa    K=V sharing, 1 KV head                          (Llama skeleton)
  ccgqa     CCGQA: 8 query heads of 32 (E / 2), 2 KV heads (E / 8), ZAYA

The projection-sharing forms are a random transformers LlamaForCausalLM
whose attention layers are attnfuse.torch.QKVAttention with the Llama
weights (K=V drops v_proj); CCGQA is a random ZayaForCausalLM with every
attention swapped (attnfuse.torch.swap_zaya_attention). For each form:

  * the cache bytes per token, measured from the page pools the run
    allocated, and their ratio to `none` next to the papers' (K=V halves
    the cache; K=V + MQA at 16 heads keeps 1/32 of it, 96.9% less; CCGQA
    with E/8-wide keys and values keeps 1/8);
  * how many sequences of the workload's longest length the budget holds
    (pages for ours, transformers' contiguous K and V for theirs);
  * ours: the requests through attnfuse.serve.Server with that many slots
    (a request is admitted when the pool can hold its whole length, its
    prompt is prefilled in the same call that decodes the running ones);
    tokens/s of generated tokens, the mean time of a server step (a call
    over the admitted prompts and one over a token of each running
    sequence, each over its own rows), the median time from submission to
    the last token;
  * transformers: the unmodified model's generate() (its own cache; for the
    K=V forms, which transformers does not have, the same Llama with separate
    K and V at the same KV heads, so its cache is twice ours) over static
    batches of as many requests as its cache fits in the budget, each batch
    running to its longest request; tokens/s counts requested tokens only.

Every request has the same prompt length and a random number of new tokens,
all submitted at once (offline throughput). --check also compares the
tokens of `none` and `ccgqa` with transformers' greedy generate() of each
request alone (the other forms compute other functions than their
transformers baseline). Writes a markdown table, JSON and a PNG next to
--out.

    PYTHONPATH=build/python_packages python3 bench/serve_cpu.py --check \\
        --out bench/results/serve-cpu-2026-12-04
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))

WIDTH, LAYERS, VOCAB, HEAD_DIM = 512, 2, 512, 32
FORMS = {
    "none": dict(kind="llama", heads=16, kv_heads=16, sharing="none",
                 paper_ratio=1.0),
    "kv": dict(kind="llama", heads=16, kv_heads=16, sharing="kv",
               paper_ratio=1 / 2),
    "kv-gqa4": dict(kind="llama", heads=16, kv_heads=4, sharing="kv",
                    paper_ratio=1 / 8),
    "kv-mqa": dict(kind="llama", heads=16, kv_heads=1, sharing="kv",
                   paper_ratio=1 / 32),
    "ccgqa": dict(kind="zaya", heads=8, kv_heads=2, paper_ratio=1 / 8),
}


class AttnFuseLlamaAttention(torch.nn.Module):
    """A Llama attention layer computed by attnfuse.torch.QKVAttention: the
    decoder layer's call with a 2-D padding mask (attnfuse.serve passes it
    through) or none (positions come from the cache)."""

    def __init__(self, attention):
        super().__init__()
        self.attention = attention

    def forward(self, hidden_states, attention_mask=None,
                past_key_values=None, **kwargs):
        mask = attention_mask
        if mask is not None and (mask.dim() != 2 or bool(mask.all())):
            mask = None  # transformers' 4-D causal mask, or no padding
        return self.attention(hidden_states, past_key_values=past_key_values,
                              attention_mask=mask), None


def build(name, seed=0):
    """(transformers' model, the model with AttnFuse attention)."""
    import copy
    import transformers
    import attnfuse.torch as at
    form = FORMS[name]
    torch.manual_seed(seed)
    if form["kind"] == "zaya":
        config = transformers.ZayaConfig(
            hidden_size=WIDTH, num_attention_heads=form["heads"],
            num_key_value_heads=form["kv_heads"], head_dim=HEAD_DIM,
            num_hidden_layers=LAYERS, layer_types=["hybrid"] * LAYERS,
            num_experts=2, moe_intermediate_size=2 * WIDTH,
            router_hidden_size=32, vocab_size=VOCAB, pad_token_id=0,
            eos_token_id=None, bos_token_id=None)
        config._attn_implementation = "sdpa"
        reference = transformers.ZayaForCausalLM(config).eval()
        return reference, at.swap_zaya_attention(reference)
    config = transformers.LlamaConfig(
        hidden_size=WIDTH, num_attention_heads=form["heads"],
        num_key_value_heads=form["kv_heads"], head_dim=HEAD_DIM,
        intermediate_size=2 * WIDTH, num_hidden_layers=LAYERS,
        vocab_size=VOCAB, pad_token_id=0, eos_token_id=None,
        bos_token_id=None, rope_theta=10000.0)
    config._attn_implementation = "sdpa"
    reference = transformers.LlamaForCausalLM(config).eval()
    ours = copy.deepcopy(reference)
    for index, layer in enumerate(ours.model.layers):
        attention = at.QKVAttention(
            WIDTH, form["heads"], form["kv_heads"], head_dim=HEAD_DIM,
            sharing=form["sharing"], rope_theta=10000.0, layer_idx=index)
        weights = {k: v for k, v in layer.self_attn.state_dict().items()
                   if form["sharing"] == "none" or not k.startswith("v_proj")}
        attention.load_state_dict(weights)
        layer.self_attn = AttnFuseLlamaAttention(attention)
    return reference, ours.eval()


def llama_forward(model):
    """attnfuse.serve's forward() of a Llama with AttnFuse attention: the
    layers get the 2-D padding mask; RoPE is the layers' own."""
    def forward(input_ids, attention_mask, position_ids, cache):
        h = model.model.embed_tokens(input_ids)
        for layer in model.model.layers:
            h = layer(h, attention_mask=attention_mask,
                      past_key_values=cache)
        return model.lm_head(model.model.norm(h))
    return forward


def workload(args):
    generator = torch.Generator().manual_seed(args.seed)
    low, high = (int(v) for v in args.new_tokens.split(","))
    requests = []
    for _ in range(args.requests):
        prompt = torch.randint(1, VOCAB, (args.prompt,),
                               generator=generator).tolist()
        new = int(torch.randint(low, high + 1, (1,), generator=generator))
        requests.append((prompt, new))
    return requests, args.prompt + high


def cache_bytes_per_token(cache):
    """Bytes per token of the page pools of every layer (K and V, or the
    one K=V tensor); the per-sequence states (CCA's conv and value-shift
    state) are counted apart."""
    pooled = per_sequence = 0
    for layer in cache.layers:
        for name, state in zip(layer.state_names, layer.states):
            if "cache" in name:
                pooled += state.numel() * state.element_size()
            else:
                per_sequence += state.numel() * state.element_size()
    tokens = cache.num_pages * cache.page_size
    return pooled / tokens, per_sequence


def run_ours(name, model, requests, context, args):
    from attnfuse import serve
    from attnfuse.generation import AttnFusePagedCache
    form = FORMS[name]
    # Pages from the form's bytes per token (checked against the pools the
    # run allocates).
    tensors = 1 if form.get("sharing") == "kv" else 2
    token_bytes = LAYERS * tensors * form["kv_heads"] * HEAD_DIM * 4
    pages = int(args.budget_mib * 2 ** 20 // (token_bytes * args.page_size))
    fit = pages // -(-(context - 1) // args.page_size)
    slots = max(1, min(fit, len(requests)))
    cache = AttnFusePagedCache(LAYERS, args.page_size, pages)
    forward = (serve.zaya_forward(model) if form["kind"] == "zaya"
               else llama_forward(model))
    server = serve.Server(forward, cache, slots)
    batch = [serve.Request(p, n) for p, n in requests]
    start = time.perf_counter()
    finished = server.run(batch)
    seconds = time.perf_counter() - start
    measured, per_sequence = cache_bytes_per_token(cache)
    if measured != token_bytes:
        raise AssertionError(f"{name}: the pools hold {measured} bytes per "
                             f"token, expected {token_bytes}")
    generated = sum(len(r.tokens) for r in finished)
    latency = [r.times["finished"] - r.times["submitted"] for r in finished]
    return dict(cache_bytes_per_token=measured,
                per_sequence_state_bytes=per_sequence / slots,
                pages=pages, fit=fit, slots=slots, seconds=seconds,
                generated=generated, tokens_per_s=generated / seconds,
                steps=server.stats["steps"],
                step_ms=seconds / server.stats["steps"] * 1e3,
                median_request_s=statistics.median(latency),
                max_in_flight=server.stats["max_in_flight"],
                tokens={i: r.tokens for i, r in enumerate(batch)})


def run_transformers(name, model, requests, context, args):
    form = FORMS[name]
    # transformers' caches hold K and V apart (no K=V form).
    token_bytes = LAYERS * 2 * form["kv_heads"] * HEAD_DIM * 4
    fit = int(args.budget_mib * 2 ** 20 // (token_bytes * (context - 1)))
    batch_size = max(1, min(fit, len(requests)))
    start = time.perf_counter()
    for first in range(0, len(requests), batch_size):
        chunk = requests[first:first + batch_size]
        longest = max(n for _, n in chunk)
        ids = torch.tensor([p for p, _ in chunk])
        with torch.no_grad():
            model.generate(ids, max_new_tokens=longest,
                           min_new_tokens=longest, do_sample=False,
                           pad_token_id=0)
    seconds = time.perf_counter() - start
    generated = sum(n for _, n in requests)
    return dict(cache_bytes_per_token=token_bytes, fit=fit,
                batch=batch_size, seconds=seconds, generated=generated,
                tokens_per_s=generated / seconds)


def check_tokens(model, requests, ours_tokens, count):
    """Requests whose tokens differ from transformers' greedy generate() of
    the request alone (the first `count`)."""
    mismatches = 0
    for i, (prompt, new) in enumerate(requests[:count]):
        with torch.no_grad():
            out = model.generate(torch.tensor([prompt]), max_new_tokens=new,
                                 min_new_tokens=new, do_sample=False,
                                 pad_token_id=0)
        mismatches += out[0, len(prompt):].tolist() != ours_tokens[i]
    return mismatches


def report(args, rows, meta):
    none = next(r for r in rows if r["form"] == "none")
    lines = [
        f"`{meta['command']}`", "",
        f"E {WIDTH}, {LAYERS} layers, head dim {HEAD_DIM}, f32; "
        f"{args.requests} requests of {args.prompt} prompt tokens and "
        f"{args.new_tokens.replace(',', '-')} new tokens, all submitted "
        f"at once; cache budget {args.budget_mib} MiB, pages of "
        f"{args.page_size} tokens; {meta['threads']} thread(s); "
        f"{meta['machine']}, {meta['cpus']} CPUs.", "",
        "| form | cache bytes / token | vs none (measured) | papers | "
        "sequences in budget (ours) | ours tokens/s | ours step (ms) | "
        "ours median request (s) | transformers sequences in budget | "
        "transformers tokens/s | ours / transformers tokens/s | tokens "
        "equal |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        o, t = r["ours"], r["transformers"]
        ratio = o["cache_bytes_per_token"] / none["ours"][
            "cache_bytes_per_token"]
        check = r.get("token_mismatches")
        lines.append(
            f"| {r['form']} | {o['cache_bytes_per_token']:.0f} | "
            f"{ratio:.4f} ({(1 - ratio) * 100:.1f}% less) | "
            f"{FORMS[r['form']]['paper_ratio']:.4f} | {o['fit']} | "
            f"{o['tokens_per_s']:.1f} | {o['step_ms']:.1f} | "
            f"{o['median_request_s']:.2f} | {t['fit']} | "
            f"{t['tokens_per_s']:.1f} | "
            f"{o['tokens_per_s'] / t['tokens_per_s']:.2f} | "
            f"{'-' if check is None else check == 0} |")
    lines += ["", "Sequences in budget: how many sequences of the longest "
              "length (prompt + the most new tokens) the budget holds; ours "
              "serves with that many slots (all requests when fewer), "
              "transformers runs static batches of its number. The K=V forms' "
              "transformers column is the same model with separate K and V "
              "(transformers has no K=V attention). Tokens equal: every "
              "checked request generates transformers' tokens alone (none "
              "and ccgqa; '-' where the transformers baseline computes "
              "another function)."]
    return "\n".join(lines) + "\n"


def plot(path, rows):
    sys.path.insert(0, os.path.join(HERE, "..", "examples", "training"))
    import png_plot
    series = {
        "sequences in budget, ours": [r["ours"]["fit"] for r in rows],
        "sequences in budget, transformers": [r["transformers"]["fit"]
                                              for r in rows],
        "tokens/s, attnfuse serve": [r["ours"]["tokens_per_s"] for r in rows],
        "tokens/s, transformers generate": [r["transformers"]["tokens_per_s"]
                                            for r in rows],
    }
    png_plot.line_plot(path, series,
                       title="serving under one cache budget: "
                             + ", ".join(r["form"] for r in rows),
                       xlabel="form (in the order of the title)",
                       ylabel="sequences / tokens per second")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--forms", default=",".join(FORMS))
    parser.add_argument("--requests", type=int, default=32)
    parser.add_argument("--prompt", type=int, default=32)
    parser.add_argument("--new-tokens", default="16,80",
                        help="new tokens per request: min,max (uniform)")
    parser.add_argument("--budget-mib", type=float, default=4.0)
    parser.add_argument("--page-size", type=int, default=16)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--check", type=int, nargs="?", const=4, default=0,
                        help="compare the tokens of the first N requests "
                             "(none and ccgqa) with transformers")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    forms = args.forms.split(",")
    if set(forms) - set(FORMS) or "none" not in forms:
        parser.error(f"--forms: a subset of {', '.join(FORMS)} with none")
    torch.set_num_threads(args.threads)
    requests, context = workload(args)
    rows = []
    for name in forms:
        reference, ours = build(name)
        # Warm-up: compile the prefill and step functions of the layers.
        run_ours(name, ours, requests[:2], context, args)
        row = {"form": name, "ours": run_ours(name, ours, requests, context,
                                               args),
               "transformers": run_transformers(name, reference, requests,
                                                context, args)}
        if args.check and name in ("none", "ccgqa"):
            row["token_mismatches"] = check_tokens(
                reference, requests, row["ours"]["tokens"], args.check)
        del row["ours"]["tokens"]
        rows.append(row)
        o, t = row["ours"], row["transformers"]
        print(f"{name:8s} bytes/token {o['cache_bytes_per_token']:.0f} "
              f"fit ours {o['fit']} theirs {t['fit']}: ours "
              f"{o['tokens_per_s']:.1f} tokens/s ({o['step_ms']:.1f} ms a step"
              f"), transformers {t['tokens_per_s']:.1f} tokens/s"
              + (f", mismatches {row['token_mismatches']}"
                 if "token_mismatches" in row else ""), flush=True)
    meta = {"machine": platform.machine(), "cpus": os.cpu_count(),
            "threads": args.threads, "torch": torch.__version__,
            "command": "PYTHONPATH=build/python_packages .venv/bin/python "
                       "bench/serve_cpu.py " + " ".join(sys.argv[1:])}
    text = report(args, rows, meta)
    print(text)
    if args.out:
        with open(args.out + ".md", "w") as f:
            f.write(text)
        with open(args.out + ".json", "w") as f:
            json.dump({"meta": meta, "args": vars(args), "rows": rows}, f,
                      indent=1)
        plot(args.out + ".png", rows)


if __name__ == "__main__":
    main()
