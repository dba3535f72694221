"""What the installed librdkafka was built with, checked against what a Kafka connection needs.

librdkafka reports its build options in the configuration property ``builtin.features``; setting
that property to a feature the build lacks fails at once, in the client's constructor, before
anything connects (librdkafka's documented way to check for library support). :func:`build_features`
probes every feature librdkafka knows this way, once per process, with clients that have no
``bootstrap.servers`` (no network). :func:`check_client_features` compares them with what the
connection's settings need and raises :class:`KafkaFeatureMissing` when one is missing, so a
Kafka connection this client cannot speak (``sasl.mechanism=GSSAPI`` with the confluent-kafka
wheels, whose librdkafka has no libsasl2) is refused before any step reads Kafka or writes the
ledger. Nothing here reads a secret or logs.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from confluent_kafka import KafkaException, Producer, libversion

from airflow_provider_eo.errors import ConfigError

#: Every ``builtin.features`` value librdkafka 2.x defines, in its own order.
KNOWN_FEATURES = (
    "gzip", "snappy", "ssl", "sasl", "regex", "lz4", "sasl_gssapi", "sasl_plain",
    "sasl_scram", "plugins", "zstd", "sasl_oauthbearer", "http", "oidc",
)  # fmt: skip

#: ``sasl.mechanism`` -> the feature librdkafka needs for it.
MECHANISM_FEATURES = {
    "GSSAPI": "sasl_gssapi",
    "PLAIN": "sasl_plain",
    "SCRAM-SHA-256": "sasl_scram",
    "SCRAM-SHA-512": "sasl_scram",
    "OAUTHBEARER": "sasl_oauthbearer",
}

#: What to install when a feature is missing (docs/security.md, "Kafka", has the details).
REMEDY = {
    "sasl_gssapi": (
        "install a confluent-kafka built against a librdkafka >= 2.16.0 configured with libsasl2 "
        "(cyrus-sasl), e.g. librdkafka built from source with libsasl2-dev and libkrb5-dev, then "
        "`pip install --no-binary confluent-kafka confluent-kafka==<the pinned version>` against it"
    ),
    "oidc": "install a confluent-kafka whose librdkafka is built with libcurl and OpenSSL",
}
_DEFAULT_REMEDY = "install a confluent-kafka whose librdkafka is built with that feature"


class KafkaFeatureMissing(ConfigError):
    """A Kafka connection needs a librdkafka feature this installation was built without.

    Raised before any client of the connection exists; nothing was read or written. The message
    names the connection, the setting that needs the feature, the feature, the features this
    build has and what to install.
    """

    def __init__(self, conn_id: str, setting: str, feature: str, have: tuple[str, ...]) -> None:
        self.conn_id, self.setting, self.feature, self.have = conn_id, setting, feature, have
        super().__init__(
            f"Kafka connection {conn_id!r}: {setting} needs librdkafka feature {feature!r}, which "
            f"this confluent-kafka's librdkafka {libversion()[0]} was built without (its "
            f"builtin.features: {','.join(have)}); {REMEDY.get(feature, _DEFAULT_REMEDY)}"
        )


def _has_feature(feature: str) -> bool:
    try:
        Producer({"builtin.features": feature, "log_level": 0})
    except KafkaException:
        return False
    return True


@functools.cache
def build_features() -> tuple[str, ...]:
    """The ``builtin.features`` of the installed librdkafka (probed once per process, no network)."""
    return tuple(feature for feature in KNOWN_FEATURES if _has_feature(feature))


def required_features(config: Mapping[str, str]) -> dict[str, str]:
    """feature -> the setting that needs it, for librdkafka settings ``config``.

    ``security.protocol`` SSL/SASL_SSL needs ``ssl``; ``sasl.mechanism`` (or its alias
    ``sasl.mechanisms``) the mechanism's feature (:data:`MECHANISM_FEATURES`; an unknown one is
    librdkafka's to refuse); ``sasl.oauthbearer.method=oidc`` needs ``oidc``.
    """
    needed: dict[str, str] = {}
    protocol = config.get("security.protocol", "plaintext").strip().upper()
    if protocol in ("SSL", "SASL_SSL"):
        needed["ssl"] = f"security.protocol={protocol}"
    if protocol.startswith("SASL"):
        key = (
            "sasl.mechanisms"
            if "sasl.mechanisms" in config and "sasl.mechanism" not in config
            else "sasl.mechanism"
        )
        mechanism = config.get(key, "GSSAPI").strip().upper()  # librdkafka's default is GSSAPI
        if mechanism in MECHANISM_FEATURES:
            needed[MECHANISM_FEATURES[mechanism]] = f"{key}={mechanism}"
    if config.get("sasl.oauthbearer.method", "").strip().lower() == "oidc":
        needed["oidc"] = "sasl.oauthbearer.method=oidc"
    return needed


def check_client_features(conn_id: str, config: Mapping[str, str]) -> None:
    """Raise :class:`KafkaFeatureMissing` for the first feature ``config`` needs that the
    installed librdkafka lacks; return ``None`` when it has them all."""
    needed = required_features(config)
    if not needed:  # PLAINTEXT without SASL: nothing to probe
        return
    have = build_features()
    for feature, setting in needed.items():
        if feature not in have:
            raise KafkaFeatureMissing(conn_id, setting, feature, have)
