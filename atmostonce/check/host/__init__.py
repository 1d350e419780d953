"""The one host: carries out an executor's commands in order and judges the protocol's own
rules once (`host`), for every environment that drives an executor (the lockstep, the probes,
the simulator's server, the runtime's server), each of which supplies only its effects
(`effects`); the rules' judgements are pure functions (`rules`)."""
