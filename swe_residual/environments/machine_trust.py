"""What this machine trusts for HTTPS and where its pip looks for packages, read from its own
configuration, and what of it the docker backend gives the containers that have a network.

A machine behind a TLS-intercepting egress proxy trusts the proxy's CA (a local addition to its
bundle, /usr/local/share/ca-certificates on Debian) and its pip works; a container, with its
image's stock bundle, reaches the same package index and fails with CERTIFICATE_VERIFY_FAILED.
So a replay or a `solve.sh` that pip-installs something fails where it worked when recorded.

The choice (`--machine-trust`, the ini's `residual_machine_trust`, `SWE_RESIDUAL_MACHINE_TRUST`):
- `auto` (default): the machine's bundle, only when it holds certificates the distribution's own
  set does not (local additions); otherwise nothing changes;
- `none`: nothing;
- a PATH: that bundle, always.

What is given: the bundle, read-only at a fixed path in the container, the variables the usual
tools read it from (`BUNDLE_VARIABLES`), and the host pip's index settings when it has any. No
host name is written here: everything comes from the machine at run time (`pip config list`,
the CA variables, the system's default bundle). scripts/rebuild-task-image reads the same for
the build steps of the images it makes.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import ssl
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swe_residual.dataset.errors import ConfigError

TRUST_ENV = "SWE_RESIDUAL_MACHINE_TRUST"
AUTO, NONE = "auto", "none"
# The variables that point the usual tools at a CA bundle, each for whom it is read:
# - SSL_CERT_FILE: OpenSSL's default file (Python's ssl default context: urllib, httpx,
#   aiohttp; curl's tool; uv; git built on OpenSSL), replacing the image's own bundle;
# - REQUESTS_CA_BUNDLE: requests (and what uses it: huggingface_hub, conda), which reads
#   certifi's bundle and never the system's;
# - PIP_CERT: pip's `cert`, pip's vendored requests otherwise reads its own certifi;
# - CURL_CA_BUNDLE: the curl tool (before SSL_CERT_FILE), and requests too;
# - NODE_EXTRA_CA_CERTS: node and npm, added to node's own built-in set;
# - GIT_SSL_CAINFO: git's https transport (its libcurl reads no variable of its own).
BUNDLE_VARIABLES = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "PIP_CERT", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
                    "GIT_SSL_CAINFO")
# The CA variables the machine's own tools may be pointed with, in the order they are asked
# when pip names no `cert`.
CA_ENV = ("PIP_CERT", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE", "CURL_CA_BUNDLE")
# pip settings worth carrying into an image build; a local path (find-links=/opt/wheels) or a
# client certificate is the host's own business.
PIP_KEYS = ("index-url", "extra-index-url", "trusted-host", "timeout", "default-timeout", "retries")
# Of those, where pip looks for packages: given to running containers as pip's variables.
INDEX_VARIABLES = {"index-url": "PIP_INDEX_URL", "extra-index-url": "PIP_EXTRA_INDEX_URL",
                   "trusted-host": "PIP_TRUSTED_HOST"}
# The distribution's own certificates (Debian's and Ubuntu's ca-certificates package):
# update-ca-certificates makes the bundle of these and the local additions
# (/usr/local/share/ca-certificates), so a certificate of the bundle not among these is local.
STOCK_DIRS = (Path("/usr/share/ca-certificates"),)
# The option's help, the same for a run and for the commands that build and validate datasets.
TRUST_HELP = ("docker: what containers with a network get of this machine's trust: auto (its CA bundle, the CA "
              "variables and pip's index settings, when the bundle has local additions such as a proxy's CA), none, "
              f"or the PATH of a CA bundle (default {AUTO}; else ${TRUST_ENV})")
_PEM = re.compile(rb"-----BEGIN CERTIFICATE-----(.+?)-----END CERTIFICATE-----", re.S)


# -- the machine's configuration ---------------------------------------------------------------
def parse_pip_config_list(listed: str) -> tuple[dict[str, str], str | None]:
    """`pip config list`'s settings (PIP_KEYS only) and its `cert`, later lines winning.

    Lines look like `global.index-url='...'` or `:env:.cert='...'`: pip lists its files'
    scopes, then its environment variables, in the order it applies them."""
    settings: dict[str, str] = {}
    cert: str | None = None
    for line in listed.splitlines():
        name, sep, value = line.partition("=")
        if not sep:
            continue
        key = name.rsplit(".", 1)[-1]
        value = value.strip().strip("'\"")
        if key == "cert":
            cert = value
        elif key in PIP_KEYS:
            settings[key] = value
    return settings, cert


def pip_config_listing(python: str = sys.executable) -> str:
    """What `pip config list` prints for `python`'s pip (empty when it has no pip)."""
    try:
        return subprocess.run([python, "-m", "pip", "config", "list"], capture_output=True, text=True,
                              check=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def host_pip_config(listing: str | None = None,
                    environ: Mapping[str, str] = os.environ) -> tuple[dict[str, str], Path | None]:
    """The host pip's settings (PIP_KEYS only) and the CA bundle it uses: its `cert`, else the
    first CA variable set (CA_ENV); None when neither names a file."""
    settings, cert = parse_pip_config_list(pip_config_listing() if listing is None else listing)
    if cert is None:
        cert = next((environ[name] for name in CA_ENV if environ.get(name)), None)
    bundle = Path(cert) if cert and Path(cert).is_file() else None
    return settings, bundle


def system_bundle() -> Path | None:
    """The bundle OpenSSL reads by default on this machine (Python's own answer), if a file."""
    paths = ssl.get_default_verify_paths()
    for candidate in (paths.cafile, paths.openssl_cafile):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def certificates(data: bytes) -> set[bytes]:
    """The DER bytes of each PEM certificate in `data` (a block that is not base64 is skipped)."""
    found: set[bytes] = set()
    for body in _PEM.findall(data):
        try:
            found.add(base64.b64decode(b"".join(body.split()), validate=True))
        except (binascii.Error, ValueError):
            continue
    return found


def stock_certificates(stock_dirs: Sequence[Path]) -> set[bytes] | None:
    """Every certificate under the distribution's directories; None when none of them exists
    (not a Debian-like machine: what is stock cannot be told)."""
    existing = [directory for directory in stock_dirs if directory.is_dir()]
    if not existing:
        return None
    found: set[bytes] = set()
    for directory in existing:
        for path in sorted(directory.rglob("*")):
            if path.suffix in (".crt", ".pem") and path.is_file():
                found |= certificates(path.read_bytes())
    return found


# -- the choice --------------------------------------------------------------------------------
def parse_trust_choice(text: str, base: Path) -> str:
    """`auto`, `none`, or the absolute path of a readable bundle holding certificates (a
    relative path starts at `base`); ValueError says what is wrong."""
    value = text.strip()
    if value.lower() in (AUTO, NONE):
        return value.lower()
    if not value:
        raise ValueError("expected auto, none or the path of a CA bundle")
    path = (base / value).resolve()
    if not path.is_file():
        raise ValueError(f"{path} is not a file (expected auto, none or the path of a CA bundle)")
    try:
        held = certificates(path.read_bytes())
    except OSError as exc:
        raise ValueError(f"{path} cannot be read: {exc}") from exc
    if not held:
        raise ValueError(f"{path} holds no PEM certificate")
    return str(path)


def choose_trust(cli_value: str | None, base: Path, environ: Mapping[str, str] = os.environ) -> str:
    """The choice from the command line, else `SWE_RESIDUAL_MACHINE_TRUST`, else `auto`, for
    the commands that take no ini (`residualize build`, `dataset build --validate`); a bad
    value is a ConfigError naming its source, as the run's settings name theirs."""
    for value, source in ((cli_value, "command line --machine-trust"),
                          (environ.get(TRUST_ENV), f"environment variable {TRUST_ENV}")):
        if value is not None and value.strip():
            try:
                return parse_trust_choice(value, base)
            except ValueError as exc:
                raise ConfigError(f"machine-trust: bad value {value!r} from the {source}: {exc}") from exc
    return AUTO


# -- what is given -----------------------------------------------------------------------------
@dataclass(frozen=True)
class MachineTrust:
    """What the containers that have a network are given: nothing when `bundle` is None."""

    choice: str  # auto, none, or a path
    bundle: Path | None = None  # on this machine, bind-mounted read-only
    local_certificates: int | None = None  # auto: the bundle's certificates the distribution lacks
    pip_index: dict[str, str] = field(default_factory=dict)  # PIP_INDEX_URL, ... from the host's pip
    reason: str = ""  # why this, for the run's header and record

    def variables(self, container_bundle: str) -> dict[str, str]:
        """The variables of a container where the bundle sits at `container_bundle`."""
        if self.bundle is None:
            return {}
        return {**{name: container_bundle for name in BUNDLE_VARIABLES}, **self.pip_index}

    def describe(self) -> dict[str, Any]:
        """What was given, as JSON values (the bundle's path is the machine's)."""
        return {"choice": self.choice, "bundle": str(self.bundle) if self.bundle else None,
                "local_certificates": self.local_certificates, "variables": list(BUNDLE_VARIABLES) if self.bundle else [],
                "pip_index": dict(self.pip_index), "reason": self.reason}


def index_variables(settings: Mapping[str, str]) -> dict[str, str]:
    """pip's variables for the host's index settings (a local path is the host's own)."""
    given: dict[str, str] = {}
    for key, variable in INDEX_VARIABLES.items():
        value = settings.get(key, "").strip()
        if key != "trusted-host" and not all(word.startswith(("http://", "https://")) for word in value.split()):
            continue
        if value:
            given[variable] = value
    return given


def resolve_trust(choice: str, *, pip_listing: str | None = None, environ: Mapping[str, str] = os.environ,
                  stock_dirs: Sequence[Path] = STOCK_DIRS, local_engine: bool = True) -> MachineTrust:
    """What `choice` gives on this machine. `pip_listing` is `pip config list`'s output (asked
    when None); `local_engine` False (an engine on another machine, which cannot bind-mount a
    file of this one) gives nothing with `auto`."""
    if choice == NONE:
        return MachineTrust(NONE, reason="machine-trust none")
    settings, pip_bundle = host_pip_config(pip_listing, environ)
    pip_index = index_variables(settings)
    if choice != AUTO:
        return MachineTrust(choice, Path(choice), None, pip_index, "the bundle machine-trust names")
    if not local_engine:
        return MachineTrust(AUTO, reason="the engine is on another machine: this machine's bundle cannot be mounted")
    bundle = pip_bundle or system_bundle()
    if bundle is None:
        return MachineTrust(AUTO, reason="this machine names no CA bundle")
    stock = stock_certificates(stock_dirs)
    if stock is None:
        return MachineTrust(AUTO, reason="no distribution certificates to compare the bundle with "
                                         f"({', '.join(map(str, stock_dirs))})")
    added = len(certificates(bundle.read_bytes()) - stock)
    if not added:
        return MachineTrust(AUTO, None, 0, reason=f"{bundle} holds no local addition")
    return MachineTrust(AUTO, bundle.resolve(), added, pip_index,
                        f"{bundle} holds {added} certificate(s) the distribution's set lacks")
