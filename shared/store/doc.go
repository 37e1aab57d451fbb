// Package store keeps maasflow's read models in one DynamoDB table through
// aws-sdk-go-v2: sites, profiles, RoCE assignments, SKUs, nodes, onboardings
// and their timelines, enrollment tokens (hashes only) and the audit trail.
// Tests and local mode run the same code against github.com/truora/minidyn
// (NewLocalDB); local mode persists it through the write journal of
// package journal.
//
// docs/data-model.md lists the access patterns and the key design. No Scan
// runs on a request path; conditional writes keep every invariant: one open
// onboarding per host, a token consumed once, versioned updates. infra
// imports the table's constants (DefaultTable, AttrPK, AttrSK, Indexes,
// AttrTTL).
//
// It must not import activities, api or any MAAS package.
package store
