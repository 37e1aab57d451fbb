# shellcheck shell=sh
# Node bootstrap: the second runcmd entry of the first-boot payload, run by
# cloud-init as `/bin/sh -c <script>`. Like the site launcher it takes no
# argument and reads only the bundle cloud-init wrote to
# /etc/gpuaas/bootstrap-bundle.json. It refuses to run unless the site
# launcher left /run/maasflow/site-bootstrap.ok (cloud-init runs every runcmd
# entry even when an earlier one failed), checks the bundle version and the CA
# fingerprint, installs the CA bundle, and enrolls the node: it makes the
# node's key with openssl at GPUAAS_KEY_PATH (0600; the key never leaves the
# node), sends a CSR with the enrollment token (curl, the body on stdin so no
# secret is in an argument), and writes the certificate to GPUAAS_CERT_PATH
# and the node CA to GPUAAS_NODE_CERT_CA_BUNDLE_PATH. It writes the node
# agent's 0600 env file with the recovery token in place of the spent
# enrollment token (never to a log), pulls the package by digest unless it is
# preloaded, runs its install-node-agent.sh with the env file path
# (requirements runbook "Node: install and run node-agent"), and heartbeats
# once over mutual TLS (curl --cert/--key): the completion gate. It prints
# "maasflow: node-bootstrap <version> ok" or "... failed: <why>".
#
# The bundle version and the "anonymous" pull mode below must equal
# BundleVersion and PullAnonymous in bundle.go; a test pins them.
#
# MAASFLOW_FIRSTBOOT_ROOT prefixes every path, for the test that executes this
# script only; a node never sets it. The env file keeps the bundle's own paths.
#
# RenderUserData drops this leading comment block from the payload.
set -eu
umask 077
root="${MAASFLOW_FIRSTBOOT_ROOT:-}"
if [ ! -f "$root/run/maasflow/site-bootstrap.ok" ]; then
  echo "maasflow: node-bootstrap skipped: site-bootstrap did not succeed" >&2
  exit 1
fi
python3 - "$root/etc/gpuaas/bootstrap-bundle.json" <<'PY'
import hashlib, json, os, ssl, subprocess, sys, time
b = json.load(open(sys.argv[1]))
tag = "maasflow: node-bootstrap " + str(b.get("bundle_version"))
root = os.environ.get("MAASFLOW_FIRSTBOOT_ROOT", "")
def fail(why):
    sys.stderr.write(tag + " failed: " + why + "\n")
    sys.exit(1)
def run(args, env=None):
    try:
        return subprocess.call(args, env=env)
    except OSError as e:
        fail(args[0] + ": " + type(e).__name__)
if b.get("bundle_version") != "node-bootstrap/v1":
    fail("unsupported bundle version")
pem = b["ca_bundle_pem"]
begin, end = "-----BEGIN CERTIFICATE-----", "-----END CERTIFICATE-----"
first = pem[pem.index(begin):pem.index(end) + len(end)]
digest = hashlib.sha256(ssl.PEM_cert_to_DER_cert(first)).hexdigest().upper()
if ":".join(digest[i:i + 2] for i in range(0, len(digest), 2)) != b["ca_fingerprint"]:
    fail("ca_fingerprint does not match ca_bundle_pem")
for path in sorted({root + b["GPUAAS_CA_BUNDLE_PATH"], root + b["GPUAAS_NODE_CERT_CA_BUNDLE_PATH"]}):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(pem)
    os.chmod(path, 0o644)
def call(args, body=None):
    # One curl call; (HTTP status, parsed JSON answer). The answer is read
    # from stdout, never printed.
    try:
        p = subprocess.run(["curl", "-sS", "--max-time", "60", "-w", "\n%{http_code}"] + args,
            input=body, capture_output=True)
    except OSError as e:
        fail("curl: " + type(e).__name__)
    out, _, code = p.stdout.rpartition(b"\n")
    if p.returncode != 0:
        return 0, {}
    try:
        return int(code), json.loads(out or b"{}")
    except ValueError:
        return int(code), {}
def tls_args(url, ca):
    return ["--cacert", ca] if url.startswith("https://") else []
def write(path, data, mode):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    os.fchmod(fd, mode)
    with os.fdopen(fd, "w") as f:
        f.write(data)
node_id, api = b["GPUAAS_NODE_ID"], b["GPUAAS_API_URL"].rstrip("/")
key_path, cert_path = root + b["GPUAAS_KEY_PATH"], root + b["GPUAAS_CERT_PATH"]
node_ca_path = root + b["GPUAAS_NODE_CERT_CA_BUNDLE_PATH"]
os.makedirs(os.path.dirname(key_path), exist_ok=True)
old_umask = os.umask(0o077)
if run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key_path]) != 0:
    fail("key generation failed")
os.umask(old_umask)
os.chmod(key_path, 0o600)
try:
    csr = subprocess.run(["openssl", "req", "-new", "-key", key_path, "-subj", "/CN=" + node_id],
        capture_output=True, check=True).stdout.decode()
except (OSError, subprocess.CalledProcessError) as e:
    fail("csr: " + type(e).__name__)
body = json.dumps({"token": b["GPUAAS_ENROLLMENT_TOKEN"], "csr": csr}).encode()
backoff = float(os.environ.get("MAASFLOW_FIRSTBOOT_BACKOFF", "2"))
for attempt in range(5):
    status, creds = call(tls_args(api, root + b["GPUAAS_CA_BUNDLE_PATH"]) + ["-H", "Content-Type: application/json",
        "--data-binary", "@-", api + "/api/v1/nodes/" + node_id + "/enroll"], body)
    if status not in (0, 429, 503):
        break
    time.sleep(backoff * 2 ** attempt)
if status != 200:
    fail("enrollment answered %d %s" % (status, creds.get("error", {}).get("code", "")))
# A deployment without a node CA answers no certificate: the enrollment
# itself was the proof, and there is no node listener to heartbeat.
certified = bool(creds.get("certificate_pem"))
if certified:
    if not creds.get("node_api_url") or not creds.get("recovery_token"):
        fail("enrollment answered a certificate without node_api_url or recovery_token")
    write(cert_path, creds["certificate_pem"], 0o644)
    write(node_ca_path, creds["ca_pem"], 0o644)
pkg = b["package"]
env = {k: b[k] for k in ("GPUAAS_NODE_ID", "GPUAAS_ENROLLMENT_TOKEN", "GPUAAS_API_URL",
    "GPUAAS_CA_BUNDLE_PATH", "GPUAAS_NODE_CERT_CA_BUNDLE_PATH", "GPUAAS_CERT_PATH", "GPUAAS_KEY_PATH")}
env["GPUAAS_TASK_SIGNING_PUBKEYS"] = ",".join(b["GPUAAS_TASK_SIGNING_PUBKEYS"])
env["GPUAAS_NODE_AGENT_INSTALL_ROOT"] = pkg["install_root"]
env["GPUAAS_NODE_AGENT_ENV_FILE"] = pkg["env_file_path"]
env["GPUAAS_NODE_AGENT_SYSTEMD_UNIT"] = pkg["systemd_unit_name"]
# The first-boot token is spent: the agent's next proof is the recovery
# token, when the node was certified; without, it has none.
env["GPUAAS_ENROLLMENT_TOKEN"] = creds.get("recovery_token", "") if certified else ""
env["GPUAAS_NODE_API_URL"] = creds.get("node_api_url", "") if certified else ""
env_file = root + pkg["env_file_path"]
os.makedirs(os.path.dirname(env_file), exist_ok=True)
fd = os.open(env_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
os.fchmod(fd, 0o600)
with os.fdopen(fd, "w") as f:
    for k in sorted(env):
        f.write(k + "=" + env[k] + "\n")
install_root = root + pkg["install_root"]
if pkg["pull_delivery_mode"] == "anonymous":
    os.makedirs(install_root, exist_ok=True)
    rc = run(["oras", "pull", "--output", install_root, pkg["oci_ref"] + "@" + pkg["digest"]])
    if rc != 0:
        fail("package pull exit status %d" % rc)
installer = os.path.join(install_root, "install-node-agent.sh")
if not os.access(installer, os.X_OK):
    fail("package has no executable install-node-agent.sh")
rc = run([installer, env_file], env=dict(os.environ, GPUAAS_NODE_AGENT_ENV_FILE=env_file))
if rc != 0:
    fail("install-node-agent.sh exit status %d" % rc)
if certified:
    node_api = creds["node_api_url"].rstrip("/")
    status, _ = call(["--cert", cert_path, "--key", key_path, "--cacert", node_ca_path,
        node_api + "/node/v1/nodes/" + node_id + "/tasks/wait?wait_seconds=0"])
    if status != 200:
        fail("heartbeat answered %d" % status)
print(tag + " ok")
PY
