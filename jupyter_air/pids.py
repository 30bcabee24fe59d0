"""Whether a process still exists: used to tell live holders (MLflow servers, GPU holds, jobs)
from ones left behind by a crash."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True
