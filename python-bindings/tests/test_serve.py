"""attnfuse.serve: continuous batching over an AttnFusePagedCache. Requests
of different lengths arrive over time, wait for a slot and for pages, are
prefilled while others decode and free their pages when done; each one's
tokens are those transformers generates for it alone."""

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
if not hasattr(transformers, "ZayaConfig"):
    pytest.skip("this transformers has no ZAYA model (5.23 and later do)",
                allow_module_level=True)

from attnfuse import serve  # noqa: E402
from attnfuse.generation import AttnFusePagedCache  # noqa: E402


@pytest.fixture(scope="module")
def zaya():
    config, reference, swapped = serve._tiny_zaya(
        width=48, layers=2, heads=4, kv_heads=2, head_dim=8, vocab=32,
        seed=0)
    return config, reference, swapped


def alone(reference, request):
    with torch.no_grad():
        out = reference.generate(
            torch.tensor([request.prompt]),
            max_new_tokens=request.max_new_tokens,
            min_new_tokens=request.max_new_tokens, do_sample=False,
            pad_token_id=0)
    return out[0, len(request.prompt):].tolist()


def test_requests_arrive_wait_and_generate_their_own_tokens(zaya):
    _config, reference, swapped = zaya
    generator = torch.Generator().manual_seed(3)
    shapes = [(5, 6, 0), (11, 3, 0), (2, 9, 1), (8, 4, 2), (1, 5, 2),
              (14, 2, 3), (6, 7, 9)]  # (prompt, new tokens, arrival step)
    requests = [serve.Request(torch.randint(1, 32, (n,),
                                            generator=generator).tolist(),
                              new, arrival)
                for n, new, arrival in shapes]
    # 3 slots and 9 pages of 4 tokens: not every request fits at once.
    cache = AttnFusePagedCache(2, page_size=4, num_pages=9)
    server = serve.Server(serve.zaya_forward(swapped), cache, slots=3)
    finished = server.run(requests)
    assert sorted(map(id, finished)) == sorted(map(id, requests))
    for request in requests:
        assert request.tokens == alone(reference, request), request
    assert server.stats["max_in_flight"] == 3
    assert server.stats["decode_tokens"] + len(requests) == sum(
        new for _, new, _ in shapes)
    # Every page came back; requests waited for slots and pages.
    assert cache.free_pages == 9
    assert server.stats["steps"] > max(new for _, new, _ in shapes)


def test_a_request_that_cannot_fit_is_refused(zaya):
    _config, _reference, swapped = zaya
    cache = AttnFusePagedCache(2, page_size=4, num_pages=2)
    server = serve.Server(serve.zaya_forward(swapped), cache, slots=2)
    with pytest.raises(ValueError, match="need 3 pages of 4 tokens; the "
                       "pool has 2"):
        server.submit(serve.Request([1] * 6, 5))
    with pytest.raises(ValueError, match="max_new_tokens must be a positive"):
        serve.Request([1], 0)
    with pytest.raises(TypeError, match="cache must be an "
                       "AttnFusePagedCache"):
        serve.Server(serve.zaya_forward(swapped), object(), slots=2)


def test_command_line_reports_and_checks_tokens(capsys):
    code = serve.main(["--requests", "5", "--width", "64", "--heads", "4",
                       "--kv-heads", "2", "--head-dim", "16", "--vocab", "64",
                       "--prompt", "3,12", "--new-tokens", "2,6",
                       "--slots", "2", "--page-size", "4", "--check",
                       "--json"])
    assert code == 0
    import json
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["requests"] == 5 and report["token_mismatches"] == 0
    assert report["max_in_flight"] <= 2 and report["tokens_per_s"] > 0
