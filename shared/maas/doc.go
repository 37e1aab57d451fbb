// Package maas is maasflow's contract with a MAAS region: the ports split by
// MAAS concern (machines, interfaces, subnets, storage, power, diagnostics,
// probe), the values that cross them, the typed errors whose Go names the
// state machines match, and the HTTP implementation speaking MAAS API 2.0
// with OAuth 1.0 PLAINTEXT.
//
// Client is a thin HTTP client written for this package rather than a
// wrapper of gomaasclient, whose calls take no context and whose transport
// retries and sleeps on its own; docs/maas-client.md gives the reasons.
//
// Behaviour follows docs/maas-behaviour.md (cited as "maas-behaviour §N").
// The client never sleeps or retries: it classifies each answer and returns,
// because retry belongs to the ASL. No error text or log line holds the API
// key, a BMC password or user-data.
//
// It must not import activities, store, api or any AWS package.
package maas
