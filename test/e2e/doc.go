// Package e2e drives a started local stack (the embedded ASL runtime, the
// real handlers and store code, the MAAS simulator) over HTTP only, the way
// an operator and a node do. Each test starts its own stack on loopback
// ports with a scaled clock, so a MAAS deployment of minutes takes well
// under a second of wall time.
package e2e
