"""Neo4j access: driver lifecycle, managed transactions, locks, named Cypher and the schema."""
