"""Command-line tools: `wsc-opt` (opt.py) and `wsc` (cli.py)."""
