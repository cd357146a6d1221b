"""Few-shot joint NLU (FewJoint): episodes and per-seed predictions -> query table -> metrics, views, figures."""
