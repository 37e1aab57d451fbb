package stack

import (
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"net/http"
)

// kms serves the KMS calls the api function makes with the connector CA's
// key: GetPublicKey at cold start, Sign for each connector certificate.
// Authorised on the key ARN the caller names, as KMS does.
func (a *awsEndpoint) kms(w http.ResponseWriter, p principal, op string, body []byte) {
	var req struct {
		KeyID            string `json:"KeyId"`
		Message          []byte
		MessageType      string
		SigningAlgorithm string
	}
	if err := json.Unmarshal(body, &req); err != nil {
		awsError(w, http.StatusBadRequest, "ValidationException", err.Error())
		return
	}
	if op != "GetPublicKey" && op != "Sign" {
		awsError(w, http.StatusBadRequest, "UnknownOperationException", "the lane's KMS serves GetPublicKey and Sign, not "+op)
		return
	}
	if !a.authorize(w, p, []call{{Action: "kms:" + op, Resource: req.KeyID}}) {
		return
	}
	if req.KeyID != connectorCAKeyARN || connectorCAKey == nil {
		awsError(w, http.StatusBadRequest, "NotFoundException", "Key '"+req.KeyID+"' does not exist")
		return
	}
	switch op {
	case "GetPublicKey":
		der, err := x509.MarshalPKIXPublicKey(&connectorCAKey.PublicKey)
		if err != nil {
			awsError(w, http.StatusInternalServerError, "KMSInternalException", err.Error())
			return
		}
		writeJSON(w, map[string]any{"KeyId": req.KeyID, "PublicKey": der, "KeySpec": "ECC_NIST_P256",
			"KeyUsage": "SIGN_VERIFY", "SigningAlgorithms": []string{"ECDSA_SHA_256"}})
	case "Sign":
		if req.SigningAlgorithm != "ECDSA_SHA_256" {
			awsError(w, http.StatusBadRequest, "InvalidKeyUsageException", "the key signs with ECDSA_SHA_256 only")
			return
		}
		digest := req.Message
		if req.MessageType != "DIGEST" {
			sum := sha256.Sum256(req.Message)
			digest = sum[:]
		}
		sig, err := connectorCAKey.Sign(rand.Reader, digest, crypto.SHA256)
		if err != nil {
			awsError(w, http.StatusInternalServerError, "KMSInternalException", err.Error())
			return
		}
		writeJSON(w, map[string]any{"KeyId": req.KeyID, "Signature": sig, "SigningAlgorithm": req.SigningAlgorithm})
	}
}
