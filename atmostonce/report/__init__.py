"""The HTML report `--report FILE.html` writes: the verdict, each layer's figures, plots, the
component diagrams coloured by how often each layer took each transition, and every
counterexample as a message sequence chart. Needs the `report` extra (Jinja2, matplotlib)."""
