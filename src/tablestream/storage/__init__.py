"""Topics: the embedded Delta log (default) and Kafka, Kafka's partitioner, formats."""
