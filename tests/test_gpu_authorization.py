"""The GPU API goes through the server's authorizer under its own resource name."""

from __future__ import annotations

import pytest
from tornado.httpclient import HTTPClientError


@pytest.fixture
def server_app_config() -> dict:
    return {"authorizer_class": "authorizers.DenyAirGpu"}


async def test_a_user_denied_the_gpu_resource_gets_403_and_nothing_is_sampled(
    jp_fetch, jp_serverapp
):
    for method, parts in (
        ("GET", ("air", "api", "gpu")),
        ("POST", ("air", "api", "gpu", "refresh")),
    ):
        with pytest.raises(HTTPClientError) as error:
            await jp_fetch(*parts, method=method, body=b"" if method == "POST" else None)
        assert error.value.code == 403
    gpu = jp_serverapp.web_app.settings["jupyter_air"]["gpu"]
    assert gpu.poll_loop.samples_taken == 0
    # other resources stay available to the same user
    assert (await jp_fetch("api", "status")).code == 200
