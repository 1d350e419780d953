"""The property registry: each id is named once in `PropertyId` and each name is a property."""

from __future__ import annotations

from atmostonce.spec.policy import EffectClass
from atmostonce.spec.properties import (
    PROPERTIES,
    RECORD_WITNESS_PREFIX,
    RECORDS_ALLOWED,
    PropertyId,
    record_witness_id,
)


def test_property_id_names_every_property_but_the_record_witnesses_after_its_id() -> None:
    named = {name: pid for name, pid in vars(PropertyId).items() if name.isupper()}
    assert all(name == pid.replace("-", "_") for name, pid in named.items())
    plain = {pid for pid in PROPERTIES if not pid.startswith(RECORD_WITNESS_PREFIX)}
    assert set(named.values()) == plain


def test_the_record_witnesses_are_the_allowed_records_of_each_class() -> None:
    witnesses = {pid for pid in PROPERTIES if pid.startswith(RECORD_WITNESS_PREFIX)}
    assert witnesses == {record_witness_id(effect, record)
                         for effect, records in RECORDS_ALLOWED.items() for record in records}
    assert record_witness_id(EffectClass.READ, RECORDS_ALLOWED[EffectClass.READ][0]) == (
        "S-RECORD-read-succeeded")
