"""The embedded MLflow tracking server of one jupyter-air data folder.

One server per data folder, whoever needs it: a Jupyter server with jupyter-air, a workload's
supervisor, ``air run`` in a plain shell. It listens on 127.0.0.1 only and answers only requests
that carry the folder's bearer token (``MLFLOW_TRACKING_TOKEN``, which MLflow's client sends as
``Authorization: Bearer``). Its address and token are kept in the data folder, its port stays the
same across restarts when it is free, and it runs for as long as one of its users holds a lease:
a Jupyter server restarted while a job runs leaves the job's tracking server up.

- ``records``: the files in ``<data>/mlflow/`` (endpoint, status, leases) and how to read them.
- ``control``: start it or join the running one (``ensure_running``), stop it when unused.
- ``guard``: the process that runs ``mlflow server``, restarts it and stops it with its users.
- ``app``: MLflow's ASGI app behind the token check (the ``jupyter-air`` MLflow app plugin).

No Jupyter imports: supervisors and the CLI use it as the server does.
"""
