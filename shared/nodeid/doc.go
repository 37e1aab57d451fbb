// Package nodeid owns a node's identity after enrollment: the deployment's
// node CA, the short-lived client certificates it issues from a node's CSR,
// and the checks the node endpoints make on a presented certificate.
//
// A node certificate names its node in one URI SAN, NodeURI(id)
// ("spiffe://maasflow/node/<id>"), not in a DNS SAN: a node id is not a
// host name, and a DNS SAN would make the certificate look like a server's.
// The extended key usage is client authentication only.
//
// The CA signs through a crypto.Signer: locally an ECDSA P-256 key in the
// data directory (LoadOrCreateLocal), on AWS a KMS asymmetric key
// (KMSSigner) whose private half never leaves KMS. The node's private key
// never reaches maasflow: only its CSR does.
//
// It uses crypto/x509 and crypto/ecdsa only, and holds no secrets in its
// errors: neither a CSR, a certificate nor a key is ever quoted.
package nodeid
