// Package localstack assembles the embedded stack `maasflow local` runs: the
// same ASL files on the embedded runtime, the same activity handlers called
// through aws-lambda-go's handler wrapper, the same store code over one bbolt
// database file in the data directory, a local event bus, a file secret store,
// the admin API on localhost, and — unless a real MAAS URL is given — the
// bundled MAAS simulator.
//
// It is the only place that knows it runs locally; everything it wires lives
// in shared/ and is the code production runs.
package localstack
