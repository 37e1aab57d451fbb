package domain

import "time"

// NodeIdentity is what maasflow keeps of a node's certificate identity
// (docs/api.md "Node endpoints"): never a key, and its recovery token
// only as a SHA-256 hash that no answer shows.
type NodeIdentity struct {
	// CertSerial and CertNotAfter name the node's latest certificate.
	CertSerial   string     `json:"cert_serial,omitempty" dynamodbav:"cert_serial,omitempty"`
	CertNotAfter *time.Time `json:"cert_not_after,omitempty" dynamodbav:"cert_not_after,omitempty"`
	// AgentSeenAt is the node agent's first authenticated heartbeat after
	// its latest enrollment: the completion gate "node agent running".
	AgentSeenAt *time.Time `json:"agent_seen_at,omitempty" dynamodbav:"agent_seen_at,omitempty"`
	// RecoveryTokenHash is the hash of the node's single-use recovery
	// token; empty when it has none (spent, revoked by a reissued bundle
	// or by removal).
	RecoveryTokenHash string `json:"-" dynamodbav:"recovery_token_hash,omitempty"`
	// AwaitsAgent names the onboarding and attempt whose enrollment wait
	// the first heartbeat completes: an enrollment with a CSR hands over
	// to the workflow only once the agent proves it runs.
	AwaitsAgentOnboardingID string `json:"-" dynamodbav:"awaits_agent_onboarding_id,omitempty"`
	AwaitsAgentAttempt      int    `json:"-" dynamodbav:"awaits_agent_attempt,omitempty"`
}
