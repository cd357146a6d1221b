"""The demo workspace and the simulations behind it, plus small in-memory runs for tests and doctests."""
