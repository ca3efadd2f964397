"""KIP-213's foreign-key join in task kernels: the subscription layout shared by both
layouts (:mod:`.subscriptions`), Kafka's layout with a shuffle by foreign key
(:mod:`.shuffled`), and the layout whose right table every state partition keeps in
full (:mod:`.replicated`)."""
