"""Examples: scenario files for `atmostonce simulate` and `my_executor`, a skeleton executor;
a package so that `--executor examples.my_executor:factory` loads from the repository root."""
