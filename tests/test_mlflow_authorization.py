"""The MLflow UI proxy and the runs API go through the server's authorizer."""

from __future__ import annotations

import pytest
from tornado.httpclient import HTTPClientError


@pytest.fixture
def server_env(mlflow_env) -> dict[str, str]:
    return mlflow_env


@pytest.fixture
def server_app_config() -> dict:
    return {"authorizer_class": "authorizers.DenyAirMlflow"}


@pytest.mark.parametrize(
    "parts",
    [
        ("air", "mlflow/"),
        ("air", "mlflow", "ajax-api", "2.0", "mlflow", "experiments", "search"),
        ("air", "api", "runs"),
        ("air", "api", "experiments"),
        ("air", "api", "mlflow"),
        ("air", "static", "mlflow-page.js"),
    ],
)
async def test_denied_users_get_403(jp_fetch, parts):
    with pytest.raises(HTTPClientError) as error:
        await jp_fetch(*parts, params={"notebook": "a.ipynb"})
    assert error.value.code == 403


async def test_the_gpu_panel_stays_available(jp_fetch):
    assert (await jp_fetch("air", "api", "gpu")).code == 200
