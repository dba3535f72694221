"""Credential files: found in the connections, checked, renamed for shipping (real files)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from airflow_provider_eo.errors import ConfigError
from airflow_provider_eo.operators.submission_files import refuse_unreadable_credentials
from airflow_provider_eo.spark.driver.credential_files import (
    CredentialFile,
    credential_files,
    describe,
    files_entries,
    shippable,
    shipped_environment,
    unreadable_files,
)


def connections(tmp_path: Path) -> dict[str, str]:
    kafka_extra = {"bootstrap.servers": "b:9093", "ssl.ca.location": str(tmp_path / "ca.pem")}
    keytab = str(tmp_path / "w.keytab")
    hbase_extra = json.dumps({"auth": "kerberos", "kerberos_keytab": keytab, "ssl_ca": ""})
    return {
        "AIRFLOW_CONN_EO_KAFKA": json.dumps({"conn_type": "kafka", "extra": kafka_extra}),
        "AIRFLOW_CONN_EO_HBASE": json.dumps({"conn_type": "hbase", "host": "t", "extra": hbase_extra}),
        "AIRFLOW_CONN_EO_LEDGER": "postgresql://eo:pw@pg/eo?sslrootcert=/ca.pem",  # URI: none found
        "EO_PIPELINE_SPEC": json.dumps({"extra": {"ssl_ca": "/not/a/connection"}}),
    }


def test_files_named_by_json_connections_are_found_in_order(tmp_path: Path) -> None:
    assert credential_files(connections(tmp_path)) == [
        CredentialFile("AIRFLOW_CONN_EO_HBASE", "kerberos_keytab", str(tmp_path / "w.keytab")),
        CredentialFile("AIRFLOW_CONN_EO_KAFKA", "ssl.ca.location", str(tmp_path / "ca.pem")),
    ]


def test_missing_and_non_file_paths_are_named_with_their_connection_and_key(tmp_path: Path) -> None:
    (tmp_path / "ca.pem").write_text("CA")
    (tmp_path / "w.keytab").mkdir()
    assert unreadable_files(credential_files(connections(tmp_path))) == [
        f"connection 'eo_hbase': extra.kerberos_keytab = '{tmp_path / 'w.keytab'}': not a regular file"
    ]
    (tmp_path / "w.keytab").rmdir()
    assert unreadable_files(credential_files(connections(tmp_path))) == [
        f"connection 'eo_hbase': extra.kerberos_keytab = '{tmp_path / 'w.keytab'}': no such file"
    ]


def test_shipping_renames_each_file_in_its_connection_and_nothing_else(tmp_path: Path) -> None:
    env = connections(tmp_path)
    files = credential_files(env)
    shipped = shipped_environment(env, files)
    assert json.loads(shipped["AIRFLOW_CONN_EO_KAFKA"])["extra"] == {
        "bootstrap.servers": "b:9093", "ssl.ca.location": "eo-eo_kafka-ssl_ca_location"
    }  # fmt: skip
    hbase = json.loads(shipped["AIRFLOW_CONN_EO_HBASE"])
    assert (hbase["host"], hbase["extra"]) == (
        "t", {"auth": "kerberos", "kerberos_keytab": "eo-eo_hbase-kerberos_keytab", "ssl_ca": ""}
    )  # fmt: skip
    assert {k: shipped[k] for k in ("AIRFLOW_CONN_EO_LEDGER", "EO_PIPELINE_SPEC")} == {
        k: env[k] for k in ("AIRFLOW_CONN_EO_LEDGER", "EO_PIPELINE_SPEC")
    }
    assert files_entries(files) == [
        f"{tmp_path / 'w.keytab'}#eo-eo_hbase-kerberos_keytab",
        f"{tmp_path / 'ca.pem'}#eo-eo_kafka-ssl_ca_location",
    ]
    assert shipped_environment(env, []) == env


def test_the_driver_describes_a_shipped_file_by_mode_and_digest_never_content(tmp_path: Path) -> None:
    keytab = tmp_path / "eo-eo_hbase-kerberos_keytab"
    keytab.touch(mode=0o600)
    keytab.write_bytes(b"\x05\x02secret-key-bytes")
    file = CredentialFile("AIRFLOW_CONN_EO_HBASE", "kerberos_keytab", keytab.name)
    digest = hashlib.sha256(b"\x05\x02secret-key-bytes").hexdigest()[:16]
    assert describe(file, tmp_path) == (
        f"eo_hbase.kerberos_keytab=eo-eo_hbase-kerberos_keytab mode=0600 sha256={digest}"
    )
    gone = CredentialFile("AIRFLOW_CONN_EO_HBASE", "ssl_ca", "eo-eo_hbase-ssl_ca")
    assert describe(gone, tmp_path) == "eo_hbase.ssl_ca=eo-eo_hbase-ssl_ca missing (FileNotFoundError)"


def test_values_that_name_no_file_and_form_fields(tmp_path: Path) -> None:
    """librdkafka's ``probe`` and libpq's ``system`` are no files; the HBase form's prefixed
    fields are, and ship under the plain setting's name."""
    keytab = tmp_path / "w.keytab"
    env = {
        "AIRFLOW_CONN_EO_KAFKA": json.dumps({"conn_type": "kafka", "extra": {"ssl.ca.location": "probe"}}),
        "AIRFLOW_CONN_EO_LEDGER": json.dumps({"conn_type": "postgres", "extra": {"sslrootcert": "system"}}),
        "AIRFLOW_CONN_EO_HBASE": json.dumps({"extra": {"extra__eo_hbase__kerberos_keytab": str(keytab)}}),
    }
    files = credential_files(env)
    assert files == [CredentialFile("AIRFLOW_CONN_EO_HBASE", "extra__eo_hbase__kerberos_keytab", str(keytab))]
    assert json.loads(shipped_environment(env, files)["AIRFLOW_CONN_EO_HBASE"])["extra"] == {
        "extra__eo_hbase__kerberos_keytab": "eo-eo_hbase-kerberos_keytab"
    }


def test_a_ca_directory_is_readable_but_not_shipped(tmp_path: Path) -> None:
    (tmp_path / "certs").mkdir()
    (tmp_path / "key.pem").write_text("KEY")
    files = [
        CredentialFile("AIRFLOW_CONN_EO_KAFKA", "ssl.ca.location", str(tmp_path / "certs")),
        CredentialFile("AIRFLOW_CONN_EO_KAFKA", "ssl.key.location", str(tmp_path / "key.pem")),
        CredentialFile("AIRFLOW_CONN_EO_LEDGER", "sslrootcert", str(tmp_path / "certs")),
    ]
    assert unreadable_files(files) == [
        f"connection 'eo_ledger': extra.sslrootcert = '{tmp_path / 'certs'}': not a regular file"
    ]
    assert shippable(files) == [files[1]]


def test_client_mode_on_a_cluster_checks_only_what_the_driver_opens(tmp_path: Path) -> None:
    """Local master or cluster deploy mode: every file must be here; client mode on a cluster
    master: only the ledger's (the executors read the others on their nodes)."""
    env = {
        "AIRFLOW_CONN_EO_KAFKA": json.dumps({"extra": {"ssl.ca.location": str(tmp_path / "kafka-ca.pem")}}),
        "AIRFLOW_CONN_EO_LEDGER": json.dumps({"extra": {"sslrootcert": str(tmp_path / "pg-ca.pem")}}),
    }
    kafka = f"connection 'eo_kafka': extra.ssl.ca.location = '{tmp_path / 'kafka-ca.pem'}': no such file"
    ledger = f"connection 'eo_ledger': extra.sslrootcert = '{tmp_path / 'pg-ca.pem'}': no such file"
    for master, deploy_mode, named in [
        ("local[2]", "client", f"{kafka}; {ledger}"),
        ("yarn", "cluster", f"{kafka}; {ledger}"),
        ("spark://m:7077", "client", ledger),
    ]:
        with pytest.raises(ConfigError) as info:
            refuse_unreadable_credentials(
                "p", env, master=master, deploy_mode=deploy_mode, ledger_conn_id="eo_ledger"
            )
        assert str(info.value) == f"pipeline p: {named}; nothing was submitted"
    (tmp_path / "pg-ca.pem").write_text("CA")
    assert (
        refuse_unreadable_credentials(
            "p", env, master="yarn", deploy_mode="client", ledger_conn_id="eo_ledger"
        )
        is None
    )
