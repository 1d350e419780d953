"""HTML report: plots, coverage-coloured diagrams, sequence charts."""
