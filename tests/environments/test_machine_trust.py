"""What the machine trusts, read from its configuration (swe_residual/environments/machine_trust.py):
pip's settings as `pip config list` prints them, the CA bundle they name, which of its
certificates are local additions, and the choice auto / none / PATH with its sources. Every
configuration here is hand-made in a temporary directory."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from swe_residual.dataset.errors import ConfigError
from swe_residual.environments.machine_trust import (
    BUNDLE_VARIABLES, TRUST_ENV, certificates, choose_trust, host_pip_config, index_variables, parse_pip_config_list,
    parse_trust_choice, resolve_trust,
)

pytestmark = pytest.mark.unit


def pem(payload: bytes) -> str:
    """A PEM block (its body need only be base64: nothing here parses X.509)."""
    body = base64.b64encode(payload).decode()
    return f"-----BEGIN CERTIFICATE-----\n{body[:20]}\n{body[20:]}\n-----END CERTIFICATE-----\n"


@pytest.fixture
def machine(tmp_path: Path) -> Path:
    """A Debian-like machine: two distribution certificates, a bundle of both plus a local one."""
    stock = tmp_path / "usr-share-ca-certificates" / "mozilla"
    stock.mkdir(parents=True)
    (stock / "Root_A.crt").write_text(pem(b"stock root a"))
    (stock / "Root_B.crt").write_text(pem(b"stock root b"))
    (tmp_path / "bundle.crt").write_text(pem(b"stock root a") + pem(b"stock root b") + pem(b"the proxy's ca"))
    (tmp_path / "stock-only.crt").write_text(pem(b"stock root b") + pem(b"stock root a"))
    return tmp_path


def listing(cert: Path, *extra: str) -> str:
    return "\n".join([f"global.cert='{cert}'", *extra]) + "\n"


def test_pip_config_list_gives_its_settings_and_cert_later_lines_winning() -> None:
    listed = ("global.index-url='https://index.invalid/simple'\n:env:.default-timeout='180'\n"
              ":env:.find-links='/opt/wheels'\nglobal.cert='/a.crt'\n:env:.cert='/b.crt'\n"
              ":env:.index-url='https://other.invalid/simple'\nnot a setting\n")
    settings, cert = parse_pip_config_list(listed)
    assert settings == {"index-url": "https://other.invalid/simple", "default-timeout": "180"}
    assert cert == "/b.crt"


def test_without_a_pip_cert_the_first_ca_variable_names_the_bundle(machine: Path) -> None:
    bundle = machine / "bundle.crt"
    assert host_pip_config("", {"REQUESTS_CA_BUNDLE": str(bundle), "CURL_CA_BUNDLE": "/elsewhere"}) == ({}, bundle)
    assert host_pip_config(listing(machine / "missing.crt"), {}) == ({}, None)  # named, but not a file


def test_certificates_are_compared_by_content_not_by_layout() -> None:
    assert certificates(pem(b"x").encode()) == certificates(pem(b"x").replace("\n", "\r\n").encode()) == {b"x"}
    assert certificates(b"-----BEGIN CERTIFICATE-----\n!!\n-----END CERTIFICATE-----\n") == set()


def test_auto_gives_a_bundle_with_local_additions_and_the_index_settings(machine: Path) -> None:
    listed = listing(machine / "bundle.crt", "global.index-url='https://index.invalid/simple'",
                     "global.trusted-host='index.invalid'", "global.find-links='/opt/wheels'", "global.timeout='60'")
    trust = resolve_trust("auto", pip_listing=listed, environ={}, stock_dirs=[machine / "usr-share-ca-certificates"])
    assert trust.bundle == (machine / "bundle.crt").resolve() and trust.local_certificates == 1
    assert trust.variables("/c/ca.crt") == {**{name: "/c/ca.crt" for name in BUNDLE_VARIABLES},
                                            "PIP_INDEX_URL": "https://index.invalid/simple",
                                            "PIP_TRUSTED_HOST": "index.invalid"}
    described = trust.describe()
    assert described["choice"] == "auto" and described["local_certificates"] == 1
    assert described["variables"] == list(BUNDLE_VARIABLES)


def test_auto_changes_nothing_without_local_additions(machine: Path) -> None:
    listed = listing(machine / "stock-only.crt", "global.index-url='https://index.invalid/simple'")
    trust = resolve_trust("auto", pip_listing=listed, environ={}, stock_dirs=[machine / "usr-share-ca-certificates"])
    assert trust.bundle is None and trust.local_certificates == 0
    assert trust.variables("/c/ca.crt") == {} and "no local addition" in trust.reason


def test_auto_gives_nothing_where_stock_cannot_be_told_or_the_engine_is_elsewhere(machine: Path) -> None:
    listed = listing(machine / "bundle.crt")
    unknown = resolve_trust("auto", pip_listing=listed, environ={}, stock_dirs=[machine / "no-such-dir"])
    assert unknown.bundle is None and "no distribution certificates" in unknown.reason
    remote = resolve_trust("auto", pip_listing=listed, environ={}, stock_dirs=[machine / "usr-share-ca-certificates"],
                           local_engine=False)
    assert remote.bundle is None and "another machine" in remote.reason


def test_none_gives_nothing_and_a_path_gives_that_bundle_always(machine: Path) -> None:
    assert resolve_trust("none", pip_listing=listing(machine / "bundle.crt"), environ={}).bundle is None
    chosen = parse_trust_choice("stock-only.crt", machine)
    trust = resolve_trust(chosen, pip_listing="", environ={}, stock_dirs=[machine / "usr-share-ca-certificates"])
    assert trust.bundle == (machine / "stock-only.crt").resolve() and trust.local_certificates is None
    assert trust.variables("/c")["SSL_CERT_FILE"] == "/c"


def test_the_choice_is_auto_none_or_a_bundle_holding_certificates(machine: Path) -> None:
    assert parse_trust_choice(" AUTO ", machine) == "auto" and parse_trust_choice("None", machine) == "none"
    assert parse_trust_choice("bundle.crt", machine) == str((machine / "bundle.crt").resolve())
    with pytest.raises(ValueError, match="is not a file"):
        parse_trust_choice("missing.crt", machine)
    (machine / "empty.crt").write_text("no certificates here\n")
    with pytest.raises(ValueError, match="holds no PEM certificate"):
        parse_trust_choice("empty.crt", machine)


def test_the_command_line_wins_over_the_environment_variable_and_bad_values_name_their_source(machine: Path) -> None:
    assert choose_trust(None, machine, {}) == "auto"
    assert choose_trust(None, machine, {TRUST_ENV: "none"}) == "none"
    assert choose_trust("bundle.crt", machine, {TRUST_ENV: "none"}) == str((machine / "bundle.crt").resolve())
    with pytest.raises(ConfigError, match=rf"^machine-trust: bad value 'x.crt' from the environment variable {TRUST_ENV}: "):
        choose_trust(None, machine, {TRUST_ENV: "x.crt"})
    with pytest.raises(ConfigError, match=r"^machine-trust: bad value 'x.crt' from the command line --machine-trust: "):
        choose_trust("x.crt", machine, {})


def test_an_index_on_a_local_path_stays_the_host_s() -> None:
    assert index_variables({"index-url": "/srv/simple", "extra-index-url": "https://a.invalid/s https://b.invalid/s"}) \
        == {"PIP_EXTRA_INDEX_URL": "https://a.invalid/s https://b.invalid/s"}
