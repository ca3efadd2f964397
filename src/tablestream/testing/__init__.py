"""Test helpers: a real Kafka broker for integration tests and local development."""
