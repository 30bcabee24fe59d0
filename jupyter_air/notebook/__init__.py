"""What runs in a notebook's kernel and nowhere else: the IPython extension (``%load_ext
jupyter_air``, ipython.py), the ``%%air_run`` / ``%air_run`` magics (magics.py) and the live
widget a running call shows in its cell (live_widget.py). Importing it imports nothing."""
