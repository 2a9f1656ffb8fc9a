"""Attention forward, O = softmax(Q K^T / sqrt(D)) V (examples/attention.py):
its check, with which `wsc run --check` compares its artifacts."""
