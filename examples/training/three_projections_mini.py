"""The language-model experiment of "Do Transformers Need Three Projections?
A Systematic Study of QKV Variants" (Kayyam, Madan Gopal, Lewis, ICML 2026)
in miniature, trained twice: as the authors wrote it in plain PyTorch, and
with each attention replaced by attnfuse.torch.QKVAttention.

Follows github.com/Brainchip-Inc/Do-Transformers-Need-3-Projections (commit
ffedd92): the GPT model, initialisation, optimizer, learning-rate schedule
and training step of its `transformer_*_300_M.py` scripts, with the
architecture of `configs/model_config_300M.yaml`, scaled down to run on two
CPU cores. Per mode (paper notation, authors' file and class):

    mode    paper  file (transformer_*_300_M.py), class: projections
    none    QKV    KQV, QKVAttention: c_attn [3E] -> q, k, v
    qk      Q=K-V  QK, KVAttention: c_kv [2E] -> k, v; q = k
    kv      Q-K=V  KV_1, QKVAttention_KEqualsV: c_q, c_k; v = k
    qkv     Q=K=V  K, KAttention: c_k; q = v = k
    kv_gqa  Q-GQA  QGQA, QGQAttention: c_q, c_k [G d]; v = k
    kv_mqa  Q-MQA  QMQA, QMQAttention: c_q, c_kv [d]; k = v = kv
    gqa     GQA    GQA, GQAttention: c_q, c_kv [2 G d] -> k, v
    mqa     MQA    MQA, MQAttention: c_q, c_kv [2 d] -> k, v

(the last two are not in the default run). What the authors' scripts share
and this file keeps: pre-LayerNorm blocks (x + attn(ln_1(x)), x +
mlp(ln_2(x))), learned absolute position embeddings (wpe), GELU MLP of width
n_inner, biases on every Linear, causal softmax attention with scale
1/sqrt(d) (their non-flash path: masked_fill of a tril buffer), KV heads
expanded with repeat_interleave (query head h reads KV head h // (H / G)),
dropout 0.1 after the attention's and the MLP's output projections (0 on
embeddings and attention weights), tied input/output embeddings, N(0, 0.02)
for every Linear and Embedding with zero biases, next-token cross entropy
on the shifted labels (ignore_index -100), AdamW (betas 0.9/0.95, weight
decay 0.1 on every parameter), gradient clipping at 1.0 with the update
skipped when the norm exceeds 100, linear warmup then cosine decay to
min_lr = learning_rate / 10, learning rate set before each update.

Scaled down (the authors' value in brackets): E 128 [1024], 4 layers [20],
4 heads of 32 [16 of 64], GQA 2 KV heads [8 in transformer_QGQA_300_M.py,
whose task is named GQA-4; 4 in transformer_GQA_300_M.py], MLP 512 [4096],
context 128 [2048], character-level vocabulary of the bundled text padded
to a multiple of 64 [GPT-2 BPE, 50304], batch 16 x 1 accumulation [6 x 24
per GPU x 8 GPUs], 300 steps [~10B tokens], learning rate 1e-3 with 30
warmup steps [2e-4 with 500], float32 on the CPU [bf16 autocast and a
GradScaler on A100s], no flash-attn (the authors' non-flash path).

Data: examples/training/data/tinyshakespeare-150k.txt, the first 150 KB of
the tinyshakespeare text of github.com/karpathy/char-rnn (Shakespeare's
Coriolanus, public domain); the last 10 % is held out. Each example is a
window of `n_positions` characters (the authors' examples are documents
truncated to the context, labels = inputs, shifted in the model); the
training windows are drawn by a generator seeded independently of the
model, so both implementations see the same batches in the same order, and
the dropout masks match because the global RNG is reseeded before training.

The attnfuse run builds the same model from the same seed, then replaces
each block's attention by attnfuse.torch.QKVAttention(sharing=mode,
bias=True) with the authors' weights copied in (c_attn / c_kv rows split
into q_proj / k_proj / v_proj, c_proj -> o_proj) followed by the same
output dropout. Its per-step training losses must equal the plain run's:
relative difference <= STEP0_TOLERANCE at step 0 and <= STEP_TOLERANCE
over the first AGREEMENT_STEPS steps (float32; the difference then grows
slowly as rounding feeds back through the updates).

    PYTHONPATH=build/python_packages .venv/bin/python \\
        examples/training/three_projections_mini.py            # 6 modes x 2
    ... --modes kv,qkv --steps 50 --impl torch                 # quicker

writes bench/results/three-projections-mini-<date>.{json,md,png} (--out).
On a shared machine, one thread each (OMP_NUM_THREADS=1 for attnfuse's
kernels, --threads 1 for torch) avoids oversubscription.
The attnfuse run trains through the layers' torch autograd (attnfuse's
`_vjp` gradient functions); with an attnfuse.torch that has no backward it
is reported as such after the step-0 forward comparison.
"""

import argparse
import dataclasses
import json
import math
import os
import sys
import time

import torch
from torch import nn
from torch.nn import functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(HERE, "data", "tinyshakespeare-150k.txt")

MODES = ("none", "kv", "qk", "qkv", "kv_gqa", "kv_mqa", "gqa", "mqa")
DEFAULT_MODES = ("none", "kv", "qk", "qkv", "kv_gqa", "kv_mqa")
PAPER_NAMES = {"none": "QKV", "kv": "Q-K=V", "qk": "Q=K-V", "qkv": "Q=K=V",
               "kv_gqa": "Q-GQA (K=V + GQA)", "kv_mqa": "Q-MQA (K=V + MQA)",
               "gqa": "GQA", "mqa": "MQA"}

# Agreement of the per-step training losses, attnfuse vs plain PyTorch, as
# |a - b| / |b| (float32). Step 0 compares two forward passes on the same
# weights; later steps also carry the rounding differences of the gradients
# through AdamW. Calibration (E 32, 2 layers, lr 1e-3 from the first step,
# 5 steps, every mode): the authors' attention against the same model with
# torch's scaled_dot_product_attention differs by <= 1.2e-7 (one float32
# ulp of the loss) per step; dropping the value path's gradient in the K=V
# modes (v = k.detach()) moves the loss by 7e-4 to 4e-3 from step 1 on. The
# tolerance sits two orders of magnitude from either.
STEP0_TOLERANCE = 1e-5
STEP_TOLERANCE = 1e-5
AGREEMENT_STEPS = 5


# ---------------------------------------------------------------------------
# Configuration (configs/model_config_300M.yaml, train_config_300M.yaml,
# scaled down)
# ---------------------------------------------------------------------------


@dataclasses.dataclass
class ModelConfig:
    vocab_size: int = 64
    n_positions: int = 128
    n_layer: int = 4
    n_embd: int = 128
    n_head: int = 4
    n_kv_groups: int = 2  # GQA modes; the MQA modes use 1
    n_inner: int = 512
    embd_pdrop: float = 0.0
    resid_pdrop: float = 0.1
    attn_pdrop: float = 0.0
    layer_norm_epsilon: float = 1e-5
    initializer_range: float = 0.02
    use_bias: bool = True
    tie_word_embeddings: bool = True


@dataclasses.dataclass
class TrainingConfig:
    total_steps: int = 300
    micro_batch_size: int = 16
    gradient_accumulation: int = 1
    learning_rate: float = 1e-3
    min_lr: float = 1e-4
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95
    grad_clip: float = 1.0
    warmup_steps: int = 30
    eval_interval: int = 50
    eval_batches: int = 8
    seed: int = 42


# ---------------------------------------------------------------------------
# Attention, one class per projection-sharing mode
# ---------------------------------------------------------------------------


class CausalAttention(nn.Module):
    """What every attention class of the authors' scripts shares: heads of
    n_embd / n_head, the output projection c_proj, the dropouts and the
    causal mask buffer, and their non-flash attention (forward). A subclass
    defines the projections and `project(x)` -> q, k, v as [B, T, n_head,
    head_dim], KV heads already expanded with repeat_interleave.

    For attnfuse: `sharing` and `kv_heads` configure QKVAttention, and
    `projections()` gives its q_proj / k_proj / v_proj weights and biases
    cut from the authors' Linears ({name: (weight, bias)}; grads=True: their
    gradients, cut the same way)."""

    sharing = None

    def __init__(self, config):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.n_embd = config.n_embd
        self.n_head = config.n_head
        self.head_dim = config.n_embd // config.n_head
        self.kv_heads = config.n_head
        self.c_proj = nn.Linear(config.n_embd, config.n_embd,
                                bias=config.use_bias)
        self.attn_dropout = nn.Dropout(config.attn_pdrop)
        self.resid_dropout = nn.Dropout(config.resid_pdrop)
        self.register_buffer(
            "bias", torch.tril(torch.ones(config.n_positions,
                                          config.n_positions))
            .view(1, 1, config.n_positions, config.n_positions))

    def heads(self, t, count):
        B, T, _ = t.shape
        return t.view(B, T, count, self.head_dim)

    def expand(self, t):
        """[B, T, kv_heads, d] -> [B, T, n_head, d]: KV head g serves query
        heads g * n / G .. (g + 1) * n / G - 1."""
        return t.repeat_interleave(self.n_head // self.kv_heads, dim=2)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.project(x)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        scale = 1.0 / math.sqrt(self.head_dim)
        attn = torch.matmul(q, k.transpose(-2, -1)) * scale
        attn = attn.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        attn = F.softmax(attn, dim=-1)
        attn = self.attn_dropout(attn)
        out = torch.matmul(attn, v).transpose(1, 2)
        out = out.contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(out))

    @staticmethod
    def _all(linear, grads=False):
        """(weight, bias) of `linear`, or their gradients."""
        if grads:
            return linear.weight.grad, getattr(linear.bias, "grad", None)
        return linear.weight, linear.bias

    @classmethod
    def _rows(cls, linear, start, stop, grads=False):
        """Output rows start:stop of `linear` (or of its gradients)."""
        weight, bias = cls._all(linear, grads)
        return weight[start:stop], None if bias is None else bias[start:stop]


class AttentionQKV(CausalAttention):
    """none, QKV: transformer_KQV_300_M.py, QKVAttention. One Linear c_attn
    to 3 E, split into q, k, v."""

    sharing = "none"

    def __init__(self, config):
        super().__init__(config)
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd,
                                bias=config.use_bias)

    def project(self, x):
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        return (self.heads(q, self.n_head), self.heads(k, self.n_head),
                self.heads(v, self.n_head))

    def projections(self, grads=False):
        E = self.n_embd
        return {"q_proj": self._rows(self.c_attn, 0, E, grads),
                "k_proj": self._rows(self.c_attn, E, 2 * E, grads),
                "v_proj": self._rows(self.c_attn, 2 * E, 3 * E, grads)}


class AttentionQeqK(CausalAttention):
    """qk, Q=K-V: transformer_QK_300_M.py, KVAttention (the authors' file
    and class are named after the two projections it keeps). c_kv to 2 E
    split into k, v; the query is the key."""

    sharing = "qk"

    def __init__(self, config):
        super().__init__(config)
        self.c_kv = nn.Linear(config.n_embd, 2 * config.n_embd,
                              bias=config.use_bias)

    def project(self, x):
        k, v = self.c_kv(x).split(self.n_embd, dim=2)
        k, v = self.heads(k, self.n_head), self.heads(v, self.n_head)
        return k, k, v

    def projections(self, grads=False):
        E = self.n_embd
        return {"k_proj": self._rows(self.c_kv, 0, E, grads),
                "v_proj": self._rows(self.c_kv, E, 2 * E, grads)}


class AttentionKeqV(CausalAttention):
    """kv, Q-K=V (the paper's headline variant): transformer_KV_1_300_M.py,
    QKVAttention_KEqualsV. Separate c_q and c_k; the value is the key."""

    sharing = "kv"

    def __init__(self, config, kv_heads=None):
        super().__init__(config)
        if kv_heads is not None:
            assert config.n_head % kv_heads == 0
            self.kv_heads = kv_heads
        self.c_q = nn.Linear(config.n_embd, config.n_embd,
                             bias=config.use_bias)
        self.c_k = nn.Linear(config.n_embd, self.kv_heads * self.head_dim,
                             bias=config.use_bias)

    def project(self, x):
        q = self.heads(self.c_q(x), self.n_head)
        k = self.heads(self.c_k(x), self.kv_heads)
        v = k
        return q, self.expand(k), self.expand(v)

    def projections(self, grads=False):
        return {"q_proj": self._all(self.c_q, grads),
                "k_proj": self._all(self.c_k, grads)}


class AttentionKeqVGQA(AttentionKeqV):
    """kv_gqa, Q-GQA: transformer_QGQA_300_M.py, QGQAttention. c_q for all
    heads, c_k for n_kv_groups heads; v = k; both repeat_interleave'd to
    the query heads."""

    def __init__(self, config):
        super().__init__(config, kv_heads=config.n_kv_groups)


class AttentionKeqVMQA(CausalAttention):
    """kv_mqa, Q-MQA: transformer_QMQA_300_M.py, QMQAttention. c_q for all
    heads and one c_kv of a single head used as key and value."""

    sharing = "kv"

    def __init__(self, config):
        super().__init__(config)
        self.kv_heads = 1
        self.c_q = nn.Linear(config.n_embd, config.n_embd,
                             bias=config.use_bias)
        self.c_kv = nn.Linear(config.n_embd, self.head_dim,
                              bias=config.use_bias)

    def project(self, x):
        q = self.heads(self.c_q(x), self.n_head)
        kv = self.heads(self.c_kv(x), 1)
        k = v = kv
        return q, self.expand(k), self.expand(v)

    def projections(self, grads=False):
        return {"q_proj": self._all(self.c_q, grads),
                "k_proj": self._all(self.c_kv, grads)}


class AttentionGQA(CausalAttention):
    """gqa / mqa: transformer_GQA_300_M.py GQAttention and
    transformer_MQA_300_M.py MQAttention. c_q for all heads, c_kv to 2 G d
    split into k and v of G heads (G = 1: MQA)."""

    sharing = "none"

    def __init__(self, config, kv_heads=None):
        super().__init__(config)
        self.kv_heads = config.n_kv_groups if kv_heads is None else kv_heads
        assert config.n_head % self.kv_heads == 0
        self.c_q = nn.Linear(config.n_embd, config.n_embd,
                             bias=config.use_bias)
        self.c_kv = nn.Linear(config.n_embd,
                              2 * self.kv_heads * self.head_dim,
                              bias=config.use_bias)

    def project(self, x):
        q = self.heads(self.c_q(x), self.n_head)
        k, v = self.c_kv(x).split(self.kv_heads * self.head_dim, dim=2)
        k, v = self.heads(k, self.kv_heads), self.heads(v, self.kv_heads)
        return q, self.expand(k), self.expand(v)

    def projections(self, grads=False):
        width = self.kv_heads * self.head_dim
        return {"q_proj": self._all(self.c_q, grads),
                "k_proj": self._rows(self.c_kv, 0, width, grads),
                "v_proj": self._rows(self.c_kv, width, 2 * width, grads)}


class AttentionMQA(AttentionGQA):
    def __init__(self, config):
        super().__init__(config, kv_heads=1)


class AttentionQeqKeqV(CausalAttention):
    """qkv, Q=K=V: transformer_K_300_M.py, KAttention. One Linear c_k used
    as query, key and value."""

    sharing = "qkv"

    def __init__(self, config):
        super().__init__(config)
        self.c_k = nn.Linear(config.n_embd, config.n_embd,
                             bias=config.use_bias)

    def project(self, x):
        k = self.heads(self.c_k(x), self.n_head)
        q = v = k
        return q, k, v

    def projections(self, grads=False):
        return {"k_proj": self._all(self.c_k, grads)}


ATTENTION = {"none": AttentionQKV, "qk": AttentionQeqK, "kv": AttentionKeqV,
             "qkv": AttentionQeqKeqV, "kv_gqa": AttentionKeqVGQA,
             "kv_mqa": AttentionKeqVMQA, "gqa": AttentionGQA,
             "mqa": AttentionMQA}


# ---------------------------------------------------------------------------
# The GPT model (identical in every script but for the attention class)
# ---------------------------------------------------------------------------


class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, config.n_inner,
                              bias=config.use_bias)
        self.c_proj = nn.Linear(config.n_inner, config.n_embd,
                                bias=config.use_bias)
        self.act = nn.GELU()
        self.dropout = nn.Dropout(config.resid_pdrop)

    def forward(self, x):
        return self.dropout(self.c_proj(self.act(self.c_fc(x))))


class TransformerBlock(nn.Module):
    def __init__(self, config, mode):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.attn = ATTENTION[mode](config)
        self.ln_2 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.mlp = MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT(nn.Module):
    """The authors' GPT (GPT, GPT_KV, GPT_QKV_KEqualsV, GPT_K, GPT_Q_GQA,
    GPT_QMQA, ...) with the attention of `mode`. The tied output layer is a
    method here (theirs is a lambda attribute): the same F.linear with the
    token embedding."""

    def __init__(self, config, mode):
        super().__init__()
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got "
                             f"{mode!r}")
        self.config = config
        self.mode = mode
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.n_positions, config.n_embd)
        self.drop = nn.Dropout(config.embd_pdrop)
        self.h = nn.ModuleList([TransformerBlock(config, mode)
                                for _ in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        if not config.tie_word_embeddings:
            self.head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0,
                            std=self.config.initializer_range)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0,
                            std=self.config.initializer_range)
        elif isinstance(module, nn.LayerNorm):
            nn.init.zeros_(module.bias)
            nn.init.ones_(module.weight)

    def lm_head(self, x):
        if self.config.tie_word_embeddings:
            return F.linear(x, self.wte.weight)
        return self.head(x)

    def forward(self, input_ids, labels=None):
        b, t = input_ids.size()
        assert t <= self.config.n_positions
        pos = torch.arange(0, t, dtype=torch.long,
                           device=input_ids.device).unsqueeze(0)
        x = self.drop(self.wte(input_ids) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        loss = None
        if labels is not None:
            shift_logits = logits[..., :-1, :].contiguous()
            shift_labels = labels[..., 1:].contiguous()
            loss = F.cross_entropy(
                shift_logits.view(-1, shift_logits.size(-1)),
                shift_labels.view(-1), ignore_index=-100)
        return logits, loss


# ---------------------------------------------------------------------------
# attnfuse in place of the authors' attention
# ---------------------------------------------------------------------------


def import_attnfuse_torch():
    """attnfuse.torch, from the environment or the build tree's package
    (build/python_packages)."""
    try:
        import attnfuse.torch as attnfuse_torch
    except ImportError:
        sys.path.insert(0, os.path.join(ROOT, "build", "python_packages"))
        import attnfuse.torch as attnfuse_torch
    return attnfuse_torch


class AttnFuseAttention(nn.Module):
    """attnfuse.torch.QKVAttention with the weights of one of the authors'
    attention modules (copied at construction), then the same output
    dropout: QKVAttention's o_proj is their c_proj."""

    def __init__(self, reference):
        super().__init__()
        attnfuse_torch = import_attnfuse_torch()
        weight = reference.c_proj.weight
        self.attention = attnfuse_torch.QKVAttention(
            reference.n_embd, reference.n_head, reference.kv_heads,
            head_dim=reference.head_dim, sharing=reference.sharing,
            bias=reference.c_proj.bias is not None, causal=True,
            device=weight.device, dtype=weight.dtype)
        sources = dict(reference.projections())
        sources["o_proj"] = (reference.c_proj.weight, reference.c_proj.bias)
        kept = {name for name, _ in self.attention.named_children()}
        if kept != set(sources):
            raise AssertionError(f"QKVAttention(sharing="
                                 f"{reference.sharing!r}) has {sorted(kept)}, "
                                 f"the authors' module {sorted(sources)}")
        with torch.no_grad():
            for name, (w, b) in sources.items():
                target = getattr(self.attention, name)
                target.weight.copy_(w)
                if b is not None:
                    target.bias.copy_(b)
        self.resid_dropout = nn.Dropout(reference.resid_dropout.p)

    def forward(self, x):
        return self.resid_dropout(self.attention(x))


def use_attnfuse(model):
    """Replaces every block's attention of `model` (in place) by
    AttnFuseAttention holding the same weights; returns the model."""
    for block in model.h:
        block.attn = AttnFuseAttention(block.attn)
    return model


def build_model(config, mode, impl, seed):
    """The authors' model for `mode` initialised from `seed`; impl
    "attnfuse" swaps its attention for attnfuse's (same weights)."""
    torch.manual_seed(seed)
    model = GPT(config, mode)
    if impl == "attnfuse":
        use_attnfuse(model)
    elif impl != "torch":
        raise ValueError(f"impl must be 'torch' or 'attnfuse', got {impl!r}")
    return model


# ---------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------


class CharCorpus:
    """Character-level tokens of a text: vocabulary = its characters in
    code-point order, size padded to a multiple of 64 (as the authors pad
    GPT-2's 50257 to 50304); the last `held_out` fraction is validation."""

    def __init__(self, path=CORPUS, held_out=0.1):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        self.chars = sorted(set(text))
        self.vocab_size = -(-len(self.chars) // 64) * 64
        index = {c: i for i, c in enumerate(self.chars)}
        data = torch.tensor([index[c] for c in text], dtype=torch.long)
        split = int(len(data) * (1 - held_out))
        self.train, self.val = data[:split], data[split:]

    def decode(self, ids):
        return "".join(self.chars[i] for i in ids if i < len(self.chars))


def train_batches(tokens, batch, length, seed):
    """Endless batches of `batch` random windows of `length` tokens, drawn
    by a generator of its own: {input_ids, labels} with labels = input_ids
    (the model shifts them)."""
    generator = torch.Generator().manual_seed(seed)
    while True:
        starts = torch.randint(0, len(tokens) - length, (batch,),
                               generator=generator)
        ids = torch.stack([tokens[s:s + length] for s in starts])
        yield {"input_ids": ids, "labels": ids}


def eval_batches(tokens, batch, length, count):
    """`count` fixed batches of windows spread evenly over `tokens`."""
    starts = torch.linspace(0, len(tokens) - length - 1,
                            batch * count).long()
    batches = []
    for i in range(count):
        ids = torch.stack([tokens[s:s + length]
                           for s in starts[i * batch:(i + 1) * batch]])
        batches.append({"input_ids": ids, "labels": ids})
    return batches


# ---------------------------------------------------------------------------
# Training (the authors' train() without DDP, autocast and logging)
# ---------------------------------------------------------------------------


def get_lr(step, config):
    """Linear warmup, then cosine decay from learning_rate to min_lr."""
    if step < config.warmup_steps:
        return config.learning_rate * (step + 1) / config.warmup_steps
    progress = (step - config.warmup_steps) / (config.total_steps
                                               - config.warmup_steps)
    progress = max(0.0, min(1.0, progress))
    cosine = 0.5 * (1.0 + math.cos(math.pi * progress))
    return config.min_lr + (config.learning_rate - config.min_lr) * cosine


@torch.no_grad()
def evaluate(model, batches):
    """Mean next-token loss over `batches`, dropout off."""
    was_training = model.training
    model.eval()
    total = count = 0
    for batch in batches:
        _, loss = model(batch["input_ids"], labels=batch["labels"])
        tokens = (batch["labels"][..., 1:] != -100).sum().item()
        total += loss.item() * tokens
        count += tokens
    if was_training:
        model.train()
    return total / count


def train(model, batches, config, eval_set=None, metrics=None, log=None):
    """Trains `model` as the authors' loop does: per step zero_grad,
    gradient_accumulation micro-batches (loss / accumulation, backward),
    clip_grad_norm_ (skip the update above 100), the scheduled learning
    rate, AdamW step. The global RNG (dropout) is seeded from config.seed
    first. Returns {loss: per step, lr, grad_norm, skipped, eval: [(step,
    loss, {metric: value})], seconds}. metrics(model) -> dict is evaluated
    with eval_set."""
    torch.manual_seed(config.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate,
                                  betas=(config.beta1, config.beta2),
                                  weight_decay=config.weight_decay)
    history = {"loss": [], "lr": [], "grad_norm": [], "skipped": [],
               "eval": []}

    def run_eval(step):
        if eval_set is None:
            return
        extra = metrics(model) if metrics is not None else {}
        history["eval"].append((step, evaluate(model, eval_set), extra))

    model.train()
    start = time.time()
    run_eval(0)
    step = 0
    while step < config.total_steps:
        optimizer.zero_grad()
        total = 0.0
        for _ in range(config.gradient_accumulation):
            batch = next(batches)
            _, loss = model(batch["input_ids"], labels=batch["labels"])
            loss = loss / config.gradient_accumulation
            loss.backward()
            total += loss.item()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(),
                                                   config.grad_clip).item()
        history["loss"].append(total)
        history["grad_norm"].append(grad_norm)
        history["grad_norm_max"] = max(grad_norm,
                                       history.get("grad_norm_max", 0.0))
        if grad_norm > 100.0:
            history["skipped"].append(len(history["loss"]) - 1)
            optimizer.zero_grad()
            continue
        lr = get_lr(step, config)
        for group in optimizer.param_groups:
            group["lr"] = lr
        history["lr"].append(lr)
        optimizer.step()
        step += 1
        if log and (step % 25 == 0 or step == 1):
            log(f"    step {step:4d}  loss {total:.4f}  lr {lr:.2e}  "
                f"grad {grad_norm:.2f}")
        if eval_set is not None and step % config.eval_interval == 0 \
                and step != config.total_steps:
            run_eval(step)
    run_eval(step)
    history["seconds"] = time.time() - start
    return history


def relative_differences(a, b):
    return [abs(x - y) / abs(y) for x, y in zip(a, b)]


def initial_loss(config, mode, impl, batch, seed):
    """The loss of the freshly initialised model on `batch`, dropout off
    (a forward pass only)."""
    model = build_model(config, mode, impl, seed).eval()
    with torch.no_grad():
        return model(batch["input_ids"], labels=batch["labels"])[1].item()


def no_backward(error):
    """Whether `error` is attnfuse.torch's 'this op has no backward'."""
    return isinstance(error, NotImplementedError) \
        and "has no backward" in str(error)


# ---------------------------------------------------------------------------
# Runs, the results table and the plot
# ---------------------------------------------------------------------------


def compare(mode, model_config, train_config, make_batches, eval_set,
            impls=("torch", "attnfuse"), metrics=None, log=print):
    """Trains `mode` with each implementation from the same initial weights
    on the same batches; returns {impl: history} plus, when both ran,
    "step0": the forward-only losses at initialisation and "agreement"."""
    result = {"mode": mode}
    if "torch" in impls and "attnfuse" in impls:
        batch = next(make_batches())
        losses = {impl: initial_loss(model_config, mode, impl, batch,
                                     train_config.seed)
                  for impl in ("torch", "attnfuse")}
        diff = abs(losses["attnfuse"] - losses["torch"]) / losses["torch"]
        result["step0"] = dict(losses, relative_difference=diff)
        log(f"  {mode}: initial loss torch {losses['torch']:.6f}, attnfuse "
            f"{losses['attnfuse']:.6f}, relative difference {diff:.1e}")
    for impl in impls:
        log(f"  {mode} / {impl}")
        model = build_model(model_config, mode, impl, train_config.seed)
        try:
            result[impl] = train(model, make_batches(), train_config,
                                 eval_set, metrics=metrics, log=log)
        except Exception as error:  # noqa: BLE001 - reported, then re-raised
            if impl == "attnfuse" and no_backward(error):
                result[impl] = {"error": str(error).split(":")[0]
                                + ": no backward yet"}
                log(f"    attnfuse has no backward yet: {error}")
                continue
            raise
        log(f"    {result[impl]['seconds']:.1f} s")
    if isinstance(result.get("attnfuse"), dict) and "loss" in result.get(
            "attnfuse", {}) and "torch" in result:
        diffs = relative_differences(result["attnfuse"]["loss"],
                                     result["torch"]["loss"])
        result["agreement"] = {
            "first_steps": AGREEMENT_STEPS,
            "max_first_steps": max(diffs[:AGREEMENT_STEPS]),
            "per_step_first": diffs[:AGREEMENT_STEPS],
            "max_all": max(diffs),
            "final": diffs[-1]}
        log(f"    loss agreement: max relative difference "
            f"{result['agreement']['max_first_steps']:.1e} over the first "
            f"{AGREEMENT_STEPS} steps, {result['agreement']['max_all']:.1e} "
            f"over all")
    return result


def smoothed(values, window=20):
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def plot_curves(path, series, title, ylabel="training loss (20-step mean)"):
    """Line plot of {label: values} to PNG: matplotlib when installed,
    otherwise the tiny writer of png_plot.py. The y axis leaves out the
    first tenth of the steps (the initial drop), where the curves do not
    differ."""
    n = max(len(v) for v in series.values())
    later = [v for values in series.values() for v in values[n // 10:]]
    ylim = (min(later), max(later)) if later else None
    if ylim:
        pad = 0.05 * (ylim[1] - ylim[0] or 1.0)
        ylim = (ylim[0] - pad, ylim[1] + pad)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.path.insert(0, HERE)
        import png_plot
        png_plot.line_plot(path, series, title=title, ylabel=ylabel,
                           ylim=ylim)
        return "png_plot.py (matplotlib is not installed)"
    fig, ax = plt.subplots(figsize=(8, 5))
    for label, values in series.items():
        ax.plot(range(len(values)), values, label=label,
                linestyle="--" if "attnfuse" in label else "-")
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if ylim:
        ax.set_ylim(*ylim)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return "matplotlib"


def env_prefix():
    """OMP_NUM_THREADS=N of this run, for the command line in the results."""
    threads = os.environ.get("OMP_NUM_THREADS")
    return f"OMP_NUM_THREADS={threads} " if threads else ""


def compact(results):
    """The results for JSON: per-step losses to 8 significant digits; of
    the learning rates (get_lr) and gradient norms only the largest norm."""
    def history(h):
        if not isinstance(h, dict) or "loss" not in h:
            return h
        h = {k: v for k, v in h.items() if k not in ("lr", "grad_norm")}
        h["loss"] = [float(f"{v:.8g}") for v in h["loss"]]
        return h
    return [{k: history(v) for k, v in r.items()} for r in results]


def fmt(value, digits=4):
    return "-" if value is None else f"{value:.{digits}f}"


def fmt_diff(value):
    return "-" if value is None else f"{value:.1e}"


def final_eval(history):
    if not isinstance(history, dict) or not history.get("eval"):
        return None
    return history["eval"][-1][1]


def final_train(history, last=20):
    if not isinstance(history, dict) or "loss" not in history:
        return None
    tail = history["loss"][-last:]
    return sum(tail) / len(tail)


def markdown(results, model_config, train_config, command, plotter,
             title, corpus_note):
    lines = [f"# {title}", "",
             f"Command: `{command}`", "",
             corpus_note, "",
             f"Model: {model_config.n_layer} layers, E {model_config.n_embd}, "
             f"{model_config.n_head} heads of "
             f"{model_config.n_embd // model_config.n_head}, GQA "
             f"{model_config.n_kv_groups} KV heads, MLP "
             f"{model_config.n_inner}, context {model_config.n_positions}, "
             f"vocabulary {model_config.vocab_size}, dropout "
             f"{model_config.resid_pdrop}. Training: "
             f"{train_config.total_steps} "
             f"steps of {train_config.micro_batch_size} x "
             f"{model_config.n_positions} tokens, AdamW lr "
             f"{train_config.learning_rate} (warmup "
             f"{train_config.warmup_steps}, cosine to {train_config.min_lr}), "
             f"betas ({train_config.beta1}, {train_config.beta2}), weight "
             f"decay {train_config.weight_decay}, clip "
             f"{train_config.grad_clip}, seed {train_config.seed}, float32 on "
             f"the CPU.", "",
             "| mode | paper | attention params | final val loss (torch) | "
             "final val loss (attnfuse) | train loss, last 20 steps (torch) | "
             "(attnfuse) | step-0 rel. diff | max rel. diff, first "
             f"{AGREEMENT_STEPS} steps | max rel. diff, all steps | "
             "seconds (torch / attnfuse) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        agreement = r.get("agreement", {})
        step0 = r.get("step0", {})
        t, a = r.get("torch"), r.get("attnfuse")
        seconds = " / ".join(
            f"{h['seconds']:.0f}" if isinstance(h, dict) and "seconds" in h
            else "-" for h in (t, a))
        lines.append(
            f"| {r['mode']} | {PAPER_NAMES[r['mode']]} | "
            f"{r.get('attention_params', '-')} | {fmt(final_eval(t))} | "
            f"{a['error'] if a and 'error' in a else fmt(final_eval(a))} | "
            f"{fmt(final_train(t))} | {fmt(final_train(a))} | "
            f"{fmt_diff(step0.get('relative_difference'))} | "
            f"{fmt_diff(agreement.get('max_first_steps'))} | "
            f"{fmt_diff(agreement.get('max_all'))} | {seconds} |")
    lines += ["", f"Plot: written with {plotter}.", ""]
    return "\n".join(lines)


def attention_params(model):
    return sum(p.numel() for block in model.h
               for p in block.attn.parameters())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", default=",".join(DEFAULT_MODES),
                        help=f"comma-separated, of {', '.join(MODES)}")
    parser.add_argument("--impl", default="both",
                        choices=("both", "torch", "attnfuse"))
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--context", type=int, default=128)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--embd", type=int, default=128)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--kv-groups", type=int, default=2)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--threads", type=int, default=None,
                        help="torch.set_num_threads (default: torch's)")
    parser.add_argument("--out", default=os.path.join(
        ROOT, "bench", "results",
        f"three-projections-mini-{time.strftime('%Y-%m-%d')}"),
        help="path prefix of the .json, .md and .png results ('' for none)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    modes = [m for m in args.modes.split(",") if m]
    for mode in modes:
        if mode not in MODES:
            parser.error(f"unknown mode {mode!r}")
    impls = ("torch", "attnfuse") if args.impl == "both" else (args.impl,)

    corpus = CharCorpus()
    model_config = ModelConfig(
        vocab_size=corpus.vocab_size, n_positions=args.context,
        n_layer=args.layers, n_embd=args.embd, n_head=args.heads,
        n_kv_groups=args.kv_groups, n_inner=4 * args.embd)
    train_config = TrainingConfig(
        total_steps=args.steps, micro_batch_size=args.batch,
        learning_rate=args.lr, min_lr=args.lr / 10,
        warmup_steps=args.warmup, seed=args.seed)
    eval_set = eval_batches(corpus.val, args.batch, args.context,
                            train_config.eval_batches)

    def make_batches():
        return train_batches(corpus.train, args.batch, args.context,
                             args.seed + 1)

    print(f"corpus: {len(corpus.train)} training and {len(corpus.val)} "
          f"validation characters, vocabulary {len(corpus.chars)} -> "
          f"{corpus.vocab_size}; torch threads {torch.get_num_threads()}")
    results = []
    for mode in modes:
        result = compare(mode, model_config, train_config, make_batches,
                         eval_set, impls)
        result["attention_params"] = attention_params(
            GPT(model_config, mode))
        results.append(result)

    given = argv if argv is not None else sys.argv[1:]
    command = (env_prefix()
               + "PYTHONPATH=build/python_packages .venv/bin/python "
               "examples/training/three_projections_mini.py"
               + (" " + " ".join(given) if given else ""))
    for r in results:
        print(f"{r['mode']:7s} val loss torch "
              f"{fmt(final_eval(r.get('torch')))}"
              f"  attnfuse {fmt(final_eval(r.get('attnfuse')))}")
    if not args.out:
        return results
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    series = {}
    for r in results:
        for impl in impls:
            h = r.get(impl)
            if isinstance(h, dict) and "loss" in h:
                series[f"{r['mode']} {impl}"] = smoothed(h["loss"])
    plotter = plot_curves(args.out + ".png", series,
                          "three projections, miniature: training loss")
    with open(args.out + ".json", "w") as f:
        json.dump({"command": command,
                   "model_config": dataclasses.asdict(model_config),
                   "train_config": dataclasses.asdict(train_config),
                   "torch": torch.__version__,
                   "results": compact(results)}, f)
    note = (f"Corpus: `examples/training/data/tinyshakespeare-150k.txt`, "
            f"{len(corpus.train)} training / {len(corpus.val)} validation "
            f"characters; validation loss on {train_config.eval_batches} "
            f"fixed batches of the held-out 10 %, dropout off.")
    with open(args.out + ".md", "w") as f:
        f.write(markdown(results, model_config, train_config, command,
                         plotter, "Three projections in miniature: "
                         "character-level LM", note))
    print(f"wrote {args.out}.{{json,md,png}}")
    return results


if __name__ == "__main__":
    main()
