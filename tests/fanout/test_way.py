"""`--processes N` and `--ray ADDRESS|local` parse into one way of running a campaign: serial
unless told otherwise, a process count only where it means something, never an empty
address."""

from __future__ import annotations

import argparse

import pytest

from atmostonce.fanout.way import LOCAL, SERIAL, Way, add_arguments, chosen, way
from atmostonce.spec.errors import SpecError


def parsed(*argv: str) -> Way:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return chosen(parser.parse_args(argv))


def test_nothing_given_is_serial_and_one_process_is_serial_too() -> None:
    assert parsed() == SERIAL
    assert SERIAL.serial
    assert parsed("--processes", "1").serial
    assert SERIAL.workers == 1


def test_processes_name_how_many_run_at_once() -> None:
    two = parsed("--processes", "2")
    assert not two.serial
    assert two.workers == 2
    assert two.describe() == "2 processes"


def test_a_local_ray_takes_a_cpu_count_and_a_cluster_does_not() -> None:
    local = parsed("--ray", "local", "--processes", "3")
    assert local == Way(3, LOCAL)
    assert not local.serial
    assert local.workers == 3
    assert local.describe() == "a local Ray (3 CPUs)"
    cluster = parsed("--ray", " ray://head:10001 ")
    assert cluster == Way(None, "ray://head:10001")
    assert cluster.describe() == "the Ray cluster at ray://head:10001"
    with pytest.raises(SpecError, match="give --processes only with --ray local"):
        way(2, "auto")


@pytest.mark.parametrize("address", ["", "   "])
def test_an_empty_address_is_refused(address: str) -> None:
    with pytest.raises(SpecError, match="--ray expects an address"):
        way(None, address)


def test_a_process_count_below_one_is_refused() -> None:
    with pytest.raises(SpecError, match="--processes expects at least 1, got 0"):
        way(0)
