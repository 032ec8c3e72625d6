"""Many ranks: per-rank tables, collectives matched across ranks, the straggler and exposed
communication."""
