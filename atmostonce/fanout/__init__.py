"""Fanning a campaign's independent pieces (simulation seeds) out over processes on this
machine or over a Ray cluster, with the results merged back in order so they come out as a
serial run's. It knows nothing of what the pieces do: a campaign hands it a task and inputs."""
