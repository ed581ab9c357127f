import hashlib
import json
import os
import urllib.request

ROOT = "/srv/artifacts"
URL = "http://127.0.0.1:8000"


def get(path):
    with urllib.request.urlopen(URL + path, timeout=10) as response:
        return response.status, response.read()


def artifacts():
    return sorted(name for name in os.listdir(ROOT)
                  if name != "manifest.json" and os.path.isfile(os.path.join(ROOT, name)))


def test_server_answers():
    status, _ = get("/")
    assert status == 200


def test_artifact_download_matches_file():
    status, body = get("/toolkit-1.4.2.bin")
    assert status == 200
    with open(os.path.join(ROOT, "toolkit-1.4.2.bin"), "rb") as handle:
        assert body == handle.read()


def test_manifest_lists_every_artifact():
    status, body = get("/manifest.json")
    assert status == 200
    manifest = json.loads(body)
    assert isinstance(manifest, dict)
    assert sorted(manifest) == artifacts()


def test_manifest_has_sha256_digests():
    with open(os.path.join(ROOT, "manifest.json"), encoding="utf-8") as handle:
        manifest = json.load(handle)
    for name in artifacts():
        with open(os.path.join(ROOT, name), "rb") as handle:
            assert manifest.get(name) == hashlib.sha256(handle.read()).hexdigest(), name
