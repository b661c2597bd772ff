"""presentations."""
