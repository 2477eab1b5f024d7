"""The synthetic Reverse and Sort list tasks of "Do Transformers Need Three
Projections?" (Kayyam, Madan Gopal, Lewis, ICML 2026) in miniature, for the
projection-sharing modes of three_projections_mini.py, each trained twice:
the authors' plain-PyTorch attention and attnfuse.torch.QKVAttention with
the same initial weights, batches and dropout masks.

The released code (github.com/Brainchip-Inc/Do-Transformers-Need-3-
Projections) covers only the language-model experiments, so the task
format here is this file's own: a list of LENGTH tokens drawn uniformly
from VALUES symbols, a separator, then the answer, as one causal sequence
for the authors' GPT (three_projections_mini.GPT: learned positions,
pre-LayerNorm blocks, their init):

    x_1 .. x_n  SEP  y_1 .. y_n        vocabulary VALUES + 1, context 2n + 1
    reverse: y_i = x_(n+1-i)           sort: y = x in ascending order

The loss is the next-token cross entropy on the answer tokens only (labels
-100 elsewhere); accuracy is measured on a fixed set of held-out lists,
per answer token and per whole list (exact match; with teacher forcing,
which for exact match equals greedy decoding: a list is right only if
every argmax is). Training follows the authors' loop (AdamW 0.9/0.95,
weight decay 0.1, clip 1.0, warmup + cosine, dropout 0.1), fresh random
lists every step from a generator of its own.

    PYTHONPATH=build/python_packages .venv/bin/python \\
        examples/training/list_tasks.py          # both tasks, 6 modes x 2
    ... --tasks reverse --modes kv,qk --impl torch --steps 200

writes bench/results/list-tasks-mini-<date>.{json,md} and
-<task>.png (--out).
"""

import argparse
import dataclasses
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import three_projections_mini as tp  # noqa: E402

TASKS = ("reverse", "sort")
VALUES = 32
LENGTH = 16


def answer(task, lists):
    if task == "reverse":
        return lists.flip(-1)
    if task == "sort":
        return lists.sort(dim=-1).values
    raise ValueError(f"task must be one of {', '.join(TASKS)}, got {task!r}")


def make_lists(task, count, generator, values=VALUES, length=LENGTH):
    """{input_ids [count, 2 length + 1], labels (-100 but on the answer)}."""
    lists = torch.randint(0, values, (count, length), generator=generator)
    sep = torch.full((count, 1), values, dtype=torch.long)
    ids = torch.cat([lists, sep, answer(task, lists)], dim=1)
    labels = ids.clone()
    labels[:, :length + 1] = -100
    return {"input_ids": ids, "labels": labels}


def task_batches(task, batch, seed, values=VALUES, length=LENGTH):
    generator = torch.Generator().manual_seed(seed)
    while True:
        yield make_lists(task, batch, generator, values, length)


def eval_lists(task, count, batch, seed, values=VALUES, length=LENGTH):
    generator = torch.Generator().manual_seed(seed)
    return [make_lists(task, batch, generator, values, length)
            for _ in range(count // batch)]


@torch.no_grad()
def accuracy(model, batches):
    """{token_accuracy, list_accuracy} of the argmax predictions of the
    answer tokens, dropout off."""
    was_training = model.training
    model.eval()
    right_tokens = tokens = right_lists = lists = 0
    for batch in batches:
        logits, _ = model(batch["input_ids"])
        predicted = logits[:, :-1].argmax(-1)
        target = batch["labels"][:, 1:]
        scored = target != -100
        correct = (predicted == target) | ~scored
        right_tokens += (correct & scored).sum().item()
        tokens += scored.sum().item()
        right_lists += correct.all(dim=1).sum().item()
        lists += target.shape[0]
    if was_training:
        model.train()
    return {"token_accuracy": right_tokens / tokens,
            "list_accuracy": right_lists / lists}


def model_config(values=VALUES, length=LENGTH, layers=2, embd=64, heads=4,
                 kv_groups=2):
    return tp.ModelConfig(vocab_size=values + 1, n_positions=2 * length + 1,
                          n_layer=layers, n_embd=embd, n_head=heads,
                          n_kv_groups=kv_groups, n_inner=4 * embd)


def run(task, modes, impls, mc, tc, eval_count=512, log=print):
    """Trains each of `modes` with each of `impls` on `task` (compare() of
    three_projections_mini); eval_count held-out lists (0: no evaluation)."""
    values, length = mc.vocab_size - 1, (mc.n_positions - 1) // 2
    eval_set = eval_lists(task, eval_count, 128, tc.seed + 1000, values,
                          length) if eval_count else None
    results = []
    for mode in modes:
        result = tp.compare(
            mode, mc, tc,
            lambda: task_batches(task, tc.micro_batch_size, tc.seed + 1,
                                 values, length),
            eval_set, impls, metrics=lambda m: accuracy(m, eval_set), log=log)
        result["task"] = task
        results.append(result)
    return results


def final_metric(history, name):
    if not isinstance(history, dict) or not history.get("eval"):
        return None
    return history["eval"][-1][2][name]


def markdown(results, mc, tc, command, plotter):
    lines = ["# Reverse and Sort list tasks in miniature", "",
             f"Command: `{command}`", "",
             f"Lists of {(mc.n_positions - 1) // 2} tokens over "
             f"{mc.vocab_size - 1} symbols, `x SEP answer` as one causal "
             f"sequence; loss on the answer only. Model: "
             f"{mc.n_layer} layers, E {mc.n_embd}, {mc.n_head} heads, GQA "
             f"{mc.n_kv_groups} KV heads, MLP {mc.n_inner}, dropout "
             f"{mc.resid_pdrop}. Training: {tc.total_steps} steps of "
             f"{tc.micro_batch_size} fresh lists, AdamW lr "
             f"{tc.learning_rate} (warmup {tc.warmup_steps}, cosine to "
             f"{tc.min_lr}), weight decay {tc.weight_decay}, clip "
             f"{tc.grad_clip}, seed {tc.seed}, float32 on the CPU. Accuracy "
             f"on 512 held-out lists (per list: every answer token right).",
             "",
             "| task | mode | paper | list acc. (torch) | list acc. "
             "(attnfuse) | token acc. (torch) | token acc. (attnfuse) | "
             "final val loss (torch) | (attnfuse) | step-0 rel. diff | "
             f"max rel. diff, first {tp.AGREEMENT_STEPS} steps | max rel. "
             "diff, all steps |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        t, a = r.get("torch"), r.get("attnfuse")
        agreement, step0 = r.get("agreement", {}), r.get("step0", {})
        failed = a["error"] if isinstance(a, dict) and "error" in a else None
        lines.append(
            f"| {r['task']} | {r['mode']} | {tp.PAPER_NAMES[r['mode']]} | "
            f"{tp.fmt(final_metric(t, 'list_accuracy'), 3)} | "
            f"{failed or tp.fmt(final_metric(a, 'list_accuracy'), 3)} | "
            f"{tp.fmt(final_metric(t, 'token_accuracy'), 3)} | "
            f"{tp.fmt(final_metric(a, 'token_accuracy'), 3)} | "
            f"{tp.fmt(tp.final_eval(t))} | {tp.fmt(tp.final_eval(a))} | "
            f"{tp.fmt_diff(step0.get('relative_difference'))} | "
            f"{tp.fmt_diff(agreement.get('max_first_steps'))} | "
            f"{tp.fmt_diff(agreement.get('max_all'))} |")
    lines += ["", f"Plots: training loss per step (20-step mean), one file "
              f"per task (`-reverse.png`, `-sort.png`), written with "
              f"{plotter}.", ""]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--modes", default=",".join(tp.DEFAULT_MODES))
    parser.add_argument("--impl", default="both",
                        choices=("both", "torch", "attnfuse"))
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--values", type=int, default=VALUES)
    parser.add_argument("--length", type=int, default=LENGTH)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--embd", type=int, default=64)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--kv-groups", type=int, default=2)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--threads", type=int, default=None,
                        help="torch.set_num_threads (default: torch's)")
    parser.add_argument("--out", default=os.path.join(
        tp.ROOT, "bench", "results",
        f"list-tasks-mini-{time.strftime('%Y-%m-%d')}"))
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    impls = ("torch", "attnfuse") if args.impl == "both" else (args.impl,)
    mc = model_config(args.values, args.length, args.layers, args.embd,
                      args.heads, args.kv_groups)
    tc = tp.TrainingConfig(total_steps=args.steps, micro_batch_size=args.batch,
                           learning_rate=args.lr, min_lr=args.lr / 10,
                           warmup_steps=args.warmup, eval_interval=100,
                           seed=args.seed)
    results = []
    for task in args.tasks.split(","):
        print(f"task {task}")
        results += run(task, args.modes.split(","), impls, mc, tc)
    for r in results:
        print(f"{r['task']:8s} {r['mode']:7s} list accuracy torch "
              f"{tp.fmt(final_metric(r.get('torch'), 'list_accuracy'), 3)} "
              f"attnfuse "
              f"{tp.fmt(final_metric(r.get('attnfuse'), 'list_accuracy'), 3)}")
    if not args.out:
        return results
    given = argv if argv is not None else sys.argv[1:]
    command = (tp.env_prefix()
               + "PYTHONPATH=build/python_packages .venv/bin/python "
               "examples/training/list_tasks.py"
               + (" " + " ".join(given) if given else ""))
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    plotter = None
    for task in dict.fromkeys(r["task"] for r in results):
        series = {}
        for r in results:
            for impl in impls:
                h = r.get(impl)
                if r["task"] == task and isinstance(h, dict) and "loss" in h:
                    series[f"{r['mode']} {impl}"] = tp.smoothed(h["loss"])
        plotter = tp.plot_curves(f"{args.out}-{task}.png", series,
                                 f"{task} lists: training loss")
    with open(args.out + ".json", "w") as f:
        json.dump({"command": command,
                   "model_config": dataclasses.asdict(mc),
                   "train_config": dataclasses.asdict(tc),
                   "values": args.values, "length": args.length,
                   "results": tp.compact(results)}, f)
    with open(args.out + ".md", "w") as f:
        f.write(markdown(results, mc, tc, command, plotter))
    print(f"wrote {args.out}.{{json,md}} and {args.out}-<task>.png")
    return results


if __name__ == "__main__":
    main()
