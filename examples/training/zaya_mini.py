"""A tiny transformers ZayaForCausalLM trained twice from the same random
initialisation on the same batches: with its own ZayaAttention, and with
every attention swapped for attnfuse.torch.CCAAttention (the ZayaAttention
state_dict loaded as it is, as in python-bindings/tests/test_torch.py and
examples/python/zaya_from_hf.py). The per-step training losses must agree
to STEP0_TOLERANCE at step 0 and STEP_TOLERANCE over the first
AGREEMENT_STEPS steps (float32, relative).

The model: 2 decoder layers (one global "hybrid", one "hybrid_sliding"
with a window of 16), hidden 64, 4 query and 2 KV latent heads of 16, CCA
convolutions (2, 2), 2 experts of 32 + the skip expert, router 16, RoPE on
half of each head (theta 5e6 global, 1e4 sliding), tied embeddings,
character vocabulary of the bundled text (64). transformers' own init,
except that the learned key temperatures (qk_norm.temp, which transformers
starts at 0, making every score 0 and the query/key path gradient-free)
are drawn uniformly from [0.5, 2], so that the first steps already train
the whole attention. AdamW (lr 1e-3, betas 0.9/0.95, weight decay 0.1),
gradient clipping at 1.0, batches of 8 windows of 64 characters of
examples/training/data/tinyshakespeare-150k.txt, loss = transformers'
causal-LM loss (labels = input_ids), use_cache=False.

ZAYA routes each token to one expert by an argmax: a rounding difference
that flips a routing decision changes that token's output outright, so
over long runs the two losses may separate by more than rounding; the
agreement is asserted on the first steps.

    PYTHONPATH=build/python_packages .venv/bin/python \\
        examples/training/zaya_mini.py [--steps 100]

writes bench/results/zaya-mini-<date>.{json,md,png} (--out).
"""

import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import three_projections_mini as tp  # noqa: E402

STEP0_TOLERANCE = tp.STEP0_TOLERANCE
STEP_TOLERANCE = tp.STEP_TOLERANCE
AGREEMENT_STEPS = tp.AGREEMENT_STEPS


def zaya_config(vocab_size=64, hidden=64, window=16):
    import transformers
    if not hasattr(transformers, "ZayaConfig"):
        raise RuntimeError("this transformers has no ZAYA model (5.23 and "
                           "later do)")
    return transformers.ZayaConfig(
        vocab_size=vocab_size, hidden_size=hidden, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, num_hidden_layers=2,
        layer_types=["hybrid", "hybrid_sliding"], sliding_window=window,
        num_experts=2, moe_intermediate_size=32, router_hidden_size=16,
        use_cache=False, pad_token_id=None, bos_token_id=None,
        eos_token_id=None)  # every character id is text


def build_zaya(config, seed):
    """transformers' ZayaForCausalLM with its own init from `seed`, key
    temperatures drawn from [0.5, 2]."""
    import transformers
    torch.manual_seed(seed)
    model = transformers.ZayaForCausalLM(config)
    with torch.no_grad():
        for block in model.model.layers:
            block.self_attn.qk_norm.temp.uniform_(0.5, 2.0)
    return model


def train_zaya(model, batches, steps, lr=1e-3, seed=0, log=None):
    """AdamW + clipping, the loss of each step; returns {loss, seconds}."""
    torch.manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr,
                                  betas=(0.9, 0.95), weight_decay=0.1)
    model.train()
    losses = []
    start = time.time()
    for step in range(steps):
        batch = next(batches)
        optimizer.zero_grad()
        loss = model(input_ids=batch["input_ids"], labels=batch["labels"],
                     use_cache=False).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
        if log and (step % 25 == 0):
            log(f"    step {step:4d}  loss {losses[-1]:.4f}")
    return {"loss": losses, "seconds": time.time() - start}


def compare(steps, context=64, batch=8, seed=42, lr=1e-3, log=print):
    """Both runs; returns {config, step0, hf, attnfuse, agreement}."""
    corpus = tp.CharCorpus()
    config = zaya_config(corpus.vocab_size, window=16)
    reference = build_zaya(config, seed)
    swapped = tp.import_attnfuse_torch().swap_zaya_attention(reference)
    first = next(tp.train_batches(corpus.train, batch, context, seed + 1))
    with torch.no_grad():
        losses = [m.eval()(input_ids=first["input_ids"],
                           labels=first["labels"]).loss.item()
                  for m in (reference, swapped)]
    step0 = {"hf": losses[0], "attnfuse": losses[1],
             "relative_difference": abs(losses[1] - losses[0]) / losses[0]}
    log(f"  initial loss: transformers {losses[0]:.6f}, attnfuse "
        f"{losses[1]:.6f}, relative difference "
        f"{step0['relative_difference']:.1e}")
    result = {"step0": step0}
    for name, model in (("hf", reference), ("attnfuse", swapped)):
        log(f"  {name}")
        try:
            result[name] = train_zaya(
                model, tp.train_batches(corpus.train, batch, context,
                                        seed + 1), steps, lr, seed, log)
        except NotImplementedError as error:
            if name == "attnfuse" and tp.no_backward(error):
                log(f"    attnfuse has no backward yet: {error}")
                result[name] = {"error": "no backward yet"}
                return result
            raise
        log(f"    {result[name]['seconds']:.1f} s")
    diffs = tp.relative_differences(result["attnfuse"]["loss"],
                                    result["hf"]["loss"])
    result["agreement"] = {"first_steps": AGREEMENT_STEPS,
                           "max_first_steps": max(diffs[:AGREEMENT_STEPS]),
                           "per_step_first": diffs[:AGREEMENT_STEPS],
                           "max_all": max(diffs), "final": diffs[-1]}
    log(f"  loss agreement: max relative difference "
        f"{result['agreement']['max_first_steps']:.1e} over the first "
        f"{AGREEMENT_STEPS} steps, {result['agreement']['max_all']:.1e} "
        f"over all")
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--threads", type=int, default=None,
                        help="torch.set_num_threads (default: torch's)")
    parser.add_argument("--out", default=os.path.join(
        tp.ROOT, "bench", "results",
        f"zaya-mini-{time.strftime('%Y-%m-%d')}"))
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    result = compare(args.steps, seed=args.seed)
    if not args.out:
        return result
    given = argv if argv is not None else sys.argv[1:]
    command = (tp.env_prefix()
               + "PYTHONPATH=build/python_packages .venv/bin/python "
               "examples/training/zaya_mini.py"
               + (" " + " ".join(given) if given else ""))
    series = {f"zaya {name}": tp.smoothed(result[name]["loss"], 10)
              for name in ("hf", "attnfuse")
              if "loss" in result.get(name, {})}
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    plotter = tp.plot_curves(args.out + ".png", series,
                             "tiny ZAYA: training loss",
                             "training loss (10-step mean)")
    with open(args.out + ".json", "w") as f:
        json.dump(dict(result, command=command), f)
    agreement = result.get("agreement", {})
    lines = ["# Tiny ZAYA: transformers' attention vs attnfuse CCAAttention",
             "", f"Command: `{command}`", "",
             "| run | step-0 loss | loss after the last step | "
             "mean loss, last 10 steps | seconds |", "|---|---|---|---|---|"]
    for name in ("hf", "attnfuse"):
        h = result.get(name, {})
        if "loss" not in h:
            lines.append(f"| {name} | {result['step0'][name]:.6f} | "
                         f"{h.get('error', '-')} | - | - |")
            continue
        lines.append(f"| {name} | {result['step0'][name]:.6f} | "
                     f"{h['loss'][-1]:.4f} | "
                     f"{sum(h['loss'][-10:]) / len(h['loss'][-10:]):.4f} | "
                     f"{h['seconds']:.1f} |")
    lines += ["", f"Step 0 (forward only): relative difference "
              f"{result['step0']['relative_difference']:.1e}."]
    if agreement:
        lines += [f"Training losses: max relative difference "
                  f"{agreement['max_first_steps']:.1e} over the first "
                  f"{AGREEMENT_STEPS} steps (per step: "
                  + ", ".join(f"{d:.1e}" for d in agreement["per_step_first"])
                  + f"), {agreement['max_all']:.1e} over all "
                  f"{args.steps}, {agreement['final']:.1e} at the last."]
    lines += ["", f"Plot: written with {plotter}.", ""]
    with open(args.out + ".md", "w") as f:
        f.write("\n".join(lines))
    print(f"wrote {args.out}.{{json,md,png}}")
    return result


if __name__ == "__main__":
    main()
