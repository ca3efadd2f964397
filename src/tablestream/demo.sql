-- The change-data-capture demo's application as ksqlDB statements
-- (tablestream demo --sql runs it on the demo's topics and data; see docs/sql.md).
-- The demo's JSON values name their fields in lower case: the columns are quoted
-- to keep that case, and so are the output columns.

-- Sources. The orders topic is read once, as a stream; the table of current orders
-- over the same topic is that stream as a table (the latest order per order id, a
-- cancellation deletes it).
CREATE STREAM orders (order_key BIGINT KEY, `order_id` BIGINT, `customer_id` BIGINT,
                      `product` STRING, `amount` DOUBLE)
  WITH (kafka_topic='orders', key_format='KAFKA', value_format='JSON');
CREATE SOURCE TABLE current_orders (order_key BIGINT PRIMARY KEY, `order_id` BIGINT,
                                    `customer_id` BIGINT, `product` STRING, `amount` DOUBLE)
  WITH (kafka_topic='orders', key_format='KAFKA', value_format='JSON');
CREATE TABLE customers (customer_key BIGINT PRIMARY KEY, `id` BIGINT, `name` STRING,
                        `city` STRING, `tier` STRING)
  WITH (kafka_topic='customers', key_format='KAFKA', value_format='JSON');
CREATE TABLE products (product_key STRING PRIMARY KEY, `name` STRING, `price` DOUBLE)
  WITH (kafka_topic='products', key_format='KAFKA', value_format='JSON');
CREATE TABLE order_lines (line_key STRING PRIMARY KEY, `order_id` BIGINT,
                          `product_id` STRING, `qty` BIGINT)
  WITH (kafka_topic='order-lines', key_format='KAFKA', value_format='JSON');

-- Revenue per customer: a correction or a cancellation retracts what it replaces.
CREATE TABLE revenue_per_customer
  WITH (kafka_topic='revenue-changes', wrap_single_value=false) AS
  SELECT `customer_id`, SUM(`amount`) AS revenue
  FROM current_orders
  GROUP BY `customer_id`;

-- Customers per tier: a deleted customer leaves its tier, an emptied tier is deleted.
CREATE TABLE customers_per_tier
  WITH (kafka_topic='customers-per-tier', wrap_single_value=false) AS
  SELECT `tier`, COUNT(*) AS customers
  FROM customers
  GROUP BY `tier`;

-- Each order with its customer as of the order's time (a stream-table join: the orders
-- are re-keyed by customer first; both topics have three partitions, as ksqlDB
-- requires of a join's sources).
CREATE STREAM enriched_orders WITH (kafka_topic='enriched-orders') AS
  SELECT o.`customer_id`, o.`order_id` AS `order_id`, c.`name` AS `customer`,
         c.`city` AS `city`, o.`amount` AS `amount`
  FROM orders o
  JOIN customers c ON o.`customer_id` = c.customer_key;

-- Every order line priced with its product (a foreign-key join: a price change
-- reaches every line of the product; a line whose product is gone keeps no price).
CREATE TABLE priced_lines WITH (kafka_topic='priced-lines') AS
  SELECT l.line_key, l.`order_id` AS `order_id`, p.`name` AS `product`, l.`qty` AS `qty`,
         l.`qty` * p.`price` AS `total`
  FROM order_lines l
  LEFT JOIN products p ON l.`product_id` = p.product_key;
