"""The typed contract between the jupyter-air server and its clients (the panels, ``air
--output json``, scripts): every payload of the REST API as a pydantic model, defined once.

One module per area — ``workloads`` (job runs), ``logs`` (their log pages), ``mlflow`` (status,
runs, experiments), ``gpu`` (the telemetry models) — and ``enums`` for every status list, which
imports nothing but the standard library (the job store uses it). Handlers build their answers
through these models, so an answer a model does not allow cannot leave the server; ``schema``
turns them into the JSON Schema and the TypeScript module the frontend imports
(``scripts/api_types.py`` writes both; a test fails when the committed files are stale).
"""
