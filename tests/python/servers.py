# tests/python/servers.py: real servers for the remote-input tests, started on
# free 127.0.0.1 ports and stopped afterwards (also on failure): nginx from
# Debian serving a folder, and moto's standalone S3 server. Every wait is
# bounded in time.
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import ssl
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional, Tuple


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_http(url: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    # the test's own self-signed certificate: only "is it up?" is asked here
    ctx = ssl._create_unverified_context() if url.startswith("https:") else None
    while True:
        try:
            urllib.request.urlopen(url, timeout=1.0, context=ctx).close()
            return
        except Exception as e:  # noqa: BLE001 - any answer short of success means "not yet"
            if getattr(e, "code", None) is not None:
                return  # an HTTP error status is an answer: the server is up
            if time.monotonic() > deadline:
                raise RuntimeError(f"{url}: no answer within {timeout} s") from e
            time.sleep(0.1)


def nginx_path() -> str:
    for p in ("/usr/sbin/nginx", shutil.which("nginx") or ""):
        if p and os.access(p, os.X_OK):
            return p
    return ""


def self_signed_cert(folder: Path) -> Tuple[Path, Path]:
    """A certificate and key for 127.0.0.1 made with the openssl CLI (the
    certificate is its own CA, so it is also the CA bundle to trust)."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                    "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out",
                    str(cert)], check=True, capture_output=True, timeout=60)
    return cert, key


@contextmanager
def nginx(root: Path, tls: Optional[Tuple[Path, Path]] = None, log: Optional[Path] = None,
          keepalive_requests: int = 1000) -> Iterator[str]:
    """Serves `root` at http://127.0.0.1:PORT (Range requests supported); with
    tls=(cert, key) at https:// instead; with `log`, each request is written
    there as "connection-serial requests-on-it tls-session-reused status
    bytes range uri" (nginx's $connection, $connection_requests,
    $ssl_session_reused, $status, $bytes_sent, $http_range, $uri);
    keepalive_requests: nginx closes a connection after that many requests."""
    exe = nginx_path()
    if not exe:
        raise RuntimeError("nginx is not installed (make test installs it: apt-get install -y nginx-light)")
    work = Path(tempfile.mkdtemp(prefix="reel-nginx-"))
    port = free_port()
    (work / "logs").mkdir()
    conf = work / "nginx.conf"
    # run as root (a test machine's usual user), the workers would drop to
    # nobody and could not read a private temporary folder
    user = "user root;" if hasattr(os, "geteuid") and os.geteuid() == 0 else ""
    conf.write_text(f"""
{user}
worker_processes 1;
daemon off;
error_log {work}/logs/error.log;
pid {work}/nginx.pid;
events {{ worker_connections 256; }}
http {{
  log_format reel '$connection $connection_requests $ssl_session_reused $status $bytes_sent $http_range $uri';
  {f"access_log {log} reel;" if log else "access_log off;"}
  keepalive_requests {keepalive_requests};
  client_body_temp_path {work}/body; proxy_temp_path {work}/proxy; fastcgi_temp_path {work}/fcgi;
  uwsgi_temp_path {work}/uwsgi; scgi_temp_path {work}/scgi;
  server {{ listen 127.0.0.1:{port}{" ssl" if tls else ""}; root {root};
    {f"ssl_certificate {tls[0]}; ssl_certificate_key {tls[1]}; ssl_session_cache shared:reel:1m;" if tls else ""} }}
}}
""")
    proc = subprocess.Popen([exe, "-c", str(conf), "-p", str(work)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        scheme = "https" if tls else "http"
        _wait_http(f"{scheme}://127.0.0.1:{port}/")
        yield f"{scheme}://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)


@contextmanager
def environ(values: dict) -> Iterator[None]:
    """os.environ with `values` set for the block (a signing user's keys,
    say), then every one of them as it was, even on failure."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def with_environ(values: dict, fn):
    """fn() under environ(values): its result."""
    with environ(values):
        return fn()


def moto_s3_user(endpoint: str, name: str) -> Tuple[dict, object]:
    """On a moto_s3 server: a user `name` allowed s3:*, made with the
    unauthenticated actions (moto checks signatures once a user, its key and
    a policy exist). Returns the environment that signs as it
    (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ENDPOINT_URL)
    and a boto3 S3 client signing as it."""
    import json

    import boto3

    iam = boto3.client("iam", endpoint_url=endpoint, region_name="us-east-1",
                       aws_access_key_id="bootstrap", aws_secret_access_key="bootstrap")
    iam.create_user(UserName=name)
    key = iam.create_access_key(UserName=name)["AccessKey"]
    iam.put_user_policy(UserName=name, PolicyName="s3", PolicyDocument=json.dumps(
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
    env = {"AWS_ACCESS_KEY_ID": key["AccessKeyId"], "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"],
           "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": endpoint}
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                          aws_access_key_id=env["AWS_ACCESS_KEY_ID"], aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"])
    return env, client


@contextmanager
def moto_s3(unauthenticated_actions: int = 3) -> Iterator[str]:
    """moto's standalone S3 server at http://127.0.0.1:PORT, checking SigV4
    signatures and IAM policies after the first `unauthenticated_actions`
    requests (enough to create a user, its key and its policy)."""
    port = free_port()
    env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT=str(unauthenticated_actions))
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        _wait_http(f"http://127.0.0.1:{port}/moto-api/", timeout=60.0)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
