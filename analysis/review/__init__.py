"""Team review: reviewers' tags and comments on error items, their store, and their analysis."""
