#!/usr/bin/env bash
# One-command, idempotent setup of a development machine (Debian, Python 3.11):
#   - OS packages when missing: a JDK 17 (Kafka, HBase, Schema Registry, Spark), Maven
#     (resolves Kafka and HBase and builds the Schema Registry from Maven Central),
#     PostgreSQL server (ledger), Redis (the CeleryExecutor's broker), python3-venv
#   - .venv in the repository root, the provider editable with dev extras and the dev-only
#     devtools/ (local stack, demo) editable, both pinned by constraints.txt
#   - Apache Kafka and Apache HBase jars, the Schema Registry's runner (Apicurio Registry
#     2.4.2.Final packaged as a Quarkus application), Spark's Kafka connector (the
#     benchmark's spark_native peers) and Apache Hadoop YARN 3.5.0 (`eo-stack up --yarn`),
#     pinned by the poms under
#     devtools/eo_devtools/stack/jvm/, copied or built into ~/.cache/airflow-provider-eo/jvm
# Re-installs Python packages only when a pyproject.toml or constraints.txt changed since the
# last install (hash stamp in .venv), and runs Maven only when a pom changed, so a second
# run takes seconds, changes nothing and needs no network.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
STAMP=.venv/.eo-install-stamp

missing=()
java_major="$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1 || true)"
if [ -z "$java_major" ] || [ "$java_major" -lt 17 ]; then missing+=(openjdk-17-jdk-headless); fi
command -v mvn >/dev/null 2>&1 || missing+=(maven)
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || missing+=(postgresql)
# the broker of the stack's CeleryExecutor (eo-stack up --executor celery) and its tests
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
# the browser tests drive Debian's Chromium through its own chromedriver (no browser download)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
# the stack's KDC (eo-stack up --kerberos) and its clients; the headers and the GSSAPI SASL
# plugin build and run the pinned `kerberos` sdist behind pure-sasl's GSSAPI mechanism
[ -x /usr/sbin/krb5kdc ] || missing+=(krb5-kdc)
[ -x /usr/sbin/kadmin.local ] || missing+=(krb5-admin-server)
command -v kinit >/dev/null 2>&1 || missing+=(krb5-user)
command -v krb5-config >/dev/null 2>&1 || missing+=(libkrb5-dev)
compgen -G "/usr/lib/*/sasl2/libgssapiv2.so*" >/dev/null || missing+=(libsasl2-modules-gssapi-mit)
if [ ! -x .venv/bin/python ] && ! "$PYTHON" -c "import ensurepip, venv" >/dev/null 2>&1; then
  missing+=(python3-venv)
fi
if [ "${#missing[@]}" -gt 0 ]; then
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "setup: need root or sudo to apt-get install ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
  fi
  echo "setup: installing OS packages: ${missing[*]}"
  "${sudo[@]}" apt-get update
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
fi

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $PYTHON"
  "$PYTHON" -m venv .venv
fi

wanted="$(cat pyproject.toml devtools/pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$STAMP" 2>/dev/null || true)" != "$wanted" ]; then
  echo "setup: installing Python packages (a pyproject.toml or constraints.txt changed)"
  .venv/bin/python -m pip install --quiet -c constraints.txt -e '.[dev]' -e ./devtools
  # apache-airflow-providers-apache-spark pulls pyspark-client (4.2), which owns many of
  # pyspark's files under pyspark/ (a hundred differ): which copy is on disk would depend on
  # the install order. Reinstalling pyspark last makes every one pyspark's; checked below.
  pyspark_pin="$(grep -E '^pyspark==' constraints.txt)"
  .venv/bin/python -m pip install --quiet --force-reinstall --no-deps "$pyspark_pin"
  echo "$wanted" > "$STAMP"
fi
# The editable install keeps its metadata in .venv; an in-tree egg-info left by a
# build would make Python (run from the repo root) see the package twice.
rm -rf airflow_provider_eo.egg-info devtools/airflow_provider_eo_devtools.egg-info

# Apache Kafka, Apache HBase, Spark's Kafka connector and YARN from Maven Central, and the Schema
# Registry built from it (a no-op once cached; Maven runs offline first).
.venv/bin/python -m eo_devtools.stack.jvm_artifacts
# The Schema Registry runner's class-data archive (made once per build and JDK: starts in seconds).
.venv/bin/python -m eo_devtools.stack.schema_registry

expected="${pyspark_pin:-$(grep -E '^pyspark==' constraints.txt)}"
actual="pyspark==$(.venv/bin/python -c 'import pyspark; print(pyspark.__version__)')"
if [ "$actual" != "$expected" ]; then
  echo "setup: $actual importable but constraints.txt pins $expected; delete $STAMP and re-run" >&2
  exit 1
fi
# Every file under pyspark/ as pyspark's RECORD says (tests/unit/test_pyspark_files.py too).
if ! .venv/bin/python -m eo_devtools.pyspark_files; then
  echo "setup: pyspark's files are not its own; delete $STAMP and re-run" >&2
  exit 1
fi
echo "setup: ready (.venv, $actual, java $(java -version 2>&1 | head -1 | cut -d'"' -f2))"
