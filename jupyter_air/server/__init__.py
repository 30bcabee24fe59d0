"""The jupyter-server extension: configuration, REST handlers and the services behind them."""
