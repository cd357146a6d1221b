"""Convention reconciliation: one run scored under several conventions, side by side, and why they differ."""
