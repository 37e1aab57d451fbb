// Package maassim is a stateful, deterministic simulator of Canonical MAAS's
// REST API 2.0, built to the behaviour written in
// docs/maas-behaviour.md rather than to any client. It serves
// /MAAS/api/2.0/ (OAuth PLAINTEXT, op= operations, form bodies, MAAS's JSON
// field names, status codes, status names and error bodies) and a small
// control API under /_sim/ that adds physical hardware, pre-enlisted machine
// records and faults, counts calls and resets state.
//
// Physical hardware is modelled apart from MAAS's machine records: a Hardware
// (BMC address, NICs, disks, faults) exists before MAAS knows it, and a
// machine created with its power address is linked to it. Asynchronous MAAS
// phases (commissioning, testing, deploying, releasing, disk erasing, rescue
// mode) complete on the injected clock: every request first plays all phase
// steps that are due, and a background loop does the same when nobody asks,
// so tests drive time with a clockwork fake clock and never sleep. When a
// host reaches Deployed the simulator plays the node: it reads the first-boot
// bootstrap bundle from the deployment's cloud-init user_data and calls the
// enrollment URL with its token, as the node agent would.
//
// The package's code imports only shared/clock of maasflow, never the MAAS
// client in shared/maas. Only its tests do: the fidelity suite drives the
// simulator with that client and with canonical/gomaasclient, and checks
// both against docs/maas-behaviour.md, not against each other.
package maassim
