"""Record formats: decoders from a Kafka record's key or value bytes to plain Python values."""
