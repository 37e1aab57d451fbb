// Package e2e drives a started local stack (the embedded ASL runtime, the
// real handlers and store code, the MAAS simulator) over HTTP only, the way
// an operator and a node do: the admin API through the Go SDK (client/)
// wherever it has the call — the suite reads its answers as the JSON the
// API sent — and raw HTTP for what the SDK does not serve (the simulator's
// control API, the node endpoints, answers a test expects to be refused).
// Each test starts its own stack on loopback
// ports with a scaled clock, so a MAAS deployment of minutes takes well
// under a second of wall time.
package e2e
