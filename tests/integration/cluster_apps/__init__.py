"""Applications the cluster tests run in a process of their own (the test process keeps
its one local SparkSession): ``python app.py demo|sums MASTER HOME``."""
