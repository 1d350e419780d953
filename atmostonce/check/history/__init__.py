"""The history checkers: what a recorded history is made of, and the judges of every
always- and eventually-property over it and its effect ledger."""
