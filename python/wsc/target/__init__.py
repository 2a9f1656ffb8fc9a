"""The hardware wsc compiles for, as plain facts (no MLIR, no driver)."""
