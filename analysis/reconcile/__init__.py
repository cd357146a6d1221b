"""Convention reconciliation: one run scored under several conventions, side by side, and why they differ.

`analysis.reconcile.core` computes it (`reconcile`, `Reconciliation`); `analysis.reconcile.figures` draws it
(metrics per convention, causes of flipped turns, the responsible slots)."""
