"""tablestream: Kafka Streams and ksqlDB semantics on Apache Spark."""

__version__ = "0.1.0"
