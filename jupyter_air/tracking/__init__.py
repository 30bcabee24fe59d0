"""MLflow run ownership for jupyter-air: experiment resolution, managed runs, links and the run
display shown in cell outputs."""
