"""The demo: sample events through the real pipeline on the local stack, verified end to end."""
