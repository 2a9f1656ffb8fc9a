"""The back-to-back product O = f16(Q K^T) V (examples/back_to_back.py): its
check, with which `wsc run --check` compares its artifacts."""
