"""The CPU path takes any DLPack producer in host memory without a numpy
round trip, and refuses device memory with a message naming the argument."""

import numpy as np
import pytest

import attnfuse

LAYER = """func.func @f(%x: tensor<?x?x32xf32>, %wq: tensor<32x32xf32>,
                %wk: tensor<16x32xf32>, %wo: tensor<32x32xf32>)
    -> tensor<?x?x32xf32> {
  %y = attn.qkv_attention <kv> %x wq(%wq) wk(%wk) wo(%wo)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 8 : i64, causal}
      : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<16x32xf32>,
         tensor<32x32xf32>) -> tensor<?x?x32xf32>
  return %y : tensor<?x?x32xf32>
}
"""


class Producer:
    """A minimal DLPack producer (not a numpy array) over a numpy buffer,
    reporting the device it is told to."""

    def __init__(self, array, device=(1, 0)):
        self.array = array
        self.device = device
        self.exports = 0

    def __dlpack__(self, stream=None, **kwargs):
        self.exports += 1
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return self.device


@pytest.fixture(scope="module")
def layer():
    return attnfuse.compile(attnfuse.parse(LAYER), target="cpu")


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    shapes = [(2, 5, 32), (32, 32), (16, 32), (32, 32)]
    return [rng.standard_normal(s).astype(np.float32) * 0.3 for s in shapes]


def test_dlpack_producers_are_read_in_place(layer):
    arrays = inputs()
    producers = [Producer(a) for a in arrays]
    y = layer(*producers)
    # Once to check the argument, once for the call: no numpy copy between.
    assert all(p.exports == 2 for p in producers), [p.exports for p in producers]
    np.testing.assert_array_equal(y, layer(*arrays))


def test_device_memory_is_refused_naming_the_argument(layer):
    arrays = inputs()
    args = [Producer(a) for a in arrays]
    args[2] = Producer(arrays[2], device=(2, 1))  # kDLCUDA, device 1
    with pytest.raises(ValueError, match=r"argument #2 .*CUDA device memory "
                       r"\(device 1\).*host"):
        layer(*args)


def test_dlpack_dtype_and_shape_errors(layer):
    arrays = inputs()
    args = [Producer(a) for a in arrays]
    args[1] = Producer(arrays[1].astype(np.float64))
    with pytest.raises(ValueError, match=r"argument #1 .*is f32: expected a "
                       r"f32 tensor, got f64"):
        layer(*args)
    args[1] = Producer(arrays[1][:, :16].copy())
    with pytest.raises(ValueError, match=r"argument #1 .*needs shape "
                       r"\[32, 32\], got \[32, 16\]"):
        layer(*args)


def test_torch_tensors_in_and_out():
    torch = pytest.importorskip("torch")
    module = attnfuse.parse(LAYER.replace("f32", "bf16"))
    run = attnfuse.compile(module, target="cpu")
    arrays = inputs(1)
    tensors = [torch.from_numpy(a).to(torch.bfloat16) for a in arrays]
    y = run(*tensors)
    assert isinstance(y, torch.Tensor) and y.dtype == torch.bfloat16
    bits = [attnfuse.to_bf16(t.float().numpy()) for t in tensors]
    expected = attnfuse.from_bf16(run(*bits))
    np.testing.assert_array_equal(y.float().numpy(), expected)
    # A non-contiguous tensor is made contiguous (by torch), not misread.
    wide = torch.cat([tensors[0], tensors[0]], dim=2)[:, :, ::2]
    assert not wide.is_contiguous()
    y2 = run(wide, *tensors[1:])
    expected2 = attnfuse.from_bf16(run(attnfuse.to_bf16(
        wide.float().contiguous().numpy()), *bits[1:]))
    np.testing.assert_array_equal(y2.float().numpy(), expected2)
    if torch.cuda.is_available():
        with pytest.raises(ValueError, match="argument #0 .*CUDA"):
            run(tensors[0].cuda(), *tensors[1:])


def test_misaligned_producers_are_copied_or_refused(layer):
    """A buffer that does not start on its element size (compiled code may
    use aligned vector loads) is copied when the producer can clone itself,
    refused with the argument's name otherwise."""
    arrays = inputs()
    raw = np.zeros(arrays[0].nbytes + 1, np.uint8)
    misaligned = raw[1:].view(np.float32).reshape(arrays[0].shape)
    misaligned[...] = arrays[0]
    with pytest.raises(ValueError, match=r"argument #0 of 'f' is not aligned "
                       r"to its element size"):
        layer(Producer(misaligned, device=(1, 0)), *arrays[1:])
    torch = pytest.importorskip("torch")
    storage = bytearray(arrays[0].nbytes + 1)
    tensor = torch.frombuffer(storage, dtype=torch.float32, offset=1,
                              count=arrays[0].size).view(arrays[0].shape)
    tensor.copy_(torch.from_numpy(arrays[0]))
    assert tensor.data_ptr() % 4 != 0
    y = layer(tensor, *arrays[1:])
    np.testing.assert_array_equal(np.asarray(y), layer(*arrays))
