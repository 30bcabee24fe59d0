"""The job store's SQLite schema and its migrations: ``PRAGMA user_version`` says a store's
version, and ``SCHEMA_MIGRATIONS[n]`` takes it from version n to n + 1.
"""

from __future__ import annotations

SCHEMA_VERSION = 10


_SCHEMA = [
    """CREATE TABLE jobs (
        id TEXT PRIMARY KEY,
        status TEXT NOT NULL,
        reason TEXT,
        experiment_name TEXT NOT NULL,
        experiment_id TEXT,
        run_name TEXT NOT NULL,
        command TEXT NOT NULL,
        compute TEXT NOT NULL,            -- JSON: num_accelerators, accelerator_type, num_nodes
        gpus TEXT NOT NULL DEFAULT '[]',  -- JSON: per node, the GPU indices it gets
        max_retries INTEGER NOT NULL,
        timeout_minutes REAL,
        working_dir TEXT,
        spec TEXT NOT NULL,               -- JSON of the validated spec
        spec_yaml TEXT,                   -- the file as submitted
        spec_path TEXT,
        source TEXT,                      -- 'cli', 'magic', ...
        notebook TEXT,
        user TEXT,
        tracking_uri TEXT,
        server_url TEXT,                  -- the Jupyter server it was submitted through
        mlflow_ui TEXT,
        submitted_at REAL NOT NULL,
        started_at REAL,
        ended_at REAL,
        supervisor_pid INTEGER,
        supervisor_started REAL,          -- the supervisor's process creation time
        cancel_requested REAL,
        logs_purged_at REAL
    )""",
    "CREATE INDEX jobs_submitted ON jobs (submitted_at DESC)",
    "CREATE INDEX jobs_status ON jobs (status, submitted_at DESC)",
    "CREATE INDEX jobs_experiment ON jobs (experiment_name, submitted_at DESC)",
    """CREATE TABLE attempts (
        job_id TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
        attempt INTEGER NOT NULL,
        status TEXT NOT NULL,
        reason TEXT,
        exit_code INTEGER,
        signal INTEGER,
        timed_out INTEGER NOT NULL DEFAULT 0,
        mlflow_run_id TEXT,
        started_at REAL NOT NULL,
        ended_at REAL,
        PRIMARY KEY (job_id, attempt)
    )""",
    """CREATE TABLE nodes (
        job_id TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        node INTEGER NOT NULL,
        pid INTEGER,
        started REAL,                     -- process creation time
        gpus TEXT,                        -- CUDA_VISIBLE_DEVICES it got
        exit_code INTEGER,
        signal INTEGER,
        ended_at REAL,
        PRIMARY KEY (job_id, attempt, node),
        FOREIGN KEY (job_id, attempt) REFERENCES attempts (job_id, attempt) ON DELETE CASCADE
    )""",
    """CREATE TABLE log_files (
        job_id TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        node INTEGER NOT NULL,
        path TEXT NOT NULL,
        bytes INTEGER NOT NULL DEFAULT 0,
        lines INTEGER NOT NULL DEFAULT 0,
        errors INTEGER NOT NULL DEFAULT 0,
        warnings INTEGER NOT NULL DEFAULT 0,
        first_t TEXT,
        last_t TEXT,
        updated_at REAL,
        uploaded_at REAL,
        complete INTEGER NOT NULL DEFAULT 0,  -- the writer closed it: no more lines will come
        PRIMARY KEY (job_id, attempt, node),
        FOREIGN KEY (job_id) REFERENCES jobs (id) ON DELETE CASCADE
    )""",
]

# SCHEMA_MIGRATIONS[n] takes a store from version n to n + 1 (a new store gets _SCHEMA, then
# every migration from version 1)
SCHEMA_MIGRATIONS: dict[int, list[str]] = {
    1: [
        # 'embedded' (the data folder's own MLflow server) or 'external'
        "ALTER TABLE jobs ADD COLUMN tracking TEXT",
        # JSON list of {t, message}: what went wrong around the job (MLflow unreachable, …)
        "ALTER TABLE jobs ADD COLUMN warnings TEXT NOT NULL DEFAULT '[]'",
        # when every MLflow run of the ended job was seen ended (and its logs uploaded)
        "ALTER TABLE jobs ADD COLUMN runs_closed_at REAL",
        "CREATE INDEX jobs_runs_open ON jobs (runs_closed_at, ended_at)",
    ],
    2: [
        # where the nodes ran: 'local' or 'ray', and the cluster's address
        "ALTER TABLE jobs ADD COLUMN backend TEXT",
        "ALTER TABLE jobs ADD COLUMN cluster TEXT",
        "ALTER TABLE attempts ADD COLUMN backend TEXT",
        "ALTER TABLE attempts ADD COLUMN hosts TEXT",  # per node, comma-separated
        "ALTER TABLE nodes ADD COLUMN host TEXT",
        "ALTER TABLE nodes ADD COLUMN machine TEXT",  # the backend's name for it (Ray node id)
    ],
    3: [
        # the supervisor's heartbeat (workloads/heartbeat.py): reads tell a stale job run
        # from the times alone
        "ALTER TABLE jobs ADD COLUMN supervisor_seen_at REAL",
    ],
    4: [
        # air run --idempotency-key: the same key twice is the same job run (NULLs differ)
        "ALTER TABLE jobs ADD COLUMN idempotency_key TEXT",
        "CREATE UNIQUE INDEX jobs_idempotency_key ON jobs (idempotency_key)",
    ],
    5: [
        # air schedule: workloads run on a cron schedule by the Jupyter server
        """CREATE TABLE schedules (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            cron TEXT NOT NULL,
            timezone TEXT NOT NULL,
            overlap TEXT NOT NULL DEFAULT 'skip',     -- skip | queue | allow
            catch_up TEXT NOT NULL DEFAULT 'latest',  -- latest | none
            paused INTEGER NOT NULL DEFAULT 0,
            spec_yaml TEXT NOT NULL,                  -- the workload file as submitted
            spec_path TEXT,
            user TEXT,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            last_slot INTEGER,                        -- the latest slot fired or passed
            queued_slot INTEGER                       -- overlap queue: the slot waiting
        )""",
        # one row per slot: the unique key is what makes two servers fire a slot once
        # (a trigger's slot is NULL: NULLs differ)
        """CREATE TABLE schedule_firings (
            schedule_id TEXT NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
            slot INTEGER,
            fired_at REAL NOT NULL,
            outcome TEXT NOT NULL,                    -- submitted | skipped | queued | failed
            job_id TEXT,
            reason TEXT,
            UNIQUE (schedule_id, slot)
        )""",
        "CREATE INDEX schedule_firings_time ON schedule_firings (schedule_id, fired_at DESC)",
        "ALTER TABLE jobs ADD COLUMN schedule_id TEXT",
        "ALTER TABLE jobs ADD COLUMN schedule_name TEXT",
        "CREATE INDEX jobs_schedule ON jobs (schedule_id, submitted_at DESC)",
    ],
    6: [
        # the MLflow run page's logs (air/api/runs/{run}/logs): from a run to its attempt
        "CREATE INDEX attempts_mlflow_run ON attempts (mlflow_run_id)",
    ],
    7: [
        # JSON: the checkpoint an attempt started from, what it saved, torch elastic's restarts
        # (workloads/checkpoints.py)
        "ALTER TABLE attempts ADD COLUMN checkpoint TEXT",
    ],
    8: [
        # JSON while the job run is QUEUED: its place in its cluster's line and why it waits
        # ({position, ahead, reason, since, cluster}); NULL otherwise
        "ALTER TABLE jobs ADD COLUMN queue TEXT",
    ],
    9: [
        # air share job: the users (besides its owner) who may see a job run and read its logs
        # through the owner's Jupyter server (docs/teams.md)
        """CREATE TABLE job_grants (
            job_id TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
            user TEXT NOT NULL,
            granted_at REAL NOT NULL,
            PRIMARY KEY (job_id, user)
        )""",
        "CREATE INDEX job_grants_user ON job_grants (user, job_id)",
    ],
}
