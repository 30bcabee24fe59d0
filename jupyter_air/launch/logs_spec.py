"""Where torch elastic writes each rank's stdout and stderr: fixed paths in the run folder
(``logs/rank-<n>/stdout.log``), which the kernel tails to stream them into the cell.

Elastic's ``DefaultLogsSpecs`` makes a new temporary folder per run and attempt; the kernel needs
to know the paths before the ranks start. Imports torch: only the agent loads this module.
"""

from __future__ import annotations

from torch.distributed.elastic.multiprocessing.api import LogsDest, LogsSpecs, Std

from .restarts import set_round_aside
from .rundir import RunDir


class RunDirLogsSpecs(LogsSpecs):
    """Every rank's stdout and stderr redirected to files of the run folder (never teed to the
    agent's own output)."""

    def __init__(self, run_dir: RunDir, nproc: int) -> None:
        super().__init__(log_dir=str(run_dir.path / "logs"), redirects=Std.ALL, tee=Std.NONE)
        self.run_dir = run_dir
        self.nproc = nproc

    @property
    def root_log_dir(self) -> str:
        return str(self.run_dir.path / "logs")

    def reify(self, envs: dict[int, dict[str, str]]) -> LogsDest:
        """Files named by each rank's global rank (its ``RANK``): one node's folder, or several
        nodes' folders brought together in the kernel's, never collide."""
        stdouts, stderrs, error_files = {}, {}, {}
        restart = max(int(e.get("TORCHELASTIC_RESTART_COUNT", 0)) for e in envs.values())
        if restart:
            ranks = [int(env.get("RANK", local)) for local, env in envs.items()]
            set_round_aside(self.run_dir, restart, ranks)
        for local_rank, env in envs.items():
            rank = int(env.get("RANK", local_rank))
            self.run_dir.log_dir(rank).mkdir(parents=True, exist_ok=True)
            stdouts[local_rank] = str(self.run_dir.stdout(rank))
            stderrs[local_rank] = str(self.run_dir.stderr(rank))
            error_file = str(self.run_dir.elastic_error_file(rank))
            error_files[local_rank] = error_file
            env["TORCHELASTIC_ERROR_FILE"] = error_file
        return LogsDest(stdouts, stderrs, {}, {}, error_files)
