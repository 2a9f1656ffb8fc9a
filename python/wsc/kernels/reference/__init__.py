"""A kernel checked against its author's own Python reference
(`KernelBuilder(..., check=function)`): its check, with which `wsc run
--check` compares its artifacts."""
