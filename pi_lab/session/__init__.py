"""The session engine: pi-compatible session trees (reading, writing, projecting)."""
