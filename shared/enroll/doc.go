// Package enroll owns what a node needs to join maasflow on first boot: the
// single-use enrollment token (generated here, stored elsewhere as a SHA-256
// hash only), the node bootstrap bundle of requirements runbook "Bootstrap Procedure",
// and the composed cloud-init user_data that carries the site bootstrap
// bundle first and the node bootstrap second, each separately versioned so a
// failure on the node says which part failed (requirements readiness §3.4).
//
// The user_data layout is a contract with the MAAS simulator, which plays the
// node by calling ParseUserData and enrolling with what it finds; see
// docs of RenderUserData for the exact shape.
//
// The two runcmd entries are shell files in scripts/ (site-launcher.sh,
// node-bootstrap.sh), embedded with go:embed and sent without their header
// comments. `make lint` runs shellcheck on them, and firstboot_test.go runs
// them as cloud-init would against an httptest server in a temporary root
// (MAASFLOW_FIRSTBOOT_ROOT prefixes every path they touch; a node never sets
// it), checking what they fetch, verify, write and report.
//
// The token is a domain.Secret everywhere except on the one render path that
// writes it into user_data: a Bundle printed with fmt, slog or encoding/json
// shows "[redacted]", and no error of this package holds a token, a CA or any
// other input value.
//
// It is a pure library: it must not import context, net/http, any AWS or MAAS
// package, or store, activities or api.
package enroll
