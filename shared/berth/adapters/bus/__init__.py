"""The bus port's adapters: Kafka (aiokafka) and its in-memory twin."""
