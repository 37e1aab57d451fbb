// Package domain holds maasflow's records and its pure decisions: sites,
// profiles and the policy a profile inherits from its site, SKUs, RoCE
// assignments, nodes, onboardings and their stages, enrollment tokens, audit
// entries, and the functions that decide (discovery match, deploy-failure
// classification, policy resolution).
//
// It must not import context, net, any AWS or MAAS package, or any other
// maasflow package: everything here is values in, values out.
package domain
