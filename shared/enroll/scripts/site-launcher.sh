# shellcheck shell=sh
# Site launcher: the first runcmd entry of the first-boot payload, run by
# cloud-init as `/bin/sh -c <script>`. It takes no argument and nothing from
# policy is interpolated into it: every value comes from the site bootstrap
# reference cloud-init wrote to /etc/maasflow/site-bootstrap.json. It fetches
# the site bundle (five tries, growing backoff), checks its sha256 when one is
# set, runs it with the reference file as argument and prints
# "maasflow: site-bootstrap <version> ok" or "... failed: <why>". On success
# it leaves /run/maasflow/site-bootstrap.ok for the node bootstrap.
#
# Two variables exist only for the test that executes this script; a node
# never sets them: MAASFLOW_FIRSTBOOT_ROOT prefixes every path, and
# MAASFLOW_FIRSTBOOT_BACKOFF replaces the 5-second backoff step.
#
# RenderUserData drops this leading comment block from the payload.
set -eu
umask 077
root="${MAASFLOW_FIRSTBOOT_ROOT:-}"
mkdir -p "$root/run/maasflow"
rm -f "$root/run/maasflow/site-bootstrap.ok"
python3 - "$root/etc/maasflow/site-bootstrap.json" <<'PY'
import hashlib, json, os, subprocess, sys, tempfile, time, urllib.request
ref = json.load(open(sys.argv[1]))
tag = "maasflow: site-bootstrap " + str(ref.get("version"))
backoff = float(os.environ.get("MAASFLOW_FIRSTBOOT_BACKOFF", "5"))
def fail(why):
    sys.stderr.write(tag + " failed: " + why + "\n")
    sys.exit(1)
body, why = None, "not attempted"
for attempt in range(5):
    try:
        body = urllib.request.urlopen(ref["url"], timeout=60).read()
        break
    except Exception as e:
        why = type(e).__name__
        time.sleep(backoff * (attempt + 1))
if body is None:
    fail("fetch: " + why)
if ref.get("sha256") and hashlib.sha256(body).hexdigest() != ref["sha256"]:
    fail("sha256 mismatch")
fd, launcher = tempfile.mkstemp(prefix="site-bootstrap-")
os.write(fd, body)
os.close(fd)
os.chmod(launcher, 0o700)
try:
    rc = subprocess.call([launcher, sys.argv[1]], env=dict(os.environ, MAASFLOW_SITE_BOOTSTRAP_VERSION=ref["version"]))
except OSError as e:
    fail("launcher: " + type(e).__name__)
if rc != 0:
    fail("launcher exit status %d" % rc)
print(tag + " ok")
PY
touch "$root/run/maasflow/site-bootstrap.ok"
