// Package api is maasflow's admin REST API and the node-facing enrollment
// endpoint: one net/http handler, served by the api Lambda behind API Gateway
// and by `maasflow local` on localhost. It owns request validation (a 4xx
// names the JSON field), authentication and authorization (bearer tokens or
// the API Gateway JWT authorizer; admin only), the audit trail of every
// mutation, and the error envelope {"error":{"code","message","correlation_id"}}.
// openapi.yaml describes every route; a test keeps the two in step.
//
// It talks to the read models, the secrets port, the workflow and MAAS only
// through the small interfaces in ports.go. It must not import activities,
// asl or any AWS SDK service package.
package api
