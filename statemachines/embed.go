// Package statemachines holds the workflows as Amazon States Language files
// and embeds them, so the local stack runs exactly the files that are
// deployed to Step Functions.
package statemachines

import _ "embed"

// Onboarding is onboarding.asl.json: one node from an IPMI address to an
// enrolled, active node.
//
//go:embed onboarding.asl.json
var Onboarding []byte

// Reconcile is reconcile.asl.json: one reconcile run, fanned out per site.
//
//go:embed reconcile.asl.json
var Reconcile []byte
