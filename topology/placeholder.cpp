// Replaced by the topology implementation.
