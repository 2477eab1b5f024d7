"""attn.value_shift (with and without a state) and attn.value_shift_grad kernels on the emulator
through the runtime, against the definitions written here: v[b, t] = concat(current[b, t],
previous[b, t - 1]) with previous[b, -1] = state[b, 0] or zero; dcurrent[b, t] = dv[b, t, :C],
dprevious[b, t] = dv[b, t + 1, C:], zero for the last token. Copies: the results must be exact.
"""
import numpy as np
import pytest

import emulator
import reference


def model(c, grad, state):
    narrow, wide = f"tensor<?x?x{c}xbf16>", f"tensor<?x?x{2 * c}xbf16>"
    if grad:
        return f"""
func.func @shift_grad(%dv: {wide}) -> ({narrow}, {narrow}) {{
  %dc, %dp = attn.value_shift_grad %dv : ({wide}) -> ({narrow}, {narrow})
  return %dc, %dp : {narrow}, {narrow}
}}
"""
    if state:
        st = f"tensor<?x1x{c}xbf16>"
        return f"""
func.func @shift(%c: {narrow}, %p: {narrow}, %s: {st}) -> {wide} {{
  %v = attn.value_shift %c, %p state(%s) : ({narrow}, {narrow}, {st}) -> {wide}
  return %v : {wide}
}}
"""
    return f"""
func.func @shift(%c: {narrow}, %p: {narrow}) -> {wide} {{
  %v = attn.value_shift %c, %p : ({narrow}, {narrow}) -> {wide}
  return %v : {wide}
}}
"""


@pytest.mark.parametrize("batch,tokens,c", [(2, 37, 64), (1, 1, 128), (3, 5, 40)])
@pytest.mark.parametrize("state", [False, True])
def test_value_shift(batch, tokens, c, state):
    art = emulator.compile_model(model(c, False, state), f"vshift_c{c}{'_s' if state else ''}")
    (kernel,) = art.kernels
    rng = np.random.default_rng(c + tokens)
    cur, _ = emulator.bf16(rng.standard_normal((batch, tokens, c)))
    prev, _ = emulator.bf16(rng.standard_normal((batch, tokens, c)))
    st, _ = emulator.bf16(rng.standard_normal((batch, 1, c)))
    dev = emulator.Device()
    t = {"current": dev.upload(cur, "bf16"), "previous": dev.upload(prev, "bf16"),
         "result": dev.empty((batch, tokens, 2 * c), "bf16")}
    if state:
        t["state"] = dev.upload(st, "bf16")
    art.launch(kernel, t, B=batch, S=tokens, T=1)
    shifted = np.concatenate([st if state else np.zeros_like(st), prev[:, :-1]], axis=1)
    want = np.concatenate([cur, shifted], axis=2)
    assert np.array_equal(dev.download(t["result"]), want)


@pytest.mark.parametrize("batch,tokens,c", [(2, 37, 64), (1, 1, 128), (3, 5, 40)])
def test_value_shift_grad(batch, tokens, c):
    art = emulator.compile_model(model(c, True, False), f"vshift_grad_c{c}")
    (kernel,) = art.kernels
    rng = np.random.default_rng(c)
    dv, _ = emulator.bf16(rng.standard_normal((batch, tokens, 2 * c)))
    dev = emulator.Device()
    t = {"result_grad": dev.upload(dv, "bf16"),
         "current_grad": dev.empty((batch, tokens, c), "bf16"),
         "previous_grad": dev.empty((batch, tokens, c), "bf16")}
    art.launch(kernel, t, B=batch, S=tokens, T=1)
    assert np.array_equal(dev.download(t["current_grad"]), dv[..., :c])
    want = np.concatenate([dv[:, 1:, c:], np.zeros_like(dv[:, :1, c:])], axis=1)
    assert np.array_equal(dev.download(t["previous_grad"]), want)
