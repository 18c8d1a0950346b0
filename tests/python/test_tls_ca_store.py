# tests/python/test_tls_ca_store.py: reel finds the system's CA certificates
# wherever a Linux keeps them, whatever store its libcurl was built for (issue
# 27: the wheel's libcurl looks only at Debian's path). Each case runs a child
# Python in a private mount namespace where /etc/ssl is hidden and a test CA
# sits (or not) at RHEL's /etc/pki/tls/certs/ca-bundle.crt, against nginx on
# 127.0.0.1 with a certificate from that CA: found on the RHEL path, from
# SSL_CERT_FILE, from SSL_CERT_DIR, from ca_bundle; with no CA anywhere the
# error names the TLS verification and every path tried; verification stays
# on (a certificate from another CA is refused, naming the store used).
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Iterator, Optional

import pytest

import reel._testing
from servers import nginx, nginx_path

RHEL = "/etc/pki/tls/certs/ca-bundle.crt"
# the paths reel looks in, in its order (src/io/http.c): files, then directories
STORES = ["/etc/ssl/certs/ca-certificates.crt", RHEL, "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
          "/etc/ssl/ca-bundle.pem", "/var/lib/ca-certificates/ca-bundle.pem", "/etc/ssl/cert.pem",
          "/etc/ssl/certs", "/etc/pki/tls/certs"]

# Run as root in `unshare --mount --propagation private`: /etc gets a
# writable overlay (or, without overlayfs, a tmpfs holding binds of its
# entries) so /etc/pki can be made without touching the host; the CA stores
# are hidden under empty tmpfs mounts; $2, if not empty, is copied to the
# RHEL path; then the rest of the arguments run. Everything vanishes with
# the namespace.
NAMESPACE = r"""
set -e
T="$1"; CA="$2"; shift 2
mount -t tmpfs reel-tls "$T"
mkdir "$T/upper" "$T/work" "$T/etc"
if ! mount -t overlay reel-tls -o "lowerdir=/etc,upperdir=$T/upper,workdir=$T/work" /etc 2>/dev/null; then
  mount --bind /etc "$T/etc"
  mount -t tmpfs reel-tls /etc
  for e in "$T"/etc/* "$T"/etc/.[!.]*; do
    [ -e "$e" ] || [ -L "$e" ] || continue
    n="/etc/${e##*/}"
    if [ -L "$e" ]; then cp -P "$e" "$n"
    elif [ -d "$e" ]; then mkdir "$n"; mount --bind "$e" "$n"
    else : > "$n"; mount --bind "$e" "$n"; fi
  done
fi
mkdir -p /etc/ssl /etc/pki
mount -t tmpfs reel-tls /etc/ssl
mount -t tmpfs reel-tls /etc/pki
if [ -d /var/lib/ca-certificates ]; then mount -t tmpfs reel-tls /var/lib/ca-certificates; fi
if [ -n "$CA" ]; then mkdir -p /etc/pki/tls/certs; cp "$CA" /etc/pki/tls/certs/ca-bundle.crt; fi
exec "$@"
"""

# The child: the first frame by URL against the same frame by path, or the
# error; and which CA paths exist in its namespace.
CHILD = r"""
import json, os, sys
import reel
url, local, remote, stores = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
out = {"exists": [p for p in stores if os.path.exists(p)]}
with reel.VideoDecoder(local) as d:
    want = bytes(memoryview(d.get_frames_at([0])))
try:
    with reel.VideoDecoder(url, remote=remote) as d:
        out["same_frame"] = bytes(memoryview(d.get_frames_at([0]))) == want
except reel.ReelError as e:
    out["error"] = str(e)
print(json.dumps(out))
"""

OPENSSL_CNF = """
[req]
distinguished_name = dn
[dn]
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[leaf]
basicConstraints = CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1
"""


def _openssl(*args: str, cwd: Path) -> str:
    return subprocess.run(["openssl", *args], check=True, capture_output=True, text=True, timeout=60,
                          cwd=cwd).stdout


def _make_ca(folder: Path, name: str) -> Path:
    """A CA certificate (folder/name.pem) and its key (folder/name.key)."""
    _openssl("req", "-x509", "-config", "openssl.cnf", "-extensions", "ca", "-newkey", "rsa:2048", "-nodes",
             "-days", "2", "-subj", f"/CN=reel test {name}", "-keyout", f"{name}.key", "-out", f"{name}.pem",
             cwd=folder)
    return folder / f"{name}.pem"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dict[str, Any]]:
    """nginx over https on 127.0.0.1 with a certificate signed by test CA
    "ca"; another CA "other" that did not sign it; a hashed directory holding
    "ca" (for SSL_CERT_DIR); a video served and kept locally."""
    if not nginx_path():
        pytest.skip("nginx is not installed (make test installs it: apt-get install -y nginx-light)")
    d = tmp_path_factory.mktemp("tls")
    (d / "openssl.cnf").write_text(OPENSSL_CNF)
    ca, other = _make_ca(d, "ca"), _make_ca(d, "other")
    _openssl("req", "-new", "-config", "openssl.cnf", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
             "-keyout", "server.key", "-out", "server.csr", cwd=d)
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
             "-days", "2", "-extfile", "openssl.cnf", "-extensions", "leaf", "-out", "server.pem", cwd=d)
    hashed = d / "hashed"
    hashed.mkdir()
    (hashed / f"{_openssl('x509', '-hash', '-noout', '-in', 'ca.pem', cwd=d).strip()}.0").write_bytes(ca.read_bytes())
    www = d / "www"
    www.mkdir()
    try:
        reel._testing.write_video(str(www / "v.mp4"), width=64, height=48, frames=10, gop=5, seed=3)
    except OSError:  # an FFmpeg without encoders (the wheel's: scripts/test_wheel.sh runs this file too)
        subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=64x48:rate=25",
                        "-frames:v", "10", "-g", "5", "-pix_fmt", "yuv420p", str(www / "v.mp4")], check=True, timeout=60)
    probe = subprocess.run(["unshare", "--mount", "--propagation", "private", "mount", "-t", "tmpfs", "reel-probe",
                            str(d / "www")], capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        pytest.skip(f"no private mount namespace here (unshare --mount as root): {probe.stderr.strip()}")
    with nginx(www, tls=(d / "server.pem", d / "server.key")) as base:
        yield {"dir": d, "ca": ca, "other": other, "hashed": hashed, "url": f"{base}/v.mp4", "local": www / "v.mp4"}


def _run(site: Dict[str, Any], at_rhel: Optional[Path], env: Dict[str, str], remote: Optional[dict] = None,
         ) -> Dict[str, Any]:
    """The child's answer in a namespace with /etc/ssl hidden and `at_rhel`
    (or nothing) at the RHEL path, with SSL_CERT_FILE / SSL_CERT_DIR from
    `env` only."""
    scratch = site["dir"] / f"ns{len(list(site['dir'].glob('ns*')))}"
    scratch.mkdir()
    child_env = {k: v for k, v in os.environ.items() if k not in ("SSL_CERT_FILE", "SSL_CERT_DIR", "CURL_CA_BUNDLE")}
    child_env.update(env)
    r = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", NAMESPACE, "reel-tls",
                        str(scratch), str(at_rhel or ""), sys.executable, "-c", CHILD, site["url"], str(site["local"]),
                        json.dumps(remote or {}), json.dumps(STORES)],
                       capture_output=True, text=True, timeout=120, env=child_env)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    # the namespace is as described: no store but the RHEL file (and its folder)
    assert out["exists"] == ([RHEL, "/etc/pki/tls/certs"] if at_rhel else []), out
    return out


def test_a_ca_at_the_rhel_path_alone_is_found(site):
    out = _run(site, site["ca"], {})
    assert out.get("same_frame") is True, out


def test_ssl_cert_file_and_ssl_cert_dir_are_honoured(site):
    assert _run(site, None, {"SSL_CERT_FILE": str(site["ca"])}).get("same_frame") is True
    assert _run(site, None, {"SSL_CERT_DIR": str(site["hashed"])}).get("same_frame") is True
    # SSL_CERT_FILE is used as given: the system's store is not added
    out = _run(site, site["ca"], {"SSL_CERT_FILE": str(site["other"])})
    assert "error" in out and f"SSL_CERT_FILE {site['other']}" in out["error"], out


def test_ca_bundle_is_honoured_where_no_store_is(site):
    out = _run(site, None, {}, remote={"ca_bundle": str(site["ca"])})
    assert out.get("same_frame") is True, out


def test_with_no_ca_reachable_the_error_names_tls_verification_and_every_path_tried(site):
    out = _run(site, None, {})
    assert "error" in out, out
    e = out["error"]
    assert e.startswith(site["url"] + ": TLS verification failed: "), e
    assert "none found (tried SSL_CERT_FILE, SSL_CERT_DIR, " in e, e
    tried = e[e.index("SSL_CERT_DIR, ") + len("SSL_CERT_DIR, "):e.index(")", e.index("SSL_CERT_DIR, "))]
    assert tried.split(", ") == STORES, e
    assert "\n" not in e


def test_verification_stays_on_a_certificate_from_another_ca_is_refused(site):
    out = _run(site, site["other"], {})
    assert "error" in out, out
    assert out["error"].startswith(site["url"] + ": TLS verification failed: "), out
    assert f"CA certificates: {RHEL} (the system's store)" in out["error"], out
    # the same server with verification turned off: only the verification failed
    assert _run(site, site["other"], {}, remote={"verify_tls": False}).get("same_frame") is True
