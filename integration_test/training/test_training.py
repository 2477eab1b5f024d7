"""Training through attnfuse's torch modules gives the losses of plain
PyTorch: the examples of examples/training/ for a few steps at tiny shapes.

* the authors' GPT of "Do Transformers Need Three Projections?"
  (three_projections_mini.py) in the modes none, kv, qk, qkv, kv + GQA and
  kv + MQA, against the same model with attnfuse.torch.QKVAttention: the
  gradients of the first step, parameter by parameter, and the per-step
  losses of AGREEMENT_STEPS AdamW steps on character-level text;
* the same on the Reverse and Sort list tasks (list_tasks.py);
* a tiny transformers ZayaForCausalLM against itself with every attention
  swapped for attnfuse.torch.CCAAttention (zaya_mini.py).

Same initial weights, same batches, same dropout masks; float32.
Tolerances (three_projections_mini.py, with their calibration): relative
loss difference <= 1e-5 at step 0 and over the first steps; gradients
max |g_a - g_t| / max |g_t| <= GRAD_TOLERANCE per parameter (per
projection, weight and bias together, for the attention). The long runs
are the examples' defaults (bench/results/*-mini-*).

Needs torch and the attnfuse package: from the environment, else the
build tree's python_packages (next to ATTNFUSE_RUN's bin/, or build/);
skipped when neither imports. The ZAYA case needs transformers 5.23+.
"""

import os
import sys

import pytest

import torch  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "examples", "training"))

from attnfuse_package import require_package_dir  # noqa: E402

require_package_dir()
import attnfuse.torch  # noqa: E402,F401

import list_tasks  # noqa: E402
import three_projections_mini as tp  # noqa: E402

GRAD_TOLERANCE = 1e-5
STEPS = tp.AGREEMENT_STEPS

# One attention shape for every case (E 32, 4 heads of 8, GQA 2 KV heads):
# each mode's forward and gradient functions compile once for the module.
LM = tp.ModelConfig(vocab_size=64, n_positions=32, n_layer=2, n_embd=32,
                    n_head=4, n_kv_groups=2, n_inner=128)
# lr 1e-3 from the first step (warmup 1), so that a wrong gradient shows in
# the next step's loss (see the calibration in three_projections_mini.py).
TRAIN = tp.TrainingConfig(total_steps=STEPS, micro_batch_size=4,
                          learning_rate=1e-3, min_lr=1e-4, warmup_steps=1)


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    """At these sizes torch's threads only add synchronisation, which on a
    loaded machine costs more than the work (5 to 20x)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def corpus():
    return tp.CharCorpus()


def _relative(got, expected):
    scale = expected.abs().max()
    return ((got - expected).abs().max() / scale).item() if scale > 0 \
        else got.abs().max().item()


def _first_step_gradients(mode, batch):
    """Both models' gradients of the first training step (dropout on, the
    same masks)."""
    models = {}
    for impl in ("torch", "attnfuse"):
        model = tp.build_model(LM, mode, impl, TRAIN.seed).train()
        torch.manual_seed(TRAIN.seed)
        _, loss = model(batch["input_ids"], labels=batch["labels"])
        loss.backward()
        models[impl] = model
    return models["torch"], models["attnfuse"]


@pytest.mark.parametrize("mode", tp.DEFAULT_MODES)
def test_gradients_match_the_authors_attention(corpus, mode):
    batch = next(tp.train_batches(corpus.train, 4, LM.n_positions, 1))
    reference, swapped = _first_step_gradients(mode, batch)
    errors = {}
    theirs = dict(swapped.named_parameters())
    for name, p in reference.named_parameters():
        if ".attn." not in name:
            errors[name] = _relative(theirs[name].grad, p.grad)
    for index, (ours, fused) in enumerate(zip(reference.h, swapped.h)):
        cut = ours.attn.projections(grads=True)
        cut["o_proj"] = (ours.attn.c_proj.weight.grad,
                         ours.attn.c_proj.bias.grad)
        for proj, (weight, bias) in cut.items():
            # Weight and bias together: with separate values the key bias's
            # true gradient is 0 (softmax ignores a constant per row), and
            # both implementations give rounding noise there.
            layer = getattr(fused.attn.attention, proj)
            errors[f"h.{index}.{proj}"] = _relative(
                torch.cat([layer.weight.grad.flatten(), layer.bias.grad]),
                torch.cat([weight.flatten(), bias]))
    worst = max(errors, key=errors.get)
    assert errors[worst] <= GRAD_TOLERANCE, \
        f"{mode}: gradient of {worst} off by {errors[worst]:.2e}"


def _assert_agreement(result, what):
    step0 = result["step0"]["relative_difference"]
    assert step0 <= tp.STEP0_TOLERANCE, \
        f"{what}: initial losses differ by {step0:.2e}"
    agreement = result.get("agreement")
    assert agreement is not None, f"{what}: {result.get('attnfuse')}"
    per_step = agreement["per_step_first"]
    assert len(per_step) == STEPS
    assert max(per_step) <= tp.STEP_TOLERANCE, \
        f"{what}: losses per step differ by " + \
        ", ".join(f"{d:.1e}" for d in per_step)


@pytest.mark.parametrize("mode", tp.DEFAULT_MODES)
def test_language_model_losses_agree(corpus, mode):
    result = tp.compare(
        mode, LM, TRAIN, lambda: tp.train_batches(corpus.train, 4,
                                                  LM.n_positions, 1),
        None, log=lambda line: None)
    _assert_agreement(result, mode)
    losses = result["torch"]["loss"]
    assert len(losses) == STEPS and len(set(losses)) == STEPS


@pytest.mark.parametrize("task", list_tasks.TASKS)
def test_list_task_losses_agree(task):
    config = list_tasks.model_config(values=8, length=6, layers=LM.n_layer,
                                     embd=LM.n_embd, heads=LM.n_head,
                                     kv_groups=LM.n_kv_groups)
    results = list_tasks.run(task, tp.DEFAULT_MODES, ("torch", "attnfuse"),
                             config, TRAIN, eval_count=0,
                             log=lambda line: None)
    for result in results:
        _assert_agreement(result, f"{task} / {result['mode']}")


def test_zaya_losses_agree_with_transformers():
    transformers = pytest.importorskip("transformers")
    if not hasattr(transformers, "ZayaConfig"):
        pytest.skip("this transformers has no ZAYA model (5.23 and later do)")
    import zaya_mini
    result = zaya_mini.compare(STEPS, context=24, batch=2, log=lambda l: None)
    _assert_agreement(result, "ZAYA")

