"""Python's start-up hook on the PYTHONPATH of every workload node: each line a Python process
prints reaches the node's log in one write.

The ranks of a node (torchrun's, or any processes the command starts) share the node's output
pipe. Unbuffered (``PYTHONUNBUFFERED=1``, which the nodes get so that output streams), ``print``
writes its text and its newline as two writes, and another rank's line lands between them: two
lines joined into one, then an empty one. Line buffering writes a whole line at once (a pipe
write of up to 4 KiB is never split) and still streams each line as it is printed.

Then the ``sitecustomize`` this one hides (a virtual environment's or a site's), if there is
one, runs as it would have.
"""

import importlib.machinery
import importlib.util
import os
import sys


def _whole_lines() -> None:
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is None:
            continue
        try:
            reconfigure(line_buffering=True, write_through=False)
        except (ValueError, OSError):  # a closed or replaced stream
            continue


def _the_hidden_one() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", sys.path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module  # what ``import sitecustomize`` gives from now on
    spec.loader.exec_module(module)


if __name__ == "sitecustomize":
    _whole_lines()
    _the_hidden_one()
